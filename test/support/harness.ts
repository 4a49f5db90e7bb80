// End-to-end harness: a real kube-apiserver + etcd (+ kube-controller-manager) on loopback,
// the real Pulumi CLI, language host and providers, all built from Go modules by
// scripts/e2e-toolchain.sh. Everything (ports, folders, PULUMI_HOME, state) is private to a run.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse, stringify } from "yaml";
import { recordControlPlane } from "./run-record";

export const projectDir = path.resolve(__dirname, "../..");

/** The policy pack's folder (docs/policy-pack.md), as `pulumi --policy-pack` takes it. */
export const POLICY_PACK = path.join(projectDir, "policy-pack");

/** Builds the pack as the engine loads it (dist/index.js) from the sources under test; needs its own `npm ci`. */
export function buildPolicyPack(): void {
  if (!fs.existsSync(path.join(POLICY_PACK, "node_modules/@pulumi/policy")))
    throw new Error("policy-pack/node_modules is missing: run `npm ci` in policy-pack/ (.ci/run does)");
  const build = spawnSync(process.execPath, [path.join(POLICY_PACK, "build.cjs")], { encoding: "utf8" });
  if (build.status !== 0) throw new Error(`the pack did not build: ${build.stderr}`);
}

type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});

export interface Cluster {
  dir: string;
  kubeconfig: string;
  server: string;
  lib: ClientNode;
  core: InstanceType<ClientNode["CoreV1Api"]>;
  stop(): void;
}

export function toolchainBin(): string {
  const fromEnv = process.env.E2E_BIN;
  if (fromEnv) return fromEnv;
  return execFileSync(path.join(projectDir, "scripts/e2e-toolchain.sh"), ["bin"], { encoding: "utf8" }).trim().split("\n").pop() as string;
}

/** `env`: settings of scripts/e2e-cluster.sh (E2E_SERVICE_CIDR, ...). */
export async function startCluster(bin: string, env: Record<string, string> = {}): Promise<Cluster> {
  const r = spawnSync(path.join(projectDir, "scripts/e2e-cluster.sh"), ["start"], {
    encoding: "utf8",
    env: { ...process.env, ...env, E2E_BIN: bin },
    timeout: 240_000,
  });
  if (r.status !== 0) throw new Error(`e2e cluster did not start:\n${r.stderr}`);
  const vars = Object.fromEntries(
    r.stdout
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).replace(/^['"]|['"]$/g, "")]),
  );
  const dir = vars.E2E_DIR as string;
  recordControlPlane(dir);
  const kubeconfig = vars.KUBECONFIG as string;
  const lib = await import("@kubernetes/client-node");
  const kc = new lib.KubeConfig();
  kc.loadFromFile(kubeconfig);
  return {
    dir,
    kubeconfig,
    server: kc.getCurrentCluster()?.server ?? "",
    lib,
    core: kc.makeApiClient(lib.CoreV1Api),
    stop: () => {
      spawnSync(path.join(projectDir, "scripts/e2e-cluster.sh"), ["stop", dir], { encoding: "utf8", env: { ...process.env, E2E_BIN: bin } });
    },
  };
}

const ignoreConflict = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
};

/** Registers Nodes as a kubelet would: Ready ones with 127.0.0.x InternalIPs, one NotReady. */
export async function addNodes(c: Cluster, nodes: { name: string; ip: string; ready: boolean }[]) {
  for (const n of nodes) {
    await ignoreConflict(c.core.createNode({ body: { metadata: { name: n.name, labels: { "kubernetes.io/hostname": n.name } } } }));
    // Controllers touch new Nodes right away: retry the status write on a version conflict.
    for (let attempt = 1; ; attempt++) {
      const live = await c.core.readNode({ name: n.name });
      live.status = {
        addresses: [
          { type: "InternalIP", address: n.ip },
          { type: "Hostname", address: n.name },
        ],
        conditions: [{ type: "Ready", status: n.ready ? "True" : "False", reason: "E2E", lastHeartbeatTime: new Date(), lastTransitionTime: new Date() }],
      };
      try {
        await c.core.replaceNodeStatus({ name: n.name, body: live });
        break;
      } catch (err) {
        if ((err as { code?: number }).code !== 409 || attempt >= 10) throw err;
      }
    }
  }
}

/** A vendored UI as its chart installs it (the ClusterIP Service the contract's entry names). */
export interface VendoredUi {
  namespace: string;
  service: string;
  selector: Record<string, string>;
  portName: string;
  port: number;
  targetPort: number;
  /** Only written into the pod's status and its EndpointSlice; never contacted. */
  podIP: string;
}

/** The vendored Services of contract/endpoints.example.yaml's argocd, gitea and grafana entries. */
export const EXAMPLE_UIS = {
  argocd: {
    namespace: "argocd",
    service: "argocd-server",
    selector: { "app.kubernetes.io/name": "argocd-server" },
    portName: "http",
    port: 80,
    targetPort: 8080,
    podIP: "10.244.0.11",
  },
  gitea: {
    namespace: "gitea",
    service: "gitea-http",
    selector: { "app.kubernetes.io/name": "gitea" },
    portName: "http",
    port: 3000,
    targetPort: 3000,
    podIP: "10.244.0.12",
  },
  grafana: {
    namespace: "monitoring",
    service: "kube-prometheus-stack-grafana",
    selector: { "app.kubernetes.io/name": "grafana" },
    portName: "http-web",
    port: 80,
    targetPort: 3000,
    podIP: "10.244.0.13",
  },
} as const satisfies Record<string, VendoredUi>;

/**
 * Every service-backed exposed entry of contract/endpoints.example.yaml, as its chart would
 * install it, with its pod on `node`.
 */
export function exampleContractUis(node: string): (VendoredUi & { entry: string; node: string })[] {
  const contract = parse(fs.readFileSync(path.join(projectDir, "contract/endpoints.example.yaml"), "utf8")) as {
    endpoints: { name: string; exposed?: boolean; service?: { namespace: string; name: string; port: string | number } }[];
  };
  return contract.endpoints
    .filter((e) => e.exposed && e.service)
    .map((e, i) => {
      const service = e.service as { namespace: string; name: string; port: string | number };
      return {
        entry: e.name,
        namespace: service.namespace,
        service: service.name,
        selector: { "app.kubernetes.io/name": e.name },
        portName: typeof service.port === "string" ? service.port : "http",
        port: typeof service.port === "number" ? service.port : 80,
        targetPort: 8080,
        node,
        podIP: `10.244.0.${20 + i}`,
      };
    });
}

/** Installs a vendored UI as its chart would: ClusterIP Service + one Ready pod on a node. */
export async function addVendoredUi(c: Cluster, ui: VendoredUi & { node: string }) {
  await ignoreConflict(c.core.createNamespace({ body: { metadata: { name: ui.namespace } } }));
  await ignoreConflict(c.core.createNamespacedServiceAccount({ namespace: ui.namespace, body: { metadata: { name: "default" } } }));
  await c.core.createNamespacedService({
    namespace: ui.namespace,
    body: {
      metadata: { name: ui.service, labels: { "app.kubernetes.io/managed-by": "Helm" } },
      spec: { type: "ClusterIP", selector: ui.selector, ports: [{ name: ui.portName, port: ui.port, targetPort: ui.targetPort, protocol: "TCP" }] },
    },
  });
  const podName = `${ui.service}-0`;
  await c.core.createNamespacedPod({
    namespace: ui.namespace,
    body: {
      metadata: { name: podName, labels: ui.selector },
      spec: {
        nodeName: ui.node,
        automountServiceAccountToken: false,
        containers: [{ name: "ui", image: "example.invalid/ui:1", ports: [{ containerPort: ui.targetPort, name: ui.portName }] }],
      },
    },
  });
  const pod = await c.core.readNamespacedPod({ namespace: ui.namespace, name: podName });
  pod.status = {
    phase: "Running",
    podIP: ui.podIP,
    podIPs: [{ ip: ui.podIP }],
    hostIP: "127.0.0.1",
    conditions: [
      { type: "Ready", status: "True", lastTransitionTime: new Date() },
      { type: "ContainersReady", status: "True", lastTransitionTime: new Date() },
    ],
  };
  await c.core.replaceNamespacedPodStatus({ namespace: ui.namespace, name: podName, body: pod });
}

export async function setCiliumConfig(c: Cluster, kubeProxyReplacement: "true" | "false") {
  const body = {
    metadata: { name: "cilium-config", namespace: "kube-system" },
    data: { "kube-proxy-replacement": kubeProxyReplacement, "enable-lb-ipam": "false" },
  };
  try {
    await c.core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "cilium-config", body });
  } catch {
    await c.core.createNamespacedConfigMap({ namespace: "kube-system", body });
  }
}

export interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a command without blocking this process (its own servers keep answering meanwhile). */
export function runProcess(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: performance.now() - t0 }));
  });
}

export interface Sandbox {
  dir: string;
  env: NodeJS.ProcessEnv;
  writeStack(config: Record<string, unknown>): void;
  pulumi(args: string[], opts?: { timeoutMs?: number }): { code: number | null; stdout: string; stderr: string; ms: number };
  /** Same, without blocking this process (for scenarios where the test acts on the cluster meanwhile). */
  pulumiAsync(args: string[]): Promise<ProcessResult>;
  exposure(args: string[]): { code: number | null; stdout: string; stderr: string };
  /** Starts a long-running `exposure` command (the portal); the caller kills it. */
  exposureSpawn(args: string[]): ChildProcess;
  /** Same, without blocking this process (for scenarios where the test itself serves HTTP). */
  exposureAsync(args: string[]): Promise<ProcessResult>;
}

/**
 * A private copy of the project (sources + node_modules link) with its own PULUMI_HOME,
 * file backend and `sandbox` stack, so the run never touches the operator's state.
 */
export function makeSandbox(bin: string, cluster: Cluster, versions: { kubernetes: string; command: string }): Sandbox {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-e2e-"));
  for (const f of ["Pulumi.yaml", "index.ts", "tsconfig.json", "package.json"]) fs.copyFileSync(path.join(projectDir, f), path.join(dir, f));
  for (const d of ["src", "components", "contract", "cli", "bin", "scripts"]) fs.cpSync(path.join(projectDir, d), path.join(dir, d), { recursive: true });
  // The compiled CLI, as `npm ci` leaves it (bin/exposure.cjs rebuilds it if it does not match the copied sources).
  if (fs.existsSync(path.join(projectDir, "dist"))) fs.cpSync(path.join(projectDir, "dist"), path.join(dir, "dist"), { recursive: true });
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(dir, "node_modules"));
  fs.mkdirSync(path.join(dir, ".home"));
  fs.mkdirSync(path.join(dir, ".state"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    PULUMI_HOME: path.join(dir, ".home"),
    PULUMI_BACKEND_URL: `file://${path.join(dir, ".state")}`,
    PULUMI_CONFIG_PASSPHRASE: "e2e-passphrase",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_DISABLE_REGISTRY_RESOLVE: "true",
    PULUMI_IGNORE_AMBIENT_PLUGINS: "true",
    KUBECONFIG: cluster.kubeconfig,
  };
  const run = (cmd: string, args: string[], timeoutMs: number) => {
    const t0 = Date.now();
    const r = spawnSync(cmd, args, { cwd: dir, env, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", ms: Date.now() - t0 };
  };
  for (const [name, version] of Object.entries(versions)) {
    const file = path.join(bin, "prov", `pulumi-resource-${name}`);
    // The command provider cannot be built here (the module proxy refuses it) and the program does not use it.
    if (name === "command" && !fs.existsSync(file)) continue;
    const r = run(path.join(bin, "pulumi"), ["plugin", "install", "resource", name, version, "--file", file], 120_000);
    if (r.code !== 0) throw new Error(`plugin install ${name} failed: ${r.stderr}`);
  }
  const init = run(path.join(bin, "pulumi"), ["stack", "init", "sandbox", "--secrets-provider", "passphrase"], 60_000);
  if (init.code !== 0) throw new Error(`stack init failed: ${init.stderr}`);
  const stackFile = path.join(dir, "Pulumi.sandbox.yaml");
  const header = fs.readFileSync(stackFile, "utf8");
  return {
    dir,
    env,
    writeStack(config) {
      // Keep the passphrase salt written by `stack init`, replace the config.
      const keep = header.split("\n").filter((l) => /^(secretsprovider|encryptionsalt):/.test(l));
      fs.writeFileSync(stackFile, `${keep.join("\n")}\n${stringify({ config })}`);
    },
    pulumi: (args, opts) => run(path.join(bin, "pulumi"), [...args, "--stack", "sandbox", "--non-interactive"], opts?.timeoutMs ?? 600_000),
    pulumiAsync: (args) => runProcess(path.join(bin, "pulumi"), [...args, "--stack", "sandbox", "--non-interactive"], { cwd: dir, env }),
    exposure: (args) => run(process.execPath, [path.join(dir, "bin/exposure.cjs"), ...args], 120_000),
    exposureSpawn: (args) => spawn(process.execPath, [path.join(dir, "bin/exposure.cjs"), ...args], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] }),
    exposureAsync: (args) => runProcess(process.execPath, [path.join(dir, "bin/exposure.cjs"), ...args], { cwd: dir, env }),
  };
}

/**
 * The runbooks' start: a local control plane with one Ready node, the example contract's vendored
 * UIs on it (exampleContractUis) and Cilium's config (kube-proxy replacement on).
 */
export async function startExampleCluster(bin: string, node: { name: string; ip: string }) {
  const cluster = await startCluster(bin);
  await addNodes(cluster, [{ ...node, ready: true }]);
  const uis = exampleContractUis(node.name);
  for (const ui of uis) await addVendoredUi(cluster, ui);
  await setCiliumConfig(cluster, "true");
  return { cluster, uis };
}

/**
 * An operator's kubeconfig at `file` (0600): the contexts named, each on the loopback control
 * plane, and `current` selected.
 */
export function writeOperatorKubeconfig(cluster: Cluster, file: string, contexts: string[], current: string): void {
  const kc = parse(fs.readFileSync(cluster.kubeconfig, "utf8")) as {
    contexts: { name: string; context: Record<string, string> }[];
    "current-context": string;
  };
  const context = kc.contexts[0]?.context as Record<string, string>;
  kc.contexts = contexts.map((name) => ({ name, context }));
  kc["current-context"] = current;
  fs.writeFileSync(file, stringify(kc), { mode: 0o600 });
}

/** Installs the toolchain's kubernetes provider plugin, at the npm SDK's version, into env's PULUMI_HOME. */
export async function installKubernetesPlugin(bin: string, opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<void> {
  const versions = providerVersions();
  const install = await runProcess(
    path.join(bin, "pulumi"),
    ["plugin", "install", "resource", "kubernetes", versions.kubernetes, "--file", path.join(bin, "prov/pulumi-resource-kubernetes")],
    opts,
  );
  if (install.code !== 0) throw new Error(`plugin install failed: ${install.stderr}`);
}

/** The runbook's second up after a destroy: adopt the Cilium release the destroy retained. */
export function adoptRetainedCilium(sandbox: Sandbox): ReturnType<Sandbox["pulumi"]> {
  return sandbox.pulumi([
    "import",
    "kubernetes:helm.sh/v3:Release",
    "cilium-release",
    "kube-system/cilium",
    "--generate-code=false",
    "--protect=false",
    "--yes",
  ]);
}

/** The versions of the npm provider SDKs: the plugins must match them exactly. */
export function providerVersions(): { kubernetes: string; command: string } {
  const read = (p: string) => (JSON.parse(fs.readFileSync(path.join(projectDir, "node_modules", p, "package.json"), "utf8")) as { version: string }).version;
  return { kubernetes: read("@pulumi/kubernetes"), command: read("@pulumi/command") };
}

/**
 * The README's (or a docs page's) block marked ```sh runbook=<name> (```sql for `lang` sql),
 * exactly as printed (the runbook e2e runs it).
 */
export function runbookBlock(readme: string, name: string, lang: "sh" | "sql" | "yaml" = "sh"): string {
  const blocks = [...readme.matchAll(new RegExp(`^\`\`\`${lang} runbook=(\\S+)\\n([\\s\\S]*?)^\`\`\`$`, "gm"))].filter((m) => m[1] === name);
  if (blocks.length !== 1) throw new Error(`the text has ${blocks.length} ${lang} blocks marked runbook=${name}`);
  return blocks[0]?.[2] as string;
}

/** Three fake Nodes: the first NotReady, so the URLs' node is the first Ready one (127.0.0.11). */
export const THREE_NODES = [
  { name: "e2e-node-a", ip: "127.0.0.10", ready: false },
  { name: "e2e-node-b", ip: "127.0.0.11", ready: true },
  { name: "e2e-node-c", ip: "127.0.0.12", ready: true },
];

/**
 * The usual start of an e2e file: a local control plane with these Nodes, the vendored UIs (one
 * Ready pod each, on the first Ready node), Cilium's config (kube-proxy replacement on) and a
 * sandbox project whose stack file is `stack`. `stopPlatform` undoes it.
 */
export async function startPlatform(opts: {
  nodes: { name: string; ip: string; ready: boolean }[];
  uis: readonly VendoredUi[];
  stack: Record<string, unknown>;
}): Promise<{ cluster: Cluster; sandbox: Sandbox }> {
  const bin = toolchainBin();
  const cluster = await startCluster(bin);
  await addNodes(cluster, opts.nodes);
  const node = opts.nodes.find((n) => n.ready)?.name;
  if (!node) throw new Error("startPlatform: no Ready node to run the vendored UIs on");
  for (const ui of opts.uis) await addVendoredUi(cluster, { ...ui, node });
  // An l4 stack installs Cilium's release on a cluster without Cilium (l4 refuses a running Cilium, i.e. a cilium-config, without its Helm release).
  if ((opts.stack["ui-exposure:cilium"] as { mode?: string } | undefined)?.mode !== "l4") await setCiliumConfig(cluster, "true");
  const sandbox = makeSandbox(bin, cluster, providerVersions());
  sandbox.writeStack(opts.stack);
  return { cluster, sandbox };
}

export function stopPlatform(platform: { cluster?: Cluster; sandbox?: Sandbox }): void {
  platform.cluster?.stop();
  if (platform.sandbox) fs.rmSync(platform.sandbox.dir, { recursive: true, force: true });
}

/**
 * Plugins (providers `pulumi-resource-*`, language hosts `pulumi-language-*`) left running by a
 * pulumi process that was killed: now children of init (or of a subreaper), working in `dir` or
 * started with `dir` in their environment.
 */
export function strayPlugins(dir: string): { pid: number; name: string }[] {
  const found: { pid: number; name: string }[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      // comm is cut at 15 characters
      if (!/^pulumi-(resourc|languag)/.test(comm)) continue;
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const parent = ppid > 1 ? fs.readFileSync(`/proc/${ppid}/stat`, "utf8") : "";
      // Still the child of a live pulumi: not stray.
      if (/\((pulumi|pulumi-language-)/.test(parent)) continue;
      let cwd = "";
      try {
        cwd = fs.readlinkSync(`/proc/${pid}/cwd`);
      } catch {}
      const environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
      if (!cwd.startsWith(dir) && !environ.includes(dir)) continue;
      found.push({ pid, name: comm });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** Stops (KILL) each of strayPlugins(dir); their pids are returned. What a test started, it cleans up. */
export function reapStrayPlugins(dir: string): number[] {
  const reaped: number[] = [];
  for (const { pid } of strayPlugins(dir)) {
    try {
      process.kill(pid, "SIGKILL");
      reaped.push(pid);
    } catch {}
  }
  return reaped;
}

/** A command's result, as a test failure shows it: exit code and the ends of both streams. */
export const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

/** Polls `fn` until it gives a value (a throw counts as none), failing after `timeoutMs` with `detail()`. */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000, detail: () => string = () => ""): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${detail()}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}
