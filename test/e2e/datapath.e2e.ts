// Real traffic: the published URLs answered through real Kubernetes parts. Two nodes and their
// pods are network namespaces (src/adapters/datapath), kube-proxy 1.37.2 in nftables mode runs in
// each node's namespace, the endpointslice controller builds the slices from Pods whose status
// the harness writes as a kubelet would, and every request leaves an operator namespace (the
// workstation) for http(s)://<node IP>:<nodePort>. Each assertion names the pod that answered.
// Needs root (network namespaces); without it every scenario is skipped with the reason.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataPath, dataPathSupport } from "../../src/adapters/datapath/datapath";
import { createPod, writeNode, writePodStatus } from "../../src/adapters/datapath/kubelet";
import { hostLink, SERVICE_CIDR } from "../../src/adapters/datapath/plan";
import { type DataPathPlatform, expectedAnswers, LINEAGE, podId, stack, startDataPathPlatform, summary, UIS, uiOf } from "../support/datapath-platform";
import { type Cluster, startCluster, toolchainBin } from "../support/harness";

const bin = toolchainBin();
const support = dataPathSupport(bin);
const skipReason = support.ok ? "" : support.problems.map((x) => x.message).join("; ");
if (skipReason) console.warn(`datapath.e2e: skipped: ${skipReason}`);

let platform: DataPathPlatform | undefined;
let p: DataPathPlatform;

function up(label: string) {
  const r = p.sandbox.pulumi(["up", "--yes", "--skip-preview"]);
  p.timings[label] = r.ms;
  expect(r.code, summary(r)).toBe(0);
  return p.outputs();
}

/** Every URL answers from its own pod (in parallel); returns entry -> answer. */
async function allAnswers(urls: Record<string, string>, expected = expectedAnswers()): Promise<Record<string, string>> {
  const got = await Promise.all(Object.entries(urls).map(async ([entry, url]) => [entry, await p.answers(url, expected[entry] ?? "?")] as const));
  return Object.fromEntries(got);
}

/** The exposure CLI run inside the operator's namespace (the workstation). */
function exposureInOperator(args: string[]) {
  return p.dp.exec(p.dp.operator, process.execPath, [path.join(p.sandbox.dir, "bin/exposure.cjs"), ...args], {
    cwd: p.sandbox.dir,
    env: p.sandbox.env,
    timeoutMs: 120_000,
  });
}

describe
  .skipIf(!support.ok)
  .sequential(`e2e: a real data path (kube-proxy nftables in node namespaces)${skipReason ? ` [skipped: ${skipReason}]` : ""}`, () => {
    beforeAll(async () => {
      if (!support.ok) return;
      platform = await startDataPathPlatform(bin, support.value);
      p = platform;
    }, 600_000);

    afterAll(async () => {
      if (!platform) return;
      const timings = platform.timings;
      await platform.stop();
      fs.mkdirSync(path.resolve(__dirname, "../../test-output"), { recursive: true });
      fs.writeFileSync(path.resolve(__dirname, "../../test-output/datapath-timings.json"), JSON.stringify(timings, null, 2));
    }, 120_000);

    it("(1) every Service shape of the real charts: after pulumi up each URL answers from the right pod, on every node", async () => {
      const out = up("firstUpMs");
      const node1 = p.dp.node("dp-node-1");
      const node2 = p.dp.node("dp-node-2");
      expect(out.node).toMatchObject({ name: node1.name, address: node1.ip });
      expect(Object.keys(out.urls).sort()).toEqual([...UIS.map((u) => u.entry), LINEAGE.entry].sort());
      expect(out.urls["k8s-dashboard"]).toMatch(/^https:\/\/198\.18\.0\.11:3\d{4}$/);
      expect(out.urls[LINEAGE.entry]).toBe(`http://${node1.ip}:${LINEAGE.port}`);
      const t0 = Date.now();
      expect(await allAnswers(out.urls)).toEqual(expectedAnswers());
      p.timings.upToAllAnswersMs = Date.now() - t0;
      // externalTrafficPolicy Cluster: the other node's address answers too, from the same pods.
      const onNode2 = Object.fromEntries(
        Object.entries(out.urls)
          .filter(([e]) => e !== LINEAGE.entry)
          .map(([e, u]) => [e, u.replace(node1.ip, node2.ip)]),
      );
      const { [LINEAGE.entry]: _hostPortEntry, ...nodePortAnswers } = expectedAnswers();
      expect(await allAnswers(onNode2)).toEqual(nodePortAnswers);
      // A hostPort is held on its pod's node only.
      expect(await p.who(`http://${node2.ip}:${LINEAGE.port}/`)).toBe("connection refused");
    });

    it("(3) a hand-moved nodePort: traffic follows the live port until up puts it back", async () => {
      const published = new URL(p.outputs().urls.argocd as string);
      const ours = await p.cluster.core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
      const port = ours.spec?.ports?.[0];
      if (!port?.nodePort) throw new Error("argocd-nodeport has no nodePort");
      let moved = 0;
      for (const candidate of [port.nodePort + 7, port.nodePort - 7, 30999, 31999]) {
        if (candidate < 30000 || candidate > 32767) continue;
        try {
          port.nodePort = candidate;
          await p.cluster.core.replaceNamespacedService({ namespace: "argocd", name: "argocd-nodeport", body: ours });
          moved = candidate;
          break;
        } catch (err) {
          if ((err as { code?: number }).code !== 422) throw err;
        }
      }
      expect(moved).toBeGreaterThan(0);
      const argocd = podId("argocd", uiOf("argocd").pod.name);
      const movedUrl = `http://${published.hostname}:${moved}/`;
      expect(await p.answers(movedUrl, argocd)).toBe(argocd);
      expect(await p.answers(published.href, "connection refused")).toBe("connection refused");

      // One meaning of "answers": the published URL, the one users have. Probe and the portal say it
      // is dead and why, naming the live port; the portal's entry_up is 0 (UIExposureUnreachable fires).
      const live = `http://${published.hostname}:${moved}`;
      const cause = `connection refused: nodePort changed since the last up (${published.port} -> ${moved}): the published URL ${published.origin} no longer reaches this Service, which now listens on ${live}; pulumi up puts ${published.port} back`;
      const probe = await exposureInOperator(["probe", "--stack", "sandbox", "--entry", "argocd", "--json"]);
      expect(probe.code, summary(probe)).toBe(4);
      expect(JSON.parse(probe.stdout).results).toMatchObject([{ name: "argocd", ok: false, url: `${published.origin}/`, error: cause }]);
      const portalPort = 18080 + Math.floor(Math.random() * 1000);
      const portal = await startPortal(portalPort);
      try {
        const view = await portalEntries(portalPort, (v) => v.entries.find((e) => e.name === "argocd")?.reachability !== undefined);
        expect(view.entries.find((e) => e.name === "argocd")).toMatchObject({
          verdict: "DRIFT",
          url: live,
          publishedUrl: published.origin,
          reachability: { ok: false, url: `${published.origin}/`, error: cause },
        });
        const metrics = await p.dp.request(`http://127.0.0.1:${portalPort}/metrics`, { timeoutMs: 10_000 });
        expect("status" in metrics ? metrics.body : JSON.stringify(metrics)).toContain('ui_exposure_entry_up{entry="argocd",stack="sandbox",cluster="e2e"} 0');
      } finally {
        await portal.stop();
      }

      const out = up("upMovedPortMs");
      expect(out.urls.argocd).toBe(published.origin);
      expect(await p.answers(published.href, argocd)).toBe(argocd);
      expect(await p.answers(movedUrl, "connection refused")).toBe("connection refused");
    });

    it("(4) the chart changes its selector and pods: after up, traffic reaches the new pods only", async () => {
      const g = uiOf("grafana");
      const newSelector = { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "kube-prometheus-stack-v2" };
      await p.startPod({ ...g.pod, name: "grafana-v2-0", node: "dp-node-1", namespace: g.namespace, labels: newSelector });
      await p.markReady(g.namespace, "grafana-v2-0", true);
      const vendored = await p.cluster.core.readNamespacedService({ namespace: g.namespace, name: g.service });
      if (!vendored.spec) throw new Error("no spec");
      vendored.spec.selector = newSelector;
      await p.cluster.core.replaceNamespacedService({ namespace: g.namespace, name: g.service, body: vendored });
      const url = p.outputs().urls.grafana as string;
      // Before up our Service still selects the old pod (DRIFT in status); the old pod still runs.
      expect(await p.who(url)).toBe(podId(g.namespace, g.pod.name));
      up("upNewSelectorMs");
      const fresh = podId(g.namespace, "grafana-v2-0");
      expect(await p.answers(url, fresh)).toBe(fresh);
      const many = await Promise.all(Array.from({ length: 12 }, () => p.who(url)));
      expect(new Set(many)).toEqual(new Set([fresh]));
    });

    it("(5) a vendored pod becomes not Ready: status, the portal and probe agree on what a user sees", async () => {
      const d = uiOf("dagster");
      const url = p.outputs().urls.dagster as string;
      await p.markReady(d.namespace, d.pod.name, false);
      try {
        // kube-proxy rejects connections to a Service without ready endpoints.
        expect(await p.answers(url, "connection refused")).toBe("connection refused");

        const status = p.sandbox.exposure(["status", "--stack", "sandbox", "--json"]);
        const row = JSON.parse(status.stdout).entries.find((e: { name: string }) => e.name === "dagster");
        expect(row, summary(status)).toMatchObject({ verdict: "DRIFT", readyEndpoints: 0 });
        expect(row.reasons).toContain("no ready endpoints");

        const probe = await exposureInOperator(["probe", "--stack", "sandbox", "--json"]);
        expect(probe.code, summary(probe)).toBe(4);
        const results = JSON.parse(probe.stdout).results as { name: string; ok: boolean; error?: string }[];
        // The cause, read from the cluster: the Service has no ready endpoint (kube-proxy refuses for that reason).
        expect(results.filter((r) => !r.ok).map((r) => [r.name, r.error])).toEqual([
          ["dagster", "connection refused: no ready endpoint behind Service dagster/dagster-nodeport (its pods are gone or not Ready)"],
        ]);

        // The portal, from the workstation too: same verdict, same reachability, the same cause.
        const port = 18080 + Math.floor(Math.random() * 1000);
        const portal = await startPortal(port);
        try {
          const view = await portalEntries(port, (v) => v.entries.find((e) => e.name === "dagster")?.reachability !== undefined);
          const dag = view.entries.find((e) => e.name === "dagster");
          expect(dag).toMatchObject({
            verdict: "DRIFT",
            reachability: {
              ok: false,
              error: "connection refused: no ready endpoint behind Service dagster/dagster-nodeport (its pods are gone or not Ready)",
            },
          });
          const others = view.entries.filter((e) => e.url && e.name !== "dagster");
          expect(others.map((e) => [e.name, e.verdict, e.reachability?.ok])).toEqual(others.map((e) => [e.name, "MATCH", true]));
        } finally {
          await portal.stop();
        }
      } finally {
        // Ready again whatever happened: the next scenarios count on every pod answering.
        await p.markReady(d.namespace, d.pod.name, true);
      }
      expect(await p.answers(url, podId(d.namespace, d.pod.name))).toBe(podId(d.namespace, d.pod.name));
      const again = await exposureInOperator(["probe", "--stack", "sandbox"]);
      expect(again.code, summary(again)).toBe(0);
    });

    it("(7) the admission guard in deny mode: the declared entries' traffic keeps flowing", async () => {
      p.sandbox.writeStack(stack("deny"));
      const out = up("upDenyMs");
      // Grafana's new pod since (4).
      const expected = { ...expectedAnswers(), grafana: podId("monitoring", "grafana-v2-0") };
      expect(await allAnswers(out.urls, expected)).toEqual(expected);
      // An undeclared NodePort is refused meanwhile (the guard is on). The API server applies a
      // new policy a moment after it is created: asked as a server-side dry run until it does.
      const tryCreate = () =>
        p.cluster.core
          .createNamespacedService({
            namespace: "tools",
            dryRun: "All",
            body: { metadata: { name: "sneaky" }, spec: { type: "NodePort", selector: { a: "b" }, ports: [{ name: "http", port: 80 }] } },
          })
          .then(
            () => "admitted",
            (err: { code?: number }) => String(err.code),
          );
      let refused = await tryCreate();
      for (let i = 0; i < 50 && refused !== "403"; i++) {
        await new Promise((r) => setTimeout(r, 200));
        refused = await tryCreate();
      }
      expect(refused).toBe("403");
    });

    it("(2) two nodes: the URL's node goes NotReady, up moves the URL, the new URL answers", async () => {
      const node1 = p.dp.node("dp-node-1");
      const node2 = p.dp.node("dp-node-2");
      const before = p.outputs();
      expect(before.node.address).toBe(node1.ip);
      await writeNode(p.cluster.core, { name: node1.name, ip: node1.ip, ready: false });
      const out = up("upNodeNotReadyMs");
      expect(out.node).toMatchObject({ name: node2.name, address: node2.ip });
      const argocd = out.urls.argocd as string;
      expect(new URL(argocd).hostname).toBe(node2.ip);
      expect(new URL(argocd).port).toBe(new URL(before.urls.argocd as string).port);
      // argocd's pod runs on node 1: node 2 forwards to it (Cluster policy).
      expect(await p.answers(argocd, podId("argocd", uiOf("argocd").pod.name))).toBe(podId("argocd", uiOf("argocd").pod.name));
      expect(await p.answers(out.urls.dagster as string, podId("dagster", "dagster-webserver-0"))).toBe(podId("dagster", "dagster-webserver-0"));
    });

    it("(6) pulumi destroy: the published ports stop answering; the vendored Services still answer in-cluster", async () => {
      const last = p.outputs();
      p.sandbox.writeStack(stack("off"));
      const destroy = p.sandbox.pulumi(["destroy", "--yes", "--skip-preview"]);
      p.timings.destroyMs = destroy.ms;
      expect(destroy.code, summary(destroy)).toBe(0);
      const nodePortUrls = Object.entries(last.urls).filter(([e]) => e !== LINEAGE.entry);
      const gone = await Promise.all(nodePortUrls.map(async ([e, u]) => [e, await p.answers(u, "connection refused")] as const));
      expect(Object.fromEntries(gone)).toEqual(Object.fromEntries(nodePortUrls.map(([e]) => [e, "connection refused"])));
      // In-cluster, from a pod's namespace: the vendored ClusterIPs (both of Argo CD's ports), and
      // the headless Gitea through its EndpointSlice's address.
      const client = p.dp.pod(podId("mlflow", uiOf("mlflow").pod.name)).netns;
      const clusterIP = async (ns: string, name: string) => (await p.cluster.core.readNamespacedService({ namespace: ns, name })).spec?.clusterIP as string;
      const id = (entry: string) => podId(uiOf(entry).namespace, uiOf(entry).pod.name);
      const [argocdPod, dashPod, giteaPod] = [id("argocd"), id("k8s-dashboard"), id("gitea")];
      const argocdIP = await clusterIP("argocd", "argocd-server");
      expect(argocdIP.startsWith("198.19.")).toBe(true);
      expect(await p.answers(`http://${argocdIP}:80/`, argocdPod, { from: client })).toBe(argocdPod);
      expect(await p.answers(`http://${argocdIP}:443/`, argocdPod, { from: client })).toBe(argocdPod);
      const grafanaIP = await clusterIP("monitoring", "kube-prometheus-stack-grafana");
      expect(await p.answers(`http://${grafanaIP}:80/`, "monitoring/grafana-v2-0", { from: client })).toBe("monitoring/grafana-v2-0");
      const dashIP = await clusterIP("kubernetes-dashboard", "kubernetes-dashboard-kong-proxy");
      expect(await p.answers(`https://${dashIP}:443/`, dashPod, { from: client })).toBe(dashPod);
      const c = p.cluster;
      const kc = new c.lib.KubeConfig();
      kc.loadFromFile(c.kubeconfig);
      const slices = await kc
        .makeApiClient(c.lib.DiscoveryV1Api)
        .listNamespacedEndpointSlice({ namespace: "gitea", labelSelector: "kubernetes.io/service-name=gitea-http" });
      const slice = slices.items[0];
      expect(slice?.ports?.map((x) => [x.name, x.port])).toEqual([["http", 3000]]);
      const giteaIP = slice?.endpoints[0]?.addresses[0];
      expect(await p.who(`http://${giteaIP}:3000/`, client)).toBe(giteaPod);
    });
  });

describe.skipIf(!support.ok).sequential("e2e: the host as the operator (the sandbox's topology)", () => {
  let cluster: Cluster | undefined;
  let dp: DataPath | undefined;
  afterAll(async () => {
    await dp?.stop();
    cluster?.stop();
  }, 120_000);

  it("a URL answers to this machine's own client through a link and an on-link route that stop() removes", async () => {
    if (!support.ok) return;
    const c = await startCluster(bin, { E2E_SERVICE_CIDR: SERVICE_CIDR });
    cluster = c;
    const d = await DataPath.start({
      nodes: ["host-node"],
      operator: "host",
      kubeconfig: c.kubeconfig,
      apiPort: Number(new URL(c.server).port),
      tools: support.value,
      onNodes: async (nodes) => {
        for (const n of nodes) await writeNode(c.core, { name: n.name, ip: n.ip, ready: true });
      },
    });
    dp = d;
    const link = hostLink(d.prefix);
    const node = d.node("host-node");
    expect(node.ip).toBe(`198.18.${d.lan}.11`);
    // The host's only new route: the LAN on its link. No namespace has a default route out.
    const routes = execFileSync("ip", ["-4", "route", "show", "dev", link], { encoding: "utf8" }).trim();
    expect(routes.split("\n").map((l) => l.split(" ")[0])).toEqual([`198.18.${d.lan}.0/24`]);
    for (const ns of [d.operator, node.netns]) expect(execFileSync("ip", ["-n", ns, "route", "show", "default"], { encoding: "utf8" }).trim()).toBe("");

    await c.core.createNamespacedServiceAccount({ namespace: "default", body: { metadata: { name: "default" } } }).catch(() => undefined);
    await createPod(c.core, {
      namespace: "default",
      name: "ui-0",
      labels: { app: "ui" },
      node: node.name,
      containers: [{ name: "ui", ports: [{ name: "http", containerPort: 8080 }] }],
    });
    const pod = await d.addPod({ pod: "default/ui-0", node: node.name, listeners: [{ port: 8080, tls: false }] });
    await writePodStatus(c.core, { namespace: "default", name: "ui-0" }, { podIP: pod.ip, hostIP: node.ip, ready: true });
    const svc = await c.core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "ui" }, spec: { type: "NodePort", selector: { app: "ui" }, ports: [{ name: "http", port: 80, targetPort: "http" as never }] } },
    });
    const url = `http://${node.ip}:${svc.spec?.ports?.[0]?.nodePort}/`;
    let body = "";
    for (let i = 0; i < 100 && body !== "default/ui-0"; i++) {
      body = await fetch(url, { signal: AbortSignal.timeout(2000) }).then(
        async (r) => (await r.text()).trim(),
        (e: Error) => e.message,
      );
      if (body !== "default/ui-0") await new Promise((r) => setTimeout(r, 200));
    }
    expect(body).toBe("default/ui-0");

    await d.stop();
    dp = undefined;
    expect(spawnSync("ip", ["link", "show", link]).status).not.toBe(0);
    expect(execFileSync("ip", ["-4", "route", "show"], { encoding: "utf8" })).not.toContain(`198.18.${d.lan}.`);
    expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).not.toContain(d.prefix);
  });
});

async function startPortal(port: number): Promise<{ stop(): Promise<void> }> {
  const d = p.dp;
  const child = spawn(
    "ip",
    [
      "netns",
      "exec",
      d.operator,
      process.execPath,
      path.join(p.sandbox.dir, "bin/exposure.cjs"),
      "portal",
      "--stack",
      "sandbox",
      "--listen",
      `127.0.0.1:${port}`,
    ],
    {
      cwd: p.sandbox.dir,
      env: { ...p.sandbox.env, PORTAL_PROBE_CACHE_SECONDS: "1" },
      stdio: "ignore",
    },
  );
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

interface PortalView {
  entries: { name: string; verdict: string; url?: string; reachability?: { ok: boolean; error: string | null } }[];
}

async function portalEntries(port: number, done: (v: PortalView) => boolean): Promise<PortalView> {
  const end = Date.now() + 60_000;
  let last = "";
  for (;;) {
    const a = await p.dp.request(`http://127.0.0.1:${port}/api/entries`, { timeoutMs: 10_000 });
    if ("status" in a && a.status === 200) {
      const v = JSON.parse(a.body) as PortalView;
      if (done(v)) return v;
      last = a.body.slice(0, 500);
    } else last = JSON.stringify(a);
    if (Date.now() > end) throw new Error(`the portal did not answer as expected: ${last}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
