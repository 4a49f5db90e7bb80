// `pulumi up` and `pulumi preview` with the real engine and kubernetes provider against the local
// kube-apiserver of the e2e harness (loopback only), at the platform's size and ten times it.
// Floors measured in the same run: the same Services created with the client library (what any
// tool pays), and the preview of an empty program (what the engine pays to start).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PULUMI_EXIT_CHANGES } from "../cli/commands/drift";
import {
  addNodes,
  type Cluster,
  makeSandbox,
  type ProcessResult,
  providerVersions,
  runProcess,
  type Sandbox,
  setCiliumConfig,
  startCluster,
  summary,
  toolchainBin,
} from "../test/support/harness";
import { BENCH_NODES, contractYaml, type GeneratedEntry, generateEntries, hasService, managedService, servedEntries, uiPod, vendoredService } from "./gen";
import { median, ms, table } from "./stats";

const projectDir = path.resolve(__dirname, "..");

// client-node is an ES module: its types are imported in "import" resolution mode.
type V1Service = import("@kubernetes/client-node", { with: { "resolution-mode": "import" }}).V1Service;
type V1Pod = import("@kubernetes/client-node", { with: { "resolution-mode": "import" }}).V1Pod;

/** What the toolchain must hold: the API server half and the Pulumi half. */
const BINARIES = ["kube-apiserver", "etcd", "pulumi", "pulumi-language-nodejs", "prov/pulumi-resource-kubernetes"];
const CONCURRENCY = 16;
const PREVIEWS = 3;

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const ignoreConflict = (p: Promise<unknown>) =>
  p.catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });

/** Installs the platform as its charts would: namespaces, vendored ClusterIP Services, one Ready pod per UI. */
async function installPlatform(c: Cluster, entries: readonly GeneratedEntry[]) {
  const namespaces = [...new Set(entries.map((e) => e.namespace))];
  await pool(namespaces, CONCURRENCY, async (ns) => {
    await ignoreConflict(c.core.createNamespace({ body: { metadata: { name: ns } } }));
    await ignoreConflict(c.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "default" } } }));
  });
  await pool(entries, CONCURRENCY, async (e, i) => {
    if (hasService(e)) await c.core.createNamespacedService({ namespace: e.namespace, body: vendoredService(e) as V1Service });
    const pod = uiPod(e, i) as V1Pod;
    const created = await c.core.createNamespacedPod({ namespace: e.namespace, body: pod });
    // No kubelet: the status a running, Ready pod reports.
    await c.core.replaceNamespacedPodStatus({ namespace: e.namespace, name: pod.metadata?.name as string, body: { ...created, status: pod.status } });
  });
}

const listManaged = (c: Cluster) => c.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });

async function deleteManaged(c: Cluster) {
  const list = await listManaged(c);
  await pool(list.items, CONCURRENCY, (s) => c.core.deleteNamespacedService({ namespace: s.metadata?.namespace as string, name: s.metadata?.name as string }));
  // Services without finalizers are gone when the DELETE returns: the next step counts them.
  const left = (await listManaged(c)).items.length;
  if (left) throw new Error(`${left} managed Services still present after deletion`);
}

function useContract(sandbox: Sandbox, c: Cluster, entries: readonly GeneratedEntry[]) {
  fs.writeFileSync(path.join(sandbox.dir, "contract/bench.yaml"), contractYaml(entries));
  sandbox.writeStack({
    "kubernetes:context": "e2e",
    "kubernetes:kubeconfig": c.kubeconfig,
    "ui-exposure:contract": "contract/bench.yaml",
    "ui-exposure:entries": entries.filter((e) => e.exposed).map((e) => e.name),
    "ui-exposure:cilium": { mode: "cohabit" },
  });
}

const TIME = "/usr/bin/time";
const hasTime = fs.existsSync(TIME);
/** A Pulumi project folder and the environment its commands run in. */
type Project = { dir: string; env: NodeJS.ProcessEnv };

/**
 * `sandbox.pulumi()`, asynchronous (a synchronous spawn would block this process for minutes), under
 * /usr/bin/time when present: the CPU time of the whole process tree, from its last stderr line.
 */
async function pulumiAsync(project: Project, bin: string, args: string[], stack = "sandbox"): Promise<ProcessResult & { cpuMs: number }> {
  const pulumi = [path.join(bin, "pulumi"), ...args, "--stack", stack, "--non-interactive"];
  const [command, ...rest] = hasTime ? [TIME, "-f", "cpu-seconds %U %S", ...pulumi] : pulumi;
  const r = await runProcess(command as string, rest, { cwd: project.dir, env: project.env });
  const cpu = /cpu-seconds (\S+) (\S+)\s*$/.exec(r.stderr);
  return { ...r, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : Number.NaN };
}

/** An empty program (compiled JavaScript, as this project runs once built), stack `empty`, `up`ed once. */
async function emptyProgram(sandbox: Sandbox, bin: string): Promise<Project> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-empty-"));
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: empty\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: index.js\n");
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "empty", private: true, main: "index.js" }));
  fs.writeFileSync(path.join(dir, "index.js"), '"use strict";\nconst pulumi = require("@pulumi/pulumi");\nexports.stack = pulumi.getStack();\n');
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(dir, "node_modules"));
  const project = { dir, env: sandbox.env };
  const init = await pulumiAsync(project, bin, ["stack", "init", "--secrets-provider", "passphrase"], "empty");
  if (init.code !== 0) throw new Error(`stack init (empty) failed: ${summary(init)}`);
  const up = await pulumiAsync(project, bin, ["up", "--yes", "--skip-preview"], "empty");
  if (up.code !== 0) throw new Error(`pulumi up (empty) failed: ${summary(up)}`);
  return project;
}

async function measureUp(c: Cluster, sandbox: Sandbox, empty: Project, bin: string, size: number, log: (m: string) => void) {
  const entries = generateEntries(size);
  const served = servedEntries(entries);
  useContract(sandbox, c, entries);
  // The floor: the same Services straight through the API, one call after the other, then removed again.
  const t0 = performance.now();
  for (const e of served) await c.core.createNamespacedService({ namespace: e.namespace, body: managedService(e) as V1Service });
  const clientMs = performance.now() - t0;
  await deleteManaged(c);

  log(`live: pulumi up, ${size} entries`);
  const up = await pulumiAsync(sandbox, bin, ["up", "--yes", "--skip-preview"]);
  if (up.code !== 0) throw new Error(`pulumi up (${size} entries) failed: ${summary(up)}`);
  const made = (await listManaged(c)).items.length;
  if (made !== served.length) throw new Error(`pulumi up made ${made} Services, expected ${served.length}`);
  const previews: { ms: number; cpuMs: number }[] = [];
  const floors: { ms: number; cpuMs: number }[] = [];
  let changes = "none";
  // `pulumi preview --expect-no-changes` right after the up (refreshing first: `refresh: always`),
  // interleaved with the floor's: the same engine previewing an empty program.
  for (let i = 0; i < PREVIEWS; i++) {
    const floor = await pulumiAsync(empty, bin, ["preview", "--expect-no-changes"], "empty");
    if (floor.code !== 0) throw new Error(`pulumi preview (empty) failed: ${summary(floor)}`);
    floors.push(floor);
    const preview = await pulumiAsync(sandbox, bin, ["preview", "--expect-no-changes"]);
    // 7: the preview ran and proposed changes; timed all the same, and reported.
    if (preview.code !== 0 && preview.code !== PULUMI_EXIT_CHANGES) throw new Error(`pulumi preview (${size} entries) failed: ${summary(preview)}`);
    if (preview.code === PULUMI_EXIT_CHANGES) changes = "some";
    previews.push(preview);
  }
  const destroy = await pulumiAsync(sandbox, bin, ["destroy", "--yes", "--skip-preview"]);
  if (destroy.code !== 0) throw new Error(`pulumi destroy (${size} entries) failed: ${summary(destroy)}`);
  return {
    entries: size,
    /** NodePort Services the stack creates (exposed nodePort entries). */
    services: served.length,
    upMs: up.ms,
    upCpuMs: up.cpuMs,
    previewMs: median(previews.map((p) => p.ms)),
    previewCpuMs: median(previews.map((p) => p.cpuMs)),
    previewChanges: changes,
    destroyMs: destroy.ms,
    clientMs,
    emptyPreviewMs: median(floors.map((p) => p.ms)),
    emptyPreviewCpuMs: median(floors.map((p) => p.cpuMs)),
  };
}

export async function measureLive(opts: { sizes: readonly number[]; log: (m: string) => void }) {
  const bin = toolchainBin();
  const missing = BINARIES.filter((b) => !fs.existsSync(path.join(bin, b)));
  if (missing.length) throw new Error(`the e2e toolchain is not built (missing ${missing.join(", ")} in ${bin}; scripts/e2e-toolchain.sh)`);
  if (!fs.existsSync(path.join(bin, "kube-controller-manager"))) process.env.E2E_KCM = "0";
  // About 2 Services per UI: more room than the default /24 of ClusterIPs.
  process.env.E2E_SERVICE_CIDR = "10.96.0.0/20";
  opts.log("live: starting the local API server");
  const cluster = await startCluster(bin);
  const sandbox = makeSandbox(bin, cluster, { kubernetes: providerVersions().kubernetes } as Parameters<typeof makeSandbox>[2]);
  let empty: Project | undefined;
  try {
    // scripts/e2e-cluster.sh runs no node lifecycle controller: these kubelet-less Nodes stay Ready.
    await addNodes(cluster, BENCH_NODES);
    await setCiliumConfig(cluster, "true");
    await installPlatform(cluster, generateEntries(Math.max(...opts.sizes)));
    // Warm-up (not measured): the first engine run pays cold caches for the CLI, plugins and node_modules.
    useContract(sandbox, cluster, generateEntries(Math.min(...opts.sizes)));
    await pulumiAsync(sandbox, bin, ["preview"]);
    empty = await emptyProgram(sandbox, bin);
    const up: UpRow[] = [];
    for (const size of opts.sizes) up.push(await measureUp(cluster, sandbox, empty, bin, size, opts.log));
    return { up };
  } finally {
    cluster.stop();
    fs.rmSync(sandbox.dir, { recursive: true, force: true });
    if (empty) fs.rmSync(empty.dir, { recursive: true, force: true });
  }
}

type UpRow = Awaited<ReturnType<typeof measureUp>>;

/** The table's columns: header, and the figure of a row. */
const COLUMNS: [string, (u: UpRow) => string][] = [
  ["entries", (u) => String(u.entries)],
  ["Services", (u) => String(u.services)],
  ["`up` (ms)", (u) => ms(u.upMs)],
  ["`up` CPU (ms)", (u) => ms(u.upCpuMs)],
  ["floor: client library (ms)", (u) => ms(u.clientMs)],
  ["`preview` (ms)", (u) => ms(u.previewMs)],
  ["`preview` CPU (ms)", (u) => ms(u.previewCpuMs)],
  ["floor: empty program's preview (ms)", (u) => ms(u.emptyPreviewMs)],
  ["changes proposed", (u) => u.previewChanges],
  ["`destroy` (ms)", (u) => ms(u.destroyMs)],
];

export function liveMarkdown(r: { up: UpRow[] }): string[] {
  return [
    `The real engine and kubernetes provider against the e2e harness's kube-apiserver on loopback, a generated platform (\`bench/gen.ts\`) at the platform's size and ten times it. Floors from the same run: the same NodePort Services created with the client library one after the other, and the preview of an empty program. Previews: median of ${PREVIEWS}, interleaved with the floor's; CPU time of the whole process tree.`,
    table(
      COLUMNS.map(([header]) => header),
      r.up.map((u) => COLUMNS.map(([, figure]) => figure(u))),
    ),
  ];
}
