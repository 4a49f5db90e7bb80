// `npm run bench`: the figures a user feels, each next to a floor measured in the same run:
// CLI start-up, `pulumi up`/`preview` against a plain program's (10, 100, 500 entries), the data path
// (from `up` returning to the URLs answering), the warm sandbox and the portal under load. Writes the figures of
// this one run, and the command that made them, to docs/benchmarks.md; every sample to
// test-output/bench.json. A measurement, not a test: nothing fails on a threshold.
//
// Every figure printed is measured, or the run fails: a part that cannot run (a command that
// errors, a fake API that does not answer, a tool missing) prints "Not measured: <reason>" in its
// section, the other parts still run, then the bench exits non-zero naming each part and its
// reason, and docs/benchmarks.md is left as it was. The only way not to measure a part is to say
// so: --only (the parts run) or --skip (the parts not run, for a machine that cannot run them:
// datapath needs root and network namespaces; live, datapath, sandbox and stacks the e2e toolchain;
// node24, the start-up figures under Node.js 24, the npm registry once). What a run leaves out
// is named in its output.
//
//   npm run bench                                         # every part
//   npm run bench -- --only startup,portal                # some parts (startup, live, datapath, sandbox, portal, metrics, stacks)
//   npm run bench -- --skip datapath,node24               # all but these (node24: startup's Node.js 24 figures)
//   npm run bench -- --only startup --runs 5 --no-docs    # printed, docs/ left alone (.ci/run)
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { EXIT } from "../src/core/findings";
import { startRun } from "../test/support/run-record";
import { dataPathMarkdown, measureDataPath } from "./datapath";
import { liveMarkdown, measureLive } from "./live";
import { measureScrapes, scrapeMarkdown } from "./metrics-scrape";
import { measurePortalLoad, portalLoadMarkdown } from "./portal-load";
import { measureSandbox, sandboxMarkdown } from "./sandbox";
import { measureStacks, stacksMarkdown } from "./stacks";
import { measureStartup, startupMarkdown } from "./startup";

const projectDir = path.resolve(__dirname, "..");
/** The platform publishes about ten UIs: its size, ten and fifty times it. */
const LIVE_SIZES = [10, 100, 500];

type Log = (msg: string) => void;
type Options = { runs: number; log: Log; skip: Set<string> };
/** A part of the run: its section's title; what it measures, and those figures as markdown paragraphs. */
const part = <T>(title: string, measure: (o: Options) => Promise<T>, markdown: (r: T) => string[]) => ({
  title,
  run: async (o: Options): Promise<{ result: unknown; paragraphs: string[] }> => {
    const result = await measure(o);
    return { result, paragraphs: markdown(result) };
  },
});

const PARTS = {
  startup: part("CLI start-up", (o) => measureStartup({ ...o, node24: !o.skip.has("node24") }), startupMarkdown),
  live: part("`pulumi up` and `pulumi preview` against a plain program's", ({ log }) => measureLive({ sizes: LIVE_SIZES, log }), liveMarkdown),
  datapath: part("From `pulumi up` returning to the URLs answering", ({ log }) => measureDataPath({ rounds: 3, log }), dataPathMarkdown),
  sandbox: part("The warm sandbox", ({ log }) => measureSandbox({ projectDir, rounds: 3, log }), sandboxMarkdown),
  portal: part("The portal under load", ({ log }) => measurePortalLoad({ services: 5_000, requests: 2_000, concurrency: 50, log }), portalLoadMarkdown),
  metrics: part("Prometheus scraping the portal", ({ log }) => measureScrapes({ services: 5_000, cold: 5, warm: 200, log }), scrapeMarkdown),
  stacks: part(
    "One portal of two stacks against two portals, and a hung cluster",
    ({ log }) => measureStacks({ services: 2_000, requests: 500, concurrency: 20, log }),
    stacksMarkdown,
  ),
};
const NAMES = Object.keys(PARTS) as (keyof typeof PARTS)[];

const log: Log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function main() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      only: { type: "string" },
      skip: { type: "string", default: "" },
      runs: { type: "string", default: "11" },
      "no-docs": { type: "boolean", default: false },
    },
    strict: true,
  });
  const names = (list: string) =>
    list
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
  const skip = new Set(names(values.skip));
  if (values.only !== undefined && names(values.only).length === 0) throw new Error("--only names no part: give one or more of the parts, or leave --only out");
  const parts = new Set((values.only !== undefined ? names(values.only) : NAMES).filter((p) => !skip.has(p)));
  const unknown = [...parts, ...skip].filter((p) => !(NAMES as string[]).includes(p) && p !== "node24");
  if (unknown.length) throw new Error(`unknown part ${unknown.join(", ")}: the parts are ${NAMES.join(", ")} (and node24, startup's Node.js 24 figures)`);
  const runs = /^\d{1,3}$/.test(values.runs) ? Number(values.runs) : Number.NaN;
  if (!Number.isInteger(runs) || runs < 1 || runs > 100) throw new Error(`--runs must be an integer from 1 to 100, not ${values.runs}`);
  // A run that would measure nothing fails: it never prints an empty page, nor writes one to docs/.
  if (!NAMES.some((n) => parts.has(n))) throw new Error(`no part left to run (--only ${values.only ?? "(all)"}, --skip ${values.skip || "(none)"})`);
  const left = [...NAMES.filter((p) => !parts.has(p)), ...(parts.has("startup") && skip.has("node24") ? ["node24"] : [])];
  if (left.length) log(`not in this run (--only/--skip): ${left.join(", ")}`);
  // A run record and its watchdog, as the e2e suite's: the control planes, servers and plugins a part starts go with the
  // bench however it ends (Ctrl-C, a kill), never left running (test/support/run-record.ts).
  await startRun();
  const started = new Date();
  const results: Record<string, unknown> = {};
  const sections: string[] = [];
  const failed: string[] = [];
  for (const name of NAMES.filter((n) => parts.has(n))) {
    const { title, run } = PARTS[name];
    // A part that cannot run says why in its section, and fails the run; the others still run.
    const { result, paragraphs } = await run({ runs, log, skip }).catch((err: unknown) => {
      const reason = ((err as Error).message ?? String(err)).split("\n")[0] ?? "";
      failed.push(`${name}: ${reason}`);
      return { result: { notMeasured: reason }, paragraphs: [`Not measured: ${reason}`] };
    });
    results[name] = result;
    sections.push(`## ${title}\n\n${paragraphs.join("\n\n")}`);
  }
  fs.mkdirSync(path.join(projectDir, "test-output"), { recursive: true });
  fs.writeFileSync(path.join(projectDir, "test-output/bench.json"), `${JSON.stringify(results, null, 2)}\n`);
  if (values["no-docs"] || failed.length) process.stdout.write(`${sections.join("\n\n")}\n`);
  // Figures with a hole are not written to docs/.
  if (failed.length) throw new Error(`${failed.length} part(s) not measured (docs/benchmarks.md left as it was):\n  ${failed.join("\n  ")}`);
  if (values["no-docs"]) return;
  const command = ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" ");
  const head = [
    "# Benchmarks",
    "",
    `The figures of one run: \`${command}\` on commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: projectDir, encoding: "utf8" }).trim()}, ${started.toISOString().slice(0, 16).replace("T", " ")} UTC, Node.js ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load average ${(os.loadavg()[0] ?? 0).toFixed(1)} at the start (other work may share the CPUs: read each figure against its floor). Not in this run (--only/--skip): ${left.join(", ") || "nothing"}.`,
  ];
  fs.writeFileSync(path.join(projectDir, "docs/benchmarks.md"), `${[...head, "", sections.join("\n\n")].join("\n")}\n`);
  log("done: docs/benchmarks.md, test-output/bench.json");
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(EXIT.ERROR);
});
