// Issue 21: Cilium's eBPF kube-proxy replacement serves the published URLs. The real chart
// (the Go module's install/kubernetes/cilium, same version as the agent) is installed by
// `pulumi up` of an l4 stack; the agent, built from the same module, runs as a process on a
// node network namespace with the cilium-config that release put in the cluster
// (scripts/e2e-cilium.sh; cilium-operator cannot be built here, see docs/e2e.md); pods get
// their veth and endpoint from cilium-cni, as a kubelet would have them. No kube-proxy runs
// anywhere. Needs root, BPF and the opt-in
// toolchain stage (E2E_CILIUM=1 scripts/e2e-toolchain.sh); otherwise the suite says why it
// is skipped.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeNode } from "../../src/adapters/datapath/kubelet";
import { cohabitEraYaml } from "../support/cohabit-era";
import {
  adoptRetainedCilium,
  buildPolicyPack,
  type Cluster,
  EXAMPLE_UIS,
  makeSandbox,
  POLICY_PACK,
  projectDir,
  providerVersions,
  runProcess,
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

const shAsync = (args: string[], env: NodeJS.ProcessEnv) => runProcess(SCRIPT, args, { cwd: projectDir, env });
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

  /**
   * The kubelet's part for the agents' DaemonSet, on the one node: a pod being deleted has its
   * agent stopped (its BPF datapath stays pinned) and goes; a new pod gets an agent started
   * with the cilium-config of that moment (the first one sets the node up: namespaces, relay),
   * and once `cilium-dbg status` says OK, the pod is marked Running and Ready.
   */
  let agentPod: string | undefined;
  let nodeUp = false;
  const agentRestarts: string[] = [];
  async function kubeletTick() {
    const list = await cluster.core.listNamespacedPod({ namespace: "kube-system", labelSelector: "k8s-app=cilium" });
    for (const pod of list.items.filter((p) => p.spec?.nodeName === NODE.name)) {
      const name = pod.metadata?.name ?? "";
      if (pod.metadata?.deletionTimestamp) {
        if (agentPod === name) {
          const stop = await shAsync(["agent-stop", path.join(dir, "node")], env);
          if (stop.code !== 0) throw new Error(`agent-stop: ${stop.stderr}`);
          agentPod = undefined;
          agentRestarts.push(`${new Date().toISOString()} stopped (pod ${name} deleted)`);
        }
        await cluster.core.deleteNamespacedPod({ namespace: "kube-system", name, gracePeriodSeconds: 0 });
        continue;
      }
      if (agentPod !== undefined || (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")) continue;
      const cm = await cluster.core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-config" });
      const cfg = fs.mkdtempSync(path.join(dir, "config-"));
      for (const [k, v] of Object.entries(cm.data ?? {})) {
        if (!/^(?!\.\.?$)[-._a-zA-Z0-9]+$/.test(k)) throw new Error(`cilium-config key ${k}`);
        fs.writeFileSync(path.join(cfg, k), v);
      }
      const start = nodeUp
        ? await shAsync(["agent-start", path.join(dir, "node"), cfg], env)
        : await shAsync(["start", path.join(dir, "node"), cfg], { ...env, E2E_API_HOST: API.host, E2E_API_PORT: String(API.port) });
      if (start.code !== 0) throw new Error(`agent start: ${start.stdout}\n${start.stderr}`);
      nodeUp = true;
      agentPod = name;
      await waitFor(
        "cilium-dbg status to say the agent is OK",
        async () => {
          if (!agentAlive()) throw new Error(`cilium-agent exited:\n${agentLog()}`);
          const r = await shAsync(["dbg", path.join(dir, "node"), "status", "--brief"], env);
          return r.code === 0 && r.stdout.trim() === "OK" ? r : undefined;
        },
        600_000,
        agentLog,
      );
      agentRestarts.push(`${new Date().toISOString()} started (pod ${name})`);
      const now = new Date();
      pod.status = {
        phase: "Running",
        hostIP: NODE.ip,
        podIP: NODE.ip,
        podIPs: [{ ip: NODE.ip }],
        startTime: now,
        conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({ type, status: "True", lastTransitionTime: now })),
      };
      await cluster.core.replaceNamespacedPodStatus({ namespace: "kube-system", name, body: pod });
    }
  }
  /** Runs `pulumi args` while playing the kubelet, as the rollout `up` waits for needs. */
  async function pulumiWithKubelet(args: string[]) {
    let done = false;
    const run = sandbox.pulumiAsync(args).finally(() => {
      done = true;
    });
    while (!done) {
      await kubeletTick();
      await new Promise((r) => setTimeout(r, 1000));
    }
    return run;
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
                // No operator Deployment: none can be built here, and the rehearsal plays the
                // part of it this file needs (see the rehearsal); `up` then waits for the agents.
                operator: { enabled: false },
              },
            },
    };
  }

  beforeAll(async () => {
    bin = toolchainBin();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-cilium-"));
    // kube-scheduler binds the agents' DaemonSet pod to the node (the kubelet part starts only pods bound to it)
    cluster = await startCluster(bin, { E2E_SCHEDULER: "1" });
    env = { ...process.env, E2E_BIN: bin, KUBECONFIG: cluster.kubeconfig, E2E_NODE: NODE.name, E2E_NODE_IP: NODE.ip, E2E_CLIENT_IP: CLIENT_IP };
    // Registered as a kubelet would be, with the pod range the node IPAM controller gives it.
    // The agents' DaemonSet selects kubernetes.io/os=linux nodes, as a kubelet labels them.
    await cluster.core.createNode({
      body: {
        metadata: { name: NODE.name, labels: { "kubernetes.io/hostname": NODE.name, "kubernetes.io/os": "linux" } },
        spec: { podCIDR: POD_CIDR, podCIDRs: [POD_CIDR] },
      },
    });
    // Ready, untainted, with the capacity the scheduler fits the agents' pod into (as a kubelet reports it)
    await writeNode(cluster.core, NODE);
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
    // up waits for the agents to run the release's configuration: the kubelet starts the agent.
    const up = await pulumiWithKubelet(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    const switched = JSON.parse(sandbox.pulumi(["stack", "output", "cilium", "--json"]).stdout) as { switch?: string };
    expect(switched.switch).toBe(`in force: every agent runs the new configuration (nodes ${NODE.name})`);
    proof.switchFirstUp = switched.switch ?? "";
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
    // This l4 stack passes its own policy pack (docs/policy-pack.md): the Cilium release, whose
    // objects no policy sees, is reported and not refused (advisory by default).
    buildPolicyPack();
    const packConfig = path.join(sandbox.dir, "policy-config.json");
    fs.writeFileSync(packConfig, JSON.stringify({ "undeclared-exposure": { contract: path.join(sandbox.dir, "contract/endpoints.example.yaml") } }));
    const judged = sandbox.pulumi(["preview", "--policy-pack", POLICY_PACK, "--policy-pack-config", packConfig]);
    expect(judged.code, summary(judged)).toBe(0);
    expect(judged.stdout + judged.stderr).toMatch(/opaque-helm-release[\s\S]*Helm Release kube-system\/cilium/);
  });

  it("cilium-agent runs on the node namespace with that config and compiles and loads its BPF datapath", async () => {
    expect(agentPod).toBeDefined();
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

  /**
   * Phase 2 rehearsed on the eBPF datapath (issue 36): from a cohabit-era cluster (Gateway API,
   * LB-IPAM and L2 announcements on; a pool, an L2 policy, Cilium Gateways with their
   * `cilium-gateway-*` LoadBalancer Services and addresses, HTTPRoutes), the runbook as `up`
   * prints it, then `up` (agent restart included), while every published NodePort URL is probed
   * (25 req/s each, plus one long-lived connection each). What cilium-operator would do (it
   * cannot be built here, docs/e2e.md) is played by the test, and only that: the Gateway
   * controller's objects per Gateway (Service, Endpoints, CiliumEnvoyConfig, owned by it) and
   * LB-IPAM's addresses, stripped when the pool is deleted. Garbage collection is the real
   * controller manager's, the leases the agent's own (L2 announcements).
   */
  it("phase 2 rehearsal: the printed order, then up with the agent restart, with zero failed requests on every NodePort URL", async () => {
    const kubectl = (args: string) => runProcess("sh", ["-c", `kubectl ${args}`], { cwd: dir, env: { ...env, KUBECONFIG: cluster.kubeconfig } });
    const must = async (args: string) => {
      const r = await kubectl(args);
      if (r.code !== 0) throw new Error(`kubectl ${args}: ${r.stderr}`);
      return r.stdout;
    };
    // Gateway API CRDs: the standard channel of the sigs.k8s.io/gateway-api module the Cilium
    // stage's build downloaded (the version cilium 1.20.2 requires).
    const gomod = spawnSync("go", ["env", "GOMODCACHE"], { encoding: "utf8" }).stdout.trim();
    const gw = fs
      .readdirSync(path.join(gomod, "sigs.k8s.io"))
      .filter((d) => d.startsWith("gateway-api@"))
      .sort()
      .at(-1);
    expect(gw, "sigs.k8s.io/gateway-api in the Go module cache").toBeDefined();
    const crdDir = path.join(gomod, "sigs.k8s.io", gw ?? "", "config/crd/standard");
    const crds = fs.readdirSync(crdDir).filter((f) => /^gateway\.networking\.k8s\.io_.*\.yaml$/.test(f));
    await must(`apply --server-side ${crds.map((f) => `-f ${path.join(crdDir, f)}`).join(" ")}`);
    await must("wait --for=condition=Established --timeout=60s crd/gateways.gateway.networking.k8s.io crd/httproutes.gateway.networking.k8s.io");

    /** Back to the cohabit era (the rollback's Helm step, played by the harness's cni.sh). */
    const toCohabitEra = async () => {
      // The cohabit era: the stack in cohabit (the release forgotten, retained), then the release
      // upgraded to the values a cni.sh of that era installs (Gateway API, L2 announcements and
      // LB-IPAM on) by a one-resource Pulumi project, the harness's cni.sh: a real helm upgrade,
      // whose rollout restarts the agent with that configuration.
      sandbox.writeStack(l4Stack("cohabit"));
      const toCohabit = await pulumiWithKubelet(["up", "--yes"]);
      expect(toCohabit.code, summary(toCohabit)).toBe(0);
      const cni = fs.mkdtempSync(path.join(sandbox.dir, "cni-"));
      fs.writeFileSync(path.join(cni, "Pulumi.yaml"), "name: cni\nruntime: nodejs\nmain: index.js\n");
      fs.writeFileSync(
        path.join(cni, "index.js"),
        `const k8s = require("@pulumi/kubernetes");
new k8s.helm.v3.Release("cilium", ${JSON.stringify({
          name: "cilium",
          namespace: "kube-system",
          chart: path.join(path.dirname(bin), "cilium-chart"),
          version: "1.20.2",
          skipAwait: true,
          createNamespace: false,
          values: {
            ...(l4Stack()["ui-exposure:cilium"] as { values: Record<string, unknown> }).values,
            kubeProxyReplacement: true,
            k8sServiceHost: API.host,
            k8sServicePort: API.port,
            gatewayAPI: { enabled: true },
            l2announcements: { enabled: true },
            enableLBIPAM: true,
            rollOutCiliumPods: true,
          },
        })}, { retainOnDelete: true });\n`,
      );
      const cniPulumi = (args: string[]) =>
        runProcess(path.join(bin, "pulumi"), [...args, "--stack", "cni", "--non-interactive"], { cwd: cni, env: sandbox.env });
      for (const args of [
        // (cniPulumi names the stack: --stack cni)
        ["stack", "init", "--secrets-provider", "passphrase"],
        ["import", "kubernetes:helm.sh/v3:Release", "cilium", "kube-system/cilium", "--generate-code=false", "--protect=false", "--yes"],
      ]) {
        const r = await cniPulumi(args);
        expect(r.code, summary(r)).toBe(0);
      }
      const restarted = Date.now();
      let cniUp: Awaited<ReturnType<typeof cniPulumi>> | undefined;
      void cniPulumi(["up", "--yes"]).then((r) => {
        cniUp = r;
      });
      await waitFor(
        "cni's helm upgrade, and the agent restarted with the cohabit-era config",
        async () => {
          await kubeletTick();
          return cniUp && agentRestarts.some((r) => Date.parse(r.slice(0, 24)) >= restarted && r.includes("started")) ? true : undefined;
        },
        600_000,
        agentLog,
      );
      expect(cniUp?.code, cniUp && summary(cniUp)).toBe(0);
      const forget = await cniPulumi(["stack", "rm", "--force", "--yes"]);
      expect(forget.code, summary(forget)).toBe(0);
      const cohabitCm = await cluster.core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-config" });
      expect([cohabitCm.data?.["enable-lb-ipam"], cohabitCm.data?.["enable-gateway-api"], cohabitCm.data?.["enable-l2-announcements"]]).toEqual([
        "true",
        "true",
        "true",
      ]);
    };
    /** The cohabit era's objects: what phase 1 has, and the rollback puts back. */
    const eraObjects = async () => {
      const gateways = era.map((g) => {
        const ui = UIS.find((u) => u.entry === g.gateway);
        return { name: g.gateway, namespace: g.ns, hostname: `${g.gateway}.cluster.lan`, backend: { service: `${ui?.service}`, port: `${ui?.port}` } };
      });
      await must(`apply -f - <<'EOF'
${cohabitEraYaml(gateways, { l2Interfaces: ["eth0"] })}EOF`);
      // The Gateway controller's objects (what the operator makes per Gateway), owned by it.
      for (const g of era) {
        const uid = (await must(`-n ${g.ns} get gateway ${g.gateway} -o jsonpath='{.metadata.uid}'`)).trim();
        const owner = `ownerReferences: [{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, name: ${g.gateway}, uid: ${uid}, controller: true}]`;
        await must(`apply -f - <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: cilium-gateway-${g.gateway}, namespace: ${g.ns}, labels: {io.cilium.gateway/owning-gateway: ${g.gateway}}, ${owner}}
spec: {type: LoadBalancer, ports: [{name: port-80, port: 80, protocol: TCP}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: cilium-gateway-${g.gateway}, namespace: ${g.ns}, ${owner}}
subsets: [{addresses: [{ip: 192.192.192.192}], ports: [{name: port-80, port: 9999}]}]
---
apiVersion: cilium.io/v2
kind: CiliumEnvoyConfig
metadata: {name: cilium-gateway-${g.gateway}, namespace: ${g.ns}, ${owner}}
spec: {services: [{name: cilium-gateway-${g.gateway}, namespace: ${g.ns}}], resources: []}
EOF`);
        // LB-IPAM's allocation from the pool
        await must(
          `-n ${g.ns} patch service cilium-gateway-${g.gateway} --subresource=status --type merge -p '{"status":{"loadBalancer":{"ingress":[{"ip":"${g.ip}"}]}}}'`,
        );
      }
      const leasesBefore = await waitFor(
        "the agent's L2 announcement leases",
        async () => {
          const r = await kubectl("-n kube-system get leases -o name");
          return (r.stdout.match(/cilium-l2announce-/g) ?? []).length >= era.length ? r.stdout : undefined;
        },
        120_000,
        agentLog,
      );
      proof.leasesBefore = leasesBefore;
      const lbBefore = await waitFor(
        "LoadBalancer frontends in the agent",
        async () => {
          const r = await shAsync(["dbg", path.join(dir, "node"), "service", "list"], env);
          return era.every((g) => r.stdout.includes(`${g.ip}:80/TCP`)) ? r.stdout : undefined;
        },
        120_000,
      );
      proof.serviceListCohabit = lbBefore;
    };
    /** Probes every published URL on the node until `stop`, which returns the figures. */
    const probeUrls = async (label: string) => {
      const urls = Object.values((JSON.parse(sandbox.pulumi(["stack", "output", "--json"]).stdout) as { urls: Record<string, string> }).urls);
      const probeOut = path.join(dir, `probe-${label}.json`);
      const probe: ChildProcess = spawn(
        SCRIPT,
        ["exec", path.join(dir, "node"), "client", process.execPath, path.join(projectDir, "test/support/nodeport-probe.cjs"), probeOut, "25", ...urls],
        { env, stdio: "ignore" },
      );
      await new Promise((r) => setTimeout(r, 3000));
      return async () => {
        await new Promise((r) => setTimeout(r, 3000));
        probe.kill("SIGTERM");
        await waitFor("the probe's figures", () => (fs.existsSync(probeOut) ? true : undefined), 30_000);
        const figures = JSON.parse(fs.readFileSync(probeOut, "utf8")) as Record<
          string,
          { requests: number; failures: number; errors: string[]; longestGapMs: number; long: { requests: number; failures: number; broken: boolean } }
        >;
        const table = Object.entries(figures).map(
          ([url, f]) =>
            `${url}: ${f.requests} requests, ${f.failures} failed, longest gap between answers ${f.longestGapMs} ms; long-lived: ${f.long.requests} requests, ${f.long.failures} failed, ${f.long.broken ? "BROKEN" : "unbroken"}`,
        );
        console.log(`${label} (${agentRestarts.join("; ")}):\n${table.join("\n")}`);
        proof[label] = table.join("\n");
        proof[`${label}AgentRestarts`] = agentRestarts.join("\n");
        for (const [url, f] of Object.entries(figures)) {
          expect({ url, failures: f.failures, errors: f.errors, broken: f.long.broken, longFailures: f.long.failures }).toEqual({
            url,
            failures: 0,
            errors: [],
            broken: false,
            longFailures: 0,
          });
          expect(f.requests).toBeGreaterThan(100);
        }
      };
    };
    const era = UIS.map((ui, i) => ({ ns: ui.namespace, gateway: ui.entry, ip: `198.18.1.${10 + i}` }));
    await toCohabitEra();
    await eraObjects();
    const stopProbe = await probeUrls("rehearsal");
    // LB-IPAM, played: a pool deleted while it runs strips the addresses it gave.
    let stripping = true;
    const lbIpam = (async () => {
      while (stripping) {
        const pools = await kubectl("get ciliumloadbalancerippools -o name");
        if (pools.code === 0 && pools.stdout.trim() === "") {
          for (const g of era)
            await kubectl(`-n ${g.ns} patch service cilium-gateway-${g.gateway} --subresource=status --type merge -p '{"status":{"loadBalancer":{}}}'`);
          return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();

    // The runbook as up prints it: the removal order, each command as printed.
    sandbox.writeStack(l4Stack());
    const refused = await sandbox.pulumiAsync(["preview"]);
    expect(refused.code).not.toBe(0);
    const printed = `${refused.stdout}\n${refused.stderr}`;
    expect(printed).toContain("are still in the cluster, and once mode 'l4' turns Gateway API, LB-IPAM and L2 announcements off");
    // (pulumi repeats the error in its diagnostics summary: each command once)
    const commands = [
      ...new Set(
        printed
          .split("\n")
          .filter((l) => /^\s*(kubectl|until) /.test(l))
          .map((l) => l.trim()),
      ),
    ];
    proof.runbookAsPrinted = commands.join("\n");
    expect(commands.length).toBeGreaterThanOrEqual(5);
    for (const c of commands) {
      const r = await runProcess("bash", ["-c", c], { cwd: dir, env: { ...env, KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, `${c}\n${r.stdout}\n${r.stderr}`).toBe(0);
    }
    stripping = false;
    await lbIpam;
    // then the runbook's adoption of the release, and up
    const adopt = adoptRetainedCilium(sandbox);
    expect(adopt.code, summary(adopt)).toBe(0);
    // then up: the Helm change, the agent restarted by the rollout, up waiting for it
    const up = await pulumiWithKubelet(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    const cilium = JSON.parse(sandbox.pulumi(["stack", "output", "cilium", "--json"]).stdout) as { switch?: string };
    expect(cilium.switch).toBe(`in force: every agent runs the new configuration (nodes ${NODE.name})`);
    await stopProbe();
    // Afterwards: no LoadBalancer frontend, no Gateway Service, CiliumEnvoyConfig or lease.
    const list = await shAsync(["dbg", path.join(dir, "node"), "service", "list"], env);
    proof.serviceListAfter = list.stdout;
    expect(list.stdout).not.toMatch(/LoadBalancer/);
    expect(await must("get services,ciliumenvoyconfigs -A -o name")).not.toMatch(/cilium-gateway-/);
    expect(await must("-n kube-system get leases -o name")).not.toMatch(/cilium-l2announce-/);
    const cm = await cluster.core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-config" });
    expect([cm.data?.["kube-proxy-replacement"], cm.data?.["enable-lb-ipam"], cm.data?.["enable-gateway-api"] ?? "false"]).toEqual(["true", "false", "false"]);

    // The rollback, rehearsed the same way: the stack back to cohabit, the release back to the
    // cohabit era (the agent restarted by its rollout), the era's objects put back.
    const stopRollbackProbe = await probeUrls("rollback");
    await toCohabitEra();
    await eraObjects();
    await stopRollbackProbe();
  }, 1_800_000);
});
