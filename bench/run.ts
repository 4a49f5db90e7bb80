// `npm run bench`: how the program and the operator commands scale with the number of
// contract entries (issue 6). Every part runs in the same invocation, so the figures of the
// table were taken side by side on the same machine state. Writes docs/benchmarks.md (the
// table) and test-output/bench.json (every sample).
//
//   npm run bench                           # every part; part 1 also against the pre-fix commit
//   npm run bench -- --only program,probe   # a subset (program, live, probe, startup, datapath)
//   npm run bench -- --only startup         # CLI start-up alone (Node.js 20 and 24): replaces only its section of docs/benchmarks.md
//   npm run bench -- --only startup --runs 5 --no-docs   # the same, printed instead (.ci/run)
//   npm run bench -- --only datapath        # part 6 alone (root: the data path's namespaces): replaces only its section
//   npm run bench -- --baseline none        # part 1 without the before/after comparison
//   npm run bench -- --baseline <rev>       # compare part 1 with another commit
//
// This is a measurement, not a test: nothing here fails on a threshold. The verdicts
// ("linear", "constant") are computed from the numbers and written next to them.
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { measureDataPath } from "./datapath";
import { type LiveResults, measureLive } from "./live";
import { benchMetricsScrape } from "./metrics-scrape";
import { benchPortalLoad } from "./portal-load";
import { measureProbe, type ProbeBench } from "./probe";
import type { ProgramResult, PureResult } from "./program";
import {
  type BenchResults,
  DATAPATH_BEGIN,
  DATAPATH_END,
  dataPathMarkdown,
  renderMarkdown,
  replaceSection,
  STARTUP_BEGIN,
  STARTUP_END,
  startupMarkdown,
} from "./report";
import { measureStartup, type StartupResults } from "./startup";

const projectDir = path.resolve(__dirname, "..");

/** The last commit before the perf fixes of issue 6: part 1's "before" column. */
export const PRE_FIX_REV = "b24298e^";

/** Up to the largest contract the loader accepts (1,000 entries: src/core/contract). */
export const PROGRAM_SIZES = [9, 100, 500, 1000] as const;
export const PURE_SIZES = [9, 100, 500, 1000] as const;
const PURE_REPS = 3;
const LIVE_UP_SIZES = [9, 100] as const;
const LIVE_STATUS_SIZES = [9, 100, 500] as const;

const log = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

/** Runs a part 1 worker in a fresh `node --expose-gc` process rooted at `root` (this tree, or the baseline's). */
function worker<T>(root: string, args: string[]): T {
  const out = path.join(os.tmpdir(), `ui-exposure-bench-${process.pid}-${args.join("-")}-${path.basename(root)}.json`);
  const r = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", path.join(root, "bench/program.ts"), ...args.slice(0, 2), out, ...args.slice(2)], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`program worker (${args.join(" ")}, ${root}) failed:\n${r.stderr.slice(-3000)}`);
  try {
    return JSON.parse(fs.readFileSync(out, "utf8")) as T;
  } finally {
    fs.rmSync(out, { force: true });
  }
}

function programWorker(root: string, size: number, reps: number): ProgramResult {
  const result = worker<ProgramResult>(root, [String(size), String(reps)]);
  return { ...result, rssDeltaBytes: worker<number>(root, [String(size), "1", "--peak"]) };
}

/**
 * A copy of `rev`'s sources with today's bench/ on top, so the same measurement runs against
 * the code before a fix. `git archive` reads the object store only: the shared working tree
 * and index are not touched.
 */
function baselineTree(rev: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-baseline-"));
  const tar = execFileSync("git", ["archive", "--format=tar", rev, "src", "components", "Pulumi.yaml", "package.json", "tsconfig.json"], {
    cwd: projectDir,
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync("tar", ["-x", "-C", dir], { input: tar });
  fs.cpSync(path.join(projectDir, "bench"), path.join(dir, "bench"), { recursive: true });
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

const repsFor = (size: number) => (size >= 1000 ? 3 : 5);

function runProgram(baseline: string | undefined): NonNullable<BenchResults["program"]> {
  const after: ProgramResult[] = [];
  const before: ProgramResult[] = [];
  const pureAfter: PureResult[] = [];
  const pureBefore: PureResult[] = [];
  const baseDir = baseline ? baselineTree(baseline) : undefined;
  try {
    // Before and after alternate per size, so a change in machine load hits both alike.
    for (const size of PURE_SIZES) {
      log(`part 1: pure stages, ${size} entries${baseDir ? ", before and after" : ""}`);
      if (baseDir) pureBefore.push(worker<PureResult>(baseDir, [String(size), String(PURE_REPS), "--pure"]));
      pureAfter.push(worker<PureResult>(projectDir, [String(size), String(PURE_REPS), "--pure"]));
    }
    for (const size of PROGRAM_SIZES) {
      log(`part 1: program, ${size} entries${baseDir ? ", before and after" : ""}`);
      if (baseDir) before.push(programWorker(baseDir, size, repsFor(size)));
      after.push(programWorker(projectDir, size, repsFor(size)));
    }
  } finally {
    if (baseDir) fs.rmSync(baseDir, { recursive: true, force: true });
  }
  return {
    after,
    pure: { after: pureAfter, ...(baseline ? { before: pureBefore } : {}) },
    ...(baseline ? { before, baselineRev: baseline } : {}),
  };
}

function gitHead(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: projectDir, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src", "components", "cli", "bench"], { cwd: projectDir, encoding: "utf8" }).trim();
    return dirty ? `${head} (+ uncommitted changes)` : head;
  } catch {
    return "unknown";
  }
}

async function main() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { only: { type: "string" }, baseline: { type: "string", default: PRE_FIX_REV }, runs: { type: "string" }, "no-docs": { type: "boolean" } },
    strict: true,
  });
  const parts = new Set((values.only ?? "startup,program,live,probe,datapath").split(",").map((s) => s.trim()));
  const baseline = values.baseline === "none" ? undefined : values.baseline;
  const started = Date.now();
  const results: BenchResults = {
    meta: {
      date: new Date().toISOString(),
      commit: gitHead(),
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      loadAverage: os.loadavg()[0] ?? 0,
      loadAtPart: {},
    },
  };

  const load = (part: string) => {
    results.meta.loadAtPart[part] = Math.round((os.loadavg()[0] ?? 0) * 10) / 10;
  };
  if (parts.has("startup")) {
    load("startup");
    // 11: a process start varies by tens of ms on this shared VM; the median of 11 holds still.
    results.startup = await measureStartup({ runs: Number(values.runs ?? 11), log });
  }
  if (parts.has("program")) {
    load("program");
    results.program = runProgram(baseline);
  }
  if (parts.has("live")) {
    load("live");
    try {
      results.live = await measureLive({ upSizes: [...LIVE_UP_SIZES], statusSizes: [...LIVE_STATUS_SIZES], log });
    } catch (err) {
      log(`part 2-3 not measured: ${(err as Error).message}`);
      results.live = { skipped: (err as Error).message.split("\n")[0] ?? String(err) };
    }
  }
  if (parts.has("probe")) {
    load("probe");
    log("part 4: probe, 50 URLs, one slow");
    results.probe = await measureProbe({ urls: 50, slowMs: 2000, fastMs: 25 });
  }
  if (parts.has("datapath")) {
    load("datapath");
    try {
      results.datapath = await measureDataPath({ rounds: 3, log });
    } catch (err) {
      log(`part 6 not measured: ${(err as Error).message}`);
      results.datapath = { skipped: (err as Error).message.split("\n")[0] ?? String(err) };
    }
  }
  results.meta.durationS = Math.round((Date.now() - started) / 1000);

  const outDir = path.join(projectDir, "test-output");
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, "bench.json"), `${JSON.stringify(results, null, 2)}\n`);
  if (values["no-docs"]) {
    // CI: the figures in its log, docs/benchmarks.md left as it is.
    if (results.startup) process.stdout.write(`${startupMarkdown(results.startup, results.meta)}\n`);
    return;
  }
  fs.mkdirSync(path.join(projectDir, "docs"), { recursive: true });
  const report = path.join(projectDir, "docs/benchmarks.md");
  const previous = fs.existsSync(report) ? fs.readFileSync(report, "utf8") : "";
  if (parts.size === 1 && results.startup && previous.includes(STARTUP_BEGIN)) {
    // Start-up alone: refresh its section, keep the other parts' figures (each section names its run).
    const before = previous.slice(0, previous.indexOf(STARTUP_BEGIN));
    const after = previous.includes(STARTUP_END) ? previous.slice(previous.indexOf(STARTUP_END) + STARTUP_END.length) : "\n";
    fs.writeFileSync(report, `${before}${startupMarkdown(results.startup, results.meta)}${after}`);
  } else if (parts.size === 1 && results.datapath && previous) {
    // The data path alone: refresh (or add) its section, keep the other parts' figures.
    fs.writeFileSync(report, replaceSection(previous, DATAPATH_BEGIN, DATAPATH_END, dataPathMarkdown(results.datapath, results.meta)));
  } else if (parts.size === 1 && results.startup && previous) {
    fs.writeFileSync(report, `${previous.trimEnd()}\n\n${startupMarkdown(results.startup, results.meta)}\n`);
  } else {
    fs.writeFileSync(report, renderMarkdown(results));
  }
  await benchPortalLoad(values.only, log);
  await benchMetricsScrape(values.only, log);
  log(`done in ${results.meta.durationS}s: docs/benchmarks.md, test-output/bench.json`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
