// Nothing an e2e run starts outlives it (DESIGN.md invariant 9). A run (one vitest process) gets
// a random id that every process it starts inherits (E2E_RUN_VARIABLE in the environment: the
// proof a process is the run's, as the sandbox's id is), and a record: a folder under the runs'
// root naming its owner (pid and start time) and the control-plane folders it started. A watchdog
// in a session of its own waits for the owner to end, however it ends (a SIGTERM, a SIGKILL),
// then stops what carries the id and every recorded control plane (scripts/e2e-cluster.sh stop,
// which signals only the recorded pid with its start time and a command line naming the folder).
// Each run first does the same for any record whose owner and watchdog are both gone.
import { spawn, spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { isSameProcess, startTimeOf } from "../../src/adapters/own-process";
import { stopCarriersOf } from "../../src/adapters/sandbox/processes";

export const E2E_RUN_VARIABLE = "UI_EXPOSURE_E2E_RUN";
/** The run's record folder, for the harness to add the control planes it starts. */
export const E2E_RUN_DIR_VARIABLE = "UI_EXPOSURE_E2E_RUN_DIR";

const projectDir = path.resolve(__dirname, "../..");
const ID = /^[0-9a-f]{32}$/;

/** Where the runs' records live: UI_EXPOSURE_E2E_RUNS, else <tmp>/ui-exposure-e2e-runs-<uid>, one folder per user. */
export const runsRoot = (env: NodeJS.ProcessEnv = process.env) =>
  env.UI_EXPOSURE_E2E_RUNS || path.join(os.tmpdir(), `ui-exposure-e2e-runs-${process.getuid?.() ?? "user"}`);

/**
 * Makes `dir` (mode 0700) unless it exists, then trusts it only if it is a folder, not a link, owned by this user and
 * closed to others: in a shared /tmp another user could have made it first and planted records in it, whose
 * "control planes" a run would then stop. Throws one line saying what is wrong and what to do.
 */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const st = fs.lstatSync(dir);
  const uid = process.getuid?.();
  const wrong = [
    ...(st.isSymbolicLink() ? ["a symbolic link"] : st.isDirectory() ? [] : ["not a folder"]),
    ...(uid !== undefined && st.uid !== uid ? [`owned by uid ${st.uid}, not ${uid}`] : []),
    ...(st.isDirectory() && (st.mode & 0o077) !== 0 ? [`mode ${(st.mode & 0o777).toString(8)}, open to others`] : []),
  ];
  if (wrong.length)
    throw new Error(`e2e: ${dir} is ${wrong.join(", ")}: nothing in it is trusted; remove it, or set UI_EXPOSURE_E2E_RUNS to a folder of your own`);
}

interface Owner {
  pid: number;
  startTime: string;
}

function readOwner(file: string): Owner | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(file, "utf8").slice(0, 4096)) as Partial<Owner>;
    return typeof o.pid === "number" && typeof o.startTime === "string" ? { pid: o.pid, startTime: o.startTime } : undefined;
  } catch {
    return undefined;
  }
}

const alive = (o: Owner | undefined) => o !== undefined && isSameProcess(o, () => true);
const ownerAlive = (dir: string) => alive(readOwner(path.join(dir, "owner.json")));

/**
 * Starts this process's run (vitest's globalSetup): reaps the dead runs' leftovers, writes the
 * record, sets the id in process.env (inherited by the test workers and all they start) and
 * starts the watchdog. Returns the record's folder.
 */
export async function startRun(): Promise<string> {
  const root = runsRoot();
  ensurePrivateDir(root);
  for (const stopped of await reapDeadRuns(root)) console.warn(`e2e: stopped what an interrupted run left: ${stopped}`);
  const id = crypto.randomBytes(16).toString("hex");
  const dir = path.join(root, id);
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.writeFileSync(path.join(dir, "owner.json"), JSON.stringify({ pid: process.pid, startTime: startTimeOf(process.pid) }), { mode: 0o600 });
  // The watchdog does not carry the id: a reap never stops it.
  const { [E2E_RUN_VARIABLE]: _id, [E2E_RUN_DIR_VARIABLE]: _dir, ...env } = process.env;
  const log = fs.openSync(path.join(dir, "watchdog.log"), "a", 0o600);
  const watchdog = spawn(process.execPath, ["--require", require.resolve("tsx/cjs"), path.join(__dirname, "run-watchdog.ts"), dir], {
    cwd: projectDir,
    env,
    detached: true,
    stdio: ["ignore", log, log],
  });
  fs.closeSync(log);
  watchdog.unref();
  const pid = watchdog.pid as number;
  fs.writeFileSync(path.join(dir, "watchdog.json"), JSON.stringify({ pid, startTime: startTimeOf(pid) }), { mode: 0o600 });
  process.env[E2E_RUN_VARIABLE] = id;
  process.env[E2E_RUN_DIR_VARIABLE] = dir;
  return dir;
}

/** Adds a control plane's folder (scripts/e2e-cluster.sh start) to this run's record. */
export function recordControlPlane(clusterDir: string, env: NodeJS.ProcessEnv = process.env): void {
  const dir = env[E2E_RUN_DIR_VARIABLE];
  if (dir && fs.existsSync(dir)) fs.appendFileSync(path.join(dir, "control-planes"), `${clusterDir}\n`, { mode: 0o600 });
}

/**
 * Stops what the run of record `dir` left: every process carrying its id, then each recorded
 * control plane (only a folder scripts/e2e-cluster.sh made), then removes the record.
 * Returns what was stopped.
 */
export async function reapRun(dir: string): Promise<string[]> {
  const id = path.basename(dir);
  if (!ID.test(id)) return [];
  const stopped = await stopCarriersOf(id, undefined, 3000, E2E_RUN_VARIABLE);
  let planes: string[] = [];
  try {
    planes = fs.readFileSync(path.join(dir, "control-planes"), "utf8").split("\n").filter(Boolean);
  } catch {}
  for (const plane of planes) {
    if (!path.isAbsolute(plane) || !fs.existsSync(path.join(plane, ".e2e-cluster"))) continue;
    spawnSync(path.join(projectDir, "scripts/e2e-cluster.sh"), ["stop", plane], { encoding: "utf8", timeout: 60_000 });
    stopped.push(`control plane ${plane}`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return stopped;
}

/** Reaps every run under `root` whose owner and watchdog are both gone. */
export async function reapDeadRuns(root: string): Promise<string[]> {
  let runs: string[] = [];
  try {
    runs = fs.readdirSync(root).filter((r) => ID.test(r));
  } catch {}
  const stopped: string[] = [];
  for (const run of runs) {
    const dir = path.join(root, run);
    if (ownerAlive(dir) || alive(readOwner(path.join(dir, "watchdog.json")))) continue;
    stopped.push(...(await reapRun(dir)));
  }
  return stopped;
}

/** The watchdog's loop (test/support/run-watchdog.ts): once the owner is gone, reap; also ends when the record is removed. */
export async function watch(dir: string, everyMs = 500): Promise<string[]> {
  while (fs.existsSync(dir) && ownerAlive(dir)) await new Promise((r) => setTimeout(r, everyMs));
  return fs.existsSync(dir) ? reapRun(dir) : [];
}
