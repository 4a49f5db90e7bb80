// The peak resident memory of a child process, as the kernel keeps it (VmHWM), for the tests
// and e2e files that bound what a command or the portal holds.
import type { ChildProcess } from "node:child_process";
import * as fs from "node:fs";

/** The process's peak resident set (VmHWM) in MiB, or undefined once it has gone. */
export function peakMiB(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Samples the child's VmHWM every `intervalMs` until it exits, or until `until` settles: then once more, and the child is sent `signal`. The highest seen,
 * its exit code and what it printed. A rejected `until` is thrown, after the child is signalled.
 */
export async function watchPeak(
  child: ChildProcess,
  opts: { until?: Promise<unknown>; signal?: NodeJS.Signals; intervalMs?: number } = {},
): Promise<{ peak: number; code: number | null; stdout: string; stderr: string }> {
  let peak = 0;
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d) => {
    stdout += d;
  });
  child.stderr?.on("data", (d) => {
    stderr += d;
  });
  const sample = () => {
    peak = Math.max(peak, peakMiB(child.pid as number) ?? 0);
  };
  const timer = setInterval(sample, opts.intervalMs ?? 10);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    if (opts.until) {
      try {
        await opts.until;
      } finally {
        sample();
        child.kill(opts.signal ?? "SIGKILL");
      }
    }
    const code = await exited;
    return { peak, code, stdout, stderr };
  } finally {
    clearInterval(timer);
  }
}
