// What Prometheus scraping the portal costs (docs/monitoring.md): the portal runs as its own
// process from the bundle `up` ships, with the audit on (PORTAL_ALLOWLIST, as with monitoring
// enabled), against the fake API server of part 5 (5,000 Services). Measured: a scrape that
// has to read the cluster (the observation and the audit's cluster-wide lists, as every 30 s
// scrape does), scrapes that join a fresh read, and the floor (/healthz) in the same run: the
// latency, the portal's CPU time, the API server's bytes and LIST calls, the body's size.
//
//   npx tsx bench/metrics-scrape.ts        # this part alone, printed (or npm run bench -- --only metrics)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fakeApiServer, load, rssOf, startPortalProcess, writeBundle, writeFakeApiFiles } from "./portal-load";
import { round } from "./stats";

const AUDIT_SECONDS = 5;

/** CPU time (user + system) of a process so far, in ms (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export interface ScrapeBench {
  services: number;
  /** Scrapes that read the observation and the audit's cluster-wide lists. */
  coldScrapes: { latencyMs: number; cpuMs: number; apiBytes: number; lists: Record<string, number> }[];
  /** Scrapes that read the observation only (what most 30 s scrapes do: the audit's lists last 5 min). */
  observationScrapes: ScrapeBench["coldScrapes"];
  warm: Awaited<ReturnType<typeof load>> & { cpuMsPerScrape: number };
  floor: Awaited<ReturnType<typeof load>> & { cpuMsPerRequest: number };
  bodyBytes: number;
  rssPeakMiB: number;
  cpus: number;
  loadAverage: number;
}

export async function measureScrapes(opts: { services: number; cold: number; warm: number; log: (m: string) => void }): Promise<ScrapeBench> {
  const api = await fakeApiServer(opts.services);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-metrics-"));
  try {
    writeFakeApiFiles(dir, api);
    const { KUBERNETES_SERVICE_HOST: _h, KUBERNETES_SERVICE_PORT: _p, ...base } = process.env;
    const loadAverage = round(os.loadavg()[0] ?? 0);
    const portal = await startPortalProcess(writeBundle(dir), {
      ...base,
      KUBECONFIG: path.join(dir, "kubeconfig"),
      PORTAL_CONTRACT: path.join(dir, "contract.yaml"),
      PORTAL_LISTEN: "127.0.0.1:0",
      PORTAL_STACK: "bench",
      PORTAL_ALLOWLIST: JSON.stringify({ services: [], hostPorts: [] }),
      // 5 s instead of 5 min, so that each cold scrape below reads the audit's lists again.
      PORTAL_AUDIT_INTERVAL_SECONDS: String(AUDIT_SECONDS),
    });
    const pid = portal.child.pid as number;
    const metricsUrl = new URL("/metrics", portal.url).href;
    try {
      // Module loading and the first probe round: not what a scrape costs afterwards.
      await fetch(metricsUrl).then((r) => r.text());
      const coldScrapes: ScrapeBench["coldScrapes"] = [];
      const observationScrapes: ScrapeBench["coldScrapes"] = [];
      const scrape = async () => {
        const before = { ...api.counts };
        const bytes = api.bytes.sent;
        const cpu = cpuMs(pid);
        const t0 = performance.now();
        await fetch(metricsUrl).then((r) => r.text());
        const lists: Record<string, number> = {};
        for (const [p, n] of Object.entries(api.counts)) if (n - (before[p] ?? 0) > 0) lists[p] = n - (before[p] ?? 0);
        return { latencyMs: round(performance.now() - t0), cpuMs: cpuMs(pid) - cpu, apiBytes: api.bytes.sent - bytes, lists };
      };
      for (let i = 0; i < opts.cold; i++) {
        // Both shared reads expired: this scrape reads the observation and the audit's lists.
        await new Promise((r) => setTimeout(r, AUDIT_SECONDS * 1000 + 1_000));
        coldScrapes.push(await scrape());
        // 2.5 s later: the observation is read again (2 s interval), the audit's count reused.
        await new Promise((r) => setTimeout(r, 2_500));
        observationScrapes.push(await scrape());
      }
      const bodyBytes = Buffer.byteLength(await (await fetch(metricsUrl)).text());
      const floorCpu = cpuMs(pid);
      const floor = await load(new URL("/healthz", portal.url).href, opts.warm, 1, api.counts);
      const floorCpuMs = cpuMs(pid) - floorCpu;
      const warmCpu = cpuMs(pid);
      const warm = await load(metricsUrl, opts.warm, 1, api.counts);
      const warmCpuMs = cpuMs(pid) - warmCpu;
      return {
        services: api.services,
        coldScrapes,
        observationScrapes,
        warm: { ...warm, cpuMsPerScrape: round(warmCpuMs / opts.warm, 2) },
        floor: { ...floor, cpuMsPerRequest: round(floorCpuMs / opts.warm, 2) },
        bodyBytes,
        rssPeakMiB: round(rssOf(pid).peak / 2 ** 20),
        cpus: os.cpus().length,
        loadAverage,
      };
    } finally {
      portal.child.kill("SIGKILL");
    }
  } finally {
    api.server.close();
    api.server.closeAllConnections();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const line = (runs: ScrapeBench["coldScrapes"]) =>
  runs.map((c) => `${c.latencyMs} ms, ${c.cpuMs} ms CPU, ${round(c.apiBytes / 2 ** 20, 2)} MiB from the API (${JSON.stringify(c.lists)})`).join("; ");

/** The section of docs/benchmarks.md (bench/run.ts, part `metrics`); docs/monitoring.md quotes a run. */
export function scrapeMarkdown(b: ScrapeBench | { skipped: string }): string {
  if ("skipped" in b)
    return `## Prometheus scraping the portal

Not measured: ${b.skipped}`;
  return [
    "## Prometheus scraping the portal",
    "",
    `The portal's own process (the bundle \`up\` ships) with the audit on, against a fake API server holding ${b.services.toLocaleString("en")} Services (\`bench/metrics-scrape.ts\`). The floor is \`/healthz\` in the same run.`,
    "",
    `- A scrape that reads the observation and the audit's cluster-wide lists (once per audit interval): ${line(b.coldScrapes)}.`,
    `- A scrape that reads the observation only (what most 30 s scrapes do): ${line(b.observationScrapes)}.`,
    `- ${b.warm.requests} scrapes joining a fresh read: p50 ${b.warm.p50Ms} ms, p99 ${b.warm.p99Ms} ms, ${b.warm.cpuMsPerScrape} ms CPU each; floor \`/healthz\`: p50 ${b.floor.p50Ms} ms, p99 ${b.floor.p99Ms} ms, ${b.floor.cpuMsPerRequest} ms CPU.`,
    `- Body ${b.bodyBytes} bytes; the portal's peak RSS ${b.rssPeakMiB} MiB.`,
  ].join("\n");
}

if (require.main === module) {
  measureScrapes({ services: 5_000, cold: 5, warm: 200, log: (m) => process.stderr.write(`[bench] ${m}\n`) })
    .then((b) => process.stdout.write(`${scrapeMarkdown(b)}\n`))
    .catch((err: unknown) => {
      process.stderr.write(`metrics bench failed: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    });
}
