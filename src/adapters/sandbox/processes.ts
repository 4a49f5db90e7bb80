// Processes the sandbox starts and leaves running: recorded with their pid, start time and exact
// command line, so that `sandbox down` stops them and nothing else (a recycled pid runs another
// command, or started later). The record is read back from .sandbox/sandbox.json, which anyone
// running as the user may have edited: it is validated here, and every signal goes through
// isSameProcess (src/adapters/own-process.ts), the check the SSH forwards use too.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { isPid, isSameProcess, isStartTime, liveProcess, startTimeOf } from "../own-process";

export interface RecordedProcess {
  role: string;
  pid: number;
  /** argv as /proc/<pid>/cmdline shows it, joined with NUL. */
  cmdline: string;
  /** When it started (/proc/<pid>/stat field 22): a recycled pid has another. */
  startTime: string;
}

/** The command line of a live process, or undefined when it is gone (Linux /proc). */
export function commandLineOf(pid: number): string | undefined {
  return liveProcess(pid)?.args.join("\0");
}

/** Whether the recorded process is still the one we started (pid, start time and command line). */
export function isOurs(p: RecordedProcess): boolean {
  return typeof p.cmdline === "string" && p.cmdline !== "" && isSameProcess(p, (args) => args.join("\0") === p.cmdline);
}

const ROLE = /^[ -~]{1,80}$/;
const MAX_CMDLINE = 128 * 1024;

/**
 * The process records of a sandbox.json, each checked (a role, an integer pid > 1, a command line
 * and a start time); `rejected` says which were not, by index, never acting on them.
 */
export function parseRecordedProcesses(value: unknown): { processes: RecordedProcess[]; rejected: string[] } {
  if (!Array.isArray(value)) return { processes: [], rejected: ["processes: not a list"] };
  const processes: RecordedProcess[] = [];
  const rejected: string[] = [];
  value.forEach((r: unknown, i) => {
    const p = (r ?? {}) as Partial<Record<keyof RecordedProcess, unknown>>;
    const why =
      r === null || typeof r !== "object" || Array.isArray(r)
        ? "not a record"
        : typeof p.role !== "string" || !ROLE.test(p.role)
          ? "no role"
          : !isPid(p.pid)
            ? `pid ${JSON.stringify(p.pid ?? null)?.slice(0, 20)} is not a process id (an integer above 1)`
            : typeof p.cmdline !== "string" || p.cmdline === "" || p.cmdline.length > MAX_CMDLINE
              ? "no command line recorded"
              : !isStartTime(p.startTime)
                ? "no start time recorded"
                : undefined;
    if (why) rejected.push(`processes[${i}]: ${why}`);
    else processes.push({ role: p.role as string, pid: p.pid as number, cmdline: p.cmdline as string, startTime: p.startTime as string });
  });
  return { processes, rejected };
}

/**
 * Starts a process that outlives this command: detached, its output appended to `logFile`.
 * Returns its record (the start time is the fork's, so it is known before the program runs).
 */
export function startDetached(role: string, command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; logFile: string }): RecordedProcess {
  const log = fs.openSync(opts.logFile, "a", 0o600);
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${role}: ${command}`);
  const startTime = startTimeOf(child.pid);
  if (startTime === undefined) throw new Error(`${role} exited at once: ${command} (see ${opts.logFile})`);
  return { role, pid: child.pid, cmdline: [command, ...args].join("\0"), startTime };
}

/**
 * The environment of a live process of this user (/proc/<pid>/environ, at most 1 MiB), or
 * undefined where it cannot be read (gone, another user's, no /proc).
 */
export function environOf(pid: number): string[] | undefined {
  try {
    const fd = fs.openSync(`/proc/${pid}/environ`, "r");
    try {
      const buffer = Buffer.alloc(1024 * 1024);
      const n = fs.readSync(fd, buffer, 0, buffer.length, 0);
      return buffer.subarray(0, n).toString("utf8").split("\0");
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** The variable every process a sandbox starts carries (inherited by what those start): the sandbox's random id. */
export const SANDBOX_ID_VARIABLE = "EXPOSURE_SANDBOX_ID";

/**
 * Whether a recorded process is this sandbox's: still the recorded one (pid, start time, command
 * line), and started by this sandbox: its environment carries the sandbox's id (a record copying
 * a foreign process's command line and start time cannot give it that), or, where no environment
 * can be read (no /proc), its command line names `folder`.
 */
export function isSandboxProcess(p: RecordedProcess, sandbox: { id: string; folder: string }): boolean {
  if (!isOurs(p) || !/^[0-9a-f]{32}$/.test(sandbox.id)) return false;
  const environ = environOf(p.pid);
  if (environ) return environ.includes(`${SANDBOX_ID_VARIABLE}=${sandbox.id}`);
  if (fs.existsSync("/proc/self/environ")) return false;
  return p.cmdline.split("\0").some((a) => a.includes(sandbox.folder));
}

/** Stops the recorded processes that are still ours (and pass `proven`): TERM, then KILL after `graceMs`. */
export async function stopRecorded(processes: readonly RecordedProcess[], graceMs = 5000, proven: (p: RecordedProcess) => boolean = isOurs): Promise<string[]> {
  const stopped: string[] = [];
  for (const p of processes) {
    if (!isOurs(p) || !proven(p)) continue;
    try {
      process.kill(p.pid, "SIGTERM");
    } catch {
      continue;
    }
    const end = Date.now() + graceMs;
    while (isOurs(p) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    if (isOurs(p)) {
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    stopped.push(`${p.role} (${p.pid})`);
  }
  return stopped;
}

/** Largest sandbox.json read (ours are a few kB). */
const MAX_STATE_BYTES = 1024 * 1024;

/** What `status` and `down` may act on from a sandbox.json: checked processes and addresses. */
export interface SandboxState {
  processes: RecordedProcess[];
  /** entry -> URL, only http(s) URLs on loopback or the sandbox's own 198.18.0.0/15 addresses. */
  urls: Record<string, string>;
  /** The portal's http://127.0.0.1:<port>/, or "" when it was not started. */
  portal: string;
  /** Prometheus's http://127.0.0.1:<port>/ (sandbox up --monitoring), or "". */
  prometheus: string;
  /** What was ignored, by field (never acted on). */
  rejected: string[];
  /** The rest of the record as written (for display only). */
  raw: Record<string, unknown>;
}

/** A host the sandbox's URLs may name: requests read from the file go nowhere else. */
function isSandboxHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "");
  if (h === "::1") return true;
  const octets = h.split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255) || !/^[\d.]+$/.test(h)) return false;
  return octets[0] === 127 || (octets[0] === 198 && (octets[1] === 18 || octets[1] === 19));
}

function sandboxUrl(value: unknown, schemes: readonly string[]): string | undefined {
  if (typeof value !== "string" || value.length > 200) return undefined;
  try {
    const u = new URL(value);
    return schemes.includes(u.protocol) && isSandboxHost(u.hostname) && u.port !== "" && u.username === "" && u.password === "" ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads .sandbox/sandbox.json; undefined when there is none. A damaged file (truncated, not
 * JSON, wrong types, too large) yields an empty state with the reason in `rejected`.
 */
export function readSandboxState(file: string): SandboxState | undefined {
  let text: string;
  try {
    const stat = fs.lstatSync(file);
    if (!stat.isFile() || stat.size > MAX_STATE_BYTES) return damaged(`${file}: not a regular file of at most ${MAX_STATE_BYTES} bytes`);
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return damaged(`${file}: ${(err as NodeJS.ErrnoException).code ?? "unreadable"}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return damaged(`${file}: not JSON (truncated or hand-edited)`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return damaged(`${file}: not a JSON object`);
  const record = raw as Record<string, unknown>;
  const { processes, rejected } = parseRecordedProcesses(record.processes);
  const urls: Record<string, string> = {};
  if (record.urls !== null && typeof record.urls === "object" && !Array.isArray(record.urls)) {
    for (const [entry, url] of Object.entries(record.urls)) {
      const ok = sandboxUrl(url, ["http:", "https:"]);
      if (ok && /^[a-z][-a-z0-9]{0,62}$/.test(entry)) urls[entry] = ok;
      else rejected.push(`urls.${entry.slice(0, 64)}: not a sandbox URL`);
    }
  } else if (record.urls !== undefined) rejected.push("urls: not a map");
  let portal = "";
  if (record.portal !== undefined && record.portal !== "") {
    const ok = sandboxUrl(record.portal, ["http:"]);
    if (ok && new URL(ok).pathname === "/") portal = ok;
    else rejected.push("portal: not a loopback http://HOST:PORT/ address");
  }
  let prometheus = "";
  if (record.prometheus !== undefined && record.prometheus !== "") {
    const ok = sandboxUrl(record.prometheus, ["http:"]);
    if (ok && new URL(ok).pathname === "/") prometheus = ok;
    else rejected.push("prometheus: not a loopback http://HOST:PORT/ address");
  }
  return { processes, urls, portal, prometheus, rejected, raw: record };
}

const damaged = (why: string): SandboxState => ({ processes: [], urls: {}, portal: "", prometheus: "", rejected: [why], raw: {} });

/** The parent pid of a live process (/proc/<pid>/stat), or undefined. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/**
 * Stops every other process that carries the sandbox's id in its environment (what a process the
 * sandbox started left behind: the provider of a `pulumi up` killed half-way, reparented to init),
 * and every orphaned Pulumi plugin (`pulumi-resource-*`, `pulumi-language-*`, whose parent is no
 * `pulumi` any more) whose environment has the sandbox's own Pulumi home (`PULUMI_HOME` of
 * `.sandbox/env`): the provider of a `pulumi up` the operator ran by hand in that environment and
 * killed. This process and its ancestors are never signalled. Linux only (/proc); elsewhere
 * nothing is found. Returns `name (pid)` of each one stopped. `variable` names another random
 * id's variable (the e2e run's: test/support/run-record.ts).
 */
export async function stopCarriersOf(id: string, pulumiHome?: string, graceMs = 3000, variable = SANDBOX_ID_VARIABLE): Promise<string[]> {
  if (!/^[0-9a-f]{32}$/.test(id)) return [];
  const marker = `${variable}=${id}`;
  const home = pulumiHome ? `PULUMI_HOME=${pulumiHome}` : undefined;
  const spared = new Set<number>();
  for (let p: number | undefined = process.pid; p !== undefined && p > 1 && !spared.has(p); p = parentOf(p)) spared.add(p);
  let entries: string[] = [];
  try {
    entries = fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const name = (args: readonly string[]) => args[0]?.split("/").pop() ?? "";
  const orphanedPlugin = (pid: number, args: readonly string[]) => {
    if (!/^pulumi-(resource|language)-/.test(name(args))) return false;
    const parent = parentOf(pid);
    const parentArgs = parent !== undefined && parent > 1 ? liveProcess(parent)?.args : undefined;
    return !parentArgs || name(parentArgs) !== "pulumi";
  };
  const found: RecordedProcess[] = [];
  for (const e of entries) {
    const pid = Number(e);
    if (spared.has(pid) || pid <= 1) continue;
    const environ = environOf(pid);
    if (!environ) continue;
    const carries = environ.includes(marker);
    if (!carries && !(home && environ.includes(home))) continue;
    const live = liveProcess(pid);
    if (!live || (!carries && !orphanedPlugin(pid, live.args))) continue;
    found.push({ role: name(live.args).slice(0, 80) || "process", pid, cmdline: live.args.join("\0"), startTime: live.startTime });
  }
  return stopRecorded(found, graceMs);
}
