// Issue 21: Cilium's eBPF kube-proxy replacement serves the published URLs. The real chart
// (the Go module's install/kubernetes/cilium, same version as the agent) is installed by
// `pulumi up` of an l4 stack; the agent, built from the same module, runs as a process on a
// node network namespace with the cilium-config that release put in the cluster
// (scripts/e2e-cilium.sh; cilium-operator cannot be built here, see docs/e2e.md); pods get
// their veth and endpoint from cilium-cni, as a kubelet would have them. No kube-proxy runs
// anywhere. Needs root, BPF and the opt-in
// toolchain stage (E2E_CILIUM=1 scripts/e2e-toolchain.sh); otherwise the suite says why it
// is skipped.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  addNodes,
  adoptRetainedCilium,
  type Cluster,
  EXAMPLE_UIS,
  makeSandbox,
  projectDir,
  providerVersions,
  type Sandbox,
  startCluster,
  toolchainBin,
} from "../support/harness";

const SCRIPT = path.join(projectDir, "scripts/e2e-cilium.sh");
const NODE = { name: "e2e-cilium-node", ip: "198.18.0.11", ready: true };
const CLIENT_IP = "198.18.0.2";
const POD_CIDR = "198.19.0.0/24";
/** gitea's pod also declares this hostPort (Cilium serves hostPorts with kube-proxy replacement). */
const HOST_PORT = 8081;
const podIPs = new Map<string, string>();
/** What the run saw, written to test-output/cilium-datapath.json for docs/cilium.md. */
const proof: Record<string, string> = {};
/** Where the agent reaches the API server inside the node namespace (a relay; see the script). */
const API = { host: "127.0.0.1", port: 6443 };
// Their pod IPs are cilium-cni's, not EXAMPLE_UIS' (set when each pod gets its endpoint).
const UIS = (["argocd", "gitea", "grafana"] as const).map((entry) => {
  const { podIP: _podIP, ...ui } = EXAMPLE_UIS[entry];
  return { entry, ...ui };
});

function why(): string | undefined {
  let bin: string;
  try {
    bin = toolchainBin();
  } catch (err) {
    return `no toolchain: ${(err as Error).message}`;
  }
  const r = spawnSync(SCRIPT, ["check"], { encoding: "utf8", env: { ...process.env, E2E_BIN: bin } });
  return r.status === 0 ? undefined : r.stdout.trim() || r.stderr.trim() || `e2e-cilium.sh check exited ${r.status}`;
}
const skipReason = why();
const dots = (ip: string) => ip.replace(/\./g, "\\.");
/** A `cilium-dbg service list` row: frontend, type, then the backend (pod IP:port). */
const nodePortRow = (port: string | number, backendIP: string, type = "NodePort") =>
  new RegExp(`(?:0\\.0\\.0\\.0|${dots(NODE.ip)}):${port}/TCP\\s+${type}\\s+\\d+ => ${dots(backendIP)}:\\d+/TCP \\(active\\)`);
if (skipReason) console.warn(`SKIPPED: Cilium data path e2e: ${skipReason}`);

const sh = (args: string[], env: NodeJS.ProcessEnv, timeout = 120_000) => {
  const r = spawnSync(SCRIPT, args, { encoding: "utf8", env, timeout, maxBuffer: 16 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
};
const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs: number, detail: () => string = () => ""): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}\n${detail()}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const TITLE = "e2e: Cilium's eBPF kube-proxy replacement serves the published URLs";
describe.skipIf(skipReason !== undefined).sequential(skipReason ? `SKIPPED (${skipReason}): ${TITLE}` : TITLE, () => {
  let bin: string;
  let cluster: Cluster;
  let sandbox: Sandbox;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const agentLog = () => {
    try {
      return fs.readFileSync(path.join(dir, "node/logs/agent.log"), "utf8").split("\n").slice(-60).join("\n");
    } catch {
      return "(no agent log)";
    }
  };

  const agentAlive = () => {
    const pid = /^agent=(\d+)$/m.exec(fs.readFileSync(path.join(dir, "node/pids"), "utf8"))?.[1];
    return pid !== undefined && fs.existsSync(`/proc/${pid}`);
  };

  /** What `url` answers to curl in the client namespace (retried until it answers): `entry`'s pod. */
  async function entryAnswers(entry: string, url: string, what: string): Promise<string> {
    const r = await waitFor(
      what,
      () => {
        const c = sh(["exec", path.join(dir, "node"), "client", "curl", "-sS", "-m", "5", url], env, 30_000);
        return c.code === 0 ? c : undefined;
      },
      60_000,
    );
    expect(r.stdout).toMatch(new RegExp(`^${entry} pod `));
    return r.stdout;
  }

  function l4Stack(mode: "l4" | "cohabit" = "l4") {
    return {
      "kubernetes:context": "e2e",
      "ui-exposure:entries": UIS.map((u) => u.entry),
      "ui-exposure:cilium":
        mode === "cohabit"
          ? { mode: "cohabit" }
          : {
              mode: "l4",
              chart: { name: path.join(path.dirname(bin), "cilium-chart"), version: "1.20.2" },
              k8sServiceHost: API.host,
              k8sServicePort: API.port,
              values: {
                // Pod addresses from the Node's podCIDR, as kubeadm-style clusters allocate them:
                // the chart's default (cluster-pool) needs cilium-operator, which cannot be built
                // here (docs/e2e.md, "Cilium agent").
                ipam: { mode: "kubernetes" },
              },
            },
    };
  }

  beforeAll(async () => {
    bin = toolchainBin();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-cilium-"));
    cluster = await startCluster(bin);
    env = { ...process.env, E2E_BIN: bin, KUBECONFIG: cluster.kubeconfig, E2E_NODE: NODE.name, E2E_NODE_IP: NODE.ip, E2E_CLIENT_IP: CLIENT_IP };
    // Registered as a kubelet would be, with the pod range the node IPAM controller gives it.
    await cluster.core.createNode({
      body: { metadata: { name: NODE.name, labels: { "kubernetes.io/hostname": NODE.name } }, spec: { podCIDR: POD_CIDR, podCIDRs: [POD_CIDR] } },
    });
    await addNodes(cluster, [NODE]);
    for (const ui of UIS) {
      await cluster.core.createNamespace({ body: { metadata: { name: ui.namespace } } });
      await cluster.core.createNamespacedService({
        namespace: ui.namespace,
        body: {
          metadata: { name: ui.service, labels: { "app.kubernetes.io/managed-by": "Helm" } },
          spec: { type: "ClusterIP", selector: ui.selector, ports: [{ name: ui.portName, port: ui.port, targetPort: ui.targetPort, protocol: "TCP" }] },
        },
      });
    }
    sandbox = makeSandbox(bin, cluster, providerVersions());
    sandbox.writeStack(l4Stack());
  }, 900_000);

  afterAll(() => {
    fs.mkdirSync(path.join(projectDir, "test-output"), { recursive: true });
    fs.writeFileSync(path.join(projectDir, "test-output/cilium-datapath.json"), JSON.stringify(proof, null, 2));
    // The agent's own words, kept for the docs and for a failed run.
    if (dir && fs.existsSync(path.join(dir, "node/logs"))) {
      fs.rmSync(path.join(projectDir, "test-output/cilium-logs"), { recursive: true, force: true });
      fs.cpSync(path.join(dir, "node/logs"), path.join(projectDir, "test-output/cilium-logs"), { recursive: true });
    }
    if (dir && fs.existsSync(path.join(dir, "node/.e2e-cilium"))) sh(["stop", path.join(dir, "node")], env);
    cluster?.stop();
    if (sandbox) fs.rmSync(sandbox.dir, { recursive: true, force: true });
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it("pulumi up installs the real chart with the l4 values; its cilium-config says kube-proxy replacement, no LB-IPAM, no Gateway API", async () => {
    const up = sandbox.pulumi(["up", "--yes"], { timeoutMs: 900_000 });
    expect(up.code, summary(up)).toBe(0);
    const cm = await cluster.core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-config" });
    const data = cm.data ?? {};
    expect(data["kube-proxy-replacement"]).toBe("true");
    expect(data["enable-lb-ipam"]).toBe("false");
    expect(data["enable-gateway-api"] ?? "false").toBe("false");
    expect(data["enable-l2-announcements"] ?? "false").toBe("false");
    // The agent reads it as the DaemonSet mounts it: one file per key (a key is a file name,
    // and the API server allows no other kind, but this is read back: check it).
    const cfg = path.join(dir, "config");
    fs.mkdirSync(cfg);
    for (const [k, v] of Object.entries(data)) {
      expect(k).toMatch(/^(?!\.\.?$)[-._a-zA-Z0-9]+$/);
      fs.writeFileSync(path.join(cfg, k), v);
    }
    // Where the release tells the agents to reach the API server (the DaemonSet's env).
    const apps = new cluster.lib.KubeConfig();
    apps.loadFromFile(cluster.kubeconfig);
    const ds = await apps.makeApiClient(cluster.lib.AppsV1Api).readNamespacedDaemonSet({ namespace: "kube-system", name: "cilium" });
    const agentEnv = ds.spec?.template.spec?.containers.find((c) => c.name === "cilium-agent")?.env ?? [];
    const envOf = (name: string) => agentEnv.find((e) => e.name === name)?.value;
    expect({ host: envOf("KUBERNETES_SERVICE_HOST"), port: envOf("KUBERNETES_SERVICE_PORT") }).toEqual({ host: API.host, port: String(API.port) });
  });

  it("cilium-agent starts on the node namespace with that config and compiles and loads its BPF datapath", async () => {
    const start = sh(["start", path.join(dir, "node"), path.join(dir, "config")], { ...env, E2E_API_HOST: API.host, E2E_API_PORT: String(API.port) });
    expect(start.code, summary(start)).toBe(0);
    const status = await waitFor(
      "cilium-dbg status to say the agent is OK",
      () => {
        if (!agentAlive()) throw new Error(`cilium-agent exited:\n${agentLog()}`);
        const r = sh(["dbg", path.join(dir, "node"), "status", "--brief"], env, 30_000);
        return r.code === 0 && r.stdout.trim() === "OK" ? r : undefined;
      },
      600_000,
      agentLog,
    );
    expect(status.stdout.trim()).toBe("OK");
    const kpr = sh(["dbg", path.join(dir, "node"), "status", "--verbose"], env, 30_000);
    expect(kpr.stdout).toMatch(/KubeProxyReplacement:\s+True/);
  });

  it("each UI's pod gets its veth and endpoint from cilium-cni, as a kubelet would, and serves HTTP in its namespace", async () => {
    for (const ui of UIS) {
      const name = `${ui.service}-0`;
      await cluster.core.createNamespacedPod({
        namespace: ui.namespace,
        body: {
          metadata: { name, labels: ui.selector },
          spec: {
            nodeName: NODE.name,
            automountServiceAccountToken: false,
            containers: [
              {
                name: "ui",
                image: "example.invalid/ui:1",
                ports: [{ containerPort: ui.targetPort, name: ui.portName, ...(ui.entry === "gitea" ? { hostPort: HOST_PORT } : {}) }],
              },
            ],
          },
        },
      });
      const cni = sh(["pod", path.join(dir, "node"), ui.namespace, name], env, 180_000);
      expect(cni.code, summary(cni)).toBe(0);
      const ip = cni.stdout.trim();
      expect(ip).toMatch(/^198\.19\.\d+\.\d+$/);
      podIPs.set(ui.entry, ip);
      const pod = await cluster.core.readNamespacedPod({ namespace: ui.namespace, name });
      pod.status = {
        phase: "Running",
        podIP: ip,
        podIPs: [{ ip }],
        hostIP: NODE.ip,
        conditions: [
          { type: "Ready", status: "True", lastTransitionTime: new Date() },
          { type: "ContainersReady", status: "True", lastTransitionTime: new Date() },
        ],
      };
      await cluster.core.replaceNamespacedPodStatus({ namespace: ui.namespace, name, body: pod });
      // The pod's "UI": it says who it is and who it saw.
      const server = `require("http").createServer((q,s)=>s.end("${ui.entry} pod ${name} saw "+q.socket.remoteAddress)).listen(${ui.targetPort})`;
      const child = spawn(SCRIPT, ["exec", path.join(dir, "node"), `pod-${name}`, process.execPath, "-e", server], { env, detached: true, stdio: "ignore" });
      child.unref();
    }
    const endpoints = await waitFor(
      "cilium-dbg endpoint list to show the three pods ready",
      () => {
        const r = sh(["dbg", path.join(dir, "node"), "endpoint", "list"], env, 30_000);
        return [...podIPs.values()].every((ip) => new RegExp(`${ip.replace(/\./g, "\\.")}\\s+ready`).test(r.stdout)) ? r : undefined;
      },
      300_000,
      agentLog,
    );
    expect(endpoints.code).toBe(0);
  });

  it("every published URL answers from the right pod through the agent's eBPF NodePort service; no kube-proxy rule exists", async () => {
    const out = JSON.parse(sandbox.pulumi(["stack", "output", "--json"]).stdout) as { urls: Record<string, string> };
    expect(Object.keys(out.urls).sort()).toEqual(["argocd", "gitea", "grafana"]);
    const list = await waitFor(
      "cilium-dbg service list to list every NodePort with its pod as backend",
      () => {
        const r = sh(["dbg", path.join(dir, "node"), "service", "list"], env, 30_000);
        const ok = Object.entries(out.urls).every(([entry, url]) => {
          const port = new URL(url).port;
          // The agent lists a NodePort once, on 0.0.0.0 (every node address of its devices).
          return nodePortRow(port, podIPs.get(entry) ?? "none").test(r.stdout);
        });
        return ok ? r : undefined;
      },
      120_000,
      () => sh(["dbg", path.join(dir, "node"), "service", "list"], env, 30_000).stdout,
    );
    proof.serviceList = list.stdout;
    for (const [entry, url] of Object.entries(out.urls)) {
      expect(new URL(url).hostname).toBe(NODE.ip);
      proof[url] = await entryAnswers(entry, url, `${url} to answer from the client namespace`);
    }
    // The load balancing is in the agent's BPF maps, and the connections just made are in its
    // BPF conntrack table, from the client to the NodePort.
    const lb = sh(["dbg", path.join(dir, "node"), "bpf", "lb", "list"], env, 30_000);
    expect(lb.code, summary(lb)).toBe(0);
    const ct = sh(["dbg", path.join(dir, "node"), "bpf", "ct", "list", "global"], env, 30_000);
    expect(ct.code, summary(ct)).toBe(0);
    for (const [entry, url] of Object.entries(out.urls)) {
      const port = new URL(url).port;
      expect(lb.stdout).toMatch(new RegExp(`${dots(NODE.ip)}:${port}/TCP \\(1\\)\\s+${dots(podIPs.get(entry) ?? "none")}:`));
      expect(ct.stdout).toMatch(new RegExp(`${dots(CLIENT_IP)}:\\d+ -> ${dots(NODE.ip)}:${port}\\b`));
    }
    proof.bpfLbList = lb.stdout;
    proof.bpfCtList = ct.stdout;
    // No kube-proxy: neither its nftables tables nor its iptables chains exist in the node, and
    // netfilter translates no destination (Cilium's own chains only mark, accept and SNAT).
    const nft = sh(["exec", path.join(dir, "node"), "node", "nft", "list", "ruleset"], env, 30_000);
    expect(nft.code, summary(nft)).toBe(0);
    expect(nft.stdout).not.toMatch(/kube-proxy|KUBE-/);
    expect(nft.stdout).not.toMatch(/\bdnat to\b/);
    proof.nftables = nft.stdout;
  });

  it("switching the stack to cohabit and back to l4 keeps every URL answering through the agent", async () => {
    const urlsNow = () => (JSON.parse(sandbox.pulumi(["stack", "output", "--json"]).stdout) as { urls: Record<string, string> }).urls;
    const answers = async (urls: Record<string, string>) => {
      const seen: Record<string, string> = {};
      for (const [entry, url] of Object.entries(urls)) {
        seen[entry] = await entryAnswers(entry, url, `${url} to answer`);
      }
      return seen;
    };
    const before = urlsNow();
    // cohabit: the program stops managing Cilium (the release is retained, as on a cluster
    // whose platform owns it) and reads the live cilium-config, which says kube-proxy
    // replacement: the guard passes and the agent goes on serving the same URLs.
    sandbox.writeStack(l4Stack("cohabit"));
    const toCohabit = sandbox.pulumi(["up", "--yes"], { timeoutMs: 900_000 });
    expect(toCohabit.code, summary(toCohabit)).toBe(0);
    expect(urlsNow()).toEqual(before);
    proof.cohabit = JSON.stringify(await answers(before));
    // back to l4: adopt the retained release as the runbook says, then up
    sandbox.writeStack(l4Stack());
    const adopt = adoptRetainedCilium(sandbox);
    expect(adopt.code, summary(adopt)).toBe(0);
    const toL4 = sandbox.pulumi(["up", "--yes"], { timeoutMs: 900_000 });
    expect(toL4.code, summary(toL4)).toBe(0);
    expect(urlsNow()).toEqual(before);
    proof.l4Again = JSON.stringify(await answers(before));
  });

  it("a hostPort answers through Cilium's hostPort service", async () => {
    const url = `http://${NODE.ip}:${HOST_PORT}/`;
    const list = await waitFor(
      "cilium-dbg service list to list the HostPort",
      () => {
        const r = sh(["dbg", path.join(dir, "node"), "service", "list"], env, 30_000);
        return nodePortRow(HOST_PORT, podIPs.get("gitea") ?? "none", "HostPort").test(r.stdout) ? r : undefined;
      },
      60_000,
    );
    proof.hostPortServiceList = list.stdout;
    const c = sh(["exec", path.join(dir, "node"), "client", "curl", "-sS", "-m", "5", url], env, 30_000);
    expect(c.code, summary(c)).toBe(0);
    expect(c.stdout).toMatch(/^gitea pod /);
  });
});
