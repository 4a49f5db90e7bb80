// Killing and restarting a control plane's API server, for the e2e files that show a cluster going away and coming back
// (test/e2e/stacks.e2e.ts, test/e2e/portal-incluster.e2e.ts).
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { type Cluster, waitFor } from "./harness";

/** The recorded kube-apiserver of a control plane: its pid and its command line (to start it again, as it was). */
function apiServerOf(c: Cluster): { pid: number; argv: string[] } {
  const pid = Number(/^kube-apiserver=(\d+)$/m.exec(fs.readFileSync(path.join(c.dir, "pids"), "utf8"))?.[1]);
  const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  return { pid, argv };
}

/** Kills the API server (only the one this control plane recorded) and waits until it is gone. */
export async function killApiServer(c: Cluster): Promise<string[]> {
  const { pid, argv } = apiServerOf(c);
  process.kill(pid, "SIGKILL");
  await waitFor("the API server to exit", async () => (fs.existsSync(`/proc/${pid}`) ? undefined : true), 10_000);
  return argv;
}

/** Starts the API server again with its own command line, and records it so that the harness's stop ends it. */
export async function restartApiServer(c: Cluster, argv: string[]): Promise<void> {
  const log = fs.openSync(path.join(c.dir, "logs", "kube-apiserver.log"), "a");
  const child = spawn(argv[0] as string, argv.slice(1), { detached: true, stdio: ["ignore", log, log] });
  child.unref();
  fs.closeSync(log);
  const pid = child.pid as number;
  const start = /^.*\) \S+ (?:\S+ ){18}(\d+) /.exec(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1];
  for (const file of ["pids", "starts"]) {
    const text = fs.readFileSync(path.join(c.dir, file), "utf8").replace(/^kube-apiserver=.*$/m, `kube-apiserver=${file === "pids" ? pid : start}`);
    fs.writeFileSync(path.join(c.dir, file), text);
  }
  await waitFor("the API server to answer again", async () => ((await c.core.listNamespace()).items.length ? true : undefined), 60_000);
}
