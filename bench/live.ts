// Parts 2 and 3: against the real local kube-apiserver of the e2e harness (loopback only).
//   2. `pulumi up` / `pulumi preview` with the real engine and kubernetes provider, next to
//      the same Services created with the client library (the floor any tool pays).
//   3. `exposure status` and `exposure drift`'s audit: API requests (LiveClusterReader
//      counts them) and wall time, for growing contracts.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { createDriftCommand, PULUMI_EXIT_CHANGES } from "../cli/commands/drift";
import { createStatusCommand } from "../cli/commands/status";
import type { CommandContext } from "../cli/context";
import { connectLiveCluster } from "../cli/operator";
import { LiveClusterReader } from "../src/adapters/kube-live";
import type { ClusterReader } from "../src/core/kube/cluster";
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
  toolchainBin,
} from "../test/support/harness";
import { type Postgres, postgresBin, startPostgres } from "../test/support/postgres";
import { BENCH_NODES, contractYaml, type GeneratedEntry, generateEntries, hasService, managedService, selectorOf, vendoredService } from "./gen";
import { median } from "./stats";

const projectDir = path.resolve(__dirname, "..");

// client-node is an ES module: its types are imported in "import" resolution mode.
type V1Service = import("@kubernetes/client-node", { with: { "resolution-mode": "import" }}).V1Service;

export interface UpRow {
  entries: number;
  /** NodePort Services the stack creates (exposed nodePort entries). */
  services: number;
  upMs: number;
  /** CPU time of the whole `pulumi up` process tree (CLI, language host, program, provider); NaN without /usr/bin/time. */
  upCpuMs: number;
  /** `pulumi preview --expect-no-changes` right after the up (the stack refreshes first: `refresh: always`). */
  previewMs: number;
  /** What that preview proposed: "none", or e.g. "9 to update" (then --expect-no-changes failed). */
  previewChanges: string;
  destroyMs: number;
  /** The same Services created with the client library, one call after the other (what `kubectl apply -f` does). */
  clientSequentialMs: number;
  /** The same Services created with the client library, 16 calls in flight. */
  clientConcurrentMs: number;
  /**
   * The same `up` with PULUMI_SKIP_CHECKPOINTS=true (the engine then writes the state once, at
   * the end, instead of the whole state after every step): what the file backend's checkpoints
   * cost. A diagnosis, not a setting this project uses. Measured at the largest size only.
   */
  upNoCheckpointsMs?: number;
  upNoCheckpointsCpuMs?: number;
  /**
   * The same up, preview and destroy with the state in PostgreSQL (the team's shared backend,
   * README "Share state with your team"), on a throw-away server on loopback; or why not.
   */
  postgres?: { upMs: number; upCpuMs: number; previewMs: number; previewChanges: string; destroyMs: number } | { skipped: string };
}

export interface StatusRow {
  entries: number;
  /** Entries `status` judges (exposed, selected by the stack). */
  published: number;
  match: number;
  statusRequests: number;
  /** In-process `exposure status --json` (module loading excluded), median (ms). */
  statusMs: number;
  /** `node bin/exposure.cjs status ...`, process start to exit (ms). */
  statusCliMs: number;
  auditRequests: number;
  /** In-process `exposure drift --skip-preview --json`: the audit and its list calls, median (ms). */
  auditMs: number;
  auditCliMs: number;
  undeclared: number;
}

/** One `pulumi preview`: wall and CPU time of the process tree (CPU NaN without /usr/bin/time). */
export interface Timing {
  ms: number;
  cpuMs: number;
}

/**
 * The program's start-up next to the engine's floor, previews interleaved so that machine load
 * hits both alike: an empty TypeScript program (the same entry point and runtime options as this
 * project, so the difference is the program's own work) and, for reference, the same empty
 * program under the nodejs runtime's default (ts-node, type-checked at each run).
 */
export interface ProgramStartup {
  /** Entries of the bench-sized stack (as many UIs as the bench stack publishes). */
  entries: number;
  services: number;
  emptyProgram: Timing[];
  emptyProgramTsNode: Timing[];
  /**
   * The least any program managing these Services pays: the same NodePort Services as plain
   * `k8s.core.v1.Service` resources (other names) through an explicit kubernetes provider, compiled
   * JavaScript, no component, no cluster read, no contract. What the stack costs above it is its own.
   */
  plainServices: Timing[];
  benchStack: Timing[];
}

export interface LiveResults {
  server: string;
  toolchain: string;
  kubeControllerManager: boolean;
  /** Part 2, or why it could not run (the Pulumi half of the toolchain is missing). */
  up: UpRow[] | { skipped: string };
  startup?: ProgramStartup | { skipped: string };
  status: StatusRow[];
}

/** The API server half of the toolchain: without it neither part runs. */
const CLUSTER_BINARIES = ["kube-apiserver", "etcd"];
/** The Pulumi half (what makeSandbox installs): without it part 2 is skipped, part 3 still runs. */
const PULUMI_BINARIES = ["pulumi", "pulumi-language-nodejs", "prov/pulumi-resource-kubernetes"];

const REPS = 5;
const CONCURRENCY = 16;

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const ignoreConflict = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
};

/** Installs the platform as its charts would: namespaces, vendored ClusterIP Services, one Ready pod per UI. */
async function installPlatform(c: Cluster, entries: readonly GeneratedEntry[]) {
  const namespaces = [...new Set(entries.map((e) => e.namespace))];
  await pool(namespaces, CONCURRENCY, async (ns) => {
    await ignoreConflict(c.core.createNamespace({ body: { metadata: { name: ns } } }));
    await ignoreConflict(c.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "default" } } }));
  });
  await pool(entries, CONCURRENCY, async (e) => {
    const i = Number(e.name.slice(3));
    if (hasService(e)) await c.core.createNamespacedService({ namespace: e.namespace, body: vendoredService(e) as V1Service });
    const name = `${e.name}-0`;
    await c.core.createNamespacedPod({
      namespace: e.namespace,
      body: {
        metadata: { name, labels: e.hostPort ? { app: e.name } : selectorOf(e) },
        spec: {
          nodeName: BENCH_NODES[i % 2]?.name as string,
          automountServiceAccountToken: false,
          containers: [
            { name: "ui", image: "example.invalid/ui:1", ports: [{ containerPort: 8080, name: "http", ...(e.hostPort ? { hostPort: e.hostPort } : {}) }] },
          ],
        },
      },
    });
    const pod = await c.core.readNamespacedPod({ namespace: e.namespace, name });
    const podIP = `10.244.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    pod.status = {
      phase: "Running",
      podIP,
      podIPs: [{ ip: podIP }],
      hostIP: BENCH_NODES[i % 2]?.ip as string,
      conditions: [
        { type: "Ready", status: "True", lastTransitionTime: new Date() },
        { type: "ContainersReady", status: "True", lastTransitionTime: new Date() },
      ],
    };
    await c.core.replaceNamespacedPodStatus({ namespace: e.namespace, name, body: pod });
  });
}

const exposedServiceEntries = (entries: readonly GeneratedEntry[]) => entries.filter(hasService).filter((e) => e.exposed);

/** Creates our NodePort Services with the client library; returns the allocated nodePorts. */
async function createManaged(c: Cluster, entries: readonly GeneratedEntry[], limit: number): Promise<Map<string, number>> {
  const created = await pool(exposedServiceEntries(entries), limit, async (e) => {
    const svc = await c.core.createNamespacedService({ namespace: e.namespace, body: managedService(e) as V1Service });
    return [e.name, svc.spec?.ports?.[0]?.nodePort ?? 0] as const;
  });
  return new Map(created);
}

async function deleteManaged(c: Cluster) {
  const list = await c.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });
  await pool(list.items, CONCURRENCY, (s) => c.core.deleteNamespacedService({ namespace: s.metadata?.namespace as string, name: s.metadata?.name as string }));
  // Deletion is synchronous for Services without finalizers, but wait anyway: the next step counts them.
  for (let i = 0; i < 100; i++) {
    const left = await c.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });
    if (left.items.length === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("managed Services still present after deletion");
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

function stackConfig(c: Cluster, entries: readonly GeneratedEntry[]) {
  return {
    "kubernetes:context": "e2e",
    "kubernetes:kubeconfig": c.kubeconfig,
    "ui-exposure:contract": "contract/bench.yaml",
    "ui-exposure:entries": entries.filter((e) => e.exposed).map((e) => e.name),
    "ui-exposure:cilium": { mode: "cohabit" },
  };
}

function useContract(sandbox: Sandbox, c: Cluster, entries: readonly GeneratedEntry[]) {
  fs.writeFileSync(path.join(sandbox.dir, "contract/bench.yaml"), contractYaml(entries));
  sandbox.writeStack(stackConfig(c, entries));
}

/**
 * The operator's side for part 3: a project folder (Pulumi.yaml, stack file, contract) the
 * `exposure` commands open, without the Pulumi CLI: published outputs come from a file, as a
 * pipeline saves them, and drift runs its audit alone (--skip-preview).
 */
interface OpsProject {
  dir: string;
  use(entries: readonly GeneratedEntry[]): void;
  exposure(args: string[]): { code: number | null; stdout: string; stderr: string; ms: number };
}

function makeOpsProject(c: Cluster): OpsProject {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-ops-"));
  fs.copyFileSync(path.join(projectDir, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
  fs.mkdirSync(path.join(dir, "contract"));
  return {
    dir,
    use(entries) {
      fs.writeFileSync(path.join(dir, "contract/bench.yaml"), contractYaml(entries));
      fs.writeFileSync(path.join(dir, "Pulumi.sandbox.yaml"), stringify({ config: stackConfig(c, entries) }));
    },
    exposure(args) {
      const t0 = performance.now();
      // cwd = the ops project: the CLI finds its Pulumi.yaml there, as an operator's shell would.
      const r = spawnSync(process.execPath, [path.join(projectDir, "bin/exposure.cjs"), ...args], {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, KUBECONFIG: c.kubeconfig },
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", ms: performance.now() - t0 };
    },
  };
}

const tail = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-2000)}\n${r.stderr.slice(-2000)}`;

const TIME = "/usr/bin/time";
const hasTime = fs.existsSync(TIME);

/**
 * `sandbox.pulumi()` with the same arguments and environment, but asynchronous: a synchronous
 * spawn would block this process' event loop (its timers, its client connections) for minutes.
 * Under /usr/bin/time when present: the CPU time of the whole process tree (the CLI waits for
 * the language host, which waits for the program) is read from its last stderr line.
 */
async function pulumiAsync(
  sandbox: { dir: string; env: NodeJS.ProcessEnv },
  bin: string,
  args: string[],
  stack = "sandbox",
): Promise<ProcessResult & { cpuMs: number }> {
  const pulumi = [path.join(bin, "pulumi"), ...args, "--stack", stack, "--non-interactive"];
  const r = hasTime
    ? await runProcess(TIME, ["-f", "cpu-seconds %U %S", ...pulumi], { cwd: sandbox.dir, env: sandbox.env })
    : await runProcess(pulumi[0] as string, pulumi.slice(1), { cwd: sandbox.dir, env: sandbox.env });
  const cpu = /cpu-seconds (\S+) (\S+)\s*$/.exec(r.stderr);
  return { ...r, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : Number.NaN };
}

async function measureUp(
  c: Cluster,
  sandbox: Sandbox,
  bin: string,
  size: number,
  log: (m: string) => void,
  opts: { checkpointsDiagnosis: boolean; shared?: SharedBackend | { skipped: string } },
): Promise<UpRow> {
  const entries = generateEntries(size);
  const services = exposedServiceEntries(entries).length;
  useContract(sandbox, c, entries);

  // The floor: the same Services straight through the API, then removed again.
  const sequential = await timed(() => createManaged(c, entries, 1));
  await deleteManaged(c);
  const concurrent = await timed(() => createManaged(c, entries, CONCURRENCY));
  await deleteManaged(c);

  {
    log(`part 2: pulumi up, ${size} entries`);
    const up = await pulumiAsync(sandbox, bin, ["up", "--yes", "--skip-preview"]);
    if (up.code !== 0) throw new Error(`pulumi up (${size} entries) failed: ${tail(up)}`);
    const made = await c.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });
    if (made.items.length !== services) throw new Error(`pulumi up made ${made.items.length} Services, expected ${services}`);
    const preview = await pulumiAsync(sandbox, bin, ["preview", "--expect-no-changes"]);
    // 7: the preview ran and proposed changes; timed all the same, and reported.
    if (preview.code !== 0 && preview.code !== PULUMI_EXIT_CHANGES) throw new Error(`pulumi preview (${size} entries) failed: ${tail(preview)}`);
    const proposed = /^\s+~ (\d+) to update/m.exec(preview.stdout)?.[1];
    // Keep what the preview proposed: a change right after `up` is a finding in itself.
    if (preview.code === PULUMI_EXIT_CHANGES) {
      fs.mkdirSync(path.join(projectDir, "test-output"), { recursive: true });
      fs.writeFileSync(path.join(projectDir, `test-output/bench-preview-${size}.log`), preview.stdout);
    }
    const destroy = await pulumiAsync(sandbox, bin, ["destroy", "--yes", "--skip-preview"]);
    if (destroy.code !== 0) throw new Error(`pulumi destroy (${size} entries) failed: ${tail(destroy)}`);
    let noCheckpoints: { ms: number; cpuMs: number } | undefined;
    if (opts.checkpointsDiagnosis) {
      log(`part 2: pulumi up, ${size} entries, checkpoints skipped (diagnosis)`);
      const skipping = { dir: sandbox.dir, env: { ...sandbox.env, PULUMI_SKIP_CHECKPOINTS: "true" } };
      const r = await pulumiAsync(skipping, bin, ["up", "--yes", "--skip-preview"]);
      if (r.code !== 0) throw new Error(`pulumi up (${size} entries, PULUMI_SKIP_CHECKPOINTS) failed: ${tail(r)}`);
      noCheckpoints = { ms: r.ms, cpuMs: r.cpuMs };
      const again = await pulumiAsync(sandbox, bin, ["destroy", "--yes", "--skip-preview"]);
      if (again.code !== 0) throw new Error(`pulumi destroy (${size} entries) failed: ${tail(again)}`);
    }
    let postgres: UpRow["postgres"];
    if (opts.shared && "skipped" in opts.shared) postgres = opts.shared;
    else if (opts.shared) {
      log(`part 2: pulumi up, ${size} entries, state in PostgreSQL`);
      const shared = { dir: sandbox.dir, env: opts.shared.env };
      const pgUp = await pulumiAsync(shared, bin, ["up", "--yes", "--skip-preview"]);
      if (pgUp.code !== 0) throw new Error(`pulumi up (${size} entries, PostgreSQL) failed: ${tail(pgUp)}`);
      const pgPreview = await pulumiAsync(shared, bin, ["preview", "--expect-no-changes"]);
      if (pgPreview.code !== 0 && pgPreview.code !== PULUMI_EXIT_CHANGES)
        throw new Error(`pulumi preview (${size} entries, PostgreSQL) failed: ${tail(pgPreview)}`);
      const pgDestroy = await pulumiAsync(shared, bin, ["destroy", "--yes", "--skip-preview"]);
      if (pgDestroy.code !== 0) throw new Error(`pulumi destroy (${size} entries, PostgreSQL) failed: ${tail(pgDestroy)}`);
      postgres = {
        upMs: pgUp.ms,
        upCpuMs: pgUp.cpuMs,
        previewMs: pgPreview.ms,
        previewChanges: pgPreview.code === PULUMI_EXIT_CHANGES ? "some" : "none",
        destroyMs: pgDestroy.ms,
      };
    }
    return {
      ...(postgres ? { postgres } : {}),
      ...(noCheckpoints ? { upNoCheckpointsMs: noCheckpoints.ms, upNoCheckpointsCpuMs: noCheckpoints.cpuMs } : {}),
      entries: size,
      services,
      upMs: up.ms,
      upCpuMs: up.cpuMs,
      previewMs: preview.ms,
      previewChanges: preview.code === PULUMI_EXIT_CHANGES ? `${proposed ?? "some"} to update` : "none",
      destroyMs: destroy.ms,
      clientSequentialMs: sequential.ms,
      clientConcurrentMs: concurrent.ms,
    };
  }
}

/** The bench stack publishes 3 UIs (Pulumi.bench.yaml): the size of the start-up comparison. */
const BENCH_SIZED = 3;
const STARTUP_REPS = 5;

/**
 * An empty Pulumi program (what `pulumi new typescript` gives, before any resource), stack
 * `empty` in the sandbox's backend. `sameStart`: as this project starts when `npm ci` has built
 * dist/ (compiled JavaScript, nothing transpiled or type-checked at start: the cheapest start a
 * Node.js program can have, so the floor); otherwise the nodejs runtime's default (ts-node with
 * its type check).
 */
async function emptyProgram(
  sandbox: Sandbox,
  bin: string,
  sameStart: boolean,
  plain?: { kubeconfig: string; services: readonly Record<string, unknown>[] },
): Promise<{ dir: string; env: NodeJS.ProcessEnv }> {
  const name = plain ? "plain-services" : sameStart ? "empty-compiled" : "empty-ts-node";
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ui-exposure-bench-${name}-`));
  fs.writeFileSync(
    path.join(dir, "Pulumi.yaml"),
    sameStart ? `name: ${name}\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: index.js\n` : `name: ${name}\nruntime: nodejs\n`,
  );
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, private: true, main: sameStart ? "index.js" : "index.ts" }));
  if (sameStart) {
    const body = plain
      ? [
          'const k8s = require("@pulumi/kubernetes");',
          `const provider = new k8s.Provider("k8s", { kubeconfig: ${JSON.stringify(plain.kubeconfig)}, context: "e2e" });`,
          `for (const svc of ${JSON.stringify(plain.services)}) new k8s.core.v1.Service(svc.metadata.name, svc, { provider });`,
        ]
      : [];
    fs.writeFileSync(
      path.join(dir, "index.js"),
      ['"use strict";', 'const pulumi = require("@pulumi/pulumi");', ...body, "", "exports.stack = pulumi.getStack();", ""].join("\n"),
    );
  } else {
    fs.writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, target: "ES2022", module: "node16", moduleResolution: "node16", skipLibCheck: true, types: ["node"] },
      }),
    );
    fs.writeFileSync(path.join(dir, "index.ts"), 'import * as pulumi from "@pulumi/pulumi";\n\nexport const stack = pulumi.getStack();\n');
  }
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(dir, "node_modules"));
  const project = { dir, env: sandbox.env };
  const init = await runProcess(path.join(bin, "pulumi"), ["stack", "init", "empty", "--secrets-provider", "passphrase", "--non-interactive"], {
    cwd: dir,
    env: sandbox.env,
  });
  if (init.code !== 0) throw new Error(`stack init (${name}) failed: ${tail(init)}`);
  const up = await pulumiAsync(project, bin, ["up", "--yes", "--skip-preview"], "empty");
  if (up.code !== 0) throw new Error(`pulumi up (${name}) failed: ${tail(up)}`);
  return project;
}

/**
 * `pulumi preview` of the bench-sized stack next to an empty program's, same engine, same run,
 * interleaved. Both stacks exist (each was `up`ed first): what an operator's drift check costs.
 */
async function measureStartup(c: Cluster, sandbox: Sandbox, bin: string, log: (m: string) => void): Promise<ProgramStartup> {
  const entries = generateEntries(BENCH_SIZED);
  useContract(sandbox, c, entries);
  log(`part 2: start-up, empty program vs the ${BENCH_SIZED}-entry stack (preview x${STARTUP_REPS}, interleaved)`);
  const up = await pulumiAsync(sandbox, bin, ["up", "--yes", "--skip-preview"]);
  if (up.code !== 0) throw new Error(`pulumi up (${BENCH_SIZED} entries) failed: ${tail(up)}`);
  const loader = await emptyProgram(sandbox, bin, true);
  const tsNode = await emptyProgram(sandbox, bin, false);
  const plainServices = exposedServiceEntries(entries).map((e) => {
    const svc = managedService(e);
    return { ...svc, metadata: { ...svc.metadata, name: `${e.name}-plain`, labels: {}, annotations: { "pulumi.com/skipAwait": "true" } } };
  });
  const plain = await emptyProgram(sandbox, bin, true, { kubeconfig: c.kubeconfig, services: plainServices });
  const result: ProgramStartup = {
    entries: BENCH_SIZED,
    services: exposedServiceEntries(entries).length,
    emptyProgram: [],
    emptyProgramTsNode: [],
    plainServices: [],
    benchStack: [],
  };
  const preview = async (project: { dir: string; env: NodeJS.ProcessEnv }, stack: string, into: Timing[], extra: string[] = []) => {
    const r = await pulumiAsync(project, bin, ["preview", "--expect-no-changes", ...extra], stack);
    if (r.code !== 0) throw new Error(`pulumi preview in ${project.dir} failed: ${tail(r)}`);
    into.push({ ms: r.ms, cpuMs: r.cpuMs });
  };
  try {
    for (let i = 0; i < STARTUP_REPS; i++) {
      await preview(loader, "empty", result.emptyProgram);
      // Refreshed first, as the stack's preview is (Pulumi.yaml `refresh: always`, the drift check).
      await preview(plain, "empty", result.plainServices, ["--refresh"]);
      await preview(sandbox, "sandbox", result.benchStack);
      await preview(tsNode, "empty", result.emptyProgramTsNode);
    }
  } finally {
    // The plain Services go with their stack, before the folder holding its state.
    await pulumiAsync(plain, bin, ["destroy", "--yes", "--skip-preview"], "empty");
    for (const p of [loader, tsNode, plain]) fs.rmSync(p.dir, { recursive: true, force: true });
  }
  const destroy = await pulumiAsync(sandbox, bin, ["destroy", "--yes", "--skip-preview"]);
  if (destroy.code !== 0) throw new Error(`pulumi destroy (${BENCH_SIZED} entries) failed: ${tail(destroy)}`);
  return result;
}

/** Waits until the controller manager has built an EndpointSlice for each of our Services (status says MATCH only then). */
async function waitForSlices(c: Cluster, count: number): Promise<void> {
  const kc = new c.lib.KubeConfig();
  kc.loadFromFile(c.kubeconfig);
  const api = kc.makeApiClient(c.lib.DiscoveryV1Api);
  const end = Date.now() + 120_000;
  while (Date.now() < end) {
    const slices = await api.listEndpointSliceForAllNamespaces();
    const ours = slices.items.filter((s) => s.metadata?.labels?.["kubernetes.io/service-name"]?.endsWith("-nodeport") && (s.endpoints ?? []).length > 0);
    if (ours.length >= count) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function measureStatus(c: Cluster, ops: OpsProject, size: number, log: (m: string) => void): Promise<StatusRow> {
  const entries = generateEntries(size);
  ops.use(entries);
  const ports = await createManaged(c, entries, CONCURRENCY);
  await waitForSlices(c, ports.size);
  // What the last `up` published, as `pulumi stack output --json` gives it: status compares the live nodePorts with it.
  const outputsFile = path.join(ops.dir, `outputs-${size}.json`);
  const address = BENCH_NODES[0]?.ip as string;
  fs.writeFileSync(
    outputsFile,
    JSON.stringify({
      urls: Object.fromEntries([...ports].map(([name, port]) => [name, `http://${address}:${port}`])),
      endpoints: Object.fromEntries([...ports].map(([name, port]) => [name, { nodePort: port, url: `http://${address}:${port}` }])),
    }),
  );

  // The commands' own connection, wrapped only to read its request counter afterwards.
  let reader: LiveClusterReader | undefined;
  const connect = async (...args: Parameters<typeof connectLiveCluster>): Promise<ClusterReader> => {
    const r = await connectLiveCluster(...args);
    if (r instanceof LiveClusterReader) reader = r;
    return r;
  };
  let out = "";
  const ctx: CommandContext = {
    projectDir: ops.dir,
    stdout: (t) => {
      out = t;
    },
    stderr: () => {},
    env: { ...process.env, KUBECONFIG: c.kubeconfig },
  };
  const status = createStatusCommand({ connect, readOutputs: async (_ctx, _stack, file) => JSON.parse(fs.readFileSync(file ?? outputsFile, "utf8")) });
  const drift = createDriftCommand({ connect });
  const statusArgs = ["--stack", "sandbox", "--outputs", outputsFile, "--json"];
  const driftArgs = ["--stack", "sandbox", "--skip-preview", "--json"];

  log(`part 3: status and drift audit, ${size} entries`);
  // One unmeasured run each: module loading and the first TLS handshake are not per-entry costs.
  await status(statusArgs, ctx);
  await drift(driftArgs, ctx);
  const statusRuns: { ms: number; requests: number }[] = [];
  const auditRuns: { ms: number; requests: number }[] = [];
  for (let i = 0; i < REPS; i++) {
    const s = await timed(() => status(statusArgs, ctx));
    statusRuns.push({ ms: s.ms, requests: reader?.requests ?? Number.NaN });
    const d = await timed(() => drift(driftArgs, ctx));
    auditRuns.push({ ms: d.ms, requests: reader?.requests ?? Number.NaN });
  }
  await status(statusArgs, ctx);
  const report = JSON.parse(out) as { entries: { exposed: boolean; verdict: string }[] };
  await drift(driftArgs, ctx);
  const audit = JSON.parse(out) as { audit?: { undeclared?: unknown[] } };

  // The CLI as an operator runs it (process start, tsx, modules): once to check it works, once timed.
  const cli = (args: string[]) => {
    const r = ops.exposure(args);
    if (r.code === 1 || r.code === 2) throw new Error(`exposure ${args[0]} failed: ${tail(r)}`);
    return r.ms;
  };
  cli(["status", ...statusArgs]);
  const statusCliMs = cli(["status", ...statusArgs]);
  cli(["drift", ...driftArgs]);
  const auditCliMs = cli(["drift", ...driftArgs]);

  await deleteManaged(c);
  const requestsOf = (runs: { requests: number }[]) => Math.max(...runs.map((r) => r.requests));
  return {
    entries: size,
    published: report.entries.filter((e) => e.exposed).length,
    match: report.entries.filter((e) => e.verdict === "MATCH").length,
    statusRequests: requestsOf(statusRuns),
    statusMs: median(statusRuns.map((r) => r.ms)),
    statusCliMs,
    auditRequests: requestsOf(auditRuns),
    auditMs: median(auditRuns.map((r) => r.ms)),
    auditCliMs,
    undeclared: audit.audit?.undeclared?.length ?? Number.NaN,
  };
}

const missingIn = (bin: string, names: readonly string[]) => names.filter((b) => !fs.existsSync(path.join(bin, b)));

interface SharedBackend {
  server: Postgres;
  env: NodeJS.ProcessEnv;
}

/** The sandbox's stack, also in a throw-away PostgreSQL database (docs/team-state.md's set-up, a passfile, no password in the URL). */
async function sharedBackend(sandbox: Sandbox, bin: string): Promise<SharedBackend | { skipped: string }> {
  if (!postgresBin()) return { skipped: "PostgreSQL is not installed (apt-get install postgresql)" };
  const server = await startPostgres();
  const password = "bench-state-pw";
  server.sql(`create role ui_exposure login password '${password}'`);
  server.sql("create database ui_exposure_state owner ui_exposure");
  const passfile = path.join(sandbox.dir, ".pgpass");
  fs.writeFileSync(passfile, `127.0.0.1:${server.port}:ui_exposure_state:ui_exposure:${password}\n`, { mode: 0o600 });
  const env = {
    ...sandbox.env,
    PGPASSFILE: passfile,
    PULUMI_BACKEND_URL: `postgres://ui_exposure@127.0.0.1:${server.port}/ui_exposure_state?sslmode=disable&connect_timeout=10`,
  };
  // Same stack name and stack file (its passphrase salt): `stack init` on the second backend.
  const init = await runProcess(path.join(bin, "pulumi"), ["stack", "init", "sandbox", "--non-interactive"], { cwd: sandbox.dir, env });
  if (init.code !== 0) {
    await server.stop();
    throw new Error(`pulumi stack init on PostgreSQL failed: ${tail(init)}`);
  }
  return { server, env };
}

async function measureUpAll(
  cluster: Cluster,
  bin: string,
  sizes: readonly number[],
  log: (m: string) => void,
): Promise<{ up: UpRow[]; startup: ProgramStartup } | { skipped: string }> {
  const missing = missingIn(bin, PULUMI_BINARIES);
  if (missing.length) return { skipped: `the Pulumi half of the e2e toolchain is not built yet (missing ${missing.join(", ")} in ${bin})` };
  // Only the kubernetes provider: the program uses no other (command cannot be built here).
  const versions = providerVersions();
  const sandbox = makeSandbox(bin, cluster, { kubernetes: versions.kubernetes } as Parameters<typeof makeSandbox>[2]);
  try {
    // Warm-up (not measured): the first engine run pays cold caches for the CLI, plugins and node_modules.
    useContract(sandbox, cluster, generateEntries(9));
    await pulumiAsync(sandbox, bin, ["preview"]);
    const startup = await measureStartup(cluster, sandbox, bin, log);
    const up: UpRow[] = [];
    const largest = Math.max(...sizes);
    const shared = await sharedBackend(sandbox, bin);
    try {
      for (const size of sizes) up.push(await measureUp(cluster, sandbox, bin, size, log, { checkpointsDiagnosis: size === largest, shared }));
    } finally {
      if (!("skipped" in shared)) await shared.server.stop();
    }
    return { up, startup };
  } finally {
    fs.rmSync(sandbox.dir, { recursive: true, force: true });
  }
}

export async function measureLive(opts: { upSizes: number[]; statusSizes: number[]; log: (m: string) => void }): Promise<LiveResults> {
  const bin = toolchainBin();
  const missing = missingIn(bin, CLUSTER_BINARIES);
  if (missing.length) throw new Error(`e2e toolchain not built yet (missing ${missing.join(", ")} in ${bin}); run scripts/e2e-toolchain.sh`);
  const kcm = fs.existsSync(path.join(bin, "kube-controller-manager"));
  // Without the controller manager nothing builds EndpointSlices: status then says DRIFT (no ready endpoints), same requests.
  if (!kcm) process.env.E2E_KCM = "0";

  // ~2 Services per UI: the default /24 ClusterIP range holds 253, the platform of 500 UIs needs ~1,000.
  process.env.E2E_SERVICE_CIDR = "10.96.0.0/20";
  opts.log("parts 2-3: starting the local API server");
  const cluster = await startCluster(bin);
  const ops = makeOpsProject(cluster);
  try {
    // scripts/e2e-cluster.sh runs no node lifecycle controller: these kubelet-less Nodes stay Ready.
    await addNodes(cluster, BENCH_NODES);
    await setCiliumConfig(cluster, "true");
    const largest = Math.max(...opts.upSizes, ...opts.statusSizes);
    opts.log(`parts 2-3: installing a platform of ${largest} UIs`);
    await installPlatform(cluster, generateEntries(largest));

    const part2 = await measureUpAll(cluster, bin, opts.upSizes, opts.log);
    if ("skipped" in part2) opts.log(`part 2 not measured: ${part2.skipped}`);
    const up = "skipped" in part2 ? part2 : part2.up;
    const startup = "skipped" in part2 ? part2 : part2.startup;
    const status: StatusRow[] = [];
    for (const size of opts.statusSizes) status.push(await measureStatus(cluster, ops, size, opts.log));
    return { server: cluster.server, toolchain: bin, kubeControllerManager: kcm, up, startup, status };
  } finally {
    cluster.stop();
    fs.rmSync(ops.dir, { recursive: true, force: true });
  }
}
