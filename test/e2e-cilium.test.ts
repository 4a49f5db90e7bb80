// scripts/e2e-cilium.sh: what `stop` reads back from a run dir (pids, namespace names,
// mounts, the cgroup, the prefix) is untrusted, so a forged or damaged dir must make it
// signal, delete or unmount nothing that is not the run's own.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const SCRIPT = path.resolve(__dirname, "../scripts/e2e-cilium.sh");
const dirs: string[] = [];
const children: ChildProcess[] = [];

function runDir(files: Record<string, string>): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-cilium-test-"));
  dirs.push(d);
  for (const [f, body] of Object.entries(files)) fs.writeFileSync(path.join(d, f), body);
  return d;
}
const stop = (d: string) => spawnSync("bash", [SCRIPT, "stop", d], { encoding: "utf8", env: { ...process.env, E2E_KEEP: "1" } });

afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("e2e-cilium.sh stop", () => {
  it("refuses a directory it did not make", () => {
    const d = runDir({ prefix: "uxc00beef\n", pids: "agent=1\n" });
    const r = stop(d);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${d} is not an e2e-cilium dir`);
  });

  it("refuses a prefix it does not write (namespace names would then match anything)", () => {
    const d = runDir({ ".e2e-cilium": "", prefix: "\n", netns: "victim\n" });
    const r = stop(d);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("prefix is not one this script writes");
  });

  it("signals no process whose command line lacks the run dir, and touches no foreign namespace, mount or cgroup", () => {
    // Only decoys of this test in the file: were the command-line check ever lost, the test
    // must fail on them, not signal anything else of the machine.
    const victim = spawn("sleep", ["30"], { stdio: "ignore" });
    const other = spawn("sleep", ["31"], { stdio: "ignore" });
    children.push(victim, other);
    const d = runDir({
      ".e2e-cilium": "",
      prefix: "uxc00beef\n",
      pids: `agent=${victim.pid}\nrelay-host=${other.pid}\nrelay-node=-${other.pid}\nx=abc\n$(touch /tmp/e2e-cilium-pwned)=${other.pid}\n`,
      netns: "other-ns\nuxc00beefx\n",
      mounts: "/\n/proc\n",
      cgroup: "/sys/fs/cgroup\n",
    });
    const r = stop(d);
    expect(r.status, r.stderr).toBe(0);
    expect(victim.exitCode).toBeNull();
    expect(() => process.kill(victim.pid as number, 0)).not.toThrow();
    expect(() => process.kill(other.pid as number, 0)).not.toThrow();
    expect(fs.existsSync("/tmp/e2e-cilium-pwned")).toBe(false);
    expect(fs.existsSync("/proc/self")).toBe(true);
  });
});
