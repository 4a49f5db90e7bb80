// `npm run bench`: the figures a user feels, each next to a floor measured in the same run:
// CLI start-up, `pulumi up`/`preview` at the platform's size and ten times it, the data path
// (from `up` returning to the URLs answering), the warm sandbox and the portal under load. Writes the figures of
// this one run, and the command that made them, to docs/benchmarks.md; every sample to
// test-output/bench.json. A measurement, not a test: nothing fails on a threshold.
//
//   npm run bench                                         # every part
//   npm run bench -- --only startup,portal                # some parts (startup, live, datapath, sandbox, portal, metrics)
//   npm run bench -- --only startup --runs 5 --no-docs    # printed, docs/ left alone (.ci/run)
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { EXIT } from "../src/core/findings";
import { dataPathMarkdown, measureDataPath } from "./datapath";
import { liveMarkdown, measureLive } from "./live";
import { measureScrapes, scrapeMarkdown } from "./metrics-scrape";
import { measurePortalLoad, portalLoadMarkdown } from "./portal-load";
import { measureSandbox, sandboxMarkdown } from "./sandbox";
import { measureStartup, startupMarkdown } from "./startup";

const projectDir = path.resolve(__dirname, "..");
/** The platform publishes about ten UIs: its size, and ten times it. */
const LIVE_SIZES = [10, 100];

type Log = (msg: string) => void;
type Options = { runs: number; log: Log };
/** A part of the run: its section's title; what it measures, and those figures as markdown paragraphs. */
const part = <T>(title: string, measure: (o: Options) => Promise<T>, markdown: (r: T) => string[]) => ({
  title,
  run: async (o: Options): Promise<{ result: unknown; paragraphs: string[] }> => {
    const result = await measure(o);
    return { result, paragraphs: markdown(result) };
  },
});

const PARTS = {
  startup: part("CLI start-up", measureStartup, startupMarkdown),
  live: part("`pulumi up` and `pulumi preview`", ({ log }) => measureLive({ sizes: LIVE_SIZES, log }), liveMarkdown),
  datapath: part("From `pulumi up` returning to the URLs answering", ({ log }) => measureDataPath({ rounds: 3, log }), dataPathMarkdown),
  sandbox: part("The warm sandbox", ({ log }) => measureSandbox({ projectDir, rounds: 3, log }), sandboxMarkdown),
  portal: part("The portal under load", ({ log }) => measurePortalLoad({ services: 5_000, requests: 2_000, concurrency: 50, log }), portalLoadMarkdown),
  metrics: part("Prometheus scraping the portal", ({ log }) => measureScrapes({ services: 5_000, cold: 5, warm: 200, log }), scrapeMarkdown),
};
const NAMES = Object.keys(PARTS) as (keyof typeof PARTS)[];

const log: Log = (msg) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function main() {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { only: { type: "string" }, runs: { type: "string", default: "11" }, "no-docs": { type: "boolean", default: false } },
    strict: true,
  });
  const parts = new Set(values.only ? values.only.split(",").map((p) => p.trim()) : NAMES);
  const unknown = [...parts].filter((p) => !(NAMES as string[]).includes(p));
  if (unknown.length) throw new Error(`unknown part ${unknown.join(", ")}: the parts are ${NAMES.join(", ")}`);
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1 || runs > 100) throw new Error(`--runs must be an integer from 1 to 100, not ${values.runs}`);
  const started = new Date();
  const results: Record<string, unknown> = {};
  const sections: string[] = [];
  for (const name of NAMES.filter((n) => parts.has(n))) {
    const { title, run } = PARTS[name];
    // A part that cannot run here says why in its section; the others still run.
    const { result, paragraphs } = await run({ runs, log }).catch((err: unknown) => {
      const skipped = ((err as Error).message ?? String(err)).split("\n")[0] ?? "";
      return { result: { skipped }, paragraphs: [`Not measured: ${skipped}`] };
    });
    results[name] = result;
    sections.push(`## ${title}\n\n${paragraphs.join("\n\n")}`);
  }
  fs.mkdirSync(path.join(projectDir, "test-output"), { recursive: true });
  fs.writeFileSync(path.join(projectDir, "test-output/bench.json"), `${JSON.stringify(results, null, 2)}\n`);
  if (values["no-docs"]) {
    process.stdout.write(`${sections.join("\n\n")}\n`);
    return;
  }
  const command = ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" ");
  const head = [
    "# Benchmarks",
    "",
    `The figures of one run: \`${command}\` on commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: projectDir, encoding: "utf8" }).trim()}, ${started.toISOString().slice(0, 16).replace("T", " ")} UTC, Node.js ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "unknown CPU"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, load average ${(os.loadavg()[0] ?? 0).toFixed(1)} at the start (other work may share the CPUs: read each figure against its floor). Parts not in this run: ${NAMES.filter((p) => !parts.has(p)).join(", ") || "none"}.`,
  ];
  fs.writeFileSync(path.join(projectDir, "docs/benchmarks.md"), `${[...head, "", sections.join("\n\n")].join("\n")}\n`);
  log("done: docs/benchmarks.md, test-output/bench.json");
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(EXIT.ERROR);
});
