// Processes the sandbox starts and leaves running: recorded with their exact command line, so
// that `sandbox down` stops them and nothing else (a recycled pid runs another command).
import { spawn } from "node:child_process";
import * as fs from "node:fs";

export interface RecordedProcess {
  role: string;
  pid: number;
  /** argv as /proc/<pid>/cmdline shows it, joined with NUL. */
  cmdline: string;
}

/** The command line of a live process, or undefined when it is gone (Linux /proc). */
export function commandLineOf(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0$/, "");
  } catch {
    return undefined;
  }
}

/** Whether the recorded process is still the one we started. */
export function isOurs(p: RecordedProcess): boolean {
  return commandLineOf(p.pid) === p.cmdline;
}

/**
 * Starts a process that outlives this command: detached, its output appended to `logFile`.
 * Returns its record once /proc shows its command line.
 */
export function startDetached(role: string, command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; logFile: string }): RecordedProcess {
  const log = fs.openSync(opts.logFile, "a", 0o600);
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${role}: ${command}`);
  return { role, pid: child.pid, cmdline: [command, ...args].join("\0") };
}

/** Stops the recorded processes that are still ours: TERM, then KILL after `graceMs`. */
export async function stopRecorded(processes: readonly RecordedProcess[], graceMs = 5000): Promise<string[]> {
  const stopped: string[] = [];
  for (const p of processes) {
    if (!isOurs(p)) continue;
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
