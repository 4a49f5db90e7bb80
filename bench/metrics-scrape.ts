// What Prometheus scraping the portal costs (docs/monitoring.md): the portal runs as its own
// process from the bundle `up` ships, with the audit on (PORTAL_ALLOWLIST, as with monitoring
// enabled), against the fake API server of the portal part (5,000 Services). Measured: a scrape that
// has to read the cluster (the observation and the audit's cluster-wide lists, as every 30 s
// scrape does), scrapes that join a fresh read, and the floor (/healthz) in the same run: the
// latency, the portal's CPU time, the API server's bytes and LIST calls, the body's size.
import * as fs from "node:fs";
import * as os from "node:os";
import { load, rssOf, withPortal } from "./portal-load";
import { round } from "./stats";

const AUDIT_SECONDS = 5;

/** CPU time (user + system) of a process so far, in ms (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

type Scrape = { latencyMs: number; cpuMs: number; apiBytes: number; lists: Record<string, number> };

export async function measureScrapes(opts: { services: number; cold: number; warm: number; log: (m: string) => void }) {
  const loadAverage = round(os.loadavg()[0] ?? 0);
  const env = {
    PORTAL_ALLOWLIST: JSON.stringify({ services: [], hostPorts: [] }),
    // 5 s instead of 5 min, so that each cold scrape below reads the audit's lists again.
    PORTAL_AUDIT_INTERVAL_SECONDS: String(AUDIT_SECONDS),
  };
  return withPortal(opts.services, env, async (api, portal) => {
    const metricsUrl = new URL("/metrics", portal.url).href;
    /** `fn`'s result and the portal's CPU time (ms) meanwhile. */
    const portalCpu = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
      const before = cpuMs(portal.pid);
      const r = await fn();
      return [r, cpuMs(portal.pid) - before];
    };
    // Module loading and the first probe round: not what a scrape costs afterwards.
    await fetch(metricsUrl).then((r) => r.text());
    // Scrapes that read the observation and the audit's cluster-wide lists, and those that read the
    // observation only (what most 30 s scrapes do: the audit's lists last 5 min).
    const coldScrapes: Scrape[] = [];
    const observationScrapes: Scrape[] = [];
    const scrape = async (): Promise<Scrape> => {
      const since = api.meter();
      const t0 = performance.now();
      const [, cpu] = await portalCpu(() => fetch(metricsUrl).then((r) => r.text()));
      const latencyMs = round(performance.now() - t0);
      const { lists, bytes } = since();
      return { latencyMs, cpuMs: cpu, apiBytes: bytes, lists };
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
    const [floor, floorCpuMs] = await portalCpu(() => load(new URL("/healthz", portal.url).href, opts.warm, 1, api));
    const [warm, warmCpuMs] = await portalCpu(() => load(metricsUrl, opts.warm, 1, api));
    return {
      services: api.services,
      coldScrapes,
      observationScrapes,
      warm: { ...warm, cpuMsPerScrape: round(warmCpuMs / opts.warm, 2) },
      floor: { ...floor, cpuMsPerRequest: round(floorCpuMs / opts.warm, 2) },
      bodyBytes,
      rssPeakMiB: round(rssOf(portal.pid).peak / 2 ** 20),
      cpus: os.cpus().length,
      loadAverage,
    };
  });
}

const line = (runs: Scrape[]) =>
  runs.map((c) => `${c.latencyMs} ms, ${c.cpuMs} ms CPU, ${round(c.apiBytes / 2 ** 20, 2)} MiB from the API (${JSON.stringify(c.lists)})`).join("; ");

/** docs/monitoring.md quotes a run. */
export function scrapeMarkdown(b: Awaited<ReturnType<typeof measureScrapes>>): string[] {
  return [
    `The portal's own process (the bundle \`up\` ships) with the audit on, against a fake API server holding ${b.services.toLocaleString("en")} Services (\`bench/metrics-scrape.ts\`). The floor is \`/healthz\` in the same run.`,
    [
      `- A scrape that reads the observation and the audit's cluster-wide lists (once per audit interval): ${line(b.coldScrapes)}.`,
      `- A scrape that reads the observation only (what most 30 s scrapes do): ${line(b.observationScrapes)}.`,
      `- ${b.warm.requests} scrapes joining a fresh read: p50 ${b.warm.p50Ms} ms, p99 ${b.warm.p99Ms} ms, ${b.warm.cpuMsPerScrape} ms CPU each; floor \`/healthz\`: p50 ${b.floor.p50Ms} ms, p99 ${b.floor.p99Ms} ms, ${b.floor.cpuMsPerRequest} ms CPU.`,
      `- Body ${b.bodyBytes} bytes; the portal's peak RSS ${b.rssPeakMiB} MiB.`,
    ].join("\n"),
  ];
}
