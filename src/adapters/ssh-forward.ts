// SSH forwards for the Lima bench, whose VM network the host cannot route: one `ssh -N -L 127.0.0.1:<local>:<node IP>:<nodePort> lima-<instance>` per UI, in
// the background, remembered in a state folder so a second run reuses them and --stop ends them.
import { spawn } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { UserError } from "../core/errors";
import { portNumber } from "../core/exposure-rules";
import { checkLimaInstanceName, checkStackName, isLimaInstanceName } from "../core/inputs";
import { ipVersion } from "../core/ip";
import type { StoppedForwardJson as StoppedForward } from "../core/json-api";
import { freeLoopbackPort } from "./free-port";
import { isPid, isSameProcess, isStartTime, startTimeOf } from "./own-process";
import { lastLine } from "./pulumi-cli";

/** First local port tried; each UI keeps the port it got first, so bookmarks keep working. */
export const DEFAULT_FORWARD_BASE_PORT = 18080;
const MAX_PORT_SEARCH = 200;

/** One UI to forward: 127.0.0.1:<some local port> -> remoteHost:remotePort. */
interface ForwardRequest {
  entry: string;
  scheme: string;
  remoteHost: string;
  remotePort: number;
}

/** What a pid file holds. */
interface ForwardRecord extends ForwardRequest {
  pid: number;
  localPort: number;
  instance: string;
  /** When the ssh started (src/adapters/own-process.ts): a recycled pid has another. */
  startTime: string;
}

export interface ForwardOutcome extends ForwardRecord {
  localUrl: string;
  /** started: a new ssh; running: an earlier one still alive (not duplicated); restarted: the target moved. */
  state: "started" | "running" | "restarted";
}

interface ForwardOptions {
  /** `ssh` is looked up on its PATH. */
  env: NodeJS.ProcessEnv;
  stateDir: string;
  /** Lima instance: its SSH config and its `lima-<instance>` host alias. */
  instance: string;
  sshConfig: string;
  basePort: number;
  /** How long to wait for a new ssh to open its port (or die) before reporting it. */
  settleMs: number;
}

/** The folder holding a stack's forwards: $EXPOSURE_STATE_DIR, else $XDG_STATE_HOME/ui-exposure, else ~/.local/state/ui-exposure. */
export function forwardStateDir(stack: string, env: NodeJS.ProcessEnv): string {
  checkStackName(stack);
  const home = env.HOME ?? os.homedir();
  const root = env.EXPOSURE_STATE_DIR ?? path.join(env.XDG_STATE_HOME ?? path.join(home, ".local", "state"), "ui-exposure");
  return path.join(root, "forwards", stack);
}

/** Lima writes an OpenSSH config per instance: $LIMA_HOME/<instance>/ssh.config (default ~/.lima). */
export function limaSshConfig(instance: string, env: NodeJS.ProcessEnv): string {
  checkLimaInstanceName(instance, "the Lima instance");
  const limaHome = env.LIMA_HOME ?? path.join(env.HOME ?? os.homedir(), ".lima");
  const file = path.join(limaHome, instance, "ssh.config");
  if (!fs.existsSync(file)) {
    throw new UserError(`no Lima SSH config at ${file}: is the Lima instance '${instance}' created and running? (limactl list; or pass --lima-instance NAME)`);
  }
  return file;
}

/** The `-L` spec, also how a running forward is recognised in the process list. */
const forwardSpec = (localPort: number, remoteHost: string, remotePort: number) =>
  `127.0.0.1:${localPort}:${remoteHost.includes(":") ? `[${remoteHost}]` : remoteHost}:${remotePort}`;

/** An entry name as the contract allows it: the only names a pid file may carry (never a path). */
const ENTRY_NAME = /^[a-z]([-a-z0-9]{0,52}[a-z0-9])?$/;

/** The pid file or the log of an entry's forward. */
function stateFile(stateDir: string, entry: string, suffix: ".pid.json" | ".log"): string {
  if (!ENTRY_NAME.test(entry)) throw new UserError(`refusing a forward for ${JSON.stringify(entry).slice(0, 80)}: not an entry name`);
  return path.join(stateDir, `${entry}${suffix}`);
}

// A pid file read back, or undefined when it is not one we wrote: whoever runs as the user can write the folder, so every field is checked before it names
// a file or a process. Text that is not JSON throws (readRecords skips the file).
export function parseForwardRecord(fileName: string, text: string): ForwardRecord | undefined {
  const entry = /^(.*)\.pid\.json$/.exec(fileName)?.[1];
  if (entry === undefined || !ENTRY_NAME.test(entry)) return undefined;
  const r = JSON.parse(text) as Partial<Record<keyof ForwardRecord, unknown>>;
  if (r === null || typeof r !== "object") return undefined;
  const valid =
    r.entry === entry &&
    isPid(r.pid) &&
    isStartTime(r.startTime) &&
    portNumber(r.localPort) !== 0 &&
    portNumber(r.remotePort) !== 0 &&
    typeof r.remoteHost === "string" &&
    ipVersion(r.remoteHost) !== 0 &&
    (r.scheme === "http" || r.scheme === "https") &&
    typeof r.instance === "string" &&
    isLimaInstanceName(r.instance);
  return valid ? (r as ForwardRecord) : undefined;
}

/** Largest pid file read (ours are about 200 bytes). */
const MAX_RECORD_BYTES = 4096;

function readRecords(stateDir: string): ForwardRecord[] {
  if (!fs.existsSync(stateDir)) return [];
  return fs
    .readdirSync(stateDir)
    .filter((f) => f.endsWith(".pid.json"))
    .flatMap((f) => {
      const file = path.join(stateDir, f);
      try {
        const stat = fs.lstatSync(file);
        if (!stat.isFile() || stat.size > MAX_RECORD_BYTES) return []; // a link, a device or a foreign file: not ours to act on
        const record = parseForwardRecord(f, fs.readFileSync(file, "utf8"));
        return record ? [record] : [];
      } catch {
        return []; // a torn (not JSON) or foreign file: not ours to act on
      }
    });
}

// Whether a record's pid is still the ssh this tool started (own-process.ts) with our arguments (`-N`, `-L <our spec>`, host `lima-<instance>` last), not
// merely containing our spec: --stop must never signal an unrelated process.
function isOurForward(record: ForwardRecord): boolean {
  return isSameProcess(record, (all) => {
    // The program is ssh itself, or a script named ssh run by its interpreter (a wrapper on PATH).
    const args = path.basename(all[0] ?? "") === "ssh" ? all : path.basename(all[1] ?? "") === "ssh" ? all.slice(1) : undefined;
    if (!args) return false;
    const spec = args.indexOf("-L");
    return (
      spec > 0 &&
      args[spec + 1] === forwardSpec(record.localPort, record.remoteHost, record.remotePort) &&
      args.includes("-N") &&
      args.at(-1) === `lima-${record.instance}`
    );
  });
}

async function portAnswers(port: number): Promise<boolean> {
  const socket = net.connect({ port, host: "127.0.0.1" });
  const connected = await once(socket, "connect").catch(() => undefined);
  socket.destroy();
  return connected !== undefined;
}

async function allocatePort(preferred: number | undefined, taken: ReadonlySet<number>, base: number): Promise<number> {
  const isFree = async (port: number) => !taken.has(port) && (await freeLoopbackPort(port).catch(() => 0)) === port;
  if (preferred !== undefined && (await isFree(preferred))) return preferred;
  for (let port = base; port < base + MAX_PORT_SEARCH; port++) {
    if (await isFree(port)) return port;
  }
  throw new UserError(`no free local port in 127.0.0.1:${base}-${base + MAX_PORT_SEARCH - 1} for the SSH forwards`);
}

async function killAndWait(pid: number): Promise<void> {
  // false: it is gone (or never was ours to signal).
  const signal = (name: NodeJS.Signals | 0) => {
    try {
      process.kill(pid, name);
      return true;
    } catch {
      return false;
    }
  };
  if (!signal("SIGTERM")) return;
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 50));
    if (!signal(0)) return;
  }
  signal("SIGKILL");
}

const lastLogLine = (file: string) => (fs.existsSync(file) ? lastLine(fs.readFileSync(file, "utf8")) : undefined);

/** Starts one ssh in the background and waits until it listens, dies, or `settleMs` passes. */
async function startForward(request: ForwardRequest, localPort: number, opts: ForwardOptions): Promise<ForwardRecord> {
  const log = stateFile(opts.stateDir, request.entry, ".log");
  const out = fs.openSync(log, "w", 0o600);
  // A dedicated connection per forward (a shared master would take every forward down with it);
  // fail instead of lingering when the local port is taken, and never prompt in the background.
  const options = ["ControlMaster=no", "ControlPath=none", "ExitOnForwardFailure=yes", "BatchMode=yes"].flatMap((o) => ["-o", o]);
  const args = ["-F", opts.sshConfig, ...options, "-N", "-L", forwardSpec(localPort, request.remoteHost, request.remotePort), `lima-${opts.instance}`];
  // detached: its own process group, so it outlives this command and a Ctrl-C of the terminal.
  const child = spawn("ssh", args, { detached: true, stdio: ["ignore", out, out], env: opts.env });
  fs.closeSync(out);
  // Set by the callbacks (the cast keeps TypeScript from narrowing it to undefined).
  let exited = undefined as { code: number | null; error?: string } | undefined;
  child.once("exit", (code) => (exited ??= { code }));
  child.once("error", (err: NodeJS.ErrnoException) => (exited ??= { code: null, error: err.code === "ENOENT" ? "ssh not found on PATH" : err.message }));
  const deadline = Date.now() + opts.settleMs;
  while (!exited && Date.now() < deadline && !(await portAnswers(localPort))) await new Promise((r) => setTimeout(r, 50));
  if (exited || child.pid === undefined) {
    const why = exited?.error ?? lastLogLine(log) ?? `exit code ${exited?.code}`;
    throw new UserError(`SSH forward for ${request.entry} (127.0.0.1:${localPort} -> ${request.remoteHost}:${request.remotePort}) failed: ${why}`);
  }
  child.unref();
  const startTime = startTimeOf(child.pid);
  if (startTime === undefined) throw new UserError(`SSH forward for ${request.entry} exited at once: ${lastLogLine(log) ?? "nothing logged"}`);
  const record: ForwardRecord = { ...request, pid: child.pid, localPort, instance: opts.instance, startTime };
  fs.writeFileSync(stateFile(opts.stateDir, request.entry, ".pid.json"), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  return record;
}

/** One live forward per request: one alive to the same target is kept, a dead one replaced on its port when free, one whose target moved restarted. */
export async function ensureForwards(
  requests: readonly ForwardRequest[],
  opts: ForwardOptions,
): Promise<{ forwards: ForwardOutcome[]; failures: string[]; retired: StoppedForward[] }> {
  fs.mkdirSync(opts.stateDir, { recursive: true, mode: 0o700 });
  const records = new Map(readRecords(opts.stateDir).map((r) => [r.entry, r]));
  const alive = new Map([...records].filter(([, r]) => isOurForward(r)));
  const taken = new Set([...alive.values()].map((r) => r.localPort));
  const forwards: ForwardOutcome[] = [];
  const failures: string[] = [];
  for (const request of requests) {
    const live = alive.get(request.entry);
    const localUrl = (port: number) => `${request.scheme}://127.0.0.1:${port}`;
    if (live && live.remoteHost === request.remoteHost && live.remotePort === request.remotePort) {
      forwards.push({ ...live, localUrl: localUrl(live.localPort), state: "running" });
      continue;
    }
    if (live) {
      await killAndWait(live.pid);
      taken.delete(live.localPort);
    }
    try {
      const port = await allocatePort(records.get(request.entry)?.localPort, taken, opts.basePort);
      taken.add(port);
      const record = await startForward(request, port, opts);
      forwards.push({ ...record, localUrl: localUrl(port), state: live ? "restarted" : "started" });
    } catch (err) {
      fs.rmSync(stateFile(opts.stateDir, request.entry, ".pid.json"), { force: true });
      failures.push((err as Error).message);
    }
  }
  // Forwards of entries that no longer have a URL (Service deleted, entry deselected) lead nowhere.
  const wanted = new Set(requests.map((r) => r.entry));
  const retired: StoppedForward[] = [];
  for (const record of records.values()) {
    if (!wanted.has(record.entry)) retired.push(await retire(opts.stateDir, record, alive.has(record.entry)));
  }
  return { forwards, failures, retired };
}

/** Ends every forward of the stack's state folder and removes their pid files. */
export async function stopForwards(stateDir: string): Promise<StoppedForward[]> {
  const stopped: StoppedForward[] = [];
  for (const record of readRecords(stateDir)) stopped.push(await retire(stateDir, record, isOurForward(record)));
  return stopped;
}

/** Ends a forward that is still ours (`ours`) and removes its pid and log files either way. */
async function retire(stateDir: string, record: ForwardRecord, ours: boolean): Promise<StoppedForward> {
  if (ours) await killAndWait(record.pid);
  fs.rmSync(stateFile(stateDir, record.entry, ".pid.json"), { force: true });
  fs.rmSync(stateFile(stateDir, record.entry, ".log"), { force: true });
  return { entry: record.entry, pid: record.pid, localPort: record.localPort, state: ours ? "stopped" : "stale" };
}
