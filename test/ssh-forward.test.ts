// src/adapters/ssh-forward.ts: the forwards' pid files are read back, so they are untrusted.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { startTimeOf } from "../src/adapters/own-process";
import { parseForwardRecord, stopForwards } from "../src/adapters/ssh-forward";
import { isAlive } from "./support/processes";

describe("the forwards' pid files are untrusted", () => {
  it("--stop deletes nothing outside the state folder and signals no process it did not start", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "forwards-"));
    const stateDir = path.join(root, "state", "forwards", "bench");
    fs.mkdirSync(stateDir, { recursive: true });
    const victim = path.join(root, "victim");
    fs.writeFileSync(`${victim}.pid.json`, "keep me");
    fs.writeFileSync(`${victim}.log`, "keep me");
    const spec = "127.0.0.1:18080:127.0.0.2:31001";
    // A process whose command line holds our -L spec, but which is not our ssh.
    const decoy = spawn("bash", ["-c", "sleep 30", "decoy", "-N", "-L", spec, "lima-bench"], { stdio: "ignore" });
    const alive = () => isAlive(decoy.pid as number);
    try {
      const record = { pid: decoy.pid, localPort: 18080, remoteHost: "127.0.0.2", remotePort: 31001, scheme: "http", instance: "bench", startTime: "1" };
      fs.writeFileSync(path.join(stateDir, "a.pid.json"), JSON.stringify({ ...record, entry: "../../../victim" }));
      fs.writeFileSync(path.join(stateDir, "b.pid.json"), JSON.stringify({ ...record, entry: "b" }));
      const stopped = await stopForwards(stateDir);
      expect(stopped).toEqual([{ entry: "b", pid: decoy.pid, localPort: 18080, state: "stale" }]);
      expect(alive()).toBe(true);
      expect(fs.readFileSync(`${victim}.pid.json`, "utf8")).toBe("keep me");
      expect(fs.readFileSync(`${victim}.log`, "utf8")).toBe("keep me");
      // The invalid pid file is left alone (not ours to act on); the stale one is removed.
      expect(fs.readdirSync(stateDir).sort()).toEqual(["a.pid.json"]);
    } finally {
      decoy.kill("SIGKILL");
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("--stop leaves an ssh with our very arguments alone when its start time is not the recorded one (a recycled pid; issue 23, defect 1)", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "forwards-"));
    const stateDir = path.join(root, "state");
    fs.mkdirSync(stateDir);
    const spec = "127.0.0.1:18080:127.0.0.2:31001";
    // Our command line exactly (a script named ssh, run by its interpreter), started by the test.
    fs.writeFileSync(path.join(root, "ssh"), "setTimeout(() => {}, 30000)\n");
    const ssh = spawn(process.execPath, [path.join(root, "ssh"), "-N", "-L", spec, "lima-bench"], { stdio: "ignore" });
    const alive = () => isAlive(ssh.pid as number);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const startTime = startTimeOf(ssh.pid as number) as string;
      const record = { entry: "argocd", pid: ssh.pid, localPort: 18080, remoteHost: "127.0.0.2", remotePort: 31001, scheme: "http", instance: "bench" };
      fs.writeFileSync(path.join(stateDir, "argocd.pid.json"), JSON.stringify({ ...record, startTime: String(Number(startTime) + 1) }));
      expect(await stopForwards(stateDir)).toEqual([{ entry: "argocd", pid: ssh.pid, localPort: 18080, state: "stale" }]);
      expect(alive()).toBe(true);
      fs.writeFileSync(path.join(stateDir, "argocd.pid.json"), JSON.stringify({ ...record, startTime }));
      expect(await stopForwards(stateDir)).toEqual([{ entry: "argocd", pid: ssh.pid, localPort: 18080, state: "stopped" }]);
    } finally {
      ssh.kill("SIGKILL");
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it.each([
    ["an entry that is a path", { entry: "../x" }],
    ["an entry that differs from the file name", { entry: "other" }],
    ["pid 1", { pid: 1 }],
    ["pid -1", { pid: -1 }],
    ["pid 0", { pid: 0 }],
    ["no start time (an older file)", { startTime: undefined }],
    ["a start time that is not text", { startTime: 12 }],
    ["a remote host that is not an IP", { remoteHost: "evil.example" }],
    ["a port out of range", { localPort: 70000 }],
  ])("ignores a pid file with %s", (_name, override) => {
    const good = {
      entry: "argocd",
      pid: 4242,
      localPort: 18080,
      remoteHost: "127.0.0.2",
      remotePort: 31001,
      scheme: "http",
      instance: "bench",
      startTime: "123",
    };
    expect(parseForwardRecord("argocd.pid.json", JSON.stringify(good))).toEqual(good);
    expect(parseForwardRecord("argocd.pid.json", JSON.stringify({ ...good, ...override }))).toBeUndefined();
  });
});
