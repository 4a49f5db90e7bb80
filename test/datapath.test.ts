import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanupStaleRuns } from "../src/adapters/datapath/datapath";
import {
  hostLink,
  LAN_CIDR,
  lanCidr,
  newPrefix,
  operatorIp,
  operatorNetns,
  PREFIX_PATTERN,
  planNodes,
  podAddress,
  podNetns,
  SERVICE_CIDR,
} from "../src/adapters/datapath/plan";
import { listenerArg, parseListener, podAnswer, servePod } from "../src/adapters/datapath/pod-server";
import { startTimeOf } from "../src/adapters/own-process";
import { commandLineOf } from "../src/adapters/sandbox/processes";

const inTestNet = (ip: string) => {
  const [a, b] = ip.split(".").map(Number);
  return a === 198 && (b === 18 || b === 19);
};

describe("data path plan", () => {
  it("gives every node and pod an address in 198.18.0.0/15 and unique namespace names under the run's prefix", () => {
    const prefix = newPrefix();
    expect(prefix).toMatch(PREFIX_PATTERN);
    const nodes = planNodes(prefix, ["a", "b"]);
    expect(nodes.map((n) => [n.name, n.netns, n.ip, n.gateway, n.podCidr])).toEqual([
      ["a", `${prefix}-n1`, "198.18.0.11", "198.19.1.1", "198.19.1.0/24"],
      ["b", `${prefix}-n2`, "198.18.0.12", "198.19.2.1", "198.19.2.0/24"],
    ]);
    const n1 = nodes[0];
    if (!n1) throw new Error("no node");
    expect(podAddress(n1, 1)).toBe("198.19.1.2");
    expect(podAddress(n1, 250)).toBe("198.19.1.251");
    for (const ip of [...nodes.map((n) => n.ip), podAddress(n1, 7)]) expect(inTestNet(ip)).toBe(true);
    expect(LAN_CIDR.startsWith("198.18.")).toBe(true);
    expect(SERVICE_CIDR.startsWith("198.19.")).toBe(true);
    const names = [operatorNetns(prefix), ...nodes.map((n) => n.netns), podNetns(prefix, 1, 1), podNetns(prefix, 1, 11), podNetns(prefix, 11, 1)];
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n.startsWith(`${prefix}-`)).toBe(true);
  });

  it("puts the LAN of a run routed from the host on its own 198.18.<n>.0/24", () => {
    const prefix = newPrefix();
    expect(planNodes(prefix, ["a"], 42).map((n) => n.ip)).toEqual(["198.18.42.11"]);
    expect(lanCidr(42)).toBe("198.18.42.0/24");
    expect(operatorIp(42)).toBe("198.18.42.1");
    expect(hostLink(prefix)).toHaveLength(13);
    expect(() => planNodes(prefix, ["a"], 255)).toThrow("bad LAN number 255");
  });

  it("refuses a bad prefix, duplicate or too many nodes, and a pod beyond the node's range", () => {
    expect(() => planNodes("uxdp; rm -rf /", ["a"])).toThrow("bad run prefix");
    expect(() => planNodes(newPrefix(), ["a", "a"])).toThrow("node names must be unique");
    expect(() => planNodes(newPrefix(), [])).toThrow("between 1 and 100 nodes");
    const [n] = planNodes(newPrefix(), ["a"]);
    if (!n) throw new Error("no node");
    expect(() => podAddress(n, 251)).toThrow("at most 250 pods");
    expect(() => podAddress(n, 0)).toThrow("at most 250 pods");
  });
});

describe("pod-server", () => {
  it("parses its listeners", () => {
    expect(parseListener("8080")).toEqual({ port: 8080, tls: false });
    expect(parseListener("8443/tls")).toEqual({ port: 8443, tls: true });
    for (const bad of ["", "0", "65536", "80/ssl", "x", "80 ", "-1"]) expect(parseListener(bad)).toBeUndefined();
    expect(listenerArg({ port: 8443, tls: true })).toBe("8443/tls");
  });

  it("answers every path with its pod name", async () => {
    // A free port: the server binds every address of its namespace, as a container's does.
    const port = await new Promise<number>((resolve) => {
      const s = http.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const child = spawn(
      process.execPath,
      ["--require", require.resolve("tsx/cjs"), path.resolve(__dirname, "../src/adapters/datapath/pod-server.ts"), "ns/pod-0", "-", "-", String(port)],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.once("data", () => resolve());
        child.once("exit", (code) => reject(new Error(`exited ${code}`)));
      });
      const res = await fetch(`http://127.0.0.1:${port}/api/health?x=1`);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(podAnswer("ns/pod-0"));
    } finally {
      child.kill();
    }
  });

  it("refuses a tls listener without a certificate", async () => {
    await expect(servePod("ns/p", [{ port: 1, tls: true }])).rejects.toThrow("port 1/tls: no certificate given");
  });
});

describe("cleanupStaleRuns", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });

  /** A fake `ip` that lists `existing` namespaces and records every call. */
  function fakeIp(existing: string[]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dp-clean-"));
    dirs.push(dir);
    const calls = path.join(dir, "calls");
    const ip = path.join(dir, "ip");
    fs.writeFileSync(
      ip,
      `#!/bin/sh\necho "$*" >> ${calls}\n[ "$1 $2" = "netns list" ] && printf '%s\\n' ${existing.map((n) => `'${n} (id: 1)'`).join(" ")}\nexit 0\n`,
      {
        mode: 0o755,
      },
    );
    const stateDir = path.join(dir, "state");
    fs.mkdirSync(stateDir);
    return { ip, stateDir, calls: () => (fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").trim().split("\n") : []) };
  }

  const dead = { role: "owner", pid: 2 ** 22 - 17, cmdline: "node\0gone", startTime: "1" };
  const state = (prefix: string, over: Record<string, unknown> = {}) =>
    JSON.stringify({ version: 1, prefix, owner: dead, detached: false, namespaces: [`${prefix}-op`, `${prefix}-n1`], processes: [], ...over });

  it("deletes only the namespaces a stale run's state file names under its prefix", async () => {
    const prefix = "uxdp0000aaaa";
    const f = fakeIp([`${prefix}-op`, `${prefix}-n1`, "uxdp0000aaaa-other", "someone-else"]);
    fs.writeFileSync(
      path.join(f.stateDir, `${prefix}.json`),
      state(prefix, { namespaces: [`${prefix}-op`, `${prefix}-n1`, "someone-else", `${prefix}-gone`] }),
    );
    // "someone-else" is never touched, nor is it a reason to leave the run's own behind (found by an outside tester).
    expect(await cleanupStaleRuns({ ip: f.ip }, f.stateDir)).toEqual([`netns ${prefix}-n1`, `netns ${prefix}-op`]);
    expect(f.calls()).toEqual(["netns list", `netns del ${prefix}-n1`, `netns del ${prefix}-op`]);
    expect(fs.existsSync(path.join(f.stateDir, `${prefix}.json`))).toBe(false);
  });

  it("leaves a live run alone, and files that are not a run's state", async () => {
    const f = fakeIp(["uxdp0000bbbb-op"]);
    const me = { role: "owner", pid: process.pid, cmdline: commandLineOf(process.pid), startTime: startTimeOf(process.pid) };
    fs.writeFileSync(path.join(f.stateDir, "uxdp0000bbbb.json"), state("uxdp0000bbbb", { owner: me }));
    // The prefix inside differs from the file's name; a name that is no prefix; broken JSON.
    fs.writeFileSync(path.join(f.stateDir, "uxdp0000cccc.json"), state("uxdp0000dddd"));
    fs.writeFileSync(path.join(f.stateDir, "notours.json"), state("notours"));
    fs.writeFileSync(path.join(f.stateDir, "uxdp0000eeee.json"), "{");
    expect(await cleanupStaleRuns({ ip: f.ip }, f.stateDir)).toEqual([]);
    expect(f.calls()).toEqual([]);
    expect(fs.readdirSync(f.stateDir).sort()).toEqual(["notours.json", "uxdp0000bbbb.json", "uxdp0000cccc.json", "uxdp0000eeee.json"]);
  });

  it("keeps a detached run (the sandbox's) while one of its processes still runs", async () => {
    const f = fakeIp(["uxdp0000ffff-op"]);
    const me = { role: "kube-proxy", pid: process.pid, cmdline: commandLineOf(process.pid), startTime: startTimeOf(process.pid) };
    fs.writeFileSync(path.join(f.stateDir, "uxdp0000ffff.json"), state("uxdp0000ffff", { detached: true, processes: [me] }));
    expect(await cleanupStaleRuns({ ip: f.ip }, f.stateDir)).toEqual([]);
    fs.writeFileSync(path.join(f.stateDir, "uxdp0000ffff.json"), state("uxdp0000ffff", { detached: true, processes: [{ ...me, cmdline: "other" }] }));
    expect(await cleanupStaleRuns({ ip: f.ip }, f.stateDir)).toEqual(["netns uxdp0000ffff-op"]);
  });
});
