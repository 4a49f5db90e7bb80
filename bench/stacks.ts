// Several stacks in one portal (the local `exposure portal --stack a --stack b`) against one portal per
// stack. Each stack's cluster is a fake API server of its own (portal-load's: `services` Services and
// their EndpointSlices, every read the product makes answered); each stack's outputs are in a file
// backend, imported with the toolchain's Pulumi CLI (`pulumi stack import`), which the portal reads as
// after an `up`. Measured over the same load (page, /api and /metrics views of both stacks, the same
// read interval): the portals' peak RSS and CPU seconds, against a floor measured in the same run (the
// same processes answering /healthz: no cluster read, no page). Then one cluster hangs (its API server
// accepts connections and never answers, as a SIGSTOPped one): the other stack's read latency and
// freshness in the one portal, with and without the hang. Everything stays on 127.0.0.0/8.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { writeKubeconfig } from "../test/support/fake-api";
import { toolchainBin } from "../test/support/harness";
import { type Started, startProcess } from "../test/support/processes";
import { afterUpObjects, generateEntries, servedEntries } from "./gen";
import { type FakeApiServer, fakeApiServer, load, rssOf } from "./portal-load";
import { round, table } from "./stats";

const projectDir = path.resolve(__dirname, "..");
const STACKS = ["a", "b"] as const;

/** CPU seconds (user + system) a process has used so far: /proc/<pid>/stat, fields 14 and 15, in clock ticks. */
function cpuSecondsOf(pid: number): number {
  const fields = fs
    .readFileSync(`/proc/${pid}/stat`, "utf8")
    .replace(/^.*\) /s, "")
    .split(" ");
  const ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  return (Number(fields[11]) + Number(fields[12])) / ticks;
}

/** A project folder with stacks a and b, each naming its own API server's kubeconfig, and their outputs imported. */
function writeProject(dir: string, apis: readonly FakeApiServer[], env: NodeJS.ProcessEnv): void {
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
  const entries = generateEntries(9, { hostPorts: false });
  fs.writeFileSync(path.join(dir, "contract.yaml"), apis[0]?.contract ?? "");
  // The first Ready node by name holds the URLs (afterUpObjects: bench-node-a), the nodePorts are 30000 + i.
  const node = afterUpObjects(entries).nodes[0]?.status?.addresses?.[0]?.address ?? "";
  const served = servedEntries(entries).map((e, i) => [e.name, { nodePort: 30000 + i, url: `http://${node}:${30000 + i}` }] as const);
  const outputs = { urls: Object.fromEntries(served.map(([n, e]) => [n, e.url])), endpoints: Object.fromEntries(served) };
  const pulumi = (args: string[]) => execFileSync(path.join(toolchainBin(), "pulumi"), [...args, "--non-interactive"], { cwd: dir, env, stdio: "pipe" });
  STACKS.forEach((stack, i) => {
    fs.mkdirSync(path.join(dir, stack));
    const kubeconfig = writeKubeconfig(path.join(dir, stack), apis[i]?.port ?? 0);
    pulumi(["stack", "init", stack, "--secrets-provider", "passphrase"]);
    fs.appendFileSync(
      path.join(dir, `Pulumi.${stack}.yaml`),
      `config:\n  kubernetes:kubeconfig: ${kubeconfig}\n  kubernetes:context: fake\n  ui-exposure:contract: contract.yaml\n  ui-exposure:entries: all\n  ui-exposure:cilium: { mode: cohabit }\n  ui-exposure:allowlist: { services: [], hostPorts: [] }\n`,
    );
    const resources = [
      { urn: `urn:pulumi:${stack}::ui-exposure::pulumi:pulumi:Stack::ui-exposure-${stack}`, custom: false, type: "pulumi:pulumi:Stack", outputs },
    ];
    const manifest = { time: new Date().toISOString(), magic: "", version: "" };
    fs.writeFileSync(path.join(dir, `${stack}.json`), JSON.stringify({ version: 3, deployment: { manifest, resources } }));
    pulumi(["stack", "import", "--stack", stack, "--file", `${stack}.json`]);
  });
}

/** `exposure portal` over `stacks`, as its own process (the CLI bundle, plain node). */
const startPortal = (dir: string, env: NodeJS.ProcessEnv, stacks: readonly string[]) =>
  startProcess([path.join(projectDir, "bin/exposure.cjs"), "portal", ...stacks.flatMap((s) => ["--stack", s]), "--listen", "127.0.0.1:0", "--json"], {
    cwd: dir,
    env,
    announce: /"url":"(http:\/\/127\.0\.0\.1:\d+\/)"/,
    timeoutMs: 60_000,
  });

export async function measureStacks(opts: { services: number; requests: number; concurrency: number; log: (m: string) => void }) {
  const loadAverage = round(os.loadavg()[0] ?? 0);
  const readIntervalMs = 2_000;
  const apis = [await fakeApiServer(opts.services), await fakeApiServer(opts.services)];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bench-stacks-"));
  const env: NodeJS.ProcessEnv = {
    PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`,
    PULUMI_HOME: path.join(dir, "pulumi-home"),
    PULUMI_CONFIG_PASSPHRASE: "bench",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PATH: `${toolchainBin()}${path.delimiter}${process.env.PATH ?? ""}`,
    PORTAL_READ_INTERVAL_SECONDS: String(readIntervalMs / 1000),
    PORTAL_PROBE: "off",
  };
  const started: Started[] = [];
  try {
    fs.mkdirSync(path.join(dir, "state"));
    writeProject(dir, apis, env);
    /** The views' load on portals (one of both stacks, or one per stack): their CPU seconds and peak RSS, and the same over the /healthz floor. */
    const run = async (portals: { url: string; pid: number; stacks: readonly string[] }[], several: boolean) => {
      for (const p of portals) {
        const warm = await fetch(new URL(several ? "/api/stacks" : "/api/entries", p.url));
        if (warm.status !== 200)
          throw new Error(`the portal of ${p.stacks.join(", ")} answers ${warm.status} after start: ${(await warm.text()).slice(0, 300)}`);
      }
      const cpu = () => portals.reduce((sum, p) => sum + cpuSecondsOf(p.pid), 0);
      const c0 = cpu();
      for (const p of portals) await load(new URL("/healthz", p.url).href, opts.requests, opts.concurrency, apis[0] as FakeApiServer);
      const floorCpu = cpu() - c0;
      const floorRss = portals.reduce((sum, p) => sum + rssOf(p.pid).peak, 0);
      const c1 = cpu();
      // What a user looks at: the page, each stack's entries as JSON, the metrics (one portal of both shows both on one page, one /metrics).
      const views = (p: (typeof portals)[number]) =>
        several ? ["/", ...p.stacks.map((s) => `/api/stacks/${s}/entries`), "/metrics"] : ["/", "/api/entries", "/metrics"];
      const runs = [];
      for (const p of portals)
        for (const v of views(p)) runs.push(await load(new URL(v, p.url).href, opts.requests, opts.concurrency, apis[0] as FakeApiServer));
      if (runs.some((r) => r.errors)) throw new Error(`${runs.reduce((sum, r) => sum + r.errors, 0)} of the load's requests failed`);
      // A ratio needs both sides measured: a floor below the clock's tick is no floor.
      if (floorCpu <= 0) throw new Error("the /healthz floor used no measurable CPU time: raise the requests");
      return {
        cpuSeconds: round(cpu() - c1, 2),
        floorCpuSeconds: round(floorCpu, 2),
        peakRssMiB: round(portals.reduce((sum, p) => sum + rssOf(p.pid).peak, 0) / 2 ** 20),
        floorRssMiB: round(floorRss / 2 ** 20),
        requests: runs.reduce((sum, r) => sum + r.requests, 0),
      };
    };
    opts.log(`stacks: two fake API servers of ${apis[0]?.services} Services; one portal of both, then one portal per stack`);
    const both = await startPortal(dir, env, STACKS);
    started.push(both);
    const one = await run([{ url: both.url, pid: both.child.pid as number, stacks: STACKS }], true);

    // The hang: stack a's reads through the one portal, with b answering, then with b hung.
    const readsOfA = async () => {
      const latencies: number[] = [];
      const ages: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        const res = await fetch(new URL("/api/stacks/a/entries", both.url), { signal: AbortSignal.timeout(30_000) });
        const doc = (await res.json()) as { observedAt?: string };
        latencies.push(performance.now() - t0);
        if (res.status !== 200 || !doc.observedAt) throw new Error(`stack a's entries answered ${res.status} without observedAt`);
        ages.push(Date.now() - new Date(doc.observedAt).getTime());
        await new Promise((r) => setTimeout(r, readIntervalMs / 4));
      }
      const sorted = latencies.sort((x, y) => x - y);
      return { p50Ms: round(sorted[10] ?? Number.NaN), maxMs: round(sorted[19] ?? Number.NaN), maxAgeMs: Math.round(Math.max(...ages)) };
    };
    const answering = await readsOfA();
    const hung = apis[1] as FakeApiServer;
    const handlers = hung.server.listeners("request") as ((...args: unknown[]) => void)[];
    hung.server.removeAllListeners("request");
    hung.server.on("request", () => {});
    const hanging = await readsOfA();
    const stale = (await (await fetch(new URL("/api/stacks", both.url))).json()) as { stacks: { stack: string; error?: string }[] };
    const bError = stale.stacks.find((s) => s.stack === "b")?.error ?? "";
    if (!bError) throw new Error("stack b's section shows no error while its API server hangs");
    both.child.kill("SIGKILL");
    started.length = 0;
    // Two one-stack portals, b's API server answering again (the requests left hanging are dropped).
    hung.server.closeAllConnections();
    hung.server.removeAllListeners("request");
    for (const h of handlers) hung.server.on("request", h);
    const pair = [await startPortal(dir, env, ["a"]), await startPortal(dir, env, ["b"])];
    started.push(...pair);
    const two = await run(
      pair.map((p, i) => ({ url: p.url, pid: p.child.pid as number, stacks: [STACKS[i] as string] })),
      false,
    );
    return {
      services: opts.services,
      requestsPerPath: opts.requests,
      readIntervalMs,
      cpus: os.cpus().length,
      loadAverage,
      one,
      two,
      answering,
      hanging,
      hungError: bError.slice(0, 200),
    };
  } finally {
    for (const s of started) if (s.child.exitCode === null) s.child.kill("SIGKILL");
    for (const a of apis) {
      a.server.close();
      a.server.closeAllConnections();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function stacksMarkdown(b: Awaited<ReturnType<typeof measureStacks>>): string[] {
  const ratio = (x: number, y: number) => (y > 0 ? `${round(x / y, 2)}×` : "n/a");
  return [
    `Two fake API servers on loopback, ${b.services} Services each; stacks a and b in a file backend. The same views of both stacks (page, /api entries, /metrics; ${b.requestsPerPath} requests each, read interval ${b.readIntervalMs / 1000} s), served by one portal of both (its page and /metrics show both stacks: asked once), then by one portal per stack (each asked). Floor: the same processes answering /healthz. ${b.cpus} CPUs, load average ${b.loadAverage} at the start.`,
    table(
      ["portals", "requests", "CPU (s)", "floor CPU (s)", "peak RSS (MiB)", "floor RSS (MiB)"],
      (
        [
          ["one of both stacks", b.one],
          ["one per stack (two)", b.two],
        ] as const
      ).map(([label, r]) => [label, ...[r.requests, r.cpuSeconds, r.floorCpuSeconds, r.peakRssMiB, r.floorRssMiB].map(String)]),
    ),
    `One portal of both against two: CPU ${ratio(b.one.cpuSeconds, b.two.cpuSeconds)}, peak RSS ${ratio(b.one.peakRssMiB, b.two.peakRssMiB)} (floors: ${ratio(b.one.floorCpuSeconds, b.two.floorCpuSeconds)}, ${ratio(b.one.floorRssMiB, b.two.floorRssMiB)}).`,
    table(
      ["stack b's cluster", "stack a: p50 (ms)", "max (ms)", "oldest read served (ms)"],
      [
        ["answering", String(b.answering.p50Ms), String(b.answering.maxMs), String(b.answering.maxAgeMs)],
        ["hung (never answers)", String(b.hanging.p50Ms), String(b.hanging.maxMs), String(b.hanging.maxAgeMs)],
      ],
    ),
    `Stack a's reads through the one portal, 20 of them a quarter interval apart, first with b answering, then with b's API server accepting connections and never answering (as a stopped process). While b hangs, /api/stacks says for b: ${b.hungError || "(no error yet)"}.`,
  ];
}
