// `pulumi preview`, `up`, a no-change `up` and `destroy` of our program against the engine's own floor, in one run: a plain @pulumi/kubernetes program
// (bench/plain-program) declaring the Services our program declares for the same contract (taken from `render`), through the same engine, provider binary,
// file backend and local kube-apiserver of the e2e harness (loopback only). The API server's request counters tell which requests each command made.
import * as fs from "node:fs";
import type { IncomingMessage } from "node:http";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import { render } from "../components/render";
import { LiveClusterReader } from "../src/adapters/kube-live";
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
import { BENCH_NODES, contractYaml, type GeneratedEntry, generateEntries, hasService, servedEntries, uiPod, vendoredService } from "./gen";
import { ms, table } from "./stats";

const projectDir = path.resolve(__dirname, "..");

/** What the toolchain must hold: the API server half and the Pulumi half. */
const BINARIES = ["kube-apiserver", "etcd", "pulumi", "pulumi-language-nodejs", "prov/pulumi-resource-kubernetes"];
const CONCURRENCY = 16;

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<unknown>) {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) await fn(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** A namespace's default ServiceAccount may exist already (the controller-manager makes it). */
const ignoreConflict = (p: Promise<unknown>) => p.catch((err: { code?: number }) => err.code === 409 || Promise.reject(err));

/** Installs the platform as its charts would: namespaces, vendored ClusterIP Services, one Ready pod per UI. */
async function installPlatform(c: Cluster, entries: readonly GeneratedEntry[]) {
  const namespaces = [...new Set(entries.map((e) => e.namespace))];
  await pool(namespaces, CONCURRENCY, async (ns) => {
    await ignoreConflict(c.core.createNamespace({ body: { metadata: { name: ns } } }));
    await ignoreConflict(c.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "default" } } }));
  });
  await pool(entries, CONCURRENCY, async (e, i) => {
    if (hasService(e)) await c.core.createNamespacedService({ namespace: e.namespace, body: vendoredService(e) as never });
    const pod = uiPod(e, i);
    const created = await c.core.createNamespacedPod({ namespace: e.namespace, body: pod as never });
    // No kubelet: the status a running, Ready pod reports.
    await c.core.replaceNamespacedPodStatus({ namespace: e.namespace, name: pod.metadata.name, body: { ...created, status: pod.status } as never });
  });
}

const managedCount = async (c: Cluster) =>
  (await c.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" })).items.length;
const CONTROLLER_RESOURCES = new Set(["endpointslices", "endpoints", "events", "leases"]); // the controller-manager's traffic, not the command's

/** The API server's request counters (`apiserver_request_total`), "VERB resource[/subresource]" -> count; WATCH left out. */
async function apiRequests(c: Cluster): Promise<Map<string, number>> {
  const kc = new c.lib.KubeConfig();
  kc.loadFromFile(c.kubeconfig);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const res = await new Promise<IncomingMessage>((resolve, reject) => https.get(`${c.server}/metrics`, opts, resolve).on("error", reject));
  let text = "";
  for await (const chunk of res.setEncoding("utf8")) text += chunk;
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const label = (k: string) => new RegExp(`${k}="([^"]*)"`).exec(m[1] as string)?.[1] ?? "";
    const [verb, resource, sub] = [label("verb"), label("resource"), label("subresource")];
    if (!resource || verb === "WATCH" || CONTROLLER_RESOURCES.has(resource)) continue;
    const key = `${verb} ${resource}${sub ? `/${sub}` : ""}`;
    counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
  }
  return counts;
}

const requestsSince = (before: Map<string, number>, after: Map<string, number>) =>
  Object.fromEntries([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0));

const TIME = fs.existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
/** A Pulumi project folder, the environment its commands run in and its stack. */
type Project = { cwd: string; env: NodeJS.ProcessEnv; stack: string };
type Step = ProcessResult & { cpuMs: number; requests: Record<string, number> };

/** A pulumi command, asynchronous (a synchronous spawn would block this process for minutes), under /usr/bin/time when present (the CPU time of the whole
 * process tree, from its last stderr line), with the API requests it made; a failure stops the part. */
async function pulumi(c: Cluster, project: Project, bin: string, args: string[], what: string): Promise<Step> {
  const before = await apiRequests(c);
  const command = [path.join(bin, "pulumi"), ...args, "--stack", project.stack, "--non-interactive"];
  const [cmd, ...rest] = TIME ? [TIME, "-f", "cpu-seconds %U %S", ...command] : command;
  const r = await runProcess(cmd as string, rest, project);
  if (r.code !== 0) throw new Error(`${what} failed: ${summary(r)}`);
  const cpu = /cpu-seconds (\S+) (\S+)\s*$/.exec(r.stderr);
  return { ...r, cpuMs: cpu ? (Number(cpu[1]) + Number(cpu[2])) * 1000 : Number.NaN, requests: requestsSince(before, await apiRequests(c)) };
}

/** The plain program in a folder of its own (the project's node_modules), stack `plain` in the sandbox's backend, same kube target. */
async function plainProgram(c: Cluster, sandbox: Sandbox, bin: string): Promise<Project> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-plain-"));
  fs.cpSync(path.join(__dirname, "plain-program"), dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "package.json"), '{ "name": "plain", "private": true }\n');
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(dir, "node_modules"));
  const project = { cwd: dir, env: sandbox.env, stack: "plain" };
  const init = await runProcess(path.join(bin, "pulumi"), ["stack", "init", "plain", "--secrets-provider", "passphrase", "--non-interactive"], project);
  if (init.code !== 0) throw new Error(`stack init (plain) failed: ${summary(init)}`);
  fs.appendFileSync(path.join(dir, "Pulumi.plain.yaml"), `config:\n  kubernetes:context: e2e\n  kubernetes:kubeconfig: ${c.kubeconfig}\n`);
  return project;
}

/** Our stack's contract and settings for `entries`; the plain program's services.json: the Services our program declares for them. */
async function useContract(sandbox: Sandbox, plain: Project, c: Cluster, entries: readonly GeneratedEntry[]) {
  fs.writeFileSync(path.join(sandbox.dir, "contract/bench.yaml"), contractYaml(entries));
  sandbox.writeStack({
    "kubernetes:context": "e2e",
    "kubernetes:kubeconfig": c.kubeconfig,
    "ui-exposure:contract": "contract/bench.yaml",
    "ui-exposure:entries": entries.filter((e) => e.exposed).map((e) => e.name),
    "ui-exposure:cilium": { mode: "cohabit" },
  });
  const cluster = await LiveClusterReader.connect({ context: "e2e", kubeconfig: c.kubeconfig, timeoutMs: 30_000 });
  const { objects } = await render({ projectDir: sandbox.dir, stack: "sandbox", cluster });
  const services = objects.filter((o) => o.kind === "Service");
  if (services.length !== servedEntries(entries).length)
    throw new Error(`render declared ${services.length} Services, expected ${servedEntries(entries).length}`);
  fs.writeFileSync(path.join(plain.cwd, "services.json"), JSON.stringify(services));
}

const loadAverage = () => (os.loadavg()[0] ?? 0).toFixed(1);
/** preview (of the creates), up, a no-change up, destroy: one program at one size, checking what each leaves. */
async function cycle(c: Cluster, project: Project, bin: string, services: number, what: string, log: (m: string) => void) {
  log(`live: ${what}, ${services} Services (load average ${loadAverage()})`);
  const preview = await pulumi(c, project, bin, ["preview"], `${what}: pulumi preview`);
  const up = await pulumi(c, project, bin, ["up", "--yes", "--skip-preview"], `${what}: pulumi up`);
  if ((await managedCount(c)) !== services) throw new Error(`${what}: pulumi up left ${await managedCount(c)} Services, expected ${services}`);
  // Fails on any change: what the up declared is what the cluster holds.
  const again = await pulumi(c, project, bin, ["up", "--yes", "--skip-preview", "--expect-no-changes"], `${what}: no-change pulumi up`);
  const destroy = await pulumi(c, project, bin, ["destroy", "--yes", "--skip-preview"], `${what}: pulumi destroy`);
  if (await managedCount(c)) throw new Error(`${what}: pulumi destroy left ${await managedCount(c)} Services`);
  const figures = (s: Step) => ({ ms: s.ms, cpuMs: s.cpuMs, requests: s.requests });
  return { preview: figures(preview), up: figures(up), again: figures(again), destroy: figures(destroy) };
}

type Cycle = Awaited<ReturnType<typeof cycle>>;

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
  const ours: Project = { cwd: sandbox.dir, env: sandbox.env, stack: "sandbox" };
  let plain: Project | undefined;
  try {
    // scripts/e2e-cluster.sh runs no node lifecycle controller: these kubelet-less Nodes stay Ready.
    await addNodes(cluster, BENCH_NODES);
    await setCiliumConfig(cluster, "true");
    await installPlatform(cluster, generateEntries(Math.max(...opts.sizes)));
    plain = await plainProgram(cluster, sandbox, bin);
    // Warm-up (not measured): the first engine run of each pays cold caches for the CLI, plugins and node_modules.
    await useContract(sandbox, plain, cluster, generateEntries(Math.min(...opts.sizes)));
    await pulumi(cluster, ours, bin, ["preview"], "warm-up preview (ours)");
    await pulumi(cluster, plain, bin, ["preview"], "warm-up preview (plain)");
    const rows: Row[] = [];
    for (const size of opts.sizes) {
      const entries = generateEntries(size);
      await useContract(sandbox, plain, cluster, entries);
      const services = servedEntries(entries).length;
      const loadBefore = loadAverage();
      // The floor first, then ours, each whole (both declare the same Services: they cannot run side by side).
      const floor = await cycle(cluster, plain, bin, services, `plain program, ${size} entries`, opts.log);
      const program = await cycle(cluster, ours, bin, services, `our program, ${size} entries`, opts.log);
      rows.push({ entries: size, services, load: `${loadBefore}-${loadAverage()}`, plain: floor, ours: program });
    }
    return { rows };
  } finally {
    cluster.stop();
    fs.rmSync(sandbox.dir, { recursive: true, force: true });
    if (plain) fs.rmSync(plain.cwd, { recursive: true, force: true });
  }
}

type Row = { entries: number; services: number; load: string; plain: Cycle; ours: Cycle };
const STEPS: [keyof Cycle, string][] = [
  ["preview", "`preview`"],
  ["up", "`up`"],
  ["again", "no-change `up`"],
  ["destroy", "`destroy`"],
];
const ratio = (ours: number, plain: number) => (ours / plain).toFixed(2);
/** Requests of a step, most first: "GET services 184, PATCH services 92". */
const requestList = (r: Record<string, number>) =>
  Object.entries(r)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(", ") || "none";

/** The steps and sizes where ours took at most (or more than) 1.15x the plain program's wall time. */
const verdict = (rows: Row[], within: boolean) =>
  STEPS.flatMap(([step, t]) => rows.filter((r) => r.ours[step].ms <= 1.15 * r.plain[step].ms === within).map((r) => `${t} at ${r.entries}`)).join(", ") ||
  "none";
export function liveMarkdown(r: { rows: Row[] }): string[] {
  return [
    "The real engine and kubernetes provider against the e2e harness's kube-apiserver on loopback, a generated platform (`bench/gen.ts`). The floor, measured in the same run: a plain `@pulumi/kubernetes` program (`bench/plain-program`) declaring the Services our program declares for the same contract (same metadata and spec, taken from `render`), through the same provider binary, engine, file backend and API server, with the same `refresh: always`. Each program in turn, the floor first: `preview` of the creates, `up`, a no-change `up` (`--expect-no-changes`), `destroy`. Wall time; CPU time of the whole process tree in parentheses; load average (1 min) before and after each size.",
    table(
      ["entries", "Services", "load", ...STEPS.flatMap(([, title]) => [`${title} ours (ms)`, `${title} plain (ms)`, "x plain"])],
      r.rows.map((row) => [
        String(row.entries),
        String(row.services),
        row.load,
        ...STEPS.flatMap(([step]) => [
          `${ms(row.ours[step].ms)} (${ms(row.ours[step].cpuMs)})`,
          `${ms(row.plain[step].ms)} (${ms(row.plain[step].cpuMs)})`,
          ratio(row.ours[step].ms, row.plain[step].ms),
        ]),
      ]),
    ),
    `Within 1.15x of the plain program: ${verdict(r.rows, true)}. Not within: ${verdict(r.rows, false)}.`,
    "API requests of each command (the API server's `apiserver_request_total`; watches, and the controller-manager's EndpointSlices, Endpoints, Events and Leases, left out):",
    table(
      ["entries", "step", "ours", "plain"],
      r.rows.flatMap((row) =>
        STEPS.map(([step, title]) => [String(row.entries), title, requestList(row.ours[step].requests), requestList(row.plain[step].requests)]),
      ),
    ),
  ];
}
