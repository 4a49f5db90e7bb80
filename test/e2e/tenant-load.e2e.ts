// Issue 34 #2 and #3, DESIGN.md invariant 8: nothing a tenant creates in its own namespace makes a
// read of ours fail or grow without bound. Against the real API server, a tenant namespace holds
// 10,000 Services with a 6 KB annotation, 150 with a 250 KB one (labelled as ours: anyone can set
// labels), fat EndpointSlices claiming our Service and 5,000 Pods of about 8 KB; then `pulumi up`,
// `exposure status`, the portal (page and /metrics) and `exposure drift` answer, and the peak RSS of
// the CLI and of the portal stays bounded (VmHWM, printed).
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkCreate } from "../support/bulk-create";
import { type Cluster, EXAMPLE_UIS, type Sandbox, startPlatform, stopPlatform, summary, waitFor } from "../support/harness";
import { watchPeak } from "../support/memory";

const TENANT = "tenant";
const SERVICES = 10_000;
const FAT_SERVICES = 150;
const PODS = 5_000;
const SLICES = 50;
const CONCURRENCY = 32;
/** The in-cluster portal's limit is 256Mi; a command that held the tenant's lists would pass it. */
const MAX_PEAK_MIB = 200;
const OURS = { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" };

let cluster: Cluster;
let sandbox: Sandbox;

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as net.AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });

describe.sequential("e2e: a tenant's 10,000 fat Services and 5,000 Pods (real API server, real engine)", () => {
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({
      nodes: [{ name: "e2e-node-b", ip: "127.0.0.11", ready: true }],
      uis: [EXAMPLE_UIS.argocd, EXAMPLE_UIS.gitea],
      stack: { "kubernetes:context": "e2e", "ui-exposure:entries": ["argocd", "gitea"], "ui-exposure:cilium": { mode: "cohabit" } },
    }));
    const { core } = cluster;
    await core.createNamespace({ body: { metadata: { name: TENANT } } });
    const started = Date.now();
    const blob = (bytes: number) => "x".repeat(bytes);
    // Headless (10,000 ClusterIPs would not fit the e2e Service range) and without selector (no
    // controller-made slices): their size is what matters.
    const service = (name: string, bytes: number, labels: Record<string, string> = {}) => ({
      metadata: { name, labels, annotations: { blob: blob(bytes) } },
      spec: { clusterIP: "None", ports: [{ name: "http", port: 80 }] },
    });
    const pod = (name: string, hostPort?: number) => ({
      metadata: { name, labels: { app: "tenant" }, annotations: { blob: blob(7_000) } },
      spec: { containers: [{ name: "app", image: "tenant/app:1", ports: [{ containerPort: 8080, ...(hostPort ? { hostPort } : {}) }] }] },
    });
    const slice = (name: string) => ({
      metadata: { name, labels: { "kubernetes.io/service-name": "argocd-nodeport" }, annotations: { blob: blob(200_000) } },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.0.0.1"], conditions: { ready: true } }],
    });
    // A Pod is admitted once its namespace's default ServiceAccount exists.
    await waitFor("the tenant's default ServiceAccount", async () =>
      core.readNamespacedServiceAccount({ namespace: TENANT, name: "default" }).catch(() => undefined),
    );
    // Every object in one stream of requests over kept-alive connections (test/support/bulk-create.ts):
    // the 10,000 Services, the 150 fat ones labelled as ours, fat EndpointSlices claiming our
    // Service, the 5,000 Pods.
    const services = `/api/v1/namespaces/${TENANT}/services`;
    const slices = `/apis/discovery.k8s.io/v1/namespaces/${TENANT}/endpointslices`;
    const pods = `/api/v1/namespaces/${TENANT}/pods`;
    const FAT_FROM = SERVICES;
    const SLICES_FROM = FAT_FROM + FAT_SERVICES;
    const PODS_FROM = SLICES_FROM + SLICES;
    await bulkCreate(
      cluster.lib,
      cluster.kubeconfig,
      PODS_FROM + PODS,
      (i) => {
        if (i < FAT_FROM) return { path: services, body: JSON.stringify(service(`svc-${i}`, 6_000)) };
        if (i < SLICES_FROM) return { path: services, body: JSON.stringify(service(`fat-${i - FAT_FROM}`, 250_000, OURS)) };
        if (i < PODS_FROM) return { path: slices, body: JSON.stringify(slice(`claim-${i - SLICES_FROM}`)) };
        return { path: pods, body: JSON.stringify(pod(`pod-${i - PODS_FROM}`)) };
      },
      CONCURRENCY,
    );
    // Two exposures the audit must find among all that: a NodePort Service and a hostPort pod.
    await core.createNamespacedService({
      namespace: TENANT,
      body: { metadata: { name: "open", annotations: { blob: blob(250_000) } }, spec: { type: "NodePort", ports: [{ port: 80 }] } },
    });
    await core.createNamespacedPod({ namespace: TENANT, body: pod("holder", 9443) });
    console.log(
      `tenant load: ${SERVICES + FAT_SERVICES + 1} Services, ${SLICES} EndpointSlices, ${PODS + 1} Pods created in ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  }, 1_800_000);

  afterAll(() => stopPlatform({ cluster, sandbox }));

  it("pulumi up and a clean preview read past the tenant's objects", { timeout: 900_000 }, () => {
    const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(up.code, summary(up)).toBe(0);
    const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(preview.code, summary(preview)).toBe(0);
    console.log(`tenant load: pulumi up ${(up.ms / 1000).toFixed(1)} s, preview ${(preview.ms / 1000).toFixed(1)} s`);
  });

  it("exposure status answers MATCH, with a bounded peak RSS", { timeout: 300_000 }, async () => {
    const r = await watchPeak(sandbox.exposureSpawn(["status", "--stack", "sandbox", "--json"]), { intervalMs: 20 });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const entries = (JSON.parse(r.stdout) as { entries: { name: string; verdict: string; readyEndpoints: number }[] }).entries;
    // The tenant's slices labelled as argocd-nodeport's are not ours: one ready endpoint, the real one.
    expect(entries.filter((e) => e.verdict !== "NOT-EXPOSED").map((e) => [e.name, e.verdict, e.readyEndpoints])).toEqual([
      ["argocd", "MATCH", 1],
      ["gitea", "MATCH", 1],
    ]);
    console.log(`tenant load: exposure status peak RSS ${r.peak.toFixed(0)} MiB`);
    expect(r.peak).toBeGreaterThan(0);
    expect(r.peak).toBeLessThan(MAX_PEAK_MIB);
  });

  it("the portal serves its page and /metrics (the audit read cluster-wide), with a bounded peak RSS", { timeout: 300_000 }, async () => {
    const port = await freePort();
    const child = sandbox.exposureSpawn(["portal", "--stack", "sandbox", "--listen", `127.0.0.1:${port}`]);
    const answers = (async () => {
      const view = await waitFor(
        "the portal to answer",
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/api/entries`).catch(() => undefined);
          return res?.ok ? ((await res.json()) as { entries: { name: string; verdict: string; url?: string }[] }) : undefined;
        },
        120_000,
      );
      const metrics = await waitFor(
        "/metrics with the undeclared count",
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          return /^ui_exposure_undeclared_exposures\{stack="sandbox",cluster="e2e"\} \d+/m.test(text) ? text : undefined;
        },
        120_000,
      );
      return { view, metrics };
    })();
    const r = await watchPeak(child, { until: answers.catch(() => undefined), signal: "SIGTERM", intervalMs: 20 });
    const { view, metrics } = await answers;
    expect(view.entries.filter((e) => e.url).map((e) => [e.name, e.verdict])).toEqual([
      ["argocd", "MATCH"],
      ["gitea", "MATCH"],
    ]);
    // The tenant's NodePort Service and hostPort pod, found among 10,000 Services and 5,000 Pods.
    expect(metrics).toMatch(/^ui_exposure_undeclared_exposures\{stack="sandbox",cluster="e2e"\} 2$/m);
    console.log(`tenant load: portal peak RSS ${r.peak.toFixed(0)} MiB`);
    expect(r.peak).toBeLessThan(MAX_PEAK_MIB);
  });

  it("exposure drift answers: the preview is clean, the audit names the tenant's two exposures, bounded peak RSS", { timeout: 900_000 }, async () => {
    const r = await watchPeak(sandbox.exposureSpawn(["drift", "--stack", "sandbox", "--json"]), { intervalMs: 20 });
    const doc = JSON.parse(r.stdout) as { preview: { state: string }; audit: { undeclared: { namespace: string; name: string; kind: string }[] } };
    expect(doc.preview.state, r.stderr).toBe("no-changes");
    expect(doc.audit.undeclared.map((u) => `${u.kind} ${u.namespace}/${u.name}`).sort()).toEqual(["NodePort tenant/open", "hostPort tenant/holder"]);
    expect(r.code).toBe(3);
    console.log(`tenant load: exposure drift peak RSS ${r.peak.toFixed(0)} MiB (the CLI; its pulumi preview runs apart)`);
    expect(r.peak).toBeLessThan(MAX_PEAK_MIB);
  });
});
