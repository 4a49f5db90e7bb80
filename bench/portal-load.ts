// The portal under load. A fake API server on loopback holds 5,000 Services with their
// EndpointSlices (about 10 MB of JSON); the portal runs as its own process (the bundle `up`
// ships, run with plain node) against it through a kubeconfig, and 2,000 page loads arrive 50
// at a time. Measured: latency percentiles, errors, the LIST calls the API server received, the
// portal's peak RSS. The floor is the same load on /healthz (no cluster read, no page), in the
// same run. Everything stays on 127.0.0.0/8.
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { bundlePortalServer } from "../src/adapters/portal-bundle";
import type { EndpointSlice, Service } from "../src/core/kube/types";
import { PORTAL_FILES } from "../src/core/portal/spec";
import { writeKubeconfig } from "../test/support/fake-api";
import type { RecordedCluster } from "../test/support/portal-fixtures";
import { type Started, startProcess } from "../test/support/processes";
import { answerList, recordedApiServer } from "../test/support/recorded-api";
import { afterUpObjects, contractYaml, generateEntries } from "./gen";
import { round, table } from "./stats";

const projectDir = path.resolve(__dirname, "..");
const SERVICES_PATH = "/api/v1/services";
/** One cluster read lists the Nodes once: the count of read sets. */
const NODES_PATH = "/api/v1/nodes";

const PAD = "x".repeat(900);

/** A chart's ClusterIP Service, with the annotation weight real ones carry (last-applied configuration). */
function fillerService(i: number): Service {
  // The first 200 share the platform's namespace (a scoped read still receives them), the rest spread over 96 others.
  const ns = i < 200 ? "team-000" : `app-${String(Math.floor(i / 50)).padStart(3, "0")}`;
  const name = `svc-${String(i).padStart(4, "0")}`;
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name,
      namespace: ns,
      labels: { "app.kubernetes.io/name": name, "app.kubernetes.io/instance": ns, "app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": `${name}-1.2.3` },
      annotations: { "meta.helm.sh/release-name": ns, "kubectl.kubernetes.io/last-applied-configuration": PAD },
    },
    spec: {
      type: "ClusterIP",
      selector: { "app.kubernetes.io/name": name, "app.kubernetes.io/instance": ns },
      ports: [
        { name: "http", port: 80, targetPort: 8080, protocol: "TCP" },
        { name: "metrics", port: 9090, targetPort: 9090, protocol: "TCP" },
      ],
    },
  };
}

function fillerSlice(s: Service, i: number): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${s.metadata.name}-abcde`, namespace: s.metadata.namespace, labels: { "kubernetes.io/service-name": s.metadata.name } },
    endpoints: [0, 1].map((k) => ({
      addresses: [`10.${64 + (i % 64)}.${Math.floor(i / 64) % 250}.${10 + k}`],
      conditions: { ready: true },
      nodeName: "bench-node-a",
      targetRef: { kind: "Pod", namespace: s.metadata.namespace, name: `${s.metadata.name}-${k}` },
    })),
  };
}

export async function fakeApiServer(services: number) {
  const entries = generateEntries(9, { hostPorts: false });
  const platform = afterUpObjects(entries);
  const filler = Array.from({ length: services - platform.services.length }, (_, i) => fillerService(i));
  const data: RecordedCluster = {
    services: [...platform.services, ...filler],
    endpointSlices: [...platform.slices, ...filler.map(fillerSlice)],
    nodes: platform.nodes,
    pods: platform.pods,
  };
  const { server, seen, stats } = recordedApiServer(data);
  const full = (p: string) => (answerList(data, p) as { items: unknown[] }).items;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    contract: contractYaml(entries),
    services: data.services.length,
    slices: data.endpointSlices.length,
    /** The Service and EndpointSlice lists as the API server sends them (bytes). */
    listBytes: JSON.stringify(full("/api/v1/services")).length + JSON.stringify(full("/apis/discovery.k8s.io/v1/endpointslices")).length,
    /** From now on: the function gives the LIST calls per path and the bytes the server sent since. */
    meter() {
      const from = seen.length;
      const sentBefore = stats.sent;
      return () => {
        const lists: Record<string, number> = {};
        for (const p of seen.slice(from)) {
          // Counted per kind: every Service list (namespaced or labelled) counts as a Service LIST.
          const kind = /services$/.test(p) ? SERVICES_PATH : p;
          lists[kind] = (lists[kind] ?? 0) + 1;
        }
        return { lists, bytes: stats.sent - sentBefore };
      };
    },
  };
}

export type FakeApiServer = Awaited<ReturnType<typeof fakeApiServer>>;

/**
 * A fake API server holding `services` Services and, in a temporary folder, the portal as its own
 * process from the files of the ConfigMap `up` creates (the loader and the gzipped bundle, run with
 * plain `node`), reading it through a kubeconfig; `env` adds to the portal's. Both stop after `fn`.
 */
export async function withPortal<T>(
  services: number,
  env: NodeJS.ProcessEnv,
  fn: (api: FakeApiServer, portal: { url: string; pid: number }) => Promise<T>,
): Promise<T> {
  const api = await fakeApiServer(services);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-portal-"));
  let portal: Started | undefined;
  try {
    fs.writeFileSync(path.join(dir, "contract.yaml"), api.contract);
    const bundle = bundlePortalServer();
    fs.writeFileSync(path.join(dir, PORTAL_FILES.loader), bundle.loader);
    fs.writeFileSync(path.join(dir, PORTAL_FILES.bundle), bundle.gzipped);
    portal = await startProcess([path.join(dir, PORTAL_FILES.loader)], {
      cwd: projectDir,
      env: {
        KUBECONFIG: writeKubeconfig(dir, api.port),
        PORTAL_CONTRACT: path.join(dir, "contract.yaml"),
        PORTAL_LISTEN: "127.0.0.1:0",
        PORTAL_STACK: "bench",
        ...env,
      },
      announce: /portal listening on (http:\/\/\S+)/,
      timeoutMs: 30_000,
    });
    return await fn(api, { url: portal.url, pid: portal.child.pid as number });
  } finally {
    if (portal?.child.exitCode === null) portal.child.kill("SIGKILL");
    api.server.close();
    api.server.closeAllConnections();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** KiB figures of /proc/<pid>/status (Linux): VmRSS now, VmHWM the peak. */
export function rssOf(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") * 1024, peak: kib("VmHWM") * 1024 };
}

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

export async function load(url: string, requests: number, concurrency: number, api: FakeApiServer) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const since = api.meter();
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = http.get(url, { agent, timeout: 30_000 }, (res) => {
        res.resume();
        res.on("end", () => {
          latencies.push(performance.now() - t0);
          if (res.statusCode !== 200) errors++;
          resolve();
        });
      });
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => {
        errors++;
        latencies.push(performance.now() - t0);
        resolve();
      });
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < requests) await one();
    }),
  );
  const durationMs = performance.now() - started;
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    path: new URL(url).pathname,
    requests,
    concurrency,
    errors,
    p50Ms: round(percentile(sorted, 50)),
    p95Ms: round(percentile(sorted, 95)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
    durationMs: Math.round(durationMs),
    lists: since().lists,
  };
}
export type LoadRun = Awaited<ReturnType<typeof load>>;

export async function measurePortalLoad(opts: { services: number; requests: number; concurrency: number; log: (m: string) => void }) {
  const loadAverage = round(os.loadavg()[0] ?? 0);
  const readIntervalMs = 2_000;
  // The nodes are 127.0.0.21/22: the portal's probes stay on loopback (nothing listens: refused at once).
  const env = { PORTAL_PROBE: "on", PORTAL_READ_INTERVAL_SECONDS: String(readIntervalMs / 1000) };
  return withPortal(opts.services, env, async (api, portal) => {
    opts.log(`portal: load, ${api.services} Services (${round(api.listBytes / 2 ** 20)} MiB of lists), ${opts.requests} loads at ${opts.concurrency}`);
    // One warm-up load (module loading, first read), then the idle RSS.
    const warm = await fetch(portal.url);
    if (warm.status !== 200)
      throw new Error(`the portal answers ${warm.status}: ${(await warm.text()).replace(/[\s\S]*<section class="error"/, "").slice(0, 600)}`);
    const idle = rssOf(portal.pid);
    const floor = await load(new URL("/healthz", portal.url).href, opts.requests, opts.concurrency, api);
    const since = api.meter();
    const shared = await load(portal.url, opts.requests, opts.concurrency, api);
    return {
      services: api.services,
      endpointSlices: api.slices,
      listBytes: api.listBytes,
      readIntervalMs,
      shared,
      floor,
      // LIST sets (one call per kind) allowed by "at most one per interval" over the shared run.
      allowedSets: Math.ceil(shared.durationMs / readIntervalMs) + 1,
      apiBytesShared: since().bytes,
      rssIdleMiB: round(idle.rss / 2 ** 20),
      cpus: os.cpus().length,
      loadAverage,
      rssPeakMiB: round(rssOf(portal.pid).peak / 2 ** 20),
    };
  });
}

export function portalLoadMarkdown(b: Awaited<ReturnType<typeof measurePortalLoad>>): string[] {
  const row = (label: string, r: LoadRun) => [
    label,
    `\`${r.path}\``,
    ...[r.requests, r.concurrency, r.errors, r.p50Ms, r.p95Ms, r.p99Ms, r.maxMs, r.durationMs, r.lists[NODES_PATH] ?? 0].map(String),
  ];
  return [
    `A fake API server on loopback holds ${b.services} Services and ${b.endpointSlices} EndpointSlices (${round(b.listBytes / 2 ** 20)} MiB in the two cluster-wide lists). The portal runs as its own process from the files \`up\` ships in its ConfigMap, reads through a kubeconfig and probes the published URLs (loopback). ${b.cpus} CPUs, load average ${b.loadAverage} at the start.`,
    table(
      ["run", "path", "requests", "concurrency", "errors", "p50 (ms)", "p95 (ms)", "p99 (ms)", "max (ms)", "wall (ms)", "cluster reads (LIST sets)"],
      [row(`page, reads shared (${b.readIntervalMs / 1000} s interval)`, b.shared), row("floor: /healthz", b.floor)],
    ),
    `API server sent ${round(b.apiBytesShared / 2 ** 20, 2)} MiB for the ${b.shared.requests} loads (at most ${b.allowedSets} LIST sets at one per interval). The portal held ${b.rssIdleMiB} MiB RSS after its first load and peaked at ${b.rssPeakMiB} MiB (its pod's limit: 256Mi).`,
  ];
}
