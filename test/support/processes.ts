import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";

/** Whether a process of this pid exists (signal 0 only asks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface Started {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/**
 * Spawns a server process (`node args`, without the in-cluster KUBERNETES_SERVICE_* variables) and
 * waits for the line that announces its URL; killed if none comes within `timeoutMs`.
 */
export function startProcess(args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; announce: RegExp; timeoutMs?: number }): Promise<Started> {
  const { KUBERNETES_SERVICE_HOST: _h, KUBERNETES_SERVICE_PORT: _p, ...env } = { ...process.env, ...opts.env };
  const child = spawn(process.execPath, args, { cwd: opts.cwd, env });
  let out = "";
  let err = "";
  const exit = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timeoutMs = opts.timeoutMs ?? 20_000;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no URL announced within ${timeoutMs / 1000}s; stdout: ${out}; stderr: ${err}`));
    }, timeoutMs);
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const m = opts.announce.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({ child, url: m[1], stdout: () => out, stderr: () => err, exit });
      }
    });
    exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before announcing a URL; stdout: ${out}; stderr: ${err}`));
    });
  });
}
