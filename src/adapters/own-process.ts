// The one check that a pid read back from an untrusted file (sandbox.json, the SSH forwards' pid files) is still the process this tool started, before
// anything signals it. A pid alone proves nothing (-1 and 0 are "every process" to kill(2), 1 is init, any other may be recycled): the record's start time
// and command line must match the live process.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";

/** Linux's largest pid_max (2^22); anything above is no pid. */
const MAX_PID = 4_194_304;

/** Whether `n` may name one process we started: an integer > 1 (never -1, 0 = a group, 1 = init). */
export function isPid(n: unknown): n is number {
  return Number.isInteger(n) && (n as number) > 1 && (n as number) <= MAX_PID;
}

/** A start time as recorded: clock ticks since boot (/proc/<pid>/stat field 22), or `ps -o lstart` elsewhere. */
export function isStartTime(s: unknown): s is string {
  return typeof s === "string" && /^[ -~]{1,64}$/.test(s) && s.trim() !== "";
}

type LiveProcess = { startTime: string; args: string[] };

/** Start time and arguments of a live process of this user (/proc: exact arguments; else `ps`); undefined when gone, another user's, a zombie, or no pid. */
export function liveProcess(pid: number): LiveProcess | undefined {
  if (!isPid(pid)) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    // ESRCH: gone. EPERM: alive but another user's, hence not one of ours.
    return undefined;
  }
  const stat = procStat(pid);
  if (stat === "none") return psProcess(pid);
  if (stat === undefined || stat.state === "Z" || stat.state === "X") return undefined;
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (args.at(-1) === "") args.pop();
    return args.length ? { startTime: stat.startTime, args } : undefined;
  } catch {
    return undefined;
  }
}

/** State and start time from /proc/<pid>/stat; "none" when there is no /proc (not Linux). */
function procStat(pid: number): { state: string; startTime: string } | undefined | "none" {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return fs.existsSync("/proc/self/stat") ? undefined : "none";
  }
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = fields[0] ?? "";
  const startTime = fields[19] ?? ""; // field 22 of proc_pid_stat(5); fields[0] is field 3
  return /^\d+$/.test(startTime) ? { state, startTime } : undefined;
}

function psProcess(pid: number): LiveProcess | undefined {
  const ps = (field: string) => execFileSync("ps", ["-o", `${field}=`, "-p", String(pid)], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    const command = ps("command");
    const startTime = ps("lstart");
    if (!command || command.includes("<defunct>") || !startTime) return undefined;
    return { startTime, args: command.split(/\s+/) };
  } catch {
    return undefined;
  }
}

/** The start time of a process just started, recorded with its pid (also exited and not yet reaped: a dead process); undefined when there is none. */
export function startTimeOf(pid: number): string | undefined {
  if (!isPid(pid)) return undefined;
  const stat = procStat(pid);
  return stat === "none" ? psProcess(pid)?.startTime : stat?.startTime;
}

// Whether a record still names the process we started: a valid pid, the recorded start time (a recycled pid starts later), arguments `argsMatch` accepts.
// The only gate before a signal to a pid read back from a file.
export function isSameProcess(record: { pid: unknown; startTime: unknown }, argsMatch: (args: readonly string[]) => boolean): boolean {
  if (!isPid(record.pid) || !isStartTime(record.startTime)) return false;
  const live = liveProcess(record.pid);
  return live !== undefined && live.startTime === record.startTime && argsMatch(live.args);
}
