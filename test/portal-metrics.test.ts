// The portal's /metrics: the samples of the shared observation (no cluster read of its own),
// label values from the contract only, what it serves while the cluster cannot be read, and
// the real promtool's `check metrics` on the real output.
import { afterEach, describe, expect, it } from "vitest";
import type { HttpGet } from "../src/adapters/http-probe";
import type { Pod, Service } from "../src/core/kube/types";
import { parseAllowlistEnv } from "../src/portal/main";
import { type PortalOptions, portalTuningFromEnv, type RunningPortal, renderMetrics, startPortal } from "../src/portal/server";
import { MemoryCluster, NODE_IP, portalContract, recordedCluster, unreachable } from "./support/portal-fixtures";
import { findPromtool, promtool } from "./support/promtool";

/** argocd (31358) answers 200 in 20 ms, grafana (31088) 500. */
const get: HttpGet = async (url) => {
  await new Promise((r) => setTimeout(r, 20));
  return { status: url.port === "31358" ? 200 : 500 };
};

const undeclaredService: Service = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "debug-ui", namespace: "tools" },
  spec: { type: "NodePort", selector: { app: "debug" }, ports: [{ name: "http", port: 80, nodePort: 30999, protocol: "TCP" }] },
};

const portals: RunningPortal[] = [];
afterEach(async () => {
  await Promise.all(portals.splice(0).map((p) => p.close()));
});

async function portalWith(opts: Partial<PortalOptions> = {}) {
  const data = recordedCluster();
  data.services.push(undeclaredService);
  const cluster = new MemoryCluster(data);
  const portal = await startPortal(
    {
      contract: portalContract(),
      cluster,
      stack: "bench",
      version: "0.1.0",
      audit: { allowlist: { services: [], hostPorts: [] } },
      reachability: { get },
      readIntervalMs: 60_000,
      ...opts,
    },
    { host: "127.0.0.1", port: 0 },
  );
  portals.push(portal);
  const fetchPath = (p: string) => fetch(new URL(p, portal.url));
  return { cluster, portal, get: fetchPath };
}

/** The labels every series of the portal carries: its stack and its cluster (the fixture's kube context). */
const BENCH = 'stack="bench",cluster="lima-bench"';
/** The sample lines (no comments), without the timestamp gauges' values. */
const samples = (text: string) =>
  text
    .split("\n")
    .filter((l) => l && !l.startsWith("#"))
    .map((l) =>
      l.replace(
        /^((?:ui_exposure_last_observation_timestamp_seconds|ui_exposure_audit_last_success_timestamp_seconds)\{stack="bench",cluster="lima-bench"\}) [1-9]\S*$/,
        "$1 <t>",
      ),
    );
const gauge = (text: string, name: string) => new RegExp(`^${name}\\{${BENCH}\\} (\\S+)$`, "m").exec(text)?.[1];

describe("portal /metrics", () => {
  it("serves each published entry's up, verdict, ready endpoints, port and probe time, the undeclared count, freshness and build info", async () => {
    const { get: fetchPath } = await portalWith();
    const before = Date.now() / 1000;
    const res = await fetchPath("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const text = await res.text();
    const lines = samples(text);
    expect(lines.filter((l) => !l.startsWith("ui_exposure_entry_probe_duration_seconds"))).toEqual([
      'ui_exposure_entry_up{entry="argocd",stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_entry_up{entry="grafana",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_up{entry="gitea",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="argocd",verdict="match",stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_entry_verdict{entry="argocd",verdict="drift",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="argocd",verdict="absent",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="grafana",verdict="match",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="grafana",verdict="drift",stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_entry_verdict{entry="grafana",verdict="absent",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="gitea",verdict="match",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="gitea",verdict="drift",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_verdict{entry="gitea",verdict="absent",stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_entry_ready_endpoints{entry="argocd",stack="bench",cluster="lima-bench"} 2',
      'ui_exposure_entry_ready_endpoints{entry="grafana",stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_entry_ready_endpoints{entry="gitea",stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_entry_node_port{entry="argocd",stack="bench",cluster="lima-bench"} 31358',
      'ui_exposure_entry_node_port{entry="grafana",stack="bench",cluster="lima-bench"} 31088',
      'ui_exposure_undeclared_exposures{stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_audit_success{stack="bench",cluster="lima-bench"} 1',
      'ui_exposure_audit_last_success_timestamp_seconds{stack="bench",cluster="lima-bench"} <t>',
      'ui_exposure_last_observation_timestamp_seconds{stack="bench",cluster="lima-bench"} <t>',
      'ui_exposure_build_info{version="0.1.0",stack="bench",cluster="lima-bench"} 1',
    ]);
    // Probe times in seconds, only for the entries probed (gitea has no URL).
    const durations = lines.filter((l) => l.startsWith("ui_exposure_entry_probe_duration_seconds"));
    expect(durations.map((l) => l.split(" ")[0])).toEqual([
      'ui_exposure_entry_probe_duration_seconds{entry="argocd",stack="bench",cluster="lima-bench"}',
      'ui_exposure_entry_probe_duration_seconds{entry="grafana",stack="bench",cluster="lima-bench"}',
    ]);
    for (const l of durations) expect(Number(l.split(" ")[1])).toBeGreaterThan(0.01);
    const observed = Number(gauge(text, "ui_exposure_last_observation_timestamp_seconds"));
    expect(observed).toBeGreaterThanOrEqual(before - 1);
    expect(observed).toBeLessThanOrEqual(Date.now() / 1000 + 1);
    // Label values from the contract only: no URL, no address, no reason.
    expect(text).not.toContain(NODE_IP);
    expect(text).not.toContain("http://");
    expect(text).not.toContain("selector differs");
    expect(text).not.toContain("postgres");
    expect(text).toContain("# TYPE ui_exposure_entry_up gauge");
  });

  it("every series carries the stack and the cluster (the kube context the stack reads through), in the one-stack portal as in the portal of several", async () => {
    const { get: fetchPath } = await portalWith();
    const lines = samples(await (await fetchPath("/metrics")).text());
    expect(lines.length).toBeGreaterThan(20);
    for (const l of lines) expect(l).toMatch(/^ui_exposure_[a-z_]+\{(?:[a-z]+="[^"]*",)*stack="bench",cluster="lima-bench"\} \S+$/);
  });

  it("a scrape joins the page's cluster read: pages and scrapes within the interval read the cluster once, the audit once", async () => {
    const { cluster, get: fetchPath } = await portalWith();
    expect((await fetchPath("/")).status).toBe(200);
    const afterPage = { ...cluster.calls };
    // Services and EndpointSlices of the entries' three namespaces (argocd, monitoring, gitea), Nodes; and the audit the
    // page shows (Services and Pods cluster-wide), its round shared with the scrapes.
    expect(afterPage).toEqual({ services: 4, endpointSlices: 3, nodes: 1, pods: 1, other: 0 });
    const scrapes = await Promise.all(Array.from({ length: 20 }, () => fetchPath("/metrics")));
    expect(scrapes.map((r) => r.status)).toEqual(Array(20).fill(200));
    // The page's read is reused; the audit (Services and Pods cluster-wide) is read once for all 20 scrapes.
    expect(cluster.calls).toEqual({ services: 4, endpointSlices: 3, nodes: 1, pods: 1, other: 0 });
    // The audit's two lists are the cluster-wide ones (started with the page's read, before its namespaced ones).
    expect(cluster.scopes.filter((scope) => !scope.includes(" ns=")).sort()).toEqual(["pods", "services"]);
    expect((await fetchPath("/api/entries")).status).toBe(200);
    expect(cluster.calls).toEqual({ services: 4, endpointSlices: 3, nodes: 1, pods: 1, other: 0 });
  });

  it("without the allowlist (no audit) there is no undeclared gauge and no cluster-wide read; probing off: no up series", async () => {
    const { cluster, get: fetchPath } = await portalWith({ audit: undefined, reachability: { enabled: false } });
    const text = await (await fetchPath("/metrics")).text();
    expect(text).not.toContain("ui_exposure_undeclared_exposures");
    expect(text).not.toContain("ui_exposure_entry_up");
    expect(text).not.toContain("ui_exposure_entry_probe_duration_seconds");
    expect(text).toContain('ui_exposure_entry_verdict{entry="argocd",verdict="match",stack="bench",cluster="lima-bench"} 1');
    expect(cluster.calls.pods).toBe(0);
  });

  it("while the cluster cannot be read: 200 with the last values and their old timestamp (the stale alert's input); 0 before any read", async () => {
    const { cluster, get: fetchPath } = await portalWith({ readIntervalMs: 0 });
    const first = await (await fetchPath("/metrics")).text();
    const at = gauge(first, "ui_exposure_last_observation_timestamp_seconds");
    cluster.failure = unreachable();
    await new Promise((r) => setTimeout(r, 20));
    const res = await fetchPath("/metrics");
    expect(res.status).toBe(200);
    const during = await res.text();
    expect(gauge(during, "ui_exposure_last_observation_timestamp_seconds")).toBe(at);
    expect(during).toContain('ui_exposure_entry_verdict{entry="argocd",verdict="match",stack="bench",cluster="lima-bench"} 1');

    const never = await portalWith({ readIntervalMs: 0 });
    never.cluster.failure = unreachable();
    const text = await (await never.get("/metrics")).text();
    expect(samples(text)).toEqual([
      'ui_exposure_audit_success{stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_audit_last_success_timestamp_seconds{stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_last_observation_timestamp_seconds{stack="bench",cluster="lima-bench"} 0',
      'ui_exposure_build_info{version="0.1.0",stack="bench",cluster="lima-bench"} 1',
    ]);
    expect(text).toContain('ui_exposure_last_observation_timestamp_seconds{stack="bench",cluster="lima-bench"} 0');
  });

  it("an API server that does not answer: the scrape answers after metricsWaitMs with the last values, never past Prometheus's timeout", async () => {
    const { cluster, get: fetchPath } = await portalWith({ readIntervalMs: 0, metricsWaitMs: 200 });
    const first = await (await fetchPath("/metrics")).text();
    const at = gauge(first, "ui_exposure_last_observation_timestamp_seconds");
    // Reads that never end: an answer at all proves the scrape did not wait for them.
    let pendingReads = 0;
    const hang = () => {
      pendingReads++;
      return new Promise<never>(() => undefined);
    };
    cluster.listServices = hang;
    cluster.listNodes = hang;
    const res = await fetchPath("/metrics");
    expect(res.status).toBe(200);
    expect(pendingReads).toBeGreaterThan(0);
    const during = await res.text();
    expect(gauge(during, "ui_exposure_last_observation_timestamp_seconds")).toBe(at);
    expect(during).toContain('ui_exposure_undeclared_exposures{stack="bench",cluster="lima-bench"} 1');
  });

  it("counts a pod on the host network that lists no port as undeclared exposure, until an allowlist item ':hostNetwork' declares it", async () => {
    const debuggerPod = {
      metadata: { name: "node-debugger-bench-x7k2p", namespace: "default" },
      spec: { nodeName: "bench", hostNetwork: true, containers: [{ name: "debugger" }] },
      status: { phase: "Running" },
    } as Pod;
    const { cluster, get: fetchPath } = await portalWith({ auditIntervalMs: 0, readIntervalMs: 0 });
    cluster.data.pods.push(debuggerPod);
    expect(await (await fetchPath("/metrics")).text()).toContain('ui_exposure_undeclared_exposures{stack="bench",cluster="lima-bench"} 2');
    const allowed = await portalWith({
      auditIntervalMs: 0,
      readIntervalMs: 0,
      audit: { allowlist: { services: [], hostPorts: ["default/node-debugger-*:hostNetwork"] } },
    });
    allowed.cluster.data.pods.push(debuggerPod);
    expect(await (await allowed.get("/metrics")).text()).toContain('ui_exposure_undeclared_exposures{stack="bench",cluster="lima-bench"} 1');
  });

  it("an audit that cannot read the cluster is logged once per round; the gauge keeps its last value, and the audit's success and last success say so", async () => {
    const logged: string[] = [];
    const { cluster, get: fetchPath } = await portalWith({ auditIntervalMs: 0, readIntervalMs: 0, log: (l) => logged.push(l) });
    const first = await (await fetchPath("/metrics")).text();
    expect(first).toContain('ui_exposure_undeclared_exposures{stack="bench",cluster="lima-bench"} 1');
    expect(first).toContain('ui_exposure_audit_success{stack="bench",cluster="lima-bench"} 1');
    const succeededAt = gauge(first, "ui_exposure_audit_last_success_timestamp_seconds");
    expect(Number(succeededAt)).toBeGreaterThan(Date.now() / 1000 - 60);
    const failure = new Error("pods: 403 Forbidden");
    const listPods = cluster.listPods.bind(cluster);
    cluster.listPods = async () => {
      throw failure;
    };
    await new Promise((r) => setTimeout(r, 20));
    const during = await (await fetchPath("/metrics")).text();
    expect(during).toContain('ui_exposure_undeclared_exposures{stack="bench",cluster="lima-bench"} 1');
    // The observation itself is fresh: without these, nothing would say the count is old.
    expect(during).toContain('ui_exposure_audit_success{stack="bench",cluster="lima-bench"} 0');
    expect(gauge(during, "ui_exposure_audit_last_success_timestamp_seconds")).toBe(succeededAt);
    // The log line is written when the failed read settles: waited for, not slept on.
    while (logged.length === 0) await new Promise((r) => setTimeout(r, 5));
    expect(logged).toEqual(["/metrics: the audit could not read the cluster (pods: 403 Forbidden); ui_exposure_undeclared_exposures keeps its last value"]);
    cluster.listPods = listPods;
  });

  it("HEAD /metrics has the headers and no body; other methods 405", async () => {
    const { portal } = await portalWith();
    const head = await fetch(new URL("/metrics", portal.url), { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect((await fetch(new URL("/metrics", portal.url), { method: "POST" })).status).toBe(405);
  });
});

const tool = findPromtool();
describe.skipIf("missing" in tool)(`promtool check metrics${"missing" in tool ? ` (skipped: ${tool.missing})` : ""}`, () => {
  it("accepts the portal's real /metrics output, with no lint finding", async () => {
    const { get: fetchPath } = await portalWith();
    const text = await (await fetchPath("/metrics")).text();
    const r = promtool((tool as { bin: string }).bin, ["check", "metrics"], text);
    expect(r, `${r.stdout}\n${r.stderr}`).toMatchObject({ code: 0, stdout: "", stderr: "" });
  });

  it("finds what it should in a broken exposition (the check is not a no-op)", async () => {
    const text = await renderMetrics([{ name: "ui_exposure_probe_ms", help: "x", samples: [{ labels: {}, value: 1 }] }]);
    const r = promtool((tool as { bin: string }).bin, ["check", "metrics"], text);
    expect(r.code).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain("ui_exposure_probe_ms");
  });
});

describe("the in-cluster portal's monitoring environment", () => {
  it("PORTAL_ALLOWLIST: the stack's allowlist as JSON turns the audit on; unset, off; anything else one message", () => {
    expect(parseAllowlistEnv(undefined)).toBeUndefined();
    expect(parseAllowlistEnv('{"services":["kube-system/hubble-*"],"hostPorts":["monitoring/node-exporter-*:9100"]}')).toEqual({
      allowlist: { services: ["kube-system/hubble-*"], hostPorts: ["monitoring/node-exporter-*:9100"], reasons: {} },
    });
    expect(() => parseAllowlistEnv("{")).toThrow('PORTAL_ALLOWLIST must be the stack\'s allowlist as JSON ({"services": [...], "hostPorts": [...]})');
    expect(() => parseAllowlistEnv('{"services":["no slash"]}')).toThrow("PORTAL_ALLOWLIST: not an allowlist");
  });

  it("PORTAL_AUDIT_INTERVAL_SECONDS: seconds between 0 and 3600", () => {
    expect(portalTuningFromEnv({ PORTAL_AUDIT_INTERVAL_SECONDS: "60" }).auditIntervalMs).toBe(60_000);
    expect(portalTuningFromEnv({}).auditIntervalMs).toBeUndefined();
    expect(() => portalTuningFromEnv({ PORTAL_AUDIT_INTERVAL_SECONDS: "-1" })).toThrow(
      "PORTAL_AUDIT_INTERVAL_SECONDS must be a number of seconds between 0 and 3600, not '-1'",
    );
  });
});
