// Part 1 worker: the program's own cost under Pulumi's mocks (no engine, no cluster).
// Run by bench/run.ts in a fresh `node --expose-gc` process per contract size, so heap and
// RSS figures of one size are not inflated by the garbage or JIT state of another.
//   node --expose-gc --import tsx bench/program.ts SIZE REPS OUT.json [--peak | --pure]
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { stringify } from "yaml";
import { resolved, useProgramMocks } from "../components/mocks";
import { declareStack, type StackOutputs } from "../components/program";
import { render } from "../components/render";
import { auditExposure } from "../src/core/audit";
import { parseContract } from "../src/core/contract/parse";
import { SnapshotReader } from "../src/core/kube/cluster";
import { observe } from "../src/core/observe";
import { type NodePortPlan, resolveExposures, selectEntries } from "../src/core/plan";
import { parseSettings } from "../src/core/settings";
import { registerFloor } from "./floor";
import { afterUpObjects, contractYaml, generateEntries, snapshotObjects, stackConfig } from "./gen";
import { median } from "./stats";

export interface ProgramSample {
  /** declareStack() until every output is resolved and every registration is done (ms, wall clock). */
  evalMs: number;
  /** The same, in CPU time of this process (all its threads: GC included), which other work on the machine barely moves (ms). */
  evalCpuMs: number;
  /** The bare SDK registering the same resources (bench/floor.ts), same mocks. */
  floorMs: number;
  floorCpuMs: number;
  /** `exposure render`'s library function (components/render.ts) on the same input. */
  renderMs: number;
  renderCpuMs: number;
  /** Heap still held once the outputs are resolved, after a full GC (bytes). */
  heapRetained: number;
}

export interface ProgramResult {
  entries: number;
  exposed: number;
  resources: number;
  reps: number;
  evalMs: number;
  evalCpuMs: number;
  floorMs: number;
  floorCpuMs: number;
  renderMs: number;
  renderCpuMs: number;
  heapRetainedBytes: number;
  /** Peak RSS of one evaluation in a fresh process (measurePeakRss), bytes; filled in by run.ts. */
  rssDeltaBytes: number;
  samples: ProgramSample[];
}

/** The pure stages, CPU time of one call (ms): no Pulumi, no I/O. */
export interface PureSample {
  /** Contract text -> validated Contract. */
  parseMs: number;
  /** selectEntries + resolveExposures on the listed objects. */
  planMs: number;
  /** observe(): the verdicts behind `exposure status` and the portal, on the cluster after `up`. */
  observeMs: number;
  /** auditExposure(): the cluster-wide audit behind `exposure drift`. */
  auditMs: number;
  /**
   * Reference: the cheapest linear pass there is, a Map and a Set over the entry names. Its
   * per-element cost also rises with n (hash tables outgrow the caches, the young generation):
   * a stage that grows like it is linear in its algorithm.
   */
  mapRefMs: number;
}

export interface PureResult extends PureSample {
  entries: number;
  reps: number;
  samples: PureSample[];
}

const projectDir = path.resolve(__dirname, "..");
const gc = (globalThis as { gc?: () => void }).gc;

/** The project's mocks (components/mocks.ts), counting registrations instead of keeping them. */
const useMocks = () => useProgramMocks({ stack: "bench", firstNodePort: 30000, record: false });

/** CPU time used by this process so far (ms). */
const cpuNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Mean CPU time of one call of a pure function, over as many calls as fit in `minMs` (at least 3), after a full GC. */
function perCall(fn: () => unknown, minMs = 400): number {
  gc?.();
  fn();
  let calls = 0;
  const t0 = cpuNow();
  let now = t0;
  while (calls < 3 || now - t0 < minMs) {
    fn();
    calls++;
    now = cpuNow();
  }
  return (now - t0) / calls;
}

/** Wall and CPU time of an async step. */
async function timed(fn: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const w = performance.now();
  const c = cpuNow();
  await fn();
  return { wall: performance.now() - w, cpu: cpuNow() - c };
}

/**
 * Peak RSS of one evaluation in a fresh process, above the RSS once the modules are loaded:
 * the memory a `pulumi up` of that size asks of its Node.js process for the program (under
 * mocks: no gRPC buffers), without the garbage of earlier repetitions inflating the peak.
 */
export async function measurePeakRss(size: number): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ui-exposure-bench-peak-${size}-`));
  try {
    const entries = generateEntries(size);
    const contractFile = path.join(dir, "endpoints.yaml");
    fs.writeFileSync(contractFile, contractYaml(entries));
    const objects = snapshotObjects(entries);
    await useMocks();
    gc?.();
    const before = process.memoryUsage().rss;
    const outputs = await declareStack({ projectDir, stack: "bench", config: stackConfig(entries, contractFile), cluster: new SnapshotReader(objects) });
    await resolved(outputs.endpoints);
    await pulumi.runtime.disconnect();
    return Math.max(0, process.resourceUsage().maxRSS * 1024 - before);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function once(size: number, dir: string): Promise<ProgramSample & { resources: number; exposed: number; plans: number }> {
  const entries = generateEntries(size);
  const contractFile = path.join(dir, "endpoints.yaml");
  const config = stackConfig(entries, contractFile);
  const objects = snapshotObjects(entries);
  const contract = parseContract(fs.readFileSync(contractFile, "utf8"), contractFile);
  const settings = parseSettings(config, "Pulumi.bench.yaml");
  const reader = new SnapshotReader(objects);
  const [services, nodes, pods] = await Promise.all([reader.listServices(), reader.listNodes(), reader.listPods()]);
  const selection = selectEntries(contract, settings.entries);
  const plan = resolveExposures(selection.entries, { services, nodes, pods });
  if ("problems" in plan) throw new Error(`generated platform does not plan: ${plan.problems.slice(0, 3).join("; ")}`);

  // The whole program, as `pulumi up` runs it, minus the engine.
  // Mocks first: setMocks drops the previous run's runtime state, which the GC can then reclaim.
  const counter = await useMocks();
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  let outputs: StackOutputs | undefined;
  let urls: Record<string, string> = {};
  const evaluation = await timed(async () => {
    outputs = await declareStack({ projectDir, stack: "bench", config, cluster: new SnapshotReader(objects) });
    urls = await resolved(outputs.urls);
    await resolved(outputs.endpoints);
    await pulumi.runtime.disconnect();
  });
  gc?.();
  // `outputs` is still referenced here, so what it holds counts as retained.
  const heapRetained = process.memoryUsage().heapUsed - heapBefore;
  if (!outputs || Object.keys(urls).length !== plan.plans.length) throw new Error(`expected ${plan.plans.length} URLs, got ${Object.keys(urls).length}`);

  await useMocks();
  const floor = await timed(async () => {
    await resolved(registerFloor(plan.plans.filter((p): p is NodePortPlan => p.kind === "nodePort")));
    await pulumi.runtime.disconnect();
  });

  const rendering = await timed(() => render({ projectDir: dir, stack: "bench", cluster: new SnapshotReader(objects), contract: contractFile }));
  return {
    evalMs: evaluation.wall,
    evalCpuMs: evaluation.cpu,
    floorMs: floor.wall,
    floorCpuMs: floor.cpu,
    renderMs: rendering.wall,
    renderCpuMs: rendering.cpu,
    heapRetained,
    resources: counter.count,
    exposed: selection.entries.length,
    plans: plan.plans.length,
  };
}

export async function measureProgram(size: number, reps: number): Promise<ProgramResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ui-exposure-bench-${size}-`));
  try {
    const entries = generateEntries(size);
    const contractFile = path.join(dir, "endpoints.yaml");
    fs.writeFileSync(contractFile, contractYaml(entries));
    // render() reads the stack file itself; same config as the program gets.
    const config = stackConfig(entries, contractFile);
    fs.writeFileSync(
      path.join(dir, "Pulumi.bench.yaml"),
      stringify({ config: Object.fromEntries(Object.entries(config).map(([k, v]) => [k, v.startsWith("[") || v.startsWith("{") ? JSON.parse(v) : v])) }),
    );
    // One unmeasured run: module loading and JIT warm-up are not the program's per-entry cost.
    const warm = await once(size, dir);
    const samples: ProgramSample[] = [];
    for (let i = 0; i < reps; i++) {
      const { resources: _r, exposed: _e, plans: _p, ...s } = await once(size, dir);
      samples.push(s);
    }
    const pick = (k: keyof ProgramSample) => median(samples.map((s) => s[k]));
    return {
      entries: size,
      exposed: warm.exposed,
      resources: warm.resources,
      reps,
      evalMs: pick("evalMs"),
      evalCpuMs: pick("evalCpuMs"),
      floorMs: pick("floorMs"),
      floorCpuMs: pick("floorCpuMs"),
      renderMs: pick("renderMs"),
      renderCpuMs: pick("renderCpuMs"),
      heapRetainedBytes: pick("heapRetained"),
      rssDeltaBytes: Number.NaN,
      samples,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The pure stages alone, in a process that has run nothing else: a major GC during these
 * calls then marks only their own data. Sizes go beyond the program's (8,000) because an
 * O(n²) in a stage of a few milliseconds only stands out clearly there.
 */
export async function measurePure(size: number, reps: number): Promise<PureResult> {
  const entries = generateEntries(size);
  const config = stackConfig(entries, "/nonexistent/endpoints.yaml");
  const text = contractYaml(entries);
  const contract = parseContract(text, "endpoints.yaml");
  const settings = parseSettings(config, "Pulumi.bench.yaml");
  const reader = new SnapshotReader(snapshotObjects(entries));
  const [services, nodes, pods] = await Promise.all([reader.listServices(), reader.listNodes(), reader.listPods()]);
  const selection = selectEntries(contract, settings.entries);
  const after = afterUpObjects(entries);
  const selected = selection.entries.map((e) => e.name);
  const view = { services: after.services, endpointSlices: after.slices, nodes: after.nodes, pods: after.pods };
  const observation = observe(contract, view, { selected });
  if (observation.entries.some((e) => e.exposed && e.verdict !== "MATCH")) throw new Error("generated cluster after up should be all MATCH");
  const auditInput = { contract, selected, allowlist: settings.allowlist, services: after.services, pods: after.pods };
  const audit = auditExposure(auditInput);
  if (audit.undeclared.length > 0) throw new Error(`generated cluster after up should have no undeclared exposure: ${audit.undeclared[0]?.name}`);
  const names = contract.endpoints.map((e) => e.name);

  const samples: PureSample[] = [];
  for (let i = 0; i < reps; i++) {
    samples.push({
      parseMs: perCall(() => parseContract(text, "endpoints.yaml")),
      planMs: perCall(() => resolveExposures(selectEntries(contract, settings.entries).entries, { services, nodes, pods })),
      observeMs: perCall(() => observe(contract, view, { selected })),
      auditMs: perCall(() => auditExposure(auditInput)),
      mapRefMs: perCall(() => {
        const byName = new Map(contract.endpoints.map((e) => [e.name, e]));
        const seen = new Set<unknown>();
        for (const n of names) seen.add(byName.get(n));
        return seen.size;
      }),
    });
  }
  const pick = (k: keyof PureSample) => median(samples.map((s) => s[k]));
  return {
    entries: size,
    reps,
    parseMs: pick("parseMs"),
    planMs: pick("planMs"),
    observeMs: pick("observeMs"),
    auditMs: pick("auditMs"),
    mapRefMs: pick("mapRefMs"),
    samples,
  };
}

if (require.main === module) {
  const [size, reps, out, mode] = process.argv.slice(2);
  if (!size || !reps || !out) throw new Error("usage: program.ts SIZE REPS OUT.json [--peak|--pure]");
  if (!gc) throw new Error("run with node --expose-gc");
  const work: Promise<unknown> =
    mode === "--peak" ? measurePeakRss(Number(size)) : mode === "--pure" ? measurePure(Number(size), Number(reps)) : measureProgram(Number(size), Number(reps));
  work.then(
    (r) => fs.writeFileSync(out, JSON.stringify(r, null, 2)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
