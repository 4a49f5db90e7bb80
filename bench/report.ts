// Renders docs/benchmarks.md from one run's results. Verdicts are computed from the
// numbers, so the prose next to a table cannot disagree with it.

import type { DataPathBench } from "./datapath";
import type { LiveResults, ProgramStartup, Timing } from "./live";
import type { ProbeBench } from "./probe";
import type { ProgramResult, PureResult } from "./program";
import { type StartupResults, startupSection } from "./startup";

/**
 * Prose that no figure can regenerate: what a commit changed. Each note names its commit, so
 * it stays true of that commit whatever later runs measure; statements about the figures are
 * computed from the run (the verdict columns, the targets) and never written here.
 */
const NOTES = [
  "### Notes, each tied to the commit it describes",
  "",
  "- `b24298e` (issue 6): `selectEntries`, the hostPort holder search, `observe`'s slice grouping and the drift audit replaced scans inside loops by `Map`/`Set` indexes; section 1's before/after columns, when present, run that commit's parent against this tree.",
  "- `1963bd3`: the lookups left after that review (`exposure render`, `probe`, `status`, `access`) use maps too.",
  '- `505cb75`: observed data left the component inputs, so a `preview --expect-no-changes` right after `up` can propose nothing; the "preview proposed" column checks it on every run.',
  "- Issue 10, commit \"Program start-up: Pulumi.yaml runs components/program-loader.cjs\": `pulumi up` / `preview` stopped type-checking the program at each start (ts-node); the sources are transpiled by esbuild as Node.js loads them, type-checking is CI's (`npm run typecheck`). The start-up table of section 2 compares the program with an empty one under the same start-up, and with the nodejs runtime's default.",
  "- Issue 10, `6845be1`: the `<entry>-port` ServicePatch skips the provider's Service await (each patch waited about 10 s, a few at a time); `9577976`: when dist/ matches the sources, `pulumi up` / `preview` run the compiled program (nothing transpiled); `480c283`: the compiled program sets aside the SDK's source-map stack hook (about 7 ms of CPU per resource).",
  "- Issue 10, `dd375f0`: the schemas use zod's functional API (`zod/mini`) and the command bundles are built from the TypeScript sources, so only the zod functions used are bundled (a command's bundle 1.4 MB -> 0.45 MB).",
  "- Issue 10, `806f277`: the program runs as one bundle (`dist/bundles/program/stack-program.cjs`); the Pulumi SDK and providers stay outside it. Issue 19: its hand-made V8 code cache (and the commands') is gone: it saved 0.01 s on `check` and 0.03 s on `status`; Node.js 22+ keeps its own (`module.enableCompileCache`).",
].join("\n");

import { fittedExponent, marginal, median, mib, round } from "./stats";

export interface Skipped {
  skipped: string;
}

/** What `npm run bench` measured (test-output/bench.json), as bench/run.ts collects it and this file reports it. */
export interface BenchResults {
  meta: {
    date: string;
    commit: string;
    node: string;
    cpus: number;
    cpuModel: string;
    memoryGiB: number;
    /** 1-minute load average when the run started: other work on the machine skews timings. */
    loadAverage: number;
    /** 1-minute load average when each part started. */
    loadAtPart: Record<string, number>;
    durationS?: number;
  };
  program?:
    | {
        after: ProgramResult[];
        before?: ProgramResult[];
        pure: { after: PureResult[]; before?: PureResult[] };
        baselineRev?: string;
      }
    | Skipped;
  live?: LiveResults | Skipped;
  probe?: ProbeBench | Skipped;
  startup?: StartupResults;
  datapath?: DataPathBench | Skipped;
}

const isSkipped = (v: object): v is Skipped => "skipped" in v;
const ms = (v: number) => (Number.isFinite(v) ? (v >= 100 ? String(Math.round(v)) : v.toFixed(1)) : "-");
const s = (v: number) => (v / 1000).toFixed(1);
const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}×` : "-");
const row = (cells: readonly (string | number)[]) => `| ${cells.join(" | ")} |`;
const table = (head: readonly string[], rows: readonly (readonly (string | number)[])[]) =>
  [row(head), row(head.map(() => "---")), ...rows.map(row)].join("\n");

/**
 * "linear", "better than linear" or "worse than linear", from the fitted growth exponent.
 * A pure stage is compared with the Map/Set reference too: growing like the cheapest linear
 * pass there is means linear work whose per-element cost the hardware raises, not O(n²).
 */
function verdict(k: number, reference?: number): string {
  if (!Number.isFinite(k)) return "flat (no measurable growth)";
  if (k < 0.85) return "better than linear";
  if (k <= 1.2) return "linear";
  if (reference !== undefined && Number.isFinite(reference) && k <= reference + 0.15) return "linear (grows like the Map/Set reference)";
  return "**worse than linear**";
}

type Point = { n: number; y: number };

function growthOf(pts: readonly Point[]): { k: number; perEntry: number[] } {
  const perEntry = pts.slice(1).map((p, i) => marginal(pts[i] as Point, p));
  return { k: fittedExponent(pts), perEntry };
}

function growth(results: readonly ProgramResult[], pick: (r: ProgramResult) => number) {
  return growthOf(results.map((r) => ({ n: r.entries, y: pick(r) })));
}

function pureGrowth(results: readonly PureResult[], pick: (r: PureResult) => number) {
  return growthOf(results.map((r) => ({ n: r.entries, y: pick(r) })));
}

const fk = (k: number) => (Number.isFinite(k) ? k.toFixed(2) : "-");
const intervals = (sizes: readonly number[]) =>
  sizes
    .slice(1)
    .map((n, i) => `${(sizes[i] as number).toLocaleString("en")}→${n.toLocaleString("en")}`)
    .join(" / ");

function programSection(p: NonNullable<BenchResults["program"]>): string {
  if (isSkipped(p)) return `Not measured: ${p.skipped}`;
  const out: string[] = [];
  const rs = p.after;
  out.push(
    table(
      [
        "entries",
        "exposed",
        "resources",
        "program, wall (ms)",
        "program, CPU (ms)",
        "CPU ms / entry",
        "SDK floor, CPU (ms)",
        "program − floor, CPU (ms)",
        "`exposure render`, CPU (ms)",
        "heap retained (MiB)",
        "peak RSS of one run (MiB)",
      ],
      rs.map((r) => [
        r.entries,
        r.exposed,
        r.resources,
        ms(r.evalMs),
        ms(r.evalCpuMs),
        (r.evalCpuMs / r.entries).toFixed(2),
        ms(r.floorCpuMs),
        ms(r.evalCpuMs - r.floorCpuMs),
        ms(r.renderCpuMs),
        mib(r.heapRetainedBytes),
        mib(r.rssDeltaBytes),
      ]),
    ),
  );
  out.push("");
  out.push(
    `Growth: exponent *k* of (cost − cost at the smallest size) ∝ (n − n₀)^k, least-squares over every larger size (1 = linear, 2 = quadratic), and the marginal cost of one more entry on each interval (${intervals(rs.map((r) => r.entries))}).`,
  );
  out.push("");
  const metrics: [string, (r: ProgramResult) => number, string][] = [
    ["program evaluation (CPU)", (r) => r.evalCpuMs, "ms"],
    ["SDK floor (same resources, bare SDK; CPU)", (r) => r.floorCpuMs, "ms"],
    ["program − floor (CPU)", (r) => r.evalCpuMs - r.floorCpuMs, "ms"],
    ["`exposure render` (CPU)", (r) => r.renderCpuMs, "ms"],
    ["heap retained", (r) => r.heapRetainedBytes / 1024, "KiB"],
    ["peak RSS of one run", (r) => r.rssDeltaBytes / 1024, "KiB"],
  ];
  out.push(
    table(
      ["metric", "k", "marginal cost per entry", "verdict"],
      metrics.map(([name, pick, unit]) => {
        const g = growth(rs, pick);
        return [name, fk(g.k), `${g.perEntry.map((v) => v.toFixed(unit === "KiB" ? 1 : 2)).join(" / ")} ${unit}`, verdict(g.k)];
      }),
    ),
  );

  out.push("", "### Pure stages (no Pulumi, no I/O)", "");
  out.push(
    "Each in a fresh process that runs nothing else, mean CPU time of repeated calls after a full GC, median of 3. Reference: a Map and a Set over the entry names, the cheapest linear pass there is; its cost per name rises with n too (hash tables outgrow the CPU caches and the young generation), so a stage that grows like the reference is linear in its algorithm.",
    "",
  );
  const pr = p.pure.after;
  out.push(
    table(
      ["entries", "contract parse (ms)", "plan (ms)", "observe (ms)", "audit (ms)", "Map + Set reference (ms)"],
      pr.map((r) => [r.entries, ms(r.parseMs), ms(r.planMs), ms(r.observeMs), ms(r.auditMs), r.mapRefMs.toFixed(3)]),
    ),
  );
  out.push("");
  const refK = pureGrowth(pr, (r) => r.mapRefMs).k;
  const last2 = pr.slice(-2);
  const ratio = (pick: (r: PureResult) => number) => {
    const [a, b] = last2;
    return a && b ? pick(b) / pick(a) : Number.NaN;
  };
  const pureMetrics: [string, (r: PureResult) => number][] = [
    ["contract parse (`parseContract`)", (r) => r.parseMs],
    ["plan (`selectEntries` + `resolveExposures`)", (r) => r.planMs],
    ["observe (`observe`)", (r) => r.observeMs],
    ["audit (`auditExposure`)", (r) => r.auditMs],
    ["reference: Map + Set of the names", (r) => r.mapRefMs],
  ];
  const [pa, pb] = last2;
  out.push(
    table(
      [
        "stage",
        "k",
        `× from ${pa?.entries.toLocaleString("en")} to ${pb?.entries.toLocaleString("en")} entries (×${pa && pb ? pb.entries / pa.entries : "-"} entries)`,
        "verdict",
      ],
      pureMetrics.map(([name, pick]) => {
        const g = pureGrowth(pr, pick);
        return [name, fk(g.k), x(ratio(pick)), name.startsWith("reference") ? "" : verdict(g.k, refK)];
      }),
    ),
  );

  if (p.before && p.before.length === rs.length) {
    const before = p.before;
    const pureBefore = p.pure.before ?? [];
    out.push("", "### Before and after the fixes", "");
    out.push(`Same run, same machine, interleaved size by size; "before" is commit \`${p.baselineRev}\` measured with the same bench code.`, "");
    const pair = (bv: number | undefined, av: number) => `${ms(bv ?? Number.NaN)} → ${ms(av)}`;
    out.push(
      table(
        ["entries", "plan (ms)", "observe (ms)", "audit (ms)", "contract parse (ms)"],
        pr.map((a, i) => {
          const b = pureBefore[i];
          return [a.entries, pair(b?.planMs, a.planMs), pair(b?.observeMs, a.observeMs), pair(b?.auditMs, a.auditMs), pair(b?.parseMs, a.parseMs)];
        }),
      ),
    );
    out.push("");
    if (pureBefore.length === pr.length) {
      const line = (name: string, pick: (r: PureResult) => number) =>
        `${name}: k ${fk(pureGrowth(pureBefore, pick).k)} → ${fk(pureGrowth(pr, pick).k)} (${verdict(pureGrowth(pureBefore, pick).k, refK)} → ${verdict(pureGrowth(pr, pick).k, refK)})`;
      out.push(
        `Growth exponents before → after (Map/Set reference ${fk(refK)}): ${[line("plan", (r) => r.planMs), line("observe", (r) => r.observeMs), line("audit", (r) => r.auditMs)].join("; ")}.`,
        "",
      );
    }
    out.push(
      table(
        ["entries", "program CPU before → after (ms)", "`exposure render` CPU before → after (ms)"],
        rs.map((a, i) => {
          const b = before[i] as ProgramResult;
          return [a.entries, pair(b.evalCpuMs, a.evalCpuMs), pair(b.renderCpuMs, a.renderCpuMs)];
        }),
      ),
    );
    out.push("", "The program's total barely moves: the planning it saved is milliseconds against seconds of resource registration by the SDK.");
  }
  out.push("");
  out.push(
    `Program: medians of ${rs.map((r) => r.reps).join("/")} repetitions after one warm-up run, each size in a fresh \`node --expose-gc\` process. Growth verdicts use CPU time (all the process' threads, GC included): wall time on a shared machine moves with other people's work, CPU time of a single-threaded program much less.`,
  );
  return out.join("\n");
}

function upSection(live: LiveResults): string {
  if ("skipped" in live.up) return `Not measured: ${live.up.skipped}`;
  const rows = live.up;
  const out: string[] = [];
  if (live.startup) {
    out.push("### Start-up: the program next to an empty one", "");
    out.push("skipped" in live.startup ? `Not measured: ${live.startup.skipped}` : programStartupSection(live.startup));
    out.push("", "### `up`, `preview`, `destroy` by size", "");
  }
  out.push(
    table(
      [
        "entries",
        "Services",
        "`pulumi up` (s)",
        "`pulumi up` CPU (s)",
        "`pulumi preview` (s)",
        "preview proposed",
        "`pulumi destroy` (s)",
        "client lib, sequential (s)",
        "client lib, 16 in flight (s)",
        "up ÷ sequential",
        "up ÷ 16 in flight",
      ],
      rows.map((r) => [
        r.entries,
        r.services,
        s(r.upMs),
        Number.isFinite(r.upCpuMs) ? s(r.upCpuMs) : "-",
        s(r.previewMs),
        r.previewChanges,
        s(r.destroyMs),
        s(r.clientSequentialMs),
        s(r.clientConcurrentMs),
        x(r.upMs / r.clientSequentialMs),
        x(r.upMs / r.clientConcurrentMs),
      ]),
    ),
  );
  const [small, big] = [rows[0], rows[rows.length - 1]];
  if (small && big && big.services > small.services) {
    const per = (a: number, b: number) => (b - a) / (big.services - small.services);
    out.push("");
    out.push(
      `Marginal cost of one more Service (${small.entries}→${big.entries} entries): \`pulumi up\` ${ms(per(small.upMs, big.upMs))} ms, \`pulumi preview\` ${ms(per(small.previewMs, big.previewMs))} ms, client library sequential ${ms(per(small.clientSequentialMs, big.clientSequentialMs))} ms. The fixed part of \`pulumi up\` (≈ ${s(small.upMs - small.services * per(small.upMs, big.upMs))} s) is start-up (engine, language host, provider, program), not the entries.`,
    );
  }
  const shared = rows.filter((r) => r.postgres && !("skipped" in r.postgres));
  if (shared.length) {
    out.push("");
    out.push(
      'The same stack with its state in PostgreSQL (the team\'s shared backend, README "Share state with your team"; a throw-away server on loopback, the CLI connecting over TCP with a passfile):',
    );
    out.push("");
    out.push(
      table(
        [
          "entries",
          "`pulumi up`, file (s)",
          "`pulumi up`, PostgreSQL (s)",
          "PostgreSQL ÷ file",
          "`pulumi preview`, file (s)",
          "`pulumi preview`, PostgreSQL (s)",
          "`pulumi destroy`, file (s)",
          "`pulumi destroy`, PostgreSQL (s)",
        ],
        shared.map((r) => {
          const p = r.postgres as { upMs: number; previewMs: number; destroyMs: number };
          return [r.entries, s(r.upMs), s(p.upMs), x(p.upMs / r.upMs), s(r.previewMs), s(p.previewMs), s(r.destroyMs), s(p.destroyMs)];
        }),
      ),
    );
  } else {
    const skipped = rows.find((r) => r.postgres && "skipped" in r.postgres)?.postgres as { skipped: string } | undefined;
    if (skipped) out.push("", `The PostgreSQL (shared backend) variant was not measured: ${skipped.skipped}.`);
  }
  const diagnosed = rows.find((r) => r.upNoCheckpointsMs !== undefined);
  if (diagnosed?.upNoCheckpointsMs !== undefined) {
    const saved = diagnosed.upMs - diagnosed.upNoCheckpointsMs;
    out.push("");
    out.push(
      `Where \`pulumi up\`'s time goes at ${diagnosed.entries} entries: the same \`up\` with \`PULUMI_SKIP_CHECKPOINTS=true\` (the engine writes the state once at the end instead of the whole state file after each step) takes ${s(diagnosed.upNoCheckpointsMs)} s (CPU ${Number.isFinite(diagnosed.upNoCheckpointsCpuMs ?? Number.NaN) ? s(diagnosed.upNoCheckpointsCpuMs as number) : "-"} s), ${x(diagnosed.upNoCheckpointsMs / diagnosed.clientSequentialMs)} the sequential creates: ${s(saved)} s (${Math.round((100 * saved) / diagnosed.upMs)} %) of the \`up\` is the file backend rewriting its state, which grows with every resource (3 per entry: the exposure, its Service and the patch holding its port). The file backend of the pinned Pulumi CLI has no incremental journal (its journaling is the Pulumi Cloud backend's); skipping checkpoints is not used here: an interrupted \`up\` would forget what it created.`,
    );
  }
  return out.join("\n");
}

/** Targets of issue 10 for the program's own start-up, checked against this run's figures. */
export const TARGETS = { previewOverFloor: 1.3, upOverSequential: 5, upEntries: 100 } as const;

const medianOf = (ts: readonly Timing[], pick: (t: Timing) => number) => median(ts.map(pick));
const met = (ok: boolean) => (ok ? "met" : "**not met**");

function programStartupSection(st: ProgramStartup): string {
  const cols = (ts: readonly Timing[]) => [s(medianOf(ts, (t) => t.ms)), Number.isFinite(medianOf(ts, (t) => t.cpuMs)) ? s(medianOf(ts, (t) => t.cpuMs)) : "-"];
  const floorCpu = medianOf(st.emptyProgram, (t) => t.cpuMs);
  const floorWall = medianOf(st.emptyProgram, (t) => t.ms);
  const ratio = (ts: readonly Timing[]) => [x(medianOf(ts, (t) => t.cpuMs) / floorCpu), x(medianOf(ts, (t) => t.ms) / floorWall)];
  return [
    table(
      ["`pulumi preview` of", "wall (s)", "CPU (s)", "÷ floor, CPU", "÷ floor, wall"],
      [
        ["empty program, compiled JavaScript as this project starts after `npm ci` (**the floor**)", ...cols(st.emptyProgram), "1.00×", "1.00×"],
        [
          `the same ${st.services} NodePort Services as plain resources through an explicit kubernetes provider, compiled JavaScript, refreshed first like the stack (what managing them costs any program)`,
          ...cols(st.plainServices),
          ...ratio(st.plainServices),
        ],
        [`the ${st.entries}-entry stack (${st.services} Services, refreshed first)`, ...cols(st.benchStack), ...ratio(st.benchStack)],
        ["empty TypeScript program, nodejs runtime default (ts-node, type-checked)", ...cols(st.emptyProgramTsNode), ...ratio(st.emptyProgramTsNode)],
      ],
    ),
    "",
    `Medians of ${st.emptyProgram.length} previews each, interleaved (floor, plain Services, stack, ts-node default, and again). CPU: the whole process tree of \`pulumi preview\` (CLI, language host, program, provider), from \`/usr/bin/time\`.`,
    "",
    `Of the stack's ${s(medianOf(st.benchStack, (t) => t.cpuMs))} s of CPU, ${s(medianOf(st.plainServices, (t) => t.cpuMs) - floorCpu)} s is what the same Services cost any program above the empty one (the kubernetes provider's start, the SDK's kubernetes package, one registration and refresh per Service); the stack's own work (contract, settings, cluster reads, components, the port-holding patches, Cilium) is the remaining ${s(medianOf(st.benchStack, (t) => t.cpuMs) - medianOf(st.plainServices, (t) => t.cpuMs))} s, ${x(medianOf(st.benchStack, (t) => t.cpuMs) / medianOf(st.plainServices, (t) => t.cpuMs))} the plain program.`,
  ].join("\n");
}

/** The two start-up targets, verdicts computed from this run. */
function targetRows(live: LiveResults): string[][] {
  const rows: string[][] = [];
  const st = live.startup && !("skipped" in live.startup) ? live.startup : undefined;
  if (st) {
    const floor = medianOf(st.emptyProgram, (t) => t.cpuMs);
    const stack = medianOf(st.benchStack, (t) => t.cpuMs);
    rows.push([
      `\`pulumi preview\`, ${st.entries}-entry stack ÷ empty program (CPU), target ≤ ${TARGETS.previewOverFloor}×`,
      `${s(stack)} s ÷ ${s(floor)} s = ${x(stack / floor)} (wall ${s(medianOf(st.benchStack, (t) => t.ms))} s ÷ ${s(medianOf(st.emptyProgram, (t) => t.ms))} s); floor ${s(floor)} s CPU; the same Services as a plain program: ${x(medianOf(st.plainServices, (t) => t.cpuMs) / floor)} the floor, the stack ${x(stack / medianOf(st.plainServices, (t) => t.cpuMs))} that`,
      met(stack / floor <= TARGETS.previewOverFloor),
    ]);
  }
  const up = "skipped" in live.up ? undefined : live.up.find((u) => u.entries === TARGETS.upEntries);
  if (up) {
    rows.push([
      `\`pulumi up\` of ${up.entries} entries ÷ sequential client creates (wall), target ≤ ${TARGETS.upOverSequential}×`,
      `${s(up.upMs)} s ÷ ${s(up.clientSequentialMs)} s = ${x(up.upMs / up.clientSequentialMs)} (${up.services} Services)${up.upNoCheckpointsMs !== undefined ? `; with the engine's per-step state writes skipped (diagnosis, section 2): ${x(up.upNoCheckpointsMs / up.clientSequentialMs)}` : ""}`,
      met(up.upMs / up.clientSequentialMs <= TARGETS.upOverSequential),
    ]);
  }
  return rows;
}

function statusSection(live: LiveResults): string {
  const out: string[] = [];
  out.push(
    table(
      [
        "entries",
        "published",
        "MATCH",
        "`status` API requests",
        "`status` (ms, in-process)",
        "`status` CLI (ms)",
        "audit API requests",
        "audit (ms, in-process)",
        "`drift --skip-preview` CLI (ms)",
        "undeclared",
      ],
      live.status.map((r) => [
        r.entries,
        r.published,
        r.match,
        r.statusRequests,
        ms(r.statusMs),
        ms(r.statusCliMs),
        r.auditRequests,
        ms(r.auditMs),
        ms(r.auditCliMs),
        r.undeclared,
      ]),
    ),
  );
  const constant = (pick: (r: LiveResults["status"][number]) => number) => new Set(live.status.map(pick)).size === 1;
  out.push("");
  out.push(
    `API requests per run: status ${constant((r) => r.statusRequests) ? "**constant**" : "**grow with the entries**"} (${live.status.map((r) => r.statusRequests).join(", ")}), audit ${constant((r) => r.auditRequests) ? "**constant**" : "**grow with the entries**"} (${live.status.map((r) => r.auditRequests).join(", ")}), counted by \`LiveClusterReader.requests\` of the commands' own connection.`,
  );
  const startup = median(live.status.map((r) => r.statusCliMs - r.statusMs));
  out.push(
    "",
    `The CLI figures are mostly process start-up (Node.js, loading the command's modules; the dist/ build): about ${s(startup)} s above the in-process run, whatever the size.`,
    "",
    "`undeclared` is correct drift, not noise: the cluster holds the 500-UI platform throughout, so the hostPort pods of entries a smaller contract leaves out are reported by the audit.",
  );
  if (!live.kubeControllerManager)
    out.push(
      "",
      "No kube-controller-manager in the toolchain: no EndpointSlices, so verdicts are DRIFT (no ready endpoints); requests and times are the same work.",
    );
  return out.join("\n");
}

function probeSection(p: ProbeBench): string {
  return [
    table(
      [
        "URLs",
        "slow UI",
        "other UIs",
        "concurrency",
        "engine total (ms)",
        "`exposure probe` CLI (ms)",
        "slowest probe (ms)",
        "sum of latencies = sequential (ms)",
        "engine ÷ slowest",
        "all ok",
      ],
      [
        [
          p.urls,
          `1 × ${p.slowMs} ms`,
          `${p.urls - 1} × ${p.fastMs} ms`,
          p.concurrency,
          ms(p.engineMs),
          ms(p.cliMs),
          ms(p.slowestMs),
          ms(p.sumMs),
          x(p.engineMs / p.slowestMs),
          p.allOk ? "yes" : "no",
        ],
      ],
    ),
    "",
    `Total ${p.engineMs / p.slowestMs < 1.25 ? "**close to the slowest probe, not the sum**" : "**well above the slowest probe**"}: ${ms(p.engineMs)} ms against ${ms(p.slowestMs)} ms for the slow UI alone and ${ms(p.sumMs)} ms one after the other. The CLI figure adds process start-up (tsx, modules) and reading the outputs and contract files.`,
  ].join("\n");
}

/** How the cost of one more Service under `pulumi up` compares with one more create call. */
function marginalVerdict(rows: readonly { services: number; upMs: number; clientSequentialMs: number }[]): string {
  const [a, b] = [rows[0], rows[rows.length - 1]];
  if (!a || !b || b.services <= a.services) return "";
  const up = (b.upMs - a.upMs) / (b.services - a.services);
  const client = (b.clientSequentialMs - a.clientSequentialMs) / (b.services - a.services);
  return `fixed start-up dominates at 9; one more Service costs ${ms(up)} ms under \`up\` vs ${ms(client)} ms as a create call (${x(up / client)})`;
}

/** The one-screen answer to issue 6: one line per question, with the figure that answers it. */
function summarySection(r: BenchResults): string {
  const rows: string[][] = [];
  const p = r.program && !isSkipped(r.program) ? r.program : undefined;
  if (p) {
    const g = growth(p.after, (x) => x.evalCpuMs);
    const last = p.after[p.after.length - 1];
    rows.push([
      `Program under mocks, ${p.after.map((x) => x.entries.toLocaleString("en")).join(" → ")} entries (CPU)`,
      `${ms(p.after[0]?.evalCpuMs ?? Number.NaN)} ms → ${ms(last?.evalCpuMs ?? Number.NaN)} ms; ${g.perEntry.map((v) => v.toFixed(1)).join(" / ")} ms per added entry (${p.after
        .slice(1)
        .map((x, i) => `${(p.after[i]?.entries ?? 0).toLocaleString("en")}→${x.entries.toLocaleString("en")}`)
        .join(
          " / ",
        )}); heap ${mib(last?.heapRetainedBytes ?? 0)} MiB, peak RSS ${mib(last?.rssDeltaBytes ?? 0)} MiB at ${(last?.entries ?? 0).toLocaleString("en")}`,
      verdict(g.k),
    ]);
    const pr = p.pure.after;
    const pb = p.pure.before;
    const refK = pureGrowth(pr, (x) => x.mapRefMs).k;
    const lastPure = pr[pr.length - 1];
    for (const [name, pick] of [
      ["Planning (`selectEntries` + `resolveExposures`)", (x: PureResult) => x.planMs],
      ["`observe` (status, portal)", (x: PureResult) => x.observeMs],
      ["`auditExposure` (drift)", (x: PureResult) => x.auditMs],
      ["Contract parse", (x: PureResult) => x.parseMs],
    ] as const) {
      const after = pureGrowth(pr, pick).k;
      const beforeLast = pb?.[pb.length - 1];
      rows.push([
        `${name}, up to ${lastPure?.entries.toLocaleString("en")} entries`,
        `${ms(lastPure ? pick(lastPure) : Number.NaN)} ms at ${lastPure?.entries.toLocaleString("en")}${beforeLast ? ` (before the fixes: ${ms(pick(beforeLast))} ms)` : ""}; k ${fk(after)}${pb ? ` (before: ${fk(pureGrowth(pb, pick).k)})` : ""}, reference ${fk(refK)}`,
        verdict(after, refK),
      ]);
    }
  }
  const live = r.live && !isSkipped(r.live) ? r.live : undefined;
  if (live) rows.push(...targetRows(live));
  if (live && !("skipped" in live.up)) {
    const typed = live.up;
    rows.push([
      "`pulumi up` vs client library (sequential)",
      typed.map((u) => `${u.entries} entries: ${s(u.upMs)} s vs ${s(u.clientSequentialMs)} s (${x(u.upMs / u.clientSequentialMs)})`).join("; "),
      marginalVerdict(typed),
    ]);
    rows.push([
      "`pulumi preview` (refresh + diff)",
      typed.map((u) => `${u.entries} entries: ${s(u.previewMs)} s, proposed ${u.previewChanges}`).join("; "),
      "",
    ]);
  }
  if (live) {
    const req = live.status.map((x) => x.statusRequests);
    const audit = live.status.map((x) => x.auditRequests);
    rows.push([
      "`exposure status` API requests, 9 / 100 / 500 entries",
      `${req.join(" / ")} (in-process ${live.status.map((x) => ms(x.statusMs)).join(" / ")} ms)`,
      new Set(req).size === 1 ? "constant" : "**grows**",
    ]);
    rows.push([
      "`exposure drift` audit API requests, 9 / 100 / 500 entries",
      `${audit.join(" / ")} (in-process ${live.status.map((x) => ms(x.auditMs)).join(" / ")} ms)`,
      new Set(audit).size === 1 ? "constant" : "**grows**",
    ]);
  }
  const probe = r.probe && !isSkipped(r.probe) ? r.probe : undefined;
  if (probe) {
    rows.push([
      "`exposure probe`, 50 URLs, one 2 s",
      `${ms(probe.engineMs)} ms total, slowest ${ms(probe.slowestMs)} ms, sum ${ms(probe.sumMs)} ms`,
      probe.engineMs / probe.slowestMs < 1.25 ? "close to the slowest" : "**well above the slowest**",
    ]);
  }
  return table(["question", "measured", "verdict"], rows);
}

export const STARTUP_BEGIN = "<!-- startup:begin -->";
export const STARTUP_END = "<!-- startup:end -->";

/** The start-up section, fenced so `npm run bench -- --only startup` can refresh it alone. */
export function startupMarkdown(s: StartupResults, m: BenchResults["meta"]): string {
  return [
    STARTUP_BEGIN,
    startupSection(s),
    "",
    `Measured ${m.date.slice(0, 16).replace("T", " ")} UTC on commit ${m.commit}, Node ${m.node}, ${m.cpus} CPUs, load average ${round(m.loadAtPart.startup ?? m.loadAverage, 1)}.`,
    STARTUP_END,
  ].join("\n");
}

export const DATAPATH_BEGIN = "<!-- datapath:begin -->";
export const DATAPATH_END = "<!-- datapath:end -->";

/** Part 6, fenced so `npm run bench -- --only datapath` can refresh it alone. */
export function dataPathMarkdown(d: DataPathBench | { skipped: string }, m: BenchResults["meta"]): string {
  const body =
    "skipped" in d
      ? `Not measured: ${d.skipped}`
      : [
          table(
            ["round", "`pulumi up` (ms)", "up returned → first answer (ms)", "up returned → every URL answers (ms)"],
            d.rounds.map((r, i) => [String(i + 1), ms(r.upMs), ms(r.firstAnswerMs), ms(r.allAnswersMs)]),
          ),
          "",
          `Median: **${ms(d.medianFirstAnswerMs)} ms** to the first answer, **${ms(d.medianAllAnswersMs)} ms** to every URL answering from its pod. Platform set-up before the first up (control plane, namespaces, kube-proxy, pods): ${ms(d.platformReadyMs)} ms.`,
        ].join("\n");
  return [
    DATAPATH_BEGIN,
    "## 6. From `pulumi up` returning to the first answer through the data path",
    "",
    "The e2e's data path (docs/e2e.md, `test/support/datapath-platform.ts`): two nodes and their pods as network namespaces, kube-proxy 1.37.2 in nftables mode in each node's namespace, EndpointSlices from the real controller, 8 entries (7 NodePort Services, 6 of them with the rendered upstream charts' shapes, and 1 hostPort through portmap). After `pulumi up --skip-preview` returns, the URLs are built from the API server's view (our Services' nodePorts, the node's address; checked afterwards to equal the `urls` stack output, which the Pulumi CLI takes a second or two to print) and each is requested from the operator namespace every 50 ms until it answers from its pod; between rounds `pulumi destroy`.",
    "",
    body,
    "",
    `Measured ${m.date.slice(0, 16).replace("T", " ")} UTC on commit ${m.commit}, Node ${m.node}, ${m.cpus} CPUs, load average ${round(m.loadAtPart.datapath ?? m.loadAverage, 1)}.`,
    DATAPATH_END,
  ].join("\n");
}

/** `previous` with the fenced section between begin and end replaced by `section` (appended when absent). */
export function replaceSection(previous: string, begin: string, end: string, section: string): string {
  const at = previous.indexOf(begin);
  if (at < 0) return `${previous.trimEnd()}\n\n${section}\n`;
  const stop = previous.indexOf(end, at);
  return `${previous.slice(0, at)}${section}${stop < 0 ? "\n" : previous.slice(stop + end.length)}`;
}

export function renderMarkdown(r: BenchResults): string {
  const m = r.meta;
  const parts: string[] = [
    "# Benchmarks: how ui-exposure scales with the number of endpoints",
    "",
    "<!-- Generated by `npm run bench` (bench/run.ts); edit bench/report.ts, not this file. -->",
    "",
    `Run of ${m.date.slice(0, 16).replace("T", " ")} UTC on commit ${m.commit}: Node ${m.node}, ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, load average ${round(m.loadAverage, 1)} at start (${Object.entries(
      m.loadAtPart,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(
        ", ",
      )} when each part started: other work shares these ${m.cpus} CPUs, so read the ratios more than the absolute times)${m.durationS !== undefined ? `, ${Math.round(m.durationS / 60)} min in all` : ""}. Raw samples: \`test-output/bench.json\`.`,
    "",
    "Generated platforms (`bench/gen.ts`): 10 entries per namespace; one entry in 20 is an in-house brick on a hostPort (the 5th: even 9 entries have one), every 25th is not exposed (it only feeds the `.env`); each UI has a vendored ClusterIP Service and one Ready pod. The stacks list every exposed entry by name (as the bench stack does) with Cilium in `cohabit` mode. Node addresses are 127.0.0.x; every request of this benchmark stays on the loopback.",
    "",
    "## Summary",
    "",
    summarySection(r),
    "",
    NOTES,
    "",
    "## 1. The program under Pulumi's mocks (no engine)",
    "",
    "`declareStack()` (components/program.ts) as `exposure render` runs it (mocks give each created NodePort Service a port), from reading the contract to every output resolved and every registration acknowledged. Also: `exposure render`'s own function (`components/render.ts`), and the pure stages on their own — contract parse, plan (`selectEntries` + `resolveExposures`), `observe()` (the verdicts of `status` and the portal) and `auditExposure()` (the audit of `drift`) on the cluster as `up` leaves it. SDK floor (`bench/floor.ts`): the bare Pulumi SDK registering the same resources (one component + one Service per exposed entry, same inputs, same mocks) and nothing else; what the program costs above it is its own. Heap retained: after a full GC with the outputs still referenced. Peak RSS: one evaluation in a fresh process, above the RSS once the modules are loaded.",
    "",
    r.program ? programSection(r.program) : "Not run in this invocation.",
    "",
    "## 2. `pulumi up` / `pulumi preview` against a real API server",
    "",
    "The e2e harness's local kube-apiserver (+ etcd, + kube-controller-manager), the real Pulumi CLI, language host and kubernetes provider built from Go modules. `up` creates the NodePort Services of a fresh stack; `preview --expect-no-changes` right after it refreshes every resource first (`refresh: always`, the operators' drift check); `destroy` removes them. Baseline: the same Service manifests created with `@kubernetes/client-node`, one call after the other (what `kubectl apply -f` does) and 16 in flight.",
    "",
    r.live ? (isSkipped(r.live) ? `Not measured: ${r.live.skipped}` : upSection(r.live)) : "Not run in this invocation.",
    "",
    "## 3. `exposure status` and `exposure drift`'s audit against a real API server",
    "",
    "Same local API server; our NodePort Services created for every exposed entry, published outputs given with `--outputs`. In-process figures run the commands' own code (`createStatusCommand`, `createDriftCommand --skip-preview`) with their own connection, median of 5 after a warm-up; CLI figures are `node bin/exposure.cjs …` from process start to exit.",
    "",
    r.live ? (isSkipped(r.live) ? `Not measured: ${r.live.skipped}` : statusSection(r.live)) : "Not run in this invocation.",
    "",
    "## 4. `exposure probe` over 50 URLs with one slow UI",
    "",
    "50 HTTP servers on 127.0.0.1, one port each; one answers after 2 s. The engine is `probeAll()` with the CLI's default concurrency; the CLI is `exposure probe --outputs FILE --contract FILE --json`.",
    "",
    r.probe ? (isSkipped(r.probe) ? `Not measured: ${r.probe.skipped}` : probeSection(r.probe)) : "Not run in this invocation.",
    "",
    ...(r.startup ? [startupMarkdown(r.startup, r.meta), ""] : []),
    ...(r.datapath ? [dataPathMarkdown(r.datapath, r.meta), ""] : []),
  ];
  return `${parts.join("\n")}\n`;
}
