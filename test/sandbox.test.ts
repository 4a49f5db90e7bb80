// The sandbox's pieces that need no cluster: stand-in answers, the pulumi version gate, and the
// rule that `down` stops only a process whose command line is still the one recorded.

import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { nextCommands } from "../cli/commands/sandbox";
import { main } from "../cli/main";
import { defaultContractPath, loadContractFile } from "../src/adapters/contract-file";
import { DEFAULT_STATE_DIR } from "../src/adapters/datapath/datapath";
import { liveProcess } from "../src/adapters/own-process";
import { controlPlaneStatus, seedCluster } from "../src/adapters/sandbox/cluster";
import { commandLineOf, isOurs, SANDBOX_ID_VARIABLE, startDetached, stopRecorded } from "../src/adapters/sandbox/processes";
import { announcedPortal, outsideRecordFile, PULUMI_UP_REMEDY, sandboxDown, sandboxStackFile, sandboxStatus, waitUntil } from "../src/adapters/sandbox/sandbox";
import { answer, livePorts, serveStandIns } from "../src/adapters/sandbox/stand-in-servers";
import { atLeast, MIN_PULUMI, parsePulumiVersion } from "../src/adapters/sandbox/toolchain";
import { UserError } from "../src/core/errors";
import { type FakeAnswer, list, startFakeApi } from "./support/fake-api";
import { isAlive } from "./support/processes";

describe("sandbox", () => {
  it("stand-in UIs answer the contract's probe path with the expected status, and a page elsewhere", () => {
    const grafana = { entry: "grafana", url: "http://127.0.0.11:31000", probePath: "/api/health", probeStatus: 200 };
    expect(answer(grafana, "/api/health?x=1")).toEqual({ status: 200, body: "grafana: ok\n" });
    expect(answer({ ...grafana, probeStatus: 401 }, "/api/health").status).toBe(401);
    const page = answer(grafana, "/");
    expect(page.status).toBe(200);
    expect(page.body).toContain("<title>grafana (sandbox stand-in)</title>");
  });

  it("uses a pulumi on PATH only from 3.248 on", () => {
    expect(parsePulumiVersion("v3.250.1\n")).toEqual([3, 250, 1]);
    expect(parsePulumiVersion("unknown")).toBeUndefined();
    expect(atLeast([3, 248, 0], MIN_PULUMI)).toBe(true);
    expect(atLeast([3, 247, 9], MIN_PULUMI)).toBe(false);
    expect(atLeast([4, 0, 0], MIN_PULUMI)).toBe(true);
  });

  it("a process that dies while starting is said at once with its log's last line, not after the timeout (found by an outside tester)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-test-"));
    try {
      const logFile = path.join(dir, "stand-ins.log");
      const started = startDetached(
        "stand-in servers",
        process.execPath,
        ["-e", "console.error(\"Error: Cannot find module '/x/stand-in-servers.js'\"); process.exit(1)"],
        {
          cwd: dir,
          env: process.env,
          logFile,
        },
      );
      // A 600 s timeout: the wait can only end here on the process's exit, which the message names (not the timeout's).
      await expect(waitUntil("the stand-in servers", async () => false, 600_000, { process: started, logFile })).rejects.toThrow(
        /^stand-in servers exited while starting: Error: Cannot find module '\/x\/stand-in-servers\.js'; see .*stand-ins\.log$/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stops a recorded process, and never one whose command line differs from the record", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-test-"));
    const started = startDetached("sleeper", process.execPath, ["-e", "setTimeout(() => {}, 60000)", dir], {
      cwd: dir,
      env: process.env,
      logFile: path.join(dir, "log"),
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(isOurs(started)).toBe(true);
    // Same pid, another command line (a recycled pid): left alone.
    expect(await stopRecorded([{ ...started, cmdline: `${started.cmdline}\0other` }])).toEqual([]);
    expect(isOurs(started)).toBe(true);
    expect(await stopRecorded([started])).toEqual([`sleeper (${started.pid})`]);
    expect(isOurs(started)).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe("sandbox.json is untrusted: down and status signal nothing a record does not prove ours (issue 23, defect 1)", () => {
  const realKill = process.kill.bind(process);
  /** Every signal other than 0 sent through process.kill; sent for real only to `allowed` pids. */
  const sent: [number, string | number | undefined][] = [];
  const allowed = new Set<number>();
  const guard = () =>
    vi.spyOn(process, "kill").mockImplementation((pid: number, signal?: string | number) => {
      if (signal === 0) return realKill(pid, 0);
      sent.push([pid, signal]);
      return allowed.has(pid) ? realKill(pid, signal) : true;
    });
  afterEach(() => {
    vi.restoreAllMocks();
    sent.length = 0;
    allowed.clear();
  });
  const alive = (pid: number) => {
    try {
      realKill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it("stops nothing for pid -1, 0, 1, a foreign live pid, a recycled pid, truncated JSON or wrong types; stops a record that matches", async () => {
    guard();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-state-"));
    const folder = path.join(dir, ".sandbox");
    const id = "0123456789abcdef0123456789abcdef";
    // Started as `up` starts its processes: the sandbox's id in its environment.
    const sleeper = startDetached("sleeper", process.execPath, ["-e", "setTimeout(() => {}, 60000)", dir], {
      cwd: dir,
      env: { ...process.env, [SANDBOX_ID_VARIABLE]: id },
      logFile: path.join(dir, "log"),
    });
    try {
      await new Promise((r) => setTimeout(r, 300));
      expect(isOurs(sleeper)).toBe(true);
      const io = { projectDir: dir, env: { ...process.env, EXPOSURE_SANDBOX_RECORDS: path.join(dir, "records") }, say: () => {} };
      const foreign = fs.readFileSync(`/proc/${process.pid}/cmdline`, "utf8").replace(/\0$/, "");
      const states: [string, string][] = [
        ["pid -1, no command line", JSON.stringify({ processes: [{ role: "x", pid: -1 }] })],
        ["pid -1 with a command line", JSON.stringify({ processes: [{ role: "x", pid: -1, cmdline: "", startTime: "1" }] })],
        ["pid 0", JSON.stringify({ processes: [{ role: "x", pid: 0 }] })],
        ["pid 1", JSON.stringify({ processes: [{ role: "x", pid: 1 }] })],
        [
          "pid 1 with init's command line",
          JSON.stringify({ processes: [{ role: "x", pid: 1, cmdline: fs.readFileSync("/proc/1/cmdline", "utf8").replace(/\0$/, ""), startTime: "1" }] }),
        ],
        ["a foreign live pid with its own command line", JSON.stringify({ processes: [{ role: "x", pid: process.pid, cmdline: foreign }] })],
        ["a foreign live pid, a wrong start time", JSON.stringify({ processes: [{ role: "x", pid: process.pid, cmdline: foreign, startTime: "1" }] })],
        ["the sleeper's pid recycled (another start time)", JSON.stringify({ processes: [{ ...sleeper, startTime: String(Number(sleeper.startTime) + 1) }] })],
        ["the sleeper's pid, another command line", JSON.stringify({ processes: [{ ...sleeper, cmdline: `${sleeper.cmdline}\0x` }] })],
        ["the sleeper's pid, no start time (an older file)", JSON.stringify({ processes: [{ role: "x", pid: sleeper.pid, cmdline: sleeper.cmdline }] })],
        ["truncated JSON", JSON.stringify({ processes: [sleeper] }).slice(0, 40)],
        ["pid as a string", JSON.stringify({ processes: [{ ...sleeper, pid: String(sleeper.pid) }] })],
        ["pid as a float", JSON.stringify({ processes: [{ ...sleeper, pid: sleeper.pid + 0.5 }] })],
        ["processes as a map", JSON.stringify({ processes: { a: sleeper } })],
        ["a null record", JSON.stringify({ processes: [null] })],
        ["a JSON array", "[1,2]"],
      ];
      for (const [name, text] of states) {
        const write = () => {
          fs.mkdirSync(folder, { recursive: true });
          fs.writeFileSync(path.join(folder, "sandbox.json"), text);
        };
        write();
        const down = await sandboxDown(io);
        expect(down.stopped, name).toEqual([]);
        expect(sent, name).toEqual([]);
        expect(alive(sleeper.pid), name).toBe(true);
        write();
        const status = await sandboxStatus(io);
        expect(
          status.processes.filter((p) => p.running),
          name,
        ).toEqual([]);
        expect(status.up, name).toBe(false);
        fs.rmSync(folder, { recursive: true, force: true });
      }
      // The record `up` writes: stopped, and only it.
      allowed.add(sleeper.pid);
      fs.mkdirSync(folder, { recursive: true });
      fs.writeFileSync(path.join(folder, "sandbox.json"), JSON.stringify({ id, folder, processes: [{ role: "y", pid: -1 }, sleeper] }));
      const down = await sandboxDown(io);
      expect(down.stopped).toEqual([`sleeper (${sleeper.pid})`]);
      expect(down.rejected).toEqual(["processes[0]: pid -1 is not a process id (an integer above 1)"]);
      expect(sent.map(([pid]) => pid)).toEqual([sleeper.pid]);
    } finally {
      if (alive(sleeper.pid)) realKill(sleeper.pid, "SIGKILL");
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("status and down say which records they ignored; status is not up", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cli-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    fs.mkdirSync(path.join(dir, ".sandbox"));
    fs.writeFileSync(path.join(dir, ".sandbox", "sandbox.json"), JSON.stringify({ processes: [{ role: "portal", pid: 0 }], portal: "http://192.0.2.1:80/" }));
    const out: string[] = [];
    const err: string[] = [];
    const io = { projectDir: dir, stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t), env: {} };
    try {
      expect(await main(["sandbox", "status"], io)).toBe(1);
      expect(out.join("\n")).toMatch(/^sandbox\.json processes\[0\]: pid 0 is not a process id \(an integer above 1\) +IGNORED$/m);
      // A portal address that is not the sandbox's own is never asked.
      expect(out.join("\n")).toMatch(/^sandbox\.json portal: not a loopback http:\/\/HOST:PORT\/ address +IGNORED$/m);
      expect(await main(["sandbox", "down"], io)).toBe(0);
      expect(err).toContain(
        "exposure sandbox down: ignored sandbox.json processes[0]: pid 0 is not a process id (an integer above 1): nothing signalled for it",
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("sandbox status lists the control plane (issue 23, item 7)", () => {
  /** A sandbox folder whose control plane is `apiserverPid` (etcd long gone) and whose kubeconfig names `server`. */
  function sandboxWith(dir: string, apiserverPid: number, server: string) {
    const cluster = path.join(dir, ".sandbox", "cluster");
    fs.mkdirSync(cluster, { recursive: true });
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    fs.writeFileSync(path.join(cluster, ".e2e-cluster"), "");
    fs.writeFileSync(path.join(cluster, "pids"), `etcd=4194304\nkube-apiserver=${apiserverPid}\n`);
    fs.writeFileSync(path.join(cluster, "starts"), `etcd=1\nkube-apiserver=${liveProcess(apiserverPid)?.startTime ?? ""}\n`);
    fs.writeFileSync(path.join(dir, ".sandbox", "kubeconfig"), `clusters:\n- cluster:\n    server: ${server}\n`);
    fs.writeFileSync(path.join(dir, ".sandbox", "sandbox.json"), JSON.stringify({ processes: [], urls: {}, portal: "" }));
    return cluster;
  }
  /** A live process whose command line names a file of the sandbox's cluster folder. */
  function sleeperNamingCluster(dir: string, role: string, file: string) {
    const cluster = path.join(dir, ".sandbox", "cluster");
    fs.mkdirSync(cluster, { recursive: true });
    return startDetached(role, process.execPath, ["-e", "setTimeout(() => {}, 60000)", path.join(cluster, file)], {
      cwd: dir,
      env: process.env,
      logFile: path.join(dir, "log"),
    });
  }
  const closedPort = () =>
    new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
    });

  it("a dead API server is reported as such, with its process, not as the portal not answering", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cp-"));
    const port = await closedPort();
    // A stand-in for kube-apiserver: its command line names the cluster folder, as the real one's does.
    const apiserver = sleeperNamingCluster(dir, "kube-apiserver", "pki");
    try {
      sandboxWith(dir, apiserver.pid, `https://127.0.0.1:${port}`);
      const out: string[] = [];
      const code = await main(["sandbox", "status"], { projectDir: dir, stdout: (t) => out.push(t), stderr: () => {}, env: {} });
      const text = out.join("\n");
      expect(code).toBe(1);
      expect(text).toMatch(/^etcd \(pid 4194304\) +STOPPED$/m);
      expect(text).toMatch(new RegExp(`^kube-apiserver \\(pid ${apiserver.pid}\\) +running$`, "m"));
      expect(text).toMatch(new RegExp(`^API server https://127\\.0\\.0\\.1:${port} +NO ANSWER \\(connection refused`, "m"));
      expect(text).toContain("sandbox incomplete: the API server does not answer (see .sandbox/cluster/logs/kube-apiserver.log)");
      const json: string[] = [];
      await main(["sandbox", "status", "--json"], { projectDir: dir, stdout: (t) => json.push(t), stderr: () => {}, env: {} });
      const doc = JSON.parse(json.join("\n"));
      // Versioned like every other JSON document of the project (issue 23, item 9).
      expect(doc).toMatchObject({ apiVersion: "ui-exposure.io/v1", kind: "SandboxStatus", up: false });
      expect(doc.controlPlane.apiServer).toMatchObject({ url: `https://127.0.0.1:${port}`, answers: false });
    } finally {
      process.kill(apiserver.pid, "SIGKILL");
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  /**
   * `sandbox status` of a sandbox whose portal (a loopback server) answers the rows `rowsFor(ui)`,
   * `ui` being a loopback UI that answers; its record names `recordedUrl(ui)` as gitea's URL.
   */
  async function statusWithPortal(rowsFor: (ui: string) => unknown[], recordedUrl: (ui: string) => Promise<string>) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cp-"));
    const listening = async (server: http.Server) => {
      await new Promise((r) => server.listen(0, "127.0.0.1", () => r(undefined)));
      return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    };
    const uiServer = http.createServer((_req, res) => res.end("ok"));
    const ui = await listening(uiServer);
    const portalServer = http.createServer((_req, res) => res.end(JSON.stringify({ entries: rowsFor(ui) })));
    const portal = await listening(portalServer);
    try {
      sandboxWith(dir, process.pid, `https://127.0.0.1:${await closedPort()}`);
      const record = { processes: [], urls: { gitea: await recordedUrl(ui) }, portal: `${portal}/` };
      fs.writeFileSync(path.join(dir, ".sandbox", "sandbox.json"), JSON.stringify(record));
      return { ui, status: await sandboxStatus({ projectDir: dir, env: { EXPOSURE_SANDBOX_RECORDS: path.join(dir, "records") }, say: () => {} }) };
    } finally {
      uiServer.close();
      portalServer.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it("checks each entry's URL where it is now (the portal's, after a pulumi up run by hand moved it), not the one recorded at sandbox up (found by an outside tester)", async () => {
    // The UI answers on its new port, which the portal's row gives; the recorded port is closed.
    const { ui, status } = await statusWithPortal(
      (moved) => [{ name: "gitea", verdict: "MATCH", url: moved, reasons: [] }],
      async () => `http://127.0.0.1:${await closedPort()}`,
    );
    expect(status.urls).toEqual([{ entry: "gitea", url: ui, answers: true }]);
    expect(status.problems).toEqual([]);
  });

  it("a nodePort moved by hand: the URL users have (the published one) is checked, not the live one, with the fix that puts it back", async () => {
    const published = `http://127.0.0.1:${await closedPort()}`;
    const { status } = await statusWithPortal(
      (live) => [
        {
          name: "gitea",
          verdict: "DRIFT",
          url: live,
          publishedUrl: published,
          reasons: ["nodePort changed since the last up"],
          findings: [{ code: "node-port-moved" }],
        },
      ],
      async () => published,
    );
    expect(status.urls).toEqual([{ entry: "gitea", url: published, answers: false }]);
    expect(status.problems).toMatchObject([{ entry: "gitea", url: published, answers: false, remedy: PULUMI_UP_REMEDY, repairable: true }]);
  });

  it("a Service not proven ours gets the final fix (delete it, then the sandbox recreates its own), not a pointer to status or to the up that refuses it (found by an outside tester)", async () => {
    const { status } = await statusWithPortal(
      (url) => [
        {
          name: "gitea",
          verdict: "DRIFT",
          url,
          service: "gitea/gitea-nodeport",
          reasons: ["not the Service the last up published"],
          findings: [{ code: "service-not-ours" }],
        },
      ],
      async (url) => url,
    );
    expect(status.problems).toMatchObject([
      {
        entry: "gitea",
        remedy:
          ". .sandbox/env && kubectl -n gitea delete service gitea-nodeport && npm run sandbox (made outside the stack, it is never taken over; pulumi up recreates its own)",
        repairable: false,
      },
    ]);
  });

  it("a selector key the chart dropped is fixed by the sandbox's up; a foreign key is the user's kubectl patch, even next to a drift up fixes (issue 39 #3)", async () => {
    const row = (codes: string[]) => (url: string) => [
      { name: "gitea", verdict: "DRIFT", url, service: "gitea/gitea-nodeport", reasons: ["selector differs"], findings: codes.map((code) => ({ code })) },
    ];
    const dropped = await statusWithPortal(row(["selector-key-dropped-by-chart"]), async (url) => url);
    expect(dropped.status.problems).toMatchObject([{ entry: "gitea", remedy: PULUMI_UP_REMEDY, repairable: true }]);
    // pulumi up refuses while a foreign key is there: its fix comes first.
    const foreign = await statusWithPortal(row(["selector-key-added", "selector-key-dropped-by-chart", "node-port-moved"]), async (url) => url);
    expect(foreign.status.problems).toMatchObject([
      {
        entry: "gitea",
        remedy: "the kubectl patch in its reason (exposure status --stack sandbox, after . .sandbox/env), then npm run sandbox",
        repairable: false,
      },
    ]);
  });

  it("a decoy naming the cluster folder is not the control plane: status says STOPPED and the script's stop never signals it (found by an outside tester)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cp-"));
    // Like `tail -f .sandbox/cluster/logs/etcd.log`: its command line names the folder.
    const decoy = sleeperNamingCluster(dir, "decoy", "logs");
    try {
      const cluster = sandboxWith(dir, decoy.pid, "https://127.0.0.1:6443");
      // Its pid written in place of the controller manager's, with another start time; and as a second apiserver line.
      fs.appendFileSync(path.join(cluster, "pids"), `kube-controller-manager=${decoy.pid}\n`);
      fs.appendFileSync(path.join(cluster, "starts"), "kube-controller-manager=1\n");
      const forged = await controlPlaneStatus(cluster, path.join(dir, ".sandbox", "kubeconfig"), async () => ({ status: 200 }));
      expect(forged?.processes.find((p) => p.role === "kube-controller-manager")).toEqual({ role: "kube-controller-manager", pid: decoy.pid, running: false });
      fs.appendFileSync(path.join(cluster, "pids"), `kube-apiserver=${decoy.pid}\n`);
      const twice = await controlPlaneStatus(cluster, path.join(dir, ".sandbox", "kubeconfig"), async () => ({ status: 200 }));
      expect(twice?.processes.find((p) => p.role === "kube-apiserver")?.running).toBe(false);
      const stop = spawnSync(path.join(__dirname, "../scripts/e2e-cluster.sh"), ["stop", cluster], { encoding: "utf8", env: { ...process.env, E2E_BIN: dir } });
      expect(stop.status, stop.stderr).toBe(0);
      expect(isAlive(decoy.pid)).toBe(true);
    } finally {
      process.kill(decoy.pid, "SIGKILL");
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a process is running only when its command line names the cluster folder; only a loopback API server is asked", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cp-"));
    try {
      // Our own pid stands for an unrelated live process that reuses a recorded pid.
      const cluster = sandboxWith(dir, process.pid, "https://127.0.0.1:6443");
      const asked: string[] = [];
      const ready = await controlPlaneStatus(cluster, path.join(dir, ".sandbox", "kubeconfig"), async (url) => {
        asked.push(url.href);
        return { status: 200 };
      });
      expect(ready).toEqual({
        processes: [
          { role: "etcd", pid: 4194304, running: false },
          { role: "kube-apiserver", pid: process.pid, running: false },
        ],
        apiServer: { url: "https://127.0.0.1:6443", answers: true, detail: "ready" },
      });
      expect(asked).toEqual(["https://127.0.0.1:6443/readyz"]);
      fs.writeFileSync(path.join(dir, ".sandbox", "kubeconfig"), "clusters:\n- cluster:\n    server: https://192.0.2.1:6443\n");
      const elsewhere = await controlPlaneStatus(cluster, path.join(dir, ".sandbox", "kubeconfig"), async (url) => {
        asked.push(url.href);
        return { status: 200 };
      });
      expect(elsewhere?.apiServer).toMatchObject({ answers: false, detail: "no loopback https:// server in the sandbox kubeconfig" });
      expect(asked).toHaveLength(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("exposure sandbox (no sandbox running)", () => {
  const run = async (argv: string[]) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cli-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(argv, { projectDir: dir, stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {} });
    fs.rmSync(dir, { recursive: true, force: true });
    return { code, out, err };
  };

  it("refuses a missing or unknown action with the usage (exit 2)", async () => {
    expect(await run(["sandbox"])).toMatchObject({
      code: 2,
      err: [
        "exposure sandbox: name the action: up, status or down\nusage: exposure sandbox up|status|down [--json] [--monitoring] [--second]\n(`exposure sandbox --help` describes every flag)",
      ],
    });
    expect((await run(["sandbox", "start"])).code).toBe(2);
  });

  it("status says there is none (exit 1); down has nothing to stop (exit 0)", async () => {
    const status = await run(["sandbox", "status"]);
    expect(status.code).toBe(1);
    expect(status.out[0]).toMatch(/^no sandbox in .*\.sandbox \(start one with: npm run sandbox\)$/);
    const down = await run(["sandbox", "down"]);
    expect(down.code).toBe(0);
    expect(down.out[0]).toMatch(/^no sandbox in /);
    const json = await run(["sandbox", "down", "--json"]);
    expect(JSON.parse(json.out.join("\n"))).toMatchObject({ apiVersion: "ui-exposure.io/v1", kind: "SandboxDown", removed: false, stopped: [] });
  });
});

describe("the forwarder follows the live cluster (stand-in-servers with follow)", () => {
  it("livePorts: the live nodePort while an endpoint is ready, nothing once the Service is gone or unready", () => {
    const live = [
      { entry: "argocd", nodePort: 31001, readyEndpoints: 1 },
      { entry: "grafana", nodePort: 31002, readyEndpoints: 0 },
    ];
    expect([...livePorts(["argocd", "grafana", "gitea"], live)]).toEqual([
      ["argocd", 31001],
      ["grafana", undefined],
      ["gitea", undefined],
    ]);
  });

  it("a moved nodePort answers on the new port and no longer on the old one; a deleted Service stops answering", async () => {
    const free = () =>
      new Promise<number>((resolve) => {
        const s = net.createServer().listen(0, "127.0.0.1", () => {
          const p = (s.address() as net.AddressInfo).port;
          s.close(() => resolve(p));
        });
      });
    // Loopback ports stand for nodePorts here: the follow loop takes any port the cluster says.
    const [published, moved] = [await free(), await free()];
    const svc = (nodePort: number) => ({
      metadata: { name: "argocd-nodeport", namespace: "argocd", labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" } },
      spec: { type: "NodePort", ports: [{ name: "http", port: 80, nodePort }] },
    });
    const slice = {
      metadata: { name: "s", namespace: "argocd", labels: { "kubernetes.io/service-name": "argocd-nodeport" } },
      endpoints: [{ addresses: ["10.0.0.1"], conditions: { ready: true } }],
    };
    const answers: Record<string, FakeAnswer> = {
      "/api/v1/services": list("ServiceList", [svc(moved)]),
      "/apis/discovery.k8s.io/v1/endpointslices": list("EndpointSliceList", [slice]),
    };
    const api = await startFakeApi(answers);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "standin-follow-"));
    fs.writeFileSync(path.join(dir, "kubeconfig"), api.kubeconfig);
    const standIn = { entry: "argocd", url: `http://127.0.0.1:${published}`, probePath: "/healthz", probeStatus: 200 };
    const served = await serveStandIns({ standIns: [standIn], follow: { kubeconfig: path.join(dir, "kubeconfig"), intervalMs: 50 } });
    const answersOn = (port: number) =>
      fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status,
        () => 0,
      );
    const until = async (fn: () => Promise<boolean>) => {
      for (let i = 0; i < 100 && !(await fn()); i++) await new Promise((r) => setTimeout(r, 50));
      return fn();
    };
    try {
      expect(await until(async () => (await answersOn(moved)) === 200 && (await answersOn(published)) === 0)).toBe(true);
      answers["/api/v1/services"] = list("ServiceList", []);
      expect(await until(async () => (await answersOn(moved)) === 0)).toBe(true);
    } finally {
      await served.stop();
      await api.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the sandbox's portal address", () => {
  it("is the one its own portal process announced after it started (port 0, --json), never a port picked earlier (found by an outside tester)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-portal-"));
    try {
      const log = path.join(dir, "portal.log");
      // A previous portal's line, before this start's offset, counts for nothing.
      fs.writeFileSync(log, '{"apiVersion":"ui-exposure/v1","kind":"Portal","url":"http://127.0.0.1:1111/"}\n');
      const from = fs.statSync(log).size;
      expect(announcedPortal(log, from)).toBeUndefined();
      fs.appendFileSync(log, "portal: reading the cluster\n");
      fs.appendFileSync(log, '{"apiVersion":"ui-exposure/v1","kind":"Portal","url":"http://10.0.0.1:8080/"}\n');
      expect(announcedPortal(log, from)).toBeUndefined();
      fs.appendFileSync(log, '{"apiVersion":"ui-exposure/v1","kind":"Portal","url":"http://127.0.0.1:40123/","source":"context sandbox","stack":"sandbox"}\n');
      expect(announcedPortal(log, from)).toBe("http://127.0.0.1:40123/");
      expect(announcedPortal(path.join(dir, "none.log"))).toBeUndefined();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("sandbox down proves what a record names is this sandbox's, and finds it without .sandbox/", () => {
  const realKill = process.kill.bind(process);
  const sent: number[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    sent.length = 0;
  });
  /** Signals are recorded and sent for real (the sleepers are the test's own). */
  const spy = () =>
    vi.spyOn(process, "kill").mockImplementation((pid: number, signal?: string | number) => {
      if (signal !== 0) sent.push(pid);
      return realKill(pid, signal);
    });
  const id = "fedcba9876543210fedcba9876543210";
  const sleeperIn = (dir: string, env: NodeJS.ProcessEnv) =>
    startDetached("sleeper", process.execPath, ["-e", "setTimeout(() => {}, 60000)", dir], { cwd: dir, env, logFile: path.join(dir, "log") });
  /** Until each process runs its own program (its command line and environment are read from /proc): waited for, not slept on. */
  const execed = async (...ps: { pid: number; cmdline: string }[]) => {
    for (const p of ps) while (commandLineOf(p.pid) !== p.cmdline) await new Promise((r) => setTimeout(r, 10));
  };
  const project = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-proof-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    const env = { ...process.env, EXPOSURE_SANDBOX_RECORDS: path.join(dir, "records") };
    return { dir, folder: path.join(dir, ".sandbox"), env, io: { projectDir: dir, env, say: () => {} } };
  };
  /**
   * A project for `body`, which starts its sleepers with `sleeper(sandboxId)` (no id: started
   * without the sandbox's id), each running its program when returned; then each is killed and
   * the project removed.
   */
  const withProject = async (
    body: (p: ReturnType<typeof project>, sleeper: (sandboxId?: string) => Promise<ReturnType<typeof sleeperIn>>) => Promise<void>,
  ) => {
    const p = project();
    const started: { pid: number }[] = [];
    try {
      await body(p, async (sandboxId) => {
        const s = sleeperIn(p.dir, sandboxId === undefined ? process.env : { ...process.env, [SANDBOX_ID_VARIABLE]: sandboxId });
        started.push(s);
        await execed(s);
        return s;
      });
    } finally {
      for (const s of started) if (isAlive(s.pid)) realKill(s.pid, "SIGKILL");
      fs.rmSync(p.dir, { recursive: true, force: true });
    }
  };
  /** Until `pid` is gone, for 5 s at most (a stopped process takes a moment to exit). */
  const exited = async (pid: number) => {
    for (let i = 0; i < 50 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  };

  it("two sandbox commands in one folder never run at once: the second stops, naming the first, which it never signals; a dead holder's lock is replaced", () =>
    withProject(async (p, sleeper) => {
      const holder = await sleeper();
      const lock = outsideRecordFile(p.dir, p.env).replace(/\.json$/, ".lock");
      fs.mkdirSync(path.dirname(lock), { recursive: true });
      fs.writeFileSync(lock, JSON.stringify({ pid: holder.pid, startTime: liveProcess(holder.pid)?.startTime }));
      spy();
      await expect(sandboxDown(p.io)).rejects.toThrow(`another sandbox command (pid ${holder.pid}) runs for ${p.dir}: nothing done`);
      expect(sent).toEqual([]);
      expect(isAlive(holder.pid)).toBe(true);
      expect(fs.existsSync(lock)).toBe(true);
      // The holder gone (a killed command), or a lock that is not one: replaced, then released.
      realKill(holder.pid, "SIGKILL");
      while (isAlive(holder.pid)) await new Promise((r) => setTimeout(r, 10));
      expect((await sandboxDown(p.io)).stopped).toEqual([]);
      expect(fs.existsSync(lock)).toBe(false);
      fs.writeFileSync(lock, "{not json");
      expect((await sandboxDown(p.io)).stopped).toEqual([]);
      expect(fs.existsSync(lock)).toBe(false);
    }));

  it("six commands racing for the lock 150 times each never hold it together (it appears whole, a stale one is replaced only while still stale; found by an outside tester)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-lock-race-"));
    try {
      const log = path.join(dir, "log");
      fs.writeFileSync(log, "");
      const tsx = require.resolve("tsx/cjs");
      const racers = Array.from({ length: 6 }, () =>
        spawn(process.execPath, ["--require", tsx, path.join(__dirname, "support/sandbox-locker.ts"), dir, path.join(dir, "records"), log, "150"], {
          stdio: ["ignore", "pipe", "inherit"],
        }),
      );
      const held = await Promise.all(
        racers.map(
          (c) =>
            new Promise<number>((resolve, reject) => {
              let out = "";
              c.stdout.on("data", (d: Buffer) => {
                out += d.toString();
              });
              c.on("exit", (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`racer exited ${code}`))));
            }),
        ),
      );
      let depth = 0;
      let overlaps = 0;
      const lines = fs.readFileSync(log, "utf8").trim().split("\n");
      for (const line of lines) {
        depth += line.startsWith("+") ? 1 : -1;
        if (depth > 1) overlaps++;
      }
      expect(overlaps).toBe(0);
      expect(lines.length).toBe(2 * held.reduce((a, b) => a + b, 0));
      expect(held.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("a lock that cannot be taken (its folder not writable) is one line, nothing done", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-lock-"));
    try {
      fs.writeFileSync(path.join(dir, "records"), "a file where the records folder goes");
      const io = { projectDir: dir, env: { ...process.env, EXPOSURE_SANDBOX_RECORDS: path.join(dir, "records", "inner") }, say: () => {} };
      await expect(sandboxDown(io)).rejects.toThrow(
        new UserError(`cannot take the sandbox's lock ${outsideRecordFile(dir, io.env).replace(/\.json$/, ".lock")}: ENOTDIR; nothing done`),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("down lists as stopped only the control plane's processes it stopped, not those already dead (found by a new user)", () =>
    withProject(async (p) => {
      const cluster = path.join(p.folder, "cluster");
      fs.mkdirSync(cluster, { recursive: true });
      fs.writeFileSync(path.join(cluster, ".e2e-cluster"), "");
      fs.symlinkSync(path.resolve(__dirname, "../scripts"), path.join(p.dir, "scripts"));
      // etcd still runs (its command line names the folder, as the script starts it); the API server is already dead.
      const etcd = startDetached("etcd", process.execPath, ["-e", "setTimeout(() => {}, 60000)", cluster], {
        cwd: p.dir,
        env: p.env,
        logFile: path.join(p.dir, "log"),
      });
      const dead = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
      try {
        await execed(etcd);
        fs.writeFileSync(path.join(cluster, "pids"), `etcd=${etcd.pid}\nkube-apiserver=${dead.stdout.trim()}\n`);
        fs.writeFileSync(path.join(cluster, "starts"), `etcd=${etcd.startTime}\nkube-apiserver=1\n`);
        fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, bin: "/nonexistent", processes: [] }));
        const down = await sandboxDown(p.io);
        expect(down.stopped).toEqual([`etcd (${etcd.pid})`]);
        await exited(etcd.pid);
        expect(isAlive(etcd.pid)).toBe(false);
      } finally {
        if (isAlive(etcd.pid)) realKill(etcd.pid, "SIGKILL");
      }
    }));

  it("a record copying a foreign process's command line and start time signals nothing (found by an outside tester)", () =>
    withProject(async (p, sleeper) => {
      // Another program of this user, started without the sandbox's id: its pid, start time and
      // command line copied into a well-formed record.
      const foreign = await sleeper();
      fs.mkdirSync(p.folder);
      fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, processes: [{ ...foreign, role: "portal" }] }));
      spy();
      const status = await sandboxStatus(p.io);
      expect(status.processes).toEqual([{ role: "portal", pid: foreign.pid, running: false }]);
      const down = await sandboxDown(p.io);
      expect(down.stopped).toEqual([]);
      expect(sent).toEqual([]);
      expect(isAlive(foreign.pid)).toBe(true);
    }));

  it("a datapath-run naming another run (not this sandbox's) stops none of that run's processes (found by an outside tester)", () =>
    withProject(async (p, sleeper) => {
      const other = await sleeper();
      const prefix = `uxdp${Math.floor(Math.random() * 0xffffffff)
        .toString(16)
        .padStart(8, "0")}`;
      const stateFile = path.join(DEFAULT_STATE_DIR, `${prefix}.json`);
      try {
        // Another run's state, as a test's data path writes it (no owner tag of this sandbox).
        fs.mkdirSync(DEFAULT_STATE_DIR, { recursive: true, mode: 0o700 });
        fs.writeFileSync(
          stateFile,
          JSON.stringify({
            version: 1,
            prefix,
            owner: { ...other, role: "owner" },
            detached: true,
            namespaces: [`${prefix}-n1`],
            processes: [{ ...other, role: "kube-proxy" }],
          }),
        );
        fs.mkdirSync(p.folder);
        fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, processes: [] }));
        fs.writeFileSync(path.join(p.folder, "datapath-run"), prefix);
        spy();
        const down = await sandboxDown(p.io);
        expect(down.stopped).toEqual([]);
        expect(sent).toEqual([]);
        expect(isAlive(other.pid)).toBe(true);
        expect(fs.existsSync(stateFile)).toBe(true);
      } finally {
        fs.rmSync(stateFile, { force: true });
      }
    }));

  it("after rm -rf .sandbox, status points at the record kept outside the work tree and down stops what it names (found by an outside tester)", () =>
    withProject(async (p, sleeper) => {
      const ours = await sleeper(id);
      // What `up` writes: the same record in the folder and outside the work tree.
      const record = JSON.stringify({ id, folder: p.folder, processes: [{ ...ours, role: "portal" }], controlPlane: [] });
      const outside = outsideRecordFile(p.dir, p.env);
      expect(outside.startsWith(path.join(p.dir, "records"))).toBe(true);
      fs.mkdirSync(path.dirname(outside), { recursive: true });
      fs.writeFileSync(outside, record);
      fs.mkdirSync(p.folder);
      fs.writeFileSync(path.join(p.folder, "sandbox.json"), record);
      fs.rmSync(p.folder, { recursive: true, force: true });
      const out: string[] = [];
      const ctx = { projectDir: p.dir, stdout: (t: string) => out.push(t), stderr: () => {}, env: p.env };
      expect(await main(["sandbox", "status"], ctx)).toBe(1);
      expect(out.join("\n")).toContain(`sandbox folder gone, its processes still recorded in ${outside}: exposure sandbox down stops them`);
      out.length = 0;
      expect(await main(["sandbox", "down"], ctx)).toBe(0);
      expect(out.join("\n")).toContain(`portal (${ours.pid})`);
      await exited(ours.pid);
      expect(isAlive(ours.pid)).toBe(false);
      expect(fs.existsSync(outside)).toBe(false);
    }));

  it("down also stops what a killed command of the sandbox left (a provider reparented to init): any process carrying its id", () =>
    withProject(async (p, sleeper) => {
      // Not in any record: as the provider of a pulumi up killed half-way.
      const stray = await sleeper(id);
      const other = await sleeper("00000000000000000000000000000000");
      fs.mkdirSync(p.folder);
      fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, processes: [] }));
      const down = await sandboxDown(p.io);
      expect(down.stopped).toEqual([`${path.basename(process.execPath)} (${stray.pid})`]);
      await exited(stray.pid);
      expect(isAlive(stray.pid)).toBe(false);
      // Another sandbox's process is left alone.
      expect(isAlive(other.pid)).toBe(true);
    }));

  it("down stops the orphaned provider of a pulumi up run by hand in the sandbox's environment (its PULUMI_HOME), and no other (found by an outside tester)", () =>
    withProject(async (p) => {
      const bin = path.join(p.dir, "bin");
      fs.mkdirSync(bin);
      for (const name of ["pulumi", "pulumi-resource-kubernetes"]) fs.symlinkSync(process.execPath, path.join(bin, name));
      const home = (folder: string) => ({ ...process.env, PULUMI_HOME: path.join(folder, "pulumi-home") });
      const started: number[] = [];
      const start = async (program: string, args: string[], env: NodeJS.ProcessEnv) => {
        const child = spawn(path.join(bin, program), args, { env, stdio: "ignore", detached: true });
        started.push(child.pid as number);
        while (!commandLineOf(child.pid as number)?.includes("60000")) await new Promise((r) => setTimeout(r, 10));
        return child.pid as number;
      };
      const sleep = ["-e", "setTimeout(() => {}, 60000)"];
      try {
        // Its pulumi gone (its parent is no pulumi): stopped.
        const orphan = await start("pulumi-resource-kubernetes", sleep, home(p.folder));
        // Another folder's Pulumi home: left alone.
        const foreign = await start("pulumi-resource-kubernetes", sleep, home("/elsewhere/.sandbox"));
        // A pulumi still running it (an up in progress in another shell): left alone.
        const script = `require("node:child_process").spawn(${JSON.stringify(path.join(bin, "pulumi-resource-kubernetes"))}, ${JSON.stringify(sleep)}, { stdio: "ignore" }); setTimeout(() => {}, 60000)`;
        const pulumi = await start("pulumi", ["-e", script], home(p.folder));
        let child: number | undefined;
        while (child === undefined) {
          child = fs
            .readdirSync("/proc")
            .filter((e) => /^\d+$/.test(e))
            .map(Number)
            .find((pid) => {
              try {
                return (
                  fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[1] === String(pulumi) &&
                  commandLineOf(pid)?.includes("60000") === true
                );
              } catch {
                return false;
              }
            });
          if (child === undefined) await new Promise((r) => setTimeout(r, 10));
        }
        started.push(child);
        fs.mkdirSync(p.folder, { recursive: true });
        fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, processes: [] }));
        const down = await sandboxDown(p.io);
        expect(down.stopped).toEqual([`pulumi-resource-kubernetes (${orphan})`]);
        await exited(orphan);
        expect(isAlive(orphan)).toBe(false);
        for (const pid of [foreign, pulumi, child]) expect(isAlive(pid)).toBe(true);
      } finally {
        for (const pid of started) if (isAlive(pid)) realKill(pid, "SIGKILL");
      }
    }));

  it("a record naming another folder is not this sandbox's: nothing of it is signalled", () =>
    withProject(async (p, sleeper) => {
      const ours = await sleeper(id);
      // Another project's record (copied here, or its outside-the-tree file) names its own folder.
      fs.mkdirSync(p.folder);
      fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: "/elsewhere/.sandbox", processes: [{ ...ours, role: "portal" }] }));
      spy();
      const status = await sandboxStatus(p.io);
      expect(status.rejected).toEqual([`${path.join(p.folder, "sandbox.json")}: the record of another folder (/elsewhere/.sandbox)`]);
      const down = await sandboxDown(p.io);
      expect(down.stopped).toEqual([]);
      expect(sent).toEqual([]);
      expect(isAlive(ours.pid)).toBe(true);
      // The record outside the work tree (after rm -rf .sandbox) naming another folder is kept: it
      // is all that could find what it names (found by an outside tester: down deleted it).
      const outside = outsideRecordFile(p.dir, p.env);
      fs.mkdirSync(path.dirname(outside), { recursive: true });
      fs.writeFileSync(outside, JSON.stringify({ id, folder: "/elsewhere/.sandbox", processes: [{ ...ours, role: "portal" }] }));
      const again = await sandboxDown(p.io);
      expect(again.stopped).toEqual([]);
      expect(sent).toEqual([]);
      expect(fs.existsSync(outside)).toBe(true);
      expect(again.kept).toEqual([`${outside} (it names another folder: nothing it names was stopped; check it, then remove it by hand)`]);
    }));

  it("down names the other stacks whose state goes with the sandbox's backend, and removes only the stack file it wrote", async () => {
    const p = project();
    try {
      fs.mkdirSync(path.join(p.folder, "state/.pulumi/stacks/ui-exposure"), { recursive: true });
      for (const s of ["sandbox", "mine"]) fs.writeFileSync(path.join(p.folder, `state/.pulumi/stacks/ui-exposure/${s}.json`), "{}");
      fs.writeFileSync(path.join(p.dir, "Pulumi.mine.yaml"), "config: {}\n");
      const written = "# Generated by `exposure sandbox up` (git-ignored); removed by `exposure sandbox down`.\nconfig: {}\n";
      fs.writeFileSync(path.join(p.dir, "Pulumi.sandbox.yaml"), written);
      const sha = (await import("node:crypto")).createHash("sha256").update(written).digest("hex");
      const write = (text: string) => {
        fs.mkdirSync(p.folder, { recursive: true });
        fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, processes: [], stackFileSha256: sha }));
        fs.writeFileSync(path.join(p.dir, "Pulumi.sandbox.yaml"), text);
      };
      // Edited since: the user's now, left in place (and said).
      write(`${written}# mine\n`);
      const out: string[] = [];
      const ctx = { projectDir: p.dir, stdout: (t: string) => out.push(t), stderr: () => {}, env: p.env };
      expect(await main(["sandbox", "down"], ctx)).toBe(0);
      expect(out.join("\n").replace(/\([^()]*\.sandbox\/state\)/, "(.sandbox/state)")).toContain(
        "also removed with the sandbox's backend (.sandbox/state): the state of stack mine",
      );
      expect(out.join("\n")).toContain("left in place: Pulumi.mine.yaml (not written by the sandbox)");
      expect(out.join("\n")).toContain("left in place: Pulumi.sandbox.yaml (changed since the sandbox wrote it)");
      expect(fs.existsSync(path.join(p.dir, "Pulumi.mine.yaml"))).toBe(true);
      expect(fs.existsSync(path.join(p.dir, "Pulumi.sandbox.yaml"))).toBe(true);
      // Exactly as written: removed.
      write(written);
      expect(await main(["sandbox", "down"], ctx)).toBe(0);
      expect(fs.existsSync(path.join(p.dir, "Pulumi.sandbox.yaml"))).toBe(false);
    } finally {
      fs.rmSync(p.dir, { recursive: true, force: true });
    }
  });

  it("down removes the second stack's file (up --second) while it is the one written, its state not told as another stack's", async () => {
    const p = project();
    try {
      fs.mkdirSync(path.join(p.folder, "state/.pulumi/stacks/ui-exposure"), { recursive: true });
      for (const s of ["sandbox", "sandbox-second"]) fs.writeFileSync(path.join(p.folder, `state/.pulumi/stacks/ui-exposure/${s}.json`), "{}");
      const written = "# Generated by `exposure sandbox up` (git-ignored); removed by `exposure sandbox down`.\nconfig: {}\n";
      const sha = (await import("node:crypto")).createHash("sha256").update(written).digest("hex");
      const write = (text: string) => {
        fs.mkdirSync(p.folder, { recursive: true });
        fs.writeFileSync(path.join(p.folder, "sandbox.json"), JSON.stringify({ id, folder: p.folder, processes: [], second: { stackFileSha256: sha } }));
        fs.writeFileSync(path.join(p.dir, "Pulumi.sandbox-second.yaml"), text);
      };
      const out: string[] = [];
      const ctx = { projectDir: p.dir, stdout: (t: string) => out.push(t), stderr: () => {}, env: p.env };
      write(`${written}# mine\n`);
      expect(await main(["sandbox", "down"], ctx)).toBe(0);
      expect(out.join("\n")).toContain("left in place: Pulumi.sandbox-second.yaml (changed since the sandbox wrote it)");
      expect(out.join("\n")).not.toContain("the state of stack");
      write(written);
      expect(await main(["sandbox", "down"], ctx)).toBe(0);
      expect(fs.existsSync(path.join(p.dir, "Pulumi.sandbox-second.yaml"))).toBe(false);
    } finally {
      fs.rmSync(p.dir, { recursive: true, force: true });
    }
  });
});

describe("the sandbox stack file (issue 27 #5: its portal entry answered with a stand-in's text)", () => {
  it("the second stack (up --second) names its own kubeconfig and context", () => {
    const text = sandboxStackFile(path.resolve(__dirname, ".."), { kubeconfig: "/p/.sandbox/kubeconfig-cluster-second" });
    expect(text).toContain('config:\n  kubernetes:kubeconfig: "/p/.sandbox/kubeconfig-cluster-second"\n  kubernetes:context: sandbox-second\n');
  });

  it("selects every exposed entry but the one mirroring the in-cluster portal, which the sandbox does not run", () => {
    const projectDir = path.resolve(__dirname, "..");
    const text = sandboxStackFile(projectDir);
    expect(text).toContain("  ui-exposure:entries:\n    - argocd\n");
    expect(text).not.toMatch(/- portal$/m);
    expect(text).not.toContain("entries: all");
    const entries = [...text.matchAll(/^ {4}- (\S+)$/gm)].map((m) => m[1]);
    expect(entries).toEqual(["argocd", "grafana", "gitea", "dagster", "mlflow", "marquez-web", "k8s-dashboard"]);
  });
});

describe("seedCluster creates only what is missing", () => {
  it("a second run creates just the deleted objects (cilium-config and a credential Secret among them), named, and replaces nothing", async () => {
    const contract = loadContractFile(defaultContractPath(path.resolve(__dirname, "..")));
    // Everything exists (409) but what was deleted by hand: grafana's credential Secret and cilium-config.
    const api = await startFakeApi(
      {
        "/api/v1/namespaces/kube-system/configmaps": { status: 201, body: { kind: "ConfigMap", apiVersion: "v1", metadata: { name: "cilium-config" } } },
        "/api/v1/namespaces/monitoring/secrets": {
          status: 201,
          body: { kind: "Secret", apiVersion: "v1", metadata: { name: "kube-prometheus-stack-grafana" } },
        },
      },
      { otherwise: { status: 409, body: { kind: "Status", apiVersion: "v1", status: "Failure", reason: "AlreadyExists", code: 409 } } },
    );
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "seed-"));
    try {
      const kubeconfig = path.join(dir, "kubeconfig");
      fs.writeFileSync(kubeconfig, api.kubeconfig, { mode: 0o600 });
      const created = await seedCluster(
        kubeconfig,
        contract,
        contract.endpoints.filter((e) => e.exposed),
      );
      expect(created).toEqual(["Secret monitoring/kube-prometheus-stack-grafana", "ConfigMap kube-system/cilium-config"]);
      // Creates only: every request goes to a collection, none to an existing object (no replace, no patch).
      expect(api.requests.length).toBeGreaterThan(0);
      for (const r of api.requests)
        expect(r).toMatch(/^\/api(s\/apps)?\/v1\/(namespaces|namespaces\/[^/]+\/(services|deployments|secrets|configmaps|serviceaccounts))$/);
    } finally {
      await api.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("sandbox up's next commands", () => {
  it("put every comment in one column, whatever the sandbox folder's name (a new user's finding)", () => {
    for (const envFile of [".sandbox/env", "../some/longer/path/.sandbox/env"]) {
      const lines = nextCommands(envFile);
      expect(lines[0]).toMatch(new RegExp(`^  \\. ${envFile.replaceAll(".", "\\.")} +# kubeconfig, state, passphrase, pulumi on PATH$`));
      expect(new Set(lines.map((l) => l.indexOf("#"))).size).toBe(1);
    }
  });
});
