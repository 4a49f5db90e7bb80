// The portal under load and with its own probes: cluster reads shared between page loads,
// one probe round at a time with cached answers, and what the page and JSON show of them.
import { afterEach, describe, expect, it } from "vitest";
import type { HttpGet } from "../src/adapters/http-probe";
import { parseContract } from "../src/core/contract/parse";
import { readObservedCluster } from "../src/core/observe";
import { formatAge, groupEntries, renderPage } from "../src/core/portal/html";
import { buildPortalView, type PortalEntry, type PortalView, wantedEntries } from "../src/core/portal/view";
import { ReachabilityCache, toReachability } from "../src/portal/reachability";
import { portalTuningFromEnv, type RunningPortal, refreshOf, startPortal } from "../src/portal/server";
import { SharedRead } from "../src/portal/shared-read";
import { MemoryCluster, NODE_IP, PORTAL_TEST_CONTRACT, portalContract, recordedCluster, unreachable } from "./support/portal-fixtures";

const NOW = new Date("2026-06-23T10:00:00Z");

/** A fake network: argocd (31358) answers 200, grafana (31088) 500; counts requests. */
function fakeNetwork(statusOf: (url: URL) => number | Error = (u) => (u.port === "31358" ? 200 : 500)) {
  const seen: string[] = [];
  const get: HttpGet = async (url) => {
    seen.push(url.href);
    await new Promise((r) => setTimeout(r, 20));
    const answer = statusOf(url);
    if (answer instanceof Error) throw answer;
    return { status: answer, ...(answer >= 300 && answer < 400 ? { location: "/login" } : {}) };
  };
  return { get, seen };
}

const portals: RunningPortal[] = [];
afterEach(async () => {
  await Promise.all(portals.splice(0).map((p) => p.close()));
});

async function portalWith(opts: Partial<Parameters<typeof startPortal>[0]> = {}) {
  const cluster = new MemoryCluster(recordedCluster());
  const portal = await startPortal({ contract: portalContract(), cluster, stack: "bench", ...opts }, { host: "127.0.0.1", port: 0 });
  portals.push(portal);
  const get = (p: string) => fetch(new URL(p, portal.url));
  return { cluster, portal, get };
}

describe("cluster reads shared between page loads", () => {
  it("50 concurrent loads make one set of list calls", async () => {
    const { cluster, get } = await portalWith({ reachability: { enabled: false } });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => get(i % 2 ? "/" : "/api/entries")));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200));
    // Services and EndpointSlices of the entries' three namespaces (argocd, monitoring, gitea), Nodes.
    expect(cluster.calls).toEqual({ services: 3, endpointSlices: 3, nodes: 1, pods: 0, other: 0 });
  });

  it("reads at most once per interval, and shares a failure for the interval too", async () => {
    let clock = 0;
    let reads = 0;
    let fail = false;
    const shared = new SharedRead(
      async () => {
        reads++;
        if (fail) throw unreachable();
        return reads;
      },
      2_000,
      () => clock,
    );
    expect((await shared.get()).value).toBe(1);
    clock = 1_999;
    expect((await shared.get()).value).toBe(1);
    clock = 2_000;
    expect((await shared.get()).value).toBe(2);
    fail = true;
    clock = 4_000;
    await expect(shared.get()).rejects.toThrow("cluster unreachable");
    clock = 5_000;
    await expect(shared.get()).rejects.toThrow("cluster unreachable");
    expect(reads).toBe(3);
    fail = false;
    clock = 6_000;
    expect((await shared.get()).value).toBe(4);
    expect(shared.reads).toBe(4);
  });

  it("joins a read in flight even when it outlasts the interval", async () => {
    let release: (v: number) => void = () => undefined;
    let clock = 0;
    const shared = new SharedRead(
      () => new Promise<number>((r) => (release = r)),
      10,
      () => clock,
    );
    const first = shared.get();
    clock = 1_000;
    const second = shared.get();
    release(7);
    expect([(await first).value, (await second).value]).toEqual([7, 7]);
    expect(shared.reads).toBe(1);
  });
});

describe("reachability (the probe of exposure probe, from the portal)", () => {
  it("probes every published URL once for concurrent loads, shows the answers, and reuses them within the cache time", async () => {
    const net = fakeNetwork();
    const { get } = await portalWith({ reachability: { get: net.get } });
    const pages = await Promise.all(Array.from({ length: 20 }, () => get("/api/entries").then((r) => r.json() as Promise<PortalView>)));
    expect(net.seen.sort()).toEqual([`http://${NODE_IP}:31088/`, `http://${NODE_IP}:31358/`]);
    const view = pages[0] as PortalView;
    expect(view.reachability).toEqual({ enabled: true, cacheSeconds: 15 });
    const byName = Object.fromEntries(view.entries.map((e) => [e.name, e.reachability]));
    expect(byName.argocd).toEqual({
      ok: true,
      status: 200,
      latencyMs: expect.any(Number),
      error: null,
      checkedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      url: `http://${NODE_IP}:31358/`,
      expected: "2xx/3xx",
    });
    expect(byName.grafana).toMatchObject({ ok: false, status: 500, error: "expected 2xx/3xx, got 500" });
    // No URL, nothing to probe.
    expect(byName.gitea).toBeUndefined();
    expect(byName.postgres).toBeUndefined();
    await (await get("/")).text();
    expect(net.seen).toHaveLength(2);
  });

  it("shows a wired but failing UI as visibly not OK next to its verdict", async () => {
    const net = fakeNetwork();
    const { get } = await portalWith({ reachability: { get: net.get } });
    const html = await (await get("/")).text();
    const argocd = /<tr id="entry-argocd"[\s\S]*?<\/tr>/.exec(html)?.[0] ?? "";
    expect(argocd).toContain('data-reachable="true"');
    expect(argocd).toContain('<span class="badge r-ok">OK 200</span>');
    const failing = /<tr id="entry-grafana"[\s\S]*?<\/tr>/.exec(html)?.[0] ?? "";
    expect(failing).toContain('data-reachable="false"');
    expect(failing).toContain('<span class="badge r-bad">NOT OK 500</span>');
    expect(failing).toContain("expected 2xx/3xx, got 500");
    expect(html).toContain('<span class="badge r-bad">1 not answering</span>');
  });

  it("a nodePort moved by hand: the published URL is what answers or not, named with the live one and the cause; entry_up is 0", async () => {
    // grafana was published on 31000 and moved by hand to 31088: kube-proxy serves 31088 only.
    const net = fakeNetwork((u) => (u.port === "31000" ? new Error("connection refused (nothing listens on that port)") : 200));
    const published = {
      argocd: { nodePort: 31358, url: `http://${NODE_IP}:31358` },
      grafana: { nodePort: 31000, url: `http://${NODE_IP}:31000` },
    };
    const { get } = await portalWith({ published, reachability: { get: net.get } });
    const view = (await (await get("/api/entries")).json()) as PortalView;
    const grafana = view.entries.find((e) => e.name === "grafana");
    expect(grafana).toMatchObject({ url: `http://${NODE_IP}:31088`, publishedUrl: `http://${NODE_IP}:31000`, verdict: "DRIFT" });
    expect(grafana?.reachability).toMatchObject({
      ok: false,
      url: `http://${NODE_IP}:31000/`,
      error: `connection refused: nodePort changed since the last up (31000 -> 31088): the published URL http://${NODE_IP}:31000 no longer reaches this Service, which now listens on http://${NODE_IP}:31088; pulumi up puts 31000 back`,
    });
    expect(net.seen).not.toContain(`http://${NODE_IP}:31088/`);
    const row = /<tr id="entry-grafana"[\s\S]*?<\/tr>/.exec(await (await get("/")).text())?.[0] ?? "";
    expect(row).toContain(`<a href="http://${NODE_IP}:31000">`);
    expect(row).toContain(`published URL · served now on <a href="http://${NODE_IP}:31088">`);
    expect(row).toContain('<span class="badge r-bad">NOT OK</span>');
    const metrics = await (await get("/metrics")).text();
    expect(metrics).toContain('ui_exposure_entry_up{entry="grafana",stack="bench",cluster="lima-bench"} 0');
    expect(metrics).toContain('ui_exposure_entry_up{entry="argocd",stack="bench",cluster="lima-bench"} 1');
  });

  it("never probes a published URL off the cluster's addresses: the outputs are untrusted (a forged one names any host)", async () => {
    const net = fakeNetwork(() => 200);
    const published = {
      argocd: { nodePort: 31358, url: `http://${NODE_IP}:31358` },
      grafana: { nodePort: 31000, url: "http://169.254.169.254:31000" },
    };
    const { get } = await portalWith({ published, reachability: { get: net.get } });
    const grafana = ((await (await get("/api/entries")).json()) as PortalView).entries.find((e) => e.name === "grafana");
    expect(grafana?.publishedUrl).toBeUndefined();
    expect(grafana?.reachability?.url).toBe(`http://${NODE_IP}:31088/`);
    expect(net.seen.filter((u) => u.includes("169.254"))).toEqual([]);
  });

  it("says why a NodePort URL refuses the connection, as exposure probe does: no ready endpoint behind the Service", async () => {
    // What the probe says of a refused connection (http-probe maps ECONNREFUSED to it).
    const refused = new Error("connection refused (nothing listens on that port)");
    const net = fakeNetwork((u) => (u.port === "31358" ? 200 : refused));
    const { cluster, get } = await portalWith({ reachability: { get: net.get } });
    cluster.data.endpointSlices = cluster.data.endpointSlices.filter((s) => s.metadata.namespace !== "monitoring");
    const view = (await (await get("/api/entries")).json()) as PortalView;
    expect(view.entries.find((e) => e.name === "grafana")?.reachability).toMatchObject({
      ok: false,
      error: "connection refused: no ready endpoint behind Service monitoring/grafana-nodeport (its pods are gone or not Ready)",
    });
  });

  it("uses the contract's probe path and statuses, says TLS is not verified, and does not follow a redirect", async () => {
    const contract = parseContract(
      PORTAL_TEST_CONTRACT.replace(
        "service: { namespace: argocd, name: argocd-server, port: http }",
        "service: { namespace: argocd, name: argocd-server, port: http }\n    probe: { path: /healthz, expectStatus: [302] }",
      ).replace("scheme: http\n    service: { namespace: monitoring", "scheme: https\n    service: { namespace: monitoring"),
      "t.yaml",
    );
    const net = fakeNetwork((u) => (u.port === "31358" ? 302 : 200));
    const { get } = await portalWith({ contract, reachability: { get: net.get } });
    const view = (await (await get("/api/entries")).json()) as PortalView;
    const argocd = view.entries.find((e) => e.name === "argocd")?.reachability;
    expect(argocd).toMatchObject({ ok: true, status: 302, url: `http://${NODE_IP}:31358/healthz`, expected: "302", location: "/login" });
    expect(net.seen).not.toContain(`http://${NODE_IP}:31358/login`);
    const grafana = view.entries.find((e) => e.name === "grafana")?.reachability;
    expect(grafana).toMatchObject({ ok: true, url: `https://${NODE_IP}:31088/`, tlsVerified: false });
    const html = await (await get("/")).text();
    expect(html).toContain("TLS not verified");
    expect(html).toContain("redirects to /login (not followed)");
  });

  it("answers a probe of itself at once (its own entry's probe path is the page): no wait on its own round", async () => {
    const cluster = new MemoryCluster(recordedCluster());
    const portal = await startPortal(
      { contract: portalContract(), cluster, readIntervalMs: 0, reachability: { timeoutMs: 5_000 } },
      { host: NODE_IP, port: 0 },
    );
    portals.push(portal);
    // argocd's URL is the portal itself, with the real probe (loopback only).
    const self = Number(new URL(portal.url).port);
    const port = cluster.data.services.find((s) => s.metadata.name === "argocd-nodeport")?.spec?.ports?.[0];
    if (!port) throw new Error("fixture changed");
    port.nodePort = self;
    // Were the portal to wait on its own round, its probe of itself would end on the 5 s timer ("no answer within 5s", not ok): a 200 proves it answered.
    const view = (await (await fetch(new URL("/api/entries", portal.url))).json()) as PortalView;
    expect(view.entries.find((e) => e.name === "argocd")?.reachability).toMatchObject({ ok: true, status: 200 });
  });

  it("never probes when switched off, and says so", async () => {
    const net = fakeNetwork();
    const { get } = await portalWith({ reachability: { enabled: false, get: net.get } });
    const html = await (await get("/")).text();
    expect(html).toContain("<small>probing off</small>");
    expect(html).toContain("Answers: probing is off.");
    expect(net.seen).toEqual([]);
  });

  it("keeps at most one round in flight, serves stale answers while it refreshes, and waits only for a URL never probed", async () => {
    let clock = 0;
    const net = fakeNetwork();
    const cache = new ReachabilityCache({ enabled: true, cacheMs: 1_000, timeoutMs: 500, concurrency: 2, get: net.get }, () => clock);
    const target = (port: number) => ({ name: "argocd", url: `http://${NODE_IP}:${port}`, path: "/", timeoutMs: 500 });
    const first = await Promise.all([cache.answers([target(31358)]), cache.answers([target(31358)])]);
    expect(cache.rounds).toBe(1);
    expect(first[0]?.get("argocd")?.status).toBe(200);
    clock = 2_000;
    // Stale: answered at once from the cache while one round refreshes it.
    const stale = await cache.answers([target(31358)]);
    expect(stale.get("argocd")?.checkedAt).toBe(new Date(0).toISOString());
    expect(cache.rounds).toBe(2);
    // A new nodePort: the load waits for its first answer.
    const moved = await cache.answers([target(31999)]);
    expect(moved.get("argocd")).toMatchObject({ url: `http://${NODE_IP}:31999/`, status: 500 });
    expect(cache.rounds).toBe(3);
  });

  it("maps a network failure to ok:false without a status", () => {
    expect(toReachability({ name: "x", url: "https://127.0.0.2:1/", ok: false, latencyMs: 3, expected: "2xx/3xx", error: "connection refused" }, NOW)).toEqual({
      ok: false,
      status: null,
      latencyMs: 3,
      error: "connection refused",
      checkedAt: NOW.toISOString(),
      url: "https://127.0.0.2:1/",
      expected: "2xx/3xx",
      tlsVerified: false,
    });
  });
});

describe("the page at a glance", () => {
  it("serves one entry as JSON on /api/entries/<name>, 404 for an unknown or malformed name", async () => {
    const { get } = await portalWith({ reachability: { enabled: false }, now: () => NOW });
    const res = await get("/api/entries/argocd");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { entry: PortalEntry; observedAt: string; source: string };
    expect(body).toMatchObject({ apiVersion: "ui-exposure.io/v1", kind: "PortalEntry" });
    expect(body.entry).toMatchObject({ name: "argocd", verdict: "MATCH", url: `http://${NODE_IP}:31358` });
    expect(body.observedAt).toBe(NOW.toISOString());
    const unknown = await get("/api/entries/nope");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "no entry 'nope' in the contract" });
    expect((await get("/api/entries/%ZZ")).status).toBe(404);
    expect((await get("/api/entries/a%2Fb")).status).toBe(404);
    expect((await get("/api/entries/argocd/x")).status).toBe(404);
  });

  it("refreshes itself only on ?refresh=N, with a meta tag (no script), on the page and on the error page", async () => {
    const { get, cluster } = await portalWith({ reachability: { enabled: false }, readIntervalMs: 0 });
    const plain = await (await get("/")).text();
    expect(plain).not.toContain('http-equiv="refresh"');
    expect(plain).toContain('<a href="?refresh=30">Auto-refresh (30 s)</a>');
    const res = await get("/?refresh=30");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const auto = await res.text();
    expect(auto).toContain('<meta http-equiv="refresh" content="30">');
    expect(auto).not.toMatch(/<script/i);
    expect(await (await get("/?refresh=1")).text()).toContain('content="5"');
    expect(await (await get("/?refresh=%22%3E%3Cscript%3E")).text()).not.toContain('http-equiv="refresh"');
    cluster.failure = unreachable();
    const error = await get("/?refresh=60");
    expect(error.status).toBe(503);
    expect(await error.text()).toContain('<meta http-equiv="refresh" content="60">');
    // Clamped as documented, not ignored (issue 23, item 7).
    expect(refreshOf(new URLSearchParams("refresh=99999"))).toEqual({ refreshSeconds: 3600 });
  });

  it("groups entries by the contract's group, in contract order, the ungrouped ones last under Other", async () => {
    const contract = parseContract(
      PORTAL_TEST_CONTRACT.replace("    description: Grafana\n", "    description: Grafana\n    group: Observability\n")
        .replace("  - name: gitea\n", "  - name: gitea\n    group: Delivery <&>\n")
        .replace("    description: Platform PostgreSQL\n", "    description: Platform PostgreSQL\n    group: Observability\n"),
      "t.yaml",
    );
    const { get } = await portalWith({ contract, reachability: { enabled: false } });
    const html = await (await get("/")).text();
    const headings = [...html.matchAll(/<tr class="group"><th colspan="6" scope="rowgroup">([^<]*)<\/th><\/tr>/g)].map((m) => m[1]);
    expect(headings).toEqual(["Observability", "Delivery &lt;&amp;&gt;", "Other"]);
    const order = [...html.matchAll(/<tr id="entry-([a-z]+)"/g)].map((m) => m[1]);
    expect(order).toEqual(["grafana", "postgres", "gitea", "argocd"]);
    const json = (await (await get("/api/entries")).json()) as PortalView;
    expect(json.entries.find((e) => e.name === "grafana")?.group).toBe("Observability");
    expect(json.entries.find((e) => e.name === "argocd")?.group).toBeUndefined();
  });

  it("shows no group heading when the contract uses none", () => {
    const entries = [{ name: "a" }, { name: "b" }] as PortalEntry[];
    expect(groupEntries(entries)).toEqual([{ entries }]);
  });

  it("shows the observation time as an age, with the exact time in a tooltip", () => {
    expect([0, 400, 12_000, 119_000, 180_000, 3 * 3600_000, 3 * 86400_000].map(formatAge)).toEqual([
      "just now",
      "just now",
      "12 s ago",
      "119 s ago",
      "3 min ago",
      "3 h ago",
      "3 d ago",
    ]);
    const view: PortalView = {
      generatedAt: "2026-06-23T10:00:42.000Z",
      observedAt: "2026-06-23T10:00:00.000Z",
      source: "s",
      problems: [],
      summary: { MATCH: 0, DRIFT: 0, ABSENT: 0, "NOT-EXPOSED": 0 },
      reachability: { enabled: false },
      entries: [],
    };
    expect(renderPage(view)).toContain('observed <time datetime="2026-06-23T10:00:00.000Z" title="2026-06-23T10:00:00.000Z">42 s ago</time>');
  });

  it("reads its knobs from the environment, and refuses bad values", () => {
    expect(portalTuningFromEnv({})).toEqual({ reachability: { enabled: true } });
    expect(portalTuningFromEnv({ PORTAL_PROBE: "off", PORTAL_PROBE_CACHE_SECONDS: "30", PORTAL_READ_INTERVAL_SECONDS: "0.5" })).toEqual({
      readIntervalMs: 500,
      reachability: { enabled: false, cacheMs: 30_000 },
    });
    expect(() => portalTuningFromEnv({ PORTAL_PROBE: "no" })).toThrow("PORTAL_PROBE must be 'on' or 'off', not 'no'");
    expect(() => portalTuningFromEnv({ PORTAL_READ_INTERVAL_SECONDS: "-1" })).toThrow(
      "PORTAL_READ_INTERVAL_SECONDS must be a number of seconds between 0 and 300, not '-1'",
    );
  });

  it("reads the PORTAL_*_SECONDS knobs in decimal only, as the flags read numbers (found by an outside tester)", () => {
    for (const name of ["PORTAL_PROBE_CACHE_SECONDS", "PORTAL_READ_INTERVAL_SECONDS", "PORTAL_AUDIT_INTERVAL_SECONDS"]) {
      const max = name === "PORTAL_READ_INTERVAL_SECONDS" ? 300 : 3600;
      for (const raw of ["0x10", "0b1", "0o7", " 5", "5s", "Infinity"]) {
        expect(() => portalTuningFromEnv({ [name]: raw }), `${name}=${raw}`).toThrow(`${name} must be a number of seconds between 0 and ${max}, not '${raw}'`);
      }
    }
    // The documented range starts at 0 (for the read interval: share only concurrent loads).
    expect(portalTuningFromEnv({ PORTAL_READ_INTERVAL_SECONDS: "0", PORTAL_PROBE_CACHE_SECONDS: "1.5" })).toEqual({
      readIntervalMs: 0,
      reachability: { enabled: true, cacheMs: 1500 },
    });
  });

  it("refuses an empty group in the contract", () => {
    expect(() => parseContract(PORTAL_TEST_CONTRACT.replace("    description: Grafana\n", '    description: Grafana\n    group: " "\n'), "g.yaml")).toThrow(
      "group must not be empty",
    );
  });
});

describe("scoped cluster reads", () => {
  it("gives the verdicts of a full read while reading only the entries' namespaces, and nothing a tenant labels elsewhere", async () => {
    const data = recordedCluster();
    // A tenant's Services and slices elsewhere, labelled as ours (anyone can set labels): never received.
    for (let i = 0; i < 50; i++) {
      data.services.push({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: `other-${i}`, namespace: "tenant", labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" } },
        spec: { type: "ClusterIP" },
      });
      data.endpointSlices.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: `other-${i}-x`, namespace: "tenant", labels: { "kubernetes.io/service-name": "argocd-nodeport" } },
        endpoints: [],
      });
    }
    const wanted = wantedEntries({ contract: portalContract() });
    const scoped = new MemoryCluster(structuredClone(data));
    const partial = await readObservedCluster(scoped, wanted);
    const full = { services: data.services, endpointSlices: data.endpointSlices, nodes: data.nodes, pods: data.pods };
    expect(partial.services.every((s) => s.metadata.namespace !== "tenant")).toBe(true);
    expect(partial.endpointSlices.map((s) => s.metadata.name).sort()).toEqual(["argocd-nodeport-x1", "grafana-nodeport-x1"]);
    const at = { observedAt: NOW, generatedAt: NOW };
    const src = { contract: portalContract(), source: "s" };
    expect(buildPortalView(src, partial, at)).toEqual(buildPortalView(src, full, at));
    expect(scoped.scopes.filter((s) => !s.startsWith("services ns=")).sort()).toEqual([
      "endpointSlices ns=argocd kubernetes.io/service-name in (argocd-nodeport)",
      "endpointSlices ns=gitea kubernetes.io/service-name in (gitea-nodeport)",
      "endpointSlices ns=monitoring kubernetes.io/service-name in (grafana-nodeport)",
    ]);
    expect(scoped.calls.pods).toBe(0);
  });
});
