// The portal server against a recorded cluster: what a page load reads, what it shows, and
// what it does when the cluster cannot be read.

import * as net from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { UserError } from "../src/core/errors";
import { escapeHtml, renderPage } from "../src/core/portal/html";
import type { PortalView } from "../src/core/portal/view";
import { parsePublishedEndpoints } from "../src/core/published";
import { parseEntries } from "../src/portal/main";
import { parseListen, type RunningPortal, refreshOf, startPortal } from "../src/portal/server";
import {
  GRAFANA_DRIFT_REASON,
  HOSTILE_DESCRIPTION,
  MemoryCluster,
  NODE_IP,
  observePortal,
  portalContract,
  readyNode,
  recordedCluster,
  unreachable,
} from "./support/portal-fixtures";
import { rawRequest } from "./support/raw-request";

const NOW = new Date("2026-06-23T10:00:00Z");

describe("portal: an ABSENT row keeps the URL the last up published (issue 27 #5)", () => {
  /** A portal on the recorded cluster (no probes, no shared reads) that knows what the last up published. */
  const withPublished = (published: Parameters<typeof startPortal>[0]["published"]) =>
    startPortal(
      {
        contract: portalContract(),
        cluster: new MemoryCluster(recordedCluster()),
        stack: "bench",
        readIntervalMs: 0,
        reachability: { enabled: false },
        published,
      },
      { host: "127.0.0.1", port: 0 },
    );

  it("shows it as text marked not answering, never as a link; a forged one stays escaped text", async () => {
    const published = {
      gitea: { service: "gitea-nodeport", nodePort: 31002, url: `http://${NODE_IP}:31002` },
      argocd: { service: "argocd-nodeport", nodePort: 31358, url: `http://${NODE_IP}:31358` },
    };
    const portal = await withPublished(published);
    try {
      const html = await (await fetch(portal.url)).text();
      expect(row(html, "gitea")).toContain('data-verdict="ABSENT"');
      expect(row(html, "gitea")).toContain(
        `<span class="last"><span class="host">http://${NODE_IP}</span><wbr><span class="port">:31002</span></span><small>last published URL · not answering</small>`,
      );
      expect(row(html, "gitea")).not.toContain('<a href="http');
      expect(row(html, "gitea")).not.toContain("no URL");
      const api = (await (await fetch(new URL("/api/entries/gitea", portal.url))).json()) as { entry: { lastPublishedUrl?: string } };
      expect(api.entry.lastPublishedUrl).toBe(`http://${NODE_IP}:31002`);
      // A MATCH row has its observed URL, not a published one.
      expect(row(html, "argocd")).not.toContain("last published URL");
    } finally {
      await portal.close();
    }
    const forged = await withPublished(parsePublishedEndpoints({ gitea: { url: 'javascript:alert(1)//"><script>x</script>' } }, "outputs"));
    try {
      const html = await (await fetch(forged.url)).text();
      expect(row(html, "gitea")).toContain('<span class="last">javascript:alert(1)//&quot;&gt;&lt;script&gt;x&lt;/script&gt;</span>');
      expect(row(html, "gitea")).not.toContain("<a href=");
    } finally {
      await forged.close();
    }
  });
});

describe("portal server (recorded cluster)", () => {
  const cluster = new MemoryCluster(recordedCluster());
  let portal: RunningPortal;
  const logged: string[] = [];

  beforeAll(async () => {
    portal = await startPortal(
      {
        contract: portalContract(),
        cluster,
        stack: "bench",
        contractLabel: "contract/endpoints.yaml",
        now: () => NOW,
        log: (l) => logged.push(l),
        // These tests follow the cluster from load to load: no sharing between sequential loads, no probes.
        readIntervalMs: 0,
        reachability: { enabled: false },
      },
      { host: "127.0.0.1", port: 0 },
    );
  });
  afterAll(() => portal.close());
  beforeEach(() => {
    cluster.data = recordedCluster();
    cluster.failure = undefined;
    cluster.calls = { services: 0, endpointSlices: 0, nodes: 0, pods: 0, other: 0 };
    logged.length = 0;
  });

  const get = (path: string, init?: RequestInit) => fetch(new URL(path, portal.url), init);

  it("renders every entry with the observed URL as a link, readiness and verdict", async () => {
    const res = await get("/");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    // Host and port each kept whole, a break opportunity between them (narrow screens).
    expect(html).toContain(`<a href="http://${NODE_IP}:31358"><span class="host">http://${NODE_IP}</span><wbr><span class="port">:31358</span></a>`);
    expect(html).toContain(`<a href="http://${NODE_IP}:31088"><span class="host">http://${NODE_IP}</span><wbr><span class="port">:31088</span></a>`);
    // Only the two published entries are links: ABSENT and not-exposed entries have none.
    expect(html.match(/<a href="http:\/\/127/g)).toHaveLength(2);
    expect(row(html, "argocd")).toContain('data-verdict="MATCH"');
    expect(row(html, "argocd")).toContain("2 ready endpoints");
    expect(row(html, "grafana")).toContain('<span class="badge v-DRIFT">DRIFT</span>');
    expect(row(html, "grafana")).toContain(`<li>${GRAFANA_DRIFT_REASON}</li>`);
    expect(row(html, "gitea")).toContain('<span class="badge v-ABSENT">ABSENT</span>');
    expect(row(html, "gitea")).toContain("Service gitea/gitea-nodeport does not exist (run pulumi up)");
    expect(row(html, "postgres")).toContain("<small>not exposed</small>");
    expect(row(html, "postgres")).not.toContain('<a href="http');
    // Every row links to its own JSON.
    expect(row(html, "postgres")).toContain('<a class="json" href="api/entries/postgres">JSON</a>');
    expect(html).toContain(`node bench (${NODE_IP})`);
    expect(html).toContain("Platform UIs · bench");
    // No script, no external asset: the page works without JavaScript and offline.
    expect(html).not.toMatch(/<script|<link|src=|@import|url\(/i);
  });

  it("does one list call per kind and entry namespace a page load (no Pods without a hostPort entry)", async () => {
    await (await get("/")).text();
    // Services and EndpointSlices of the entries' three namespaces (argocd, monitoring, gitea), Nodes.
    expect(cluster.calls).toEqual({ services: 3, endpointSlices: 3, nodes: 1, pods: 0, other: 0 });
    await (await get("/")).text();
    expect(cluster.total).toBe(2 * 7);
  });

  it("reads the cluster again at every load: a recreated Service's new nodePort is the new link", async () => {
    expect(await (await get("/")).text()).toContain(`http://${NODE_IP}:31358`);
    const argo = cluster.data.services.find((s) => s.metadata.name === "argocd-nodeport");
    const port = argo?.spec?.ports?.[0];
    if (!port) throw new Error("fixture changed");
    port.nodePort = 30777;
    cluster.data.nodes = [readyNode("bench", "127.0.0.3")];
    const html = await (await get("/")).text();
    expect(html).toContain(`<a href="http://127.0.0.3:30777">`);
    expect(html).not.toContain("31358");
  });

  it("escapes everything that comes from the contract or the cluster", async () => {
    const html = await (await get("/")).text();
    expect(html).not.toContain("<script>");
    expect(html).toContain(escapeHtml(HOSTILE_DESCRIPTION));
    expect(html).toContain("Argo CD &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;friends&#39;");
  });

  it("serves the same data as JSON on /api/entries", async () => {
    const res = await get("/api/entries");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const body = (await res.json()) as Awaited<ReturnType<typeof observePortal>>;
    const direct = await observePortal({
      contract: portalContract(),
      cluster: new MemoryCluster(recordedCluster()),
      stack: "bench",
      contractLabel: "contract/endpoints.yaml",
      now: () => NOW,
    });
    // Versioned like every other JSON document of the project (issue 23, item 9).
    expect(body).toEqual({
      apiVersion: "ui-exposure.io/v1",
      kind: "PortalEntries",
      ...direct,
      source: cluster.source,
      reachability: { enabled: false, cacheSeconds: 15 },
    });
    expect(body.summary).toEqual({ MATCH: 1, DRIFT: 1, ABSENT: 1, "NOT-EXPOSED": 1 });
    expect(body.entries.map((e) => [e.name, e.verdict, e.url])).toEqual([
      ["argocd", "MATCH", `http://${NODE_IP}:31358`],
      ["grafana", "DRIFT", `http://${NODE_IP}:31088`],
      ["gitea", "ABSENT", undefined],
      ["postgres", "NOT-EXPOSED", undefined],
    ]);
    expect(body.entries[1]?.reasons).toEqual([GRAFANA_DRIFT_REASON]);
  });

  it("shows a cluster error as an error page with HTTP 503, never as a table", async () => {
    cluster.failure = unreachable();
    const res = await get("/");
    expect(res.status).toBe(503);
    const html = await res.text();
    expect(html).toContain("<h2>Cannot read the cluster</h2>");
    expect(html).toContain("cluster unreachable: context bench (https://127.0.0.1:6443): ECONNREFUSED while reading services");
    expect(html).toContain('role="alert"');
    expect(html).not.toContain("<table");
    expect(html.split("<body>")[1]).not.toMatch(/MATCH|DRIFT|ABSENT/);
    expect(logged).toEqual([expect.stringMatching(/^GET \/ -> 503: cluster unreachable/)]);
  });

  it("answers the JSON endpoint with 503 and {error} when the cluster cannot be read", async () => {
    cluster.failure = unreachable();
    const res = await get("/api/entries");
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      apiVersion: "ui-exposure.io/v1",
      kind: "PortalError",
      error: unreachable().message,
      generatedAt: NOW.toISOString(),
      source: cluster.source,
      stack: "bench",
    });
  });

  it("escapes the cluster error too", async () => {
    cluster.failure = new UserError('reading services failed: <img src=x onerror="alert(1)">');
    const html = await (await get("/")).text();
    expect(html).not.toContain("<img");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
  });

  it("answers 500 (not an empty page) on a bug, and keeps the stack trace in the log only", async () => {
    cluster.failure = new TypeError("boom");
    const res = await get("/");
    expect(res.status).toBe(500);
    const html = await res.text();
    expect(html).toContain("internal error while observing the cluster");
    expect(html).not.toContain("TypeError");
    expect(logged[0]).toContain("TypeError: boom");
  });

  it("serves /healthz without calling the cluster, even when it is down", async () => {
    cluster.failure = unreachable();
    const res = await get("/healthz");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok\n");
    expect(cluster.total).toBe(0);
  });

  it("answers 404 on other paths and 405 on other methods, without calling the cluster", async () => {
    expect((await get("/admin")).status).toBe(404);
    const post = await get("/", { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect(cluster.total).toBe(0);
  });

  it("answers CONNECT with 405 and the Allow header, and keeps serving (issue 23, item 7)", async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = net.connect({ port: Number(new URL(portal.url).port), host: "127.0.0.1" });
      let text = "";
      socket.setEncoding("latin1");
      socket.on("data", (d) => {
        text += d;
      });
      socket.on("close", () => resolve(text));
      socket.on("error", () => resolve(text));
      socket.write("CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n");
      setTimeout(() => socket.destroy(), 3000).unref();
    });
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 405 Method Not Allowed");
    expect(answer).toMatch(/\r\nAllow: GET, HEAD\r\n/);
    expect((await get("/healthz")).status).toBe(200);
    expect(cluster.total).toBe(0);
  });

  it("clamps ?refresh= to 5-3600 seconds, however many digits it has (issue 23, item 7)", () => {
    const refresh = (raw: string) => refreshOf(new URLSearchParams({ refresh: raw })).refreshSeconds;
    expect(refresh("30")).toBe(30);
    expect(refresh("1")).toBe(5);
    expect(refresh("99999")).toBe(3600);
    expect(refresh("9".repeat(400))).toBe(3600);
    expect(refresh("-5")).toBeUndefined();
    expect(refresh("1e9")).toBeUndefined();
    expect(refresh("")).toBeUndefined();
  });

  it("shows problems that concern the whole view (no Ready node) above the table", async () => {
    cluster.data.nodes = [readyNode("bench", NODE_IP, false)];
    const res = await get("/");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('<div class="problems" role="alert">');
    expect(html).toContain("no Ready node with an InternalIP (nodes: bench (NotReady))");
    // Without a node there is no URL to link to.
    expect(html).not.toContain('<a href="http://127');
  });
});

describe("portal view", () => {
  it("lists a Ready node whose InternalIP is not an IP among its problems, as status does (issue 23 #7)", async () => {
    const recorded = recordedCluster();
    const view = await observePortal({
      contract: portalContract(),
      cluster: new MemoryCluster({ ...recorded, nodes: [...recorded.nodes, readyNode("zz-bad", "evil.example/x?")] }),
    });
    expect(view.node).toMatchObject({ address: NODE_IP });
    expect(view.problems).toEqual([expect.stringContaining('node zz-bad is Ready but its InternalIP "evil.example/x?" is not an IP address')]);
  });

  it("lists only the stack's selected entries (and the non-exposed ones) and uses the pinned address", async () => {
    const view = await observePortal({
      contract: portalContract(),
      cluster: new MemoryCluster(recordedCluster()),
      selected: ["argocd"],
      nodeAddress: "127.0.0.9",
    });
    expect(view.entries.map((e) => e.name)).toEqual(["argocd", "postgres"]);
    expect(view.entries[0]?.url).toBe("http://127.0.0.9:31358");
    expect(view.node).toEqual({ name: "(pinned)", address: "127.0.0.9", pinned: true });
  });

  it("reports a nodePort changed since the last up as DRIFT when the stack outputs are given", async () => {
    const view = await observePortal({
      contract: portalContract(),
      cluster: new MemoryCluster(recordedCluster()),
      published: { argocd: { nodePort: 31000, url: `http://${NODE_IP}:31000` } },
    });
    expect(view.entries[0]).toMatchObject({
      verdict: "DRIFT",
      reasons: [
        `nodePort changed since the last up (31000 -> 31358): the published URL http://${NODE_IP}:31000 no longer reaches this Service, which now listens on http://${NODE_IP}:31358; pulumi up puts 31000 back`,
      ],
    });
    expect(renderPage(view)).toContain("nodePort changed since the last up (31000 -&gt; 31358)");
  });
});

describe("outputs that lag an up", () => {
  it("a Service of ours with a uid the outputs do not know makes the portal read them again at once, once per uid, before saying anything (found by an outside tester)", async () => {
    const cluster = new MemoryCluster(recordedCluster());
    const argocd = cluster.data.services.find((s) => s.metadata.name === "argocd-nodeport");
    if (!argocd) throw new Error("fixture: argocd-nodeport");
    argocd.metadata.uid = "uid-new";
    const record = (uid: string) => ({ argocd: { nodePort: 31358, url: `http://${NODE_IP}:31358`, namespace: "argocd", service: "argocd-nodeport", uid } });
    // What the CLI answered before the up, cached; the up's own outputs once asked afresh.
    let latest = record("uid-old");
    const asked: boolean[] = [];
    const readPublished = async (opts: { fresh?: boolean } = {}) => {
      asked.push(opts.fresh === true);
      return opts.fresh ? latest : record("uid-old");
    };
    latest = record("uid-new");
    const portal = await startPortal(
      { contract: portalContract(), cluster, stack: "bench", readIntervalMs: 0, reachability: { enabled: false }, readPublished },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      const first = (await (await fetch(new URL("/api/entries", portal.url))).json()) as PortalView;
      expect(first.entries.find((e) => e.name === "argocd")).toMatchObject({ verdict: "MATCH" });
      expect(asked).toEqual([false, true]);
      // One re-created by hand: the fresh outputs do not know it either; said, and not asked again for it.
      argocd.metadata.uid = "uid-by-hand";
      latest = record("uid-new");
      const second = (await (await fetch(new URL("/api/entries", portal.url))).json()) as PortalView;
      expect(second.entries.find((e) => e.name === "argocd")?.verdict).toBe("DRIFT");
      await (await fetch(new URL("/api/entries", portal.url))).json();
      expect(asked).toEqual([false, true, false, true, false]);
    } finally {
      await portal.close();
    }
  });
  it("a Service named like ours in another entry's namespace is not ours: its uid never makes the portal read the outputs again (issue 34 #10)", async () => {
    const cluster = new MemoryCluster(recordedCluster());
    const argocd = cluster.data.services.find((s) => s.metadata.name === "argocd-nodeport");
    if (!argocd) throw new Error("fixture: argocd-nodeport");
    argocd.metadata.uid = "uid-published";
    // A tenant's look-alike named argocd-nodeport in grafana's namespace (read: the portal reads that namespace).
    cluster.data.services.push({ ...argocd, metadata: { ...argocd.metadata, namespace: "monitoring", uid: "uid-look-alike" } });
    const asked: boolean[] = [];
    const readPublished = async (opts: { fresh?: boolean } = {}) => {
      asked.push(opts.fresh === true);
      return { argocd: { nodePort: 31358, url: `http://${NODE_IP}:31358`, namespace: "argocd", service: "argocd-nodeport", uid: "uid-published" } };
    };
    const portal = await startPortal(
      { contract: portalContract(), cluster, stack: "bench", readIntervalMs: 0, reachability: { enabled: false }, readPublished },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      const view = (await (await fetch(new URL("/api/entries", portal.url))).json()) as PortalView;
      expect(view.entries.find((e) => e.name === "argocd")).toMatchObject({ verdict: "MATCH" });
      expect(asked).toEqual([false]);
    } finally {
      await portal.close();
    }
  });
});

describe("parseListen", () => {
  it("accepts HOST:PORT and [IPv6]:PORT", () => {
    expect(parseListen("127.0.0.1:8080")).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(parseListen("[::1]:0")).toEqual({ host: "::1", port: 0 });
    expect(parseListen("localhost:9000")).toEqual({ host: "localhost", port: 9000 });
  });
  it("refuses anything else with the expected form", () => {
    expect(() => parseListen("8080")).toThrow("--listen must be HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), not '8080'");
    expect(() => parseListen("127.0.0.1:70000")).toThrow("not '127.0.0.1:70000'");
    expect(() => parseListen("::1:8080")).toThrow("--listen must be HOST:PORT");
  });
});

describe("PORTAL_ENTRIES (set by the component from ui-exposure:entries)", () => {
  it("reads the stack's selection as the component writes it (JSON)", () => {
    expect(parseEntries(JSON.stringify("all"))).toBe("all");
    expect(parseEntries(undefined)).toBe("all");
    expect(parseEntries(JSON.stringify(["argocd", "portal"]))).toEqual(["argocd", "portal"]);
  });
  it("refuses anything else instead of silently showing everything", () => {
    expect(() => parseEntries("argocd,portal")).toThrow(`PORTAL_ENTRIES must be "all" or a JSON list of entry names, not 'argocd,portal'`);
    expect(() => parseEntries('["Bad Name"]')).toThrow("PORTAL_ENTRIES must be");
  });
});

describe("LiveClusterReader in-cluster option", () => {
  it("refuses clearly outside a pod", async () => {
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    try {
      await expect(LiveClusterReader.connect({ inCluster: true })).rejects.toThrow(
        "cannot load the in-cluster configuration: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set: not running in a pod",
      );
    } finally {
      if (saved.host !== undefined) process.env.KUBERNETES_SERVICE_HOST = saved.host;
      if (saved.port !== undefined) process.env.KUBERNETES_SERVICE_PORT = saved.port;
    }
  });

  it("uses the ServiceAccount's API address in a pod", async () => {
    process.env.KUBERNETES_SERVICE_HOST = "127.0.0.1";
    process.env.KUBERNETES_SERVICE_PORT = "6443";
    try {
      const reader = await LiveClusterReader.connect({ inCluster: true, context: "ignored-in-cluster" });
      expect(reader.source).toBe("in-cluster ServiceAccount (https://127.0.0.1:6443)");
    } finally {
      delete process.env.KUBERNETES_SERVICE_HOST;
      delete process.env.KUBERNETES_SERVICE_PORT;
    }
  });
});

/** The table row of one entry. */
function row(html: string, entry: string): string {
  const m = new RegExp(`<tr id="entry-${entry}"[^]*?</tr>`).exec(html);
  if (!m) throw new Error(`no row for ${entry}`);
  return m[0];
}

describe("a malformed request never ends the portal", () => {
  let portal: RunningPortal;
  let port: number;
  beforeAll(async () => {
    portal = await startPortal({ contract: portalContract(), cluster: new MemoryCluster(recordedCluster()), stack: "bench" }, { host: "127.0.0.1", port: 0 });
    port = Number(new URL(portal.url).port);
  });
  afterAll(() => portal.close());

  it("answers 400 to a request target that is not a URL, and keeps serving", async () => {
    for (const target of ["http://[zz]/", "http://[::1", "http://a b/"]) {
      const answer = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, {
        closeAfterMs: 500,
        close: "end",
        onError: "reject",
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).not.toContain("    at ");
    }
    const health = await fetch(new URL("/healthz", portal.url));
    expect(health.status).toBe(200);
  });

  it("a path starting with // is a path, not a host: //metrics, //healthz and //[ are not found (never the page or /metrics)", async () => {
    for (const target of ["//metrics", "//healthz", "//api/entries", "//[", "//portal.invalid/"]) {
      const answer = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, {
        closeAfterMs: 500,
        close: "end",
        onError: "reject",
      });
      expect(answer, target).toMatch(/^HTTP\/1\.1 404 /);
      expect(answer).toContain("not found: the portal serves /, /api/entries");
    }
  });
});

describe("portal: the cluster's undeclared exposure on the page (issue 40 #5)", () => {
  /** A portal that knows the stack's allowlist (it runs drift's audit) on the recorded cluster plus `extra` Services. */
  const withAudit = async (cluster: MemoryCluster) => {
    const portal = await startPortal(
      {
        contract: portalContract(),
        cluster,
        stack: "bench",
        readIntervalMs: 0,
        auditIntervalMs: 0,
        reachability: { enabled: false },
        audit: { allowlist: { services: [], hostPorts: [] } },
      },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      return { html: await (await fetch(portal.url)).text(), json: (await (await fetch(new URL("api/entries", portal.url))).json()) as PortalView };
    } finally {
      await portal.close();
    }
  };

  it("lists a NodePort Service the contract does not declare, with drift's reason and the command that removes it", async () => {
    const recorded = recordedCluster();
    recorded.services.push({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "debug-ui", namespace: "tools" },
      spec: { type: "NodePort", selector: { app: "debug" }, ports: [{ name: "http", port: 80, nodePort: 30999, protocol: "TCP" }] },
    });
    const { html, json } = await withAudit(new MemoryCluster(recorded));
    expect(html).toContain("<strong>Undeclared exposure: 1</strong> (neither the contract nor the allowlist declares it)");
    expect(html).toContain(
      `<li>NodePort tools/debug-ui (http 80-&gt;30999): in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it<br>fix: <code>${escapeHtml("kubectl -n tools delete service debug-ui, or declare it: ui-exposure:allowlist.services 'tools/debug-ui'")}</code></li>`,
    );
    expect(json.undeclared).toMatchObject({
      count: 1,
      shown: [{ name: "debug-ui", fix: "kubectl -n tools delete service debug-ui, or declare it: ui-exposure:allowlist.services 'tools/debug-ui'" }],
    });
    // Nothing undeclared: nothing said.
    const clean = (await withAudit(new MemoryCluster(recordedCluster()))).html;
    expect(clean).not.toContain("Undeclared exposure");
    // Not even the count as a stray line of its own.
    expect(clean).not.toMatch(/^0$/m);
  });

  it("says the audit could not read the cluster instead of showing nothing, and keeps the verdicts", async () => {
    const cluster = new MemoryCluster(recordedCluster());
    const listPods = cluster.listPods.bind(cluster);
    cluster.listPods = (scope) => (scope?.namespace ? listPods(scope) : Promise.reject(new UserError("pods is forbidden at the cluster scope")));
    const { html } = await withAudit(cluster);
    expect(html).toContain("Undeclared exposure: not checked (pods is forbidden at the cluster scope).");
    expect(html).toMatch(/MATCH/);
  });
});
