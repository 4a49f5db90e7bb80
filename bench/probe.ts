// Part 4: the `exposure probe` engine over many URLs with one slow UI. The URLs are local
// HTTP servers on 127.0.0.1 only (one port each, as each UI has its own nodePort): nothing
// leaves the loopback. The question is whether a slow UI costs its own latency once
// (concurrent probing) or delays every other probe (sequential probing).
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { probeAll, probeTargets } from "../src/adapters/http-probe";
import { parseContract } from "../src/core/contract/parse";
import { type ProcessResult, runProcess } from "../test/support/harness";

export interface ProbeBench {
  urls: number;
  slowMs: number;
  /** Answer time of every other UI (ms). */
  fastMs: number;
  /** `exposure probe`'s default (cli/commands/probe.ts). */
  concurrency: number;
  /** probeAll() alone, in-process (ms). */
  engineMs: number;
  /** The whole CLI, `exposure probe --outputs FILE --contract FILE --json`, process start to exit (ms). */
  cliMs: number;
  /** The slowest single probe as measured by the engine (ms). */
  slowestMs: number;
  /** What probing one after the other would cost: the sum of every latency (ms). */
  sumMs: number;
  allOk: boolean;
}

const projectDir = path.resolve(__dirname, "..");
const CLI_DEFAULT_CONCURRENCY = 8;

async function listen(handler: http.RequestListener): Promise<http.Server> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

function runCli(args: string[]): Promise<ProcessResult> {
  // Async: the servers answering the probes live in this process' event loop.
  return runProcess(process.execPath, [path.join(projectDir, "bin/exposure.cjs"), ...args], { cwd: projectDir });
}

export async function measureProbe(opts: { urls: number; slowMs: number; fastMs: number }): Promise<ProbeBench> {
  const slowIndex = Math.floor(opts.urls / 2);
  const servers: http.Server[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-probe-"));
  try {
    const urls: Record<string, string> = {};
    for (let i = 0; i < opts.urls; i++) {
      const slow = i === slowIndex;
      const server = await listen((_req, res) => {
        const answer = () => {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end("ok\n");
        };
        // Every UI takes a little time to answer its health path, so "one after the other" costs visibly more than "all at once".
        setTimeout(answer, slow ? opts.slowMs : opts.fastMs);
      });
      servers.push(server);
      urls[`ui-${String(i).padStart(2, "0")}`] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
    const contract = {
      version: 1,
      endpoints: Object.keys(urls).map((name, i) => ({
        name,
        exposed: true,
        service: { namespace: "bench", name: `${name}-web`, port: "http" },
        probe: { path: "/healthz", ...(i === slowIndex ? { timeoutSeconds: 10 } : {}) },
      })),
    };
    const contractFile = path.join(dir, "endpoints.yaml");
    const outputsFile = path.join(dir, "outputs.json");
    fs.writeFileSync(contractFile, stringify(contract));
    fs.writeFileSync(outputsFile, JSON.stringify({ urls }));

    const targets = probeTargets(urls, parseContract(stringify(contract), contractFile), 5000);
    const t0 = performance.now();
    const results = await probeAll(targets, { concurrency: CLI_DEFAULT_CONCURRENCY });
    const engineMs = performance.now() - t0;

    const cli = await runCli(["probe", "--outputs", outputsFile, "--contract", contractFile, "--json"]);
    if (cli.code !== 0) throw new Error(`exposure probe exited ${cli.code}: ${cli.stderr || cli.stdout}`);

    return {
      urls: opts.urls,
      slowMs: opts.slowMs,
      fastMs: opts.fastMs,
      concurrency: CLI_DEFAULT_CONCURRENCY,
      engineMs,
      cliMs: cli.ms,
      slowestMs: Math.max(...results.map((r) => r.latencyMs)),
      sumMs: results.reduce((s, r) => s + r.latencyMs, 0),
      allOk: results.every((r) => r.ok),
    };
  } finally {
    for (const s of servers) s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
