// The platform's Prometheus watching the exposure, end to end: a stack with monitoring enabled
// stops its preview in one line while the cluster lacks the Prometheus Operator's CRDs; once
// they are installed (the operator module's own YAML), `pulumi up` creates the ServiceMonitor,
// PrometheusRule and dashboard ConfigMap. The exact portal bundle `up` shipped runs the way its
// pod does, at the pod IP the pod's status gives; the real EndpointSlice controller puts it
// behind the Service `portal`. A real Prometheus (built from the Prometheus module) discovers it
// through the API server with the scrape job the operator generates from that ServiceMonitor
// (selector, named port, jobLabel), evaluates the PrometheusRule `up` created (each `for:`
// shortened to 10 s in a test-only copy: the only change), and UIExposureUnreachable fires
// when a stand-in UI stops answering, then resolves once it answers again; with the portal
// stopped, UIExposurePortalDown fires.
import { type ChildProcess, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify } from "yaml";
import { freeLoopbackPort } from "../../src/adapters/free-port";
import { alertRules } from "../../src/core/monitoring";
import { type Cluster, projectDir, runProcess, type Sandbox, stopPlatform, summary, toolchainBin, waitFor } from "../support/harness";
import { PORTAL_LABEL, PORTAL_NS, podIdentity, portalPodSpec, runInPod, startPortalPlatform, writeShippedFiles } from "../support/incluster-portal";
import { operatorCrds, operatorScrapeConfig, type RunningPrometheus, type ServiceMonitor, startPrometheus } from "../support/prometheus";
import { readSandboxEnv } from "../support/sandbox-env";

const NODE = "e2e-node";
const NODE_IP = "127.0.0.51";
/**
 * The portal pod's IP, as its status will say: the bundle listens there. Not loopback (the API
 * server refuses 127.0.0.0/8 in an EndpointSlice): a /32 on the host's `lo` for the run, in
 * 198.19.250.0/24 (benchmarking range, no route out; away from the data path's 198.18.0.x and
 * 198.19.0.0/17, 198.19.128.0/20).
 */
const POD_IP = "198.19.250.52";
const RELEASE = "kube-prometheus-stack";

let cluster: Cluster;
let sandbox: Sandbox;
let prometheus: RunningPrometheus | undefined;
const children: ChildProcess[] = [];
const servers = new Map<number, http.Server>();
/** This describe's folder, made in its beforeAll (a run of the other describe alone leaves none). */
let tmp = "";
/** A stand-in UI on <node IP>:<nodePort>, as the node's data path would serve it. */
function standIn(port: number): Promise<void> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok\n");
  });
  servers.set(port, server);
  return new Promise((resolve) => server.listen(port, NODE_IP, () => resolve()));
}
function stopStandIn(port: number): Promise<void> {
  const server = servers.get(port);
  servers.delete(port);
  return new Promise((resolve) => {
    if (!server) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** The portal's own published URL, forwarded to its pod as the node's data path would. */
function forward(port: number, to: { host: string; port: number }): Promise<void> {
  const server = net.createServer((client) => {
    const upstream = net.connect(to.port, to.host);
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  forwarders.push(server);
  return new Promise((resolve) => server.listen(port, NODE_IP, () => resolve()));
}
const forwarders: net.Server[] = [];

const customObjects = () => {
  const kc = new cluster.lib.KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  return kc.makeApiClient(cluster.lib.CustomObjectsApi);
};

/** POST of a raw object with the admin credentials of the e2e cluster. */
function createRaw(apiPath: string, body: unknown): Promise<void> {
  const kc = new cluster.lib.KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const token = kc.getCurrentUser()?.token;
  const server = new URL(cluster.server);
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        method: "POST",
        host: server.hostname,
        port: server.port,
        path: apiPath,
        ca: fs.readFileSync(path.join(cluster.dir, "pki", "apiserver.crt")),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(data) },
      },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          text += d.toString();
        });
        res.on("end", () => (res.statusCode === 201 ? resolve() : reject(new Error(`POST ${apiPath}: ${res.statusCode} ${text.slice(0, 1000)}`))));
      },
    );
    req.on("error", reject);
    req.end(data);
  });
}

interface Alert {
  labels: Record<string, string>;
  state: string;
}

describe.sequential("e2e: a real Prometheus scrapes the in-cluster portal and fires the generated alerts", () => {
  let outputs: { urls: Record<string, string> };
  let serviceMonitor: ServiceMonitor;
  let rule: { spec: { groups: { name: string; rules: Record<string, unknown>[] }[] } };

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-e2e-monitoring-"));
    ({ cluster, sandbox } = await startPortalPlatform({ name: NODE, ip: NODE_IP }, "monitoring-e2e.yaml", {
      "ui-exposure:monitoring": { enabled: true, release: RELEASE },
    }));
  }, 600_000);

  afterAll(async () => {
    spawnSync("ip", ["addr", "del", `${POD_IP}/32`, "dev", "lo"]);
    await prometheus?.stop();
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await Promise.all([...servers.keys()].map(stopStandIn));
    for (const f of forwarders) f.close();
    stopPlatform({ cluster, sandbox });
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("without the Prometheus Operator's CRDs, the preview stops in one line and nothing is created", async () => {
    const preview = sandbox.pulumi(["preview"]);
    expect(preview.code, summary(preview)).not.toBe(0);
    const out = `${preview.stdout}${preview.stderr}`;
    expect(out).toContain("ui-exposure:monitoring: context e2e");
    expect(out).toContain("does not serve servicemonitors and prometheusrules in monitoring.coreos.com/v1");
    expect(out).not.toMatch(/\n\s+at /);
    const namespaces = await cluster.core.listNamespace();
    expect(namespaces.items.map((n) => n.metadata?.name)).not.toContain(PORTAL_NS);
  });

  it("with the operator module's CRDs installed, pulumi up creates the ServiceMonitor, the PrometheusRule and the dashboard, labelled for the release", async () => {
    const kc = new cluster.lib.KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const ext = kc.makeApiClient(cluster.lib.ApiextensionsV1Api);
    // As `kubectl apply` sends them: raw JSON (the typed client drops x-kubernetes-* keys).
    for (const crd of operatorCrds()) await createRaw("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    await waitFor("the CRDs to be established", async () => {
      const list = await ext.listCustomResourceDefinition();
      const established = list.items.filter((c) => c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True"));
      return established.length >= 2 ? true : undefined;
    });
    // Served (API discovery), which is what the program checks.
    await waitFor("monitoring.coreos.com/v1 to be served", async () => {
      for (const plural of ["servicemonitors", "prometheusrules"])
        await customObjects().listClusterCustomObject({ group: "monitoring.coreos.com", version: "v1", plural });
      return true;
    });

    const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(up.code, summary(up)).toBe(0);
    const out = sandbox.pulumi(["stack", "output", "--json"]);
    outputs = JSON.parse(out.stdout);

    const co = customObjects();
    const sms = (await co.listNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: PORTAL_NS, plural: "servicemonitors" })) as {
      items: ServiceMonitor[];
    };
    expect(sms.items).toHaveLength(1);
    serviceMonitor = sms.items[0] as ServiceMonitor;
    expect((serviceMonitor.metadata as { labels?: Record<string, string> }).labels?.release).toBe(RELEASE);
    const rules = (await co.listNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: PORTAL_NS, plural: "prometheusrules" })) as {
      items: (typeof rule & { metadata: { labels?: Record<string, string> } })[];
    };
    expect(rules.items).toHaveLength(1);
    rule = rules.items[0] as typeof rule;
    expect(rules.items[0]?.metadata.labels?.release).toBe(RELEASE);
    const maps = await cluster.core.listNamespacedConfigMap({ namespace: PORTAL_NS, labelSelector: "grafana_dashboard=1" });
    expect(maps.items).toHaveLength(1);
    expect(maps.items[0]?.metadata?.labels?.release).toBe(RELEASE);
  });

  it("Prometheus finds the portal through the ServiceMonitor and its EndpointSlice; UIExposureUnreachable fires when argocd stops answering, then resolves; UIExposurePortalDown fires when the portal stops", async () => {
    // The stand-in UIs on their published URLs.
    const argocdPort = Number(new URL(outputs.urls.argocd as string).port);
    await standIn(argocdPort);
    await standIn(Number(new URL(outputs.urls.grafana as string).port));
    await forward(Number(new URL(outputs.urls.portal as string).port), { host: POD_IP, port: 8080 });

    // The files `up` shipped, byte for byte, and the Deployment's environment.
    const app = path.join(tmp, "app");
    await writeShippedFiles(cluster, app);
    const { container, account } = await portalPodSpec(cluster);
    const kc = new cluster.lib.KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);

    // The pod the ReplicaSet controller made: bound to the node as a scheduler would, Running
    // at POD_IP and Ready as a kubelet would report it. The EndpointSlice controller does the rest.
    const pod = await waitFor(
      "the portal's pod",
      async () => (await cluster.core.listNamespacedPod({ namespace: PORTAL_NS, labelSelector: PORTAL_LABEL })).items[0],
    );
    const podName = pod.metadata?.name as string;
    if (!pod.spec?.nodeName) {
      await cluster.core.createNamespacedBinding({
        namespace: PORTAL_NS,
        body: { metadata: { name: podName }, target: { apiVersion: "v1", kind: "Node", name: NODE } },
      });
    }
    const bound = await cluster.core.readNamespacedPod({ namespace: PORTAL_NS, name: podName });
    const now = new Date();
    bound.status = {
      phase: "Running",
      podIP: POD_IP,
      podIPs: [{ ip: POD_IP }],
      hostIP: NODE_IP,
      conditions: [
        { type: "Ready", status: "True", lastTransitionTime: now },
        { type: "ContainersReady", status: "True", lastTransitionTime: now },
      ],
    };
    await cluster.core.replaceNamespacedPodStatus({ namespace: PORTAL_NS, name: podName, body: bound });
    const discovery = kc.makeApiClient(cluster.lib.DiscoveryV1Api);
    let seen = "";
    await waitFor(
      "the portal's ready endpoint in its EndpointSlice",
      async () => {
        const slices = await discovery.listNamespacedEndpointSlice({ namespace: PORTAL_NS });
        const pods = await cluster.core.listNamespacedPod({ namespace: PORTAL_NS });
        seen = JSON.stringify({
          slices: slices.items.map((x) => [x.metadata?.name, x.metadata?.labels, x.endpoints, x.ports]),
          pods: pods.items.map((x) => [x.metadata?.name, x.spec?.nodeName, x.status]),
        });
        return slices.items.some(
          (s) =>
            s.metadata?.labels?.["kubernetes.io/service-name"] === "portal" && s.endpoints?.some((e) => e.addresses.includes(POD_IP) && e.conditions?.ready),
        )
          ? true
          : undefined;
      },
      60_000,
      () => `: ${seen.slice(0, 3000)}`,
    );

    // The bundle as the pod runs it: its ServiceAccount's token and the CA at the in-pod paths.
    const { env } = await podIdentity(cluster, account, container, tmp);
    expect(env.PORTAL_ALLOWLIST).toBe('{"services":[],"hostPorts":[]}');
    env.PORTAL_CONTRACT = path.join(app, "contract.yaml");
    env.PORTAL_LISTEN = `${POD_IP}:8080`;
    env.PORTAL_PUBLISHED = path.join(tmp, "endpoints.json");
    // Probe answers reused 1 s instead of 15 s: the e2e waits for the change, not for the cache.
    env.PORTAL_PROBE_CACHE_SECONDS = "1";
    const address = spawnSync("ip", ["addr", "replace", `${POD_IP}/32`, "dev", "lo"], { encoding: "utf8" });
    if (address.status !== 0) throw new Error(`this e2e needs root to add the pod's address ${POD_IP}/32 to lo: ${address.stderr}`);
    const portal = runInPod(app, env);
    children.push(portal.child);

    // Prometheus: the operator's scrape job for this ServiceMonitor (interval shortened), and the
    // PrometheusRule `up` created with every `for:` at 10 s.
    const bin = path.join(toolchainBin(), "prometheus");
    if (!fs.existsSync(bin)) throw new Error(`no prometheus at ${bin}: build it with E2E_ONLY=prometheus scripts/e2e-toolchain.sh`);
    const shortened = { groups: rule.spec.groups.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, for: "10s" })) })) };
    fs.writeFileSync(path.join(tmp, "rules.yaml"), stringify(shortened));
    fs.writeFileSync(
      path.join(tmp, "prometheus.yaml"),
      stringify({
        global: { scrape_interval: "2s", evaluation_interval: "2s" },
        rule_files: [path.join(tmp, "rules.yaml")],
        scrape_configs: [operatorScrapeConfig(serviceMonitor, 0, cluster.kubeconfig, "2s")],
      }),
    );
    prometheus = await startPrometheus(bin, path.join(tmp, "prometheus.yaml"), tmp, await freeLoopbackPort());
    const p = prometheus;
    const detail = () => `\nprometheus log:\n${p.log().slice(-2500)}\nportal log:\n${portal.stderr().slice(-1500)}`;
    const query = async (q: string) =>
      (await p.api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`query?query=${encodeURIComponent(q)}`)).result;

    // The target: discovered from the EndpointSlice, labelled as the operator's job labels it.
    const upSeries = await waitFor(
      "the portal's target to be up",
      async () => {
        const r = await query('up{job="ui-exposure-portal"}');
        return r.length === 1 && r[0]?.value[1] === "1" ? r[0] : undefined;
      },
      90_000,
      detail,
    );
    // Rules evaluated every 2 s from Prometheus's start, the portal's target found seconds later:
    // no alert went pending meanwhile (ALERTS records pending alerts too).
    expect(await query("count_over_time(ALERTS[10m])")).toEqual([]);
    expect(upSeries.metric).toMatchObject({
      job: "ui-exposure-portal",
      namespace: PORTAL_NS,
      service: "portal",
      pod: podName,
      endpoint: "http",
      instance: `${POD_IP}:8080`,
    });
    const entryUp = await waitFor(
      "argocd up in Prometheus",
      async () => {
        const r = await query('ui_exposure_entry_up{entry="argocd"}');
        return r[0]?.value[1] === "1" ? r[0] : undefined;
      },
      60_000,
      detail,
    );
    // The stack and the cluster (the stack's kubernetes:context, given to the pod by `up`) on every series.
    expect(entryUp.metric).toMatchObject({ job: "ui-exposure-portal", namespace: PORTAL_NS, entry: "argocd", stack: "sandbox", cluster: "e2e" });
    expect((await query('ui_exposure_entry_verdict{entry="argocd",verdict="match"}'))[0]?.value[1]).toBe("1");
    expect((await query("ui_exposure_undeclared_exposures"))[0]?.value[1]).toBe("0");
    // The audit read the cluster with the portal's own ServiceAccount.
    expect((await query("ui_exposure_audit_success"))[0]?.value[1]).toBe("1");

    const alerts = async () => (await p.api<{ alerts: Alert[] }>("alerts")).alerts.filter((a) => a.labels.alertname === "UIExposureUnreachable");
    expect(await alerts()).toEqual([]);

    // argocd stops answering: the portal's probe fails, the gauge goes to 0, the alert fires.
    await stopStandIn(argocdPort);
    const fired = await waitFor(
      "UIExposureUnreachable to fire for argocd",
      async () => (await alerts()).find((a) => a.labels.entry === "argocd" && a.state === "firing"),
      120_000,
      detail,
    );
    // What it is about, not which portal pod said it (a rollout must not resolve it).
    expect(fired.labels).toEqual({
      alertname: "UIExposureUnreachable",
      severity: "warning",
      entry: "argocd",
      stack: "sandbox",
      cluster: "e2e",
      namespace: PORTAL_NS,
      job: "ui-exposure-portal",
    });
    expect((await alerts()).map((a) => a.labels.entry)).toEqual(["argocd"]);
    // The command its description names says the same, from the operator's side (exit 4:
    // unreachable). Not blocking: the stand-ins answer from this process.
    const probe = await sandbox.exposureAsync(["probe", "--stack", "sandbox", "--entry", "argocd"]);
    expect(probe.code, summary(probe)).toBe(4);

    // Back: the alert resolves (no longer pending or firing).
    await standIn(argocdPort);
    await waitFor("UIExposureUnreachable to resolve", async () => ((await alerts()).length === 0 ? true : undefined), 120_000, detail);
    expect((await query('ui_exposure_entry_up{entry="argocd"}'))[0]?.value[1]).toBe("1");
    const back = await sandbox.exposureAsync(["probe", "--stack", "sandbox", "--entry", "argocd"]);
    expect(back.code, summary(back)).toBe(0);

    // The portal stops (as on a crash): its target goes down and UIExposurePortalDown fires.
    const portalDown = async () => (await p.api<{ alerts: Alert[] }>("alerts")).alerts.filter((a) => a.labels.alertname === "UIExposurePortalDown");
    expect(await portalDown()).toEqual([]);
    portal.child.kill("SIGTERM");
    const down = await waitFor("UIExposurePortalDown to fire", async () => (await portalDown()).find((a) => a.state === "firing"), 120_000, detail);
    expect(down.labels).toEqual({ alertname: "UIExposurePortalDown", severity: "warning", job: "ui-exposure-portal", namespace: PORTAL_NS });
  });
});

// The monitoring trial of the sandbox (docs/monitoring.md, "Try it in the sandbox"), as a new user
// runs it on a clone of this commit: `sandbox up --monitoring` with EXPOSURE_SANDBOX_ALERT_FOR=20
// (the documented setting: every `for` 20 s, scrapes every 5 s; nothing else of the rules), the
// real Prometheus with the stack's rules on the sandbox's portal; grafana scaled to 0 makes
// UIExposureUnreachable go pending, then firing, and resolve once it is back. `pulumi up` with
// monitoring on then works in the sandbox (the operator's CRDs are there), and `sandbox down`
// stops Prometheus with the rest.
describe.sequential("e2e: the sandbox's monitoring trial (sandbox up --monitoring)", () => {
  let root: string;
  let clone: string;
  let env: NodeJS.ProcessEnv;
  let up: { urls: Record<string, string>; portal: string; prometheus?: string };
  const folder = () => path.join(clone, ".sandbox");
  const exposure = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    runProcess(process.execPath, [path.join(clone, "bin/exposure.cjs"), ...args], { cwd: clone, env: { ...env, ...extra } });
  /** What `. .sandbox/env` exports. */
  const sandboxEnv = (): NodeJS.ProcessEnv => ({ ...env, ...readSandboxEnv(path.join(folder(), "env"), env.PATH) });
  const api = async <T>(p: string): Promise<T> => {
    const res = await fetch(new URL(`api/v1/${p}`, up.prometheus), { signal: AbortSignal.timeout(5000) });
    const body = (await res.json()) as { status: string; data: T };
    if (body.status !== "success") throw new Error(`prometheus ${p}: ${JSON.stringify(body).slice(0, 500)}`);
    return body.data;
  };
  const unreachable = async () => (await api<{ alerts: Alert[] }>("alerts")).alerts.filter((a) => a.labels.alertname === "UIExposureUnreachable");
  const scaleGrafana = async (replicas: number) => {
    const lib = await import("@kubernetes/client-node");
    const kc = new lib.KubeConfig();
    kc.loadFromFile(path.join(folder(), "kubeconfig"));
    const apps = kc.makeApiClient(lib.AppsV1Api);
    const s = await apps.readNamespacedDeploymentScale({ namespace: "monitoring", name: "grafana" });
    s.spec = { replicas };
    await apps.replaceNamespacedDeploymentScale({ namespace: "monitoring", name: "grafana", body: s });
  };
  const log = () => {
    const read = (f: string) => (fs.existsSync(path.join(folder(), f)) ? fs.readFileSync(path.join(folder(), f), "utf8").slice(-1500) : "");
    return `\nprometheus log:\n${read("prometheus.log")}\nportal log:\n${read("portal.log")}`;
  };

  beforeAll(() => {
    const bin = toolchainBin();
    for (const b of ["pulumi", "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "prov/pulumi-resource-kubernetes", "prometheus"]) {
      if (!fs.existsSync(path.join(bin, b))) throw new Error(`${bin}/${b} missing: build the toolchain first (scripts/e2e-toolchain.sh; E2E_ONLY=prometheus)`);
    }
    root = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-sandbox-monitoring-"));
    clone = path.join(root, "ui-exposure");
    // This very commit, with this folder's node_modules (the trial, not `npm ci`, is under test here).
    const head = spawnSync("git", ["-C", projectDir, "rev-parse", "HEAD"], { encoding: "utf8" }).stdout.trim();
    spawnSync("git", ["clone", "--quiet", "--no-checkout", projectDir, clone]);
    spawnSync("git", ["-C", clone, "checkout", "--quiet", "--detach", head]);
    fs.symlinkSync(fs.realpathSync(path.join(projectDir, "node_modules")), path.join(clone, "node_modules"));
    env = { ...process.env, EXPOSURE_SANDBOX_RECORDS: path.join(root, "records"), EXPOSURE_SANDBOX_ALERT_FOR: "20" };
    for (const k of Object.keys(env)) if (k.startsWith("PULUMI_") || k === "KUBECONFIG" || k.startsWith("VITEST") || k === "NODE_ENV") delete env[k];
  });

  afterAll(async () => {
    if (clone && (fs.existsSync(folder()) || fs.existsSync(path.join(root, "records")))) await exposure(["sandbox", "down"]);
    if (root) fs.rmSync(root, { recursive: true, force: true });
  }, 180_000);

  it("sandbox up --monitoring: Prometheus with the stack's rules scrapes the portal; grafana scaled to 0 makes UIExposureUnreachable pending, then firing; back, it resolves", async () => {
    const started = await exposure(["sandbox", "up", "--monitoring", "--json"]);
    expect(started.code, summary(started)).toBe(0);
    up = JSON.parse(started.stdout);
    expect(up.prometheus).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(started.stderr).toMatch(/sandbox \[monitoring\] Prometheus http:\/\/127\.0\.0\.1:\d+\/ in [\d.]+ s: the stack's alert rules \(every for: 20s/);

    // `sandbox up` returns once the portal is scraped: no alert went pending before that (ALERTS
    // records pending alerts too; rules are evaluated every 5 s from Prometheus's start).
    const early = await api<{ result: unknown[] }>(`query?query=${encodeURIComponent("count_over_time(ALERTS[10m])")}`);
    expect(early.result).toEqual([]);
    // The rules loaded are the stack's (the group from .sandbox/prometheus/rules.yaml), every for 20 s.
    const rules = await api<{ groups: { name: string; file: string; rules: { name: string; duration: number }[] }[] }>("rules");
    expect(rules.groups.map((g) => [g.name, g.file])).toEqual([["ui-exposure", path.join(folder(), "prometheus", "rules.yaml")]]);
    expect(rules.groups[0]?.rules.map((r) => [r.name, r.duration])).toEqual(
      alertRules({ namespace: "platform-portal", release: RELEASE, stack: "sandbox" })[0]?.rules.map((r) => [r.alert, 20]),
    );
    // The portal's target, labelled as the operator's job labels the in-cluster one.
    const target = (
      await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(`query?query=${encodeURIComponent('up{job="ui-exposure-portal"}')}`)
    ).result;
    expect(target.map((t) => [t.metric, t.value[1]])).toEqual([
      [
        {
          __name__: "up",
          job: "ui-exposure-portal",
          namespace: "platform-portal",
          service: "portal",
          pod: "sandbox-portal",
          container: "portal",
          endpoint: "http",
          instance: new URL(up.portal).host,
        },
        "1",
      ],
    ]);
    await waitFor(
      "grafana up in Prometheus",
      async () => {
        const r = (await api<{ result: { value: [number, string] }[] }>(`query?query=${encodeURIComponent('ui_exposure_entry_up{entry="grafana"}')}`)).result;
        return r[0]?.value[1] === "1" ? true : undefined;
      },
      60_000,
      log,
    );
    expect(await unreachable()).toEqual([]);

    // The new user's trial: grafana scaled to 0.
    await scaleGrafana(0);
    const pending = await waitFor(
      "UIExposureUnreachable pending for grafana",
      async () => (await unreachable()).find((a) => a.state === "pending"),
      90_000,
      log,
    );
    expect(pending.labels).toEqual({
      alertname: "UIExposureUnreachable",
      severity: "warning",
      entry: "grafana",
      // The sandbox's stack, read through its kube context (the sandbox's, named as the stack).
      stack: "sandbox",
      cluster: "sandbox",
      job: "ui-exposure-portal",
      namespace: "platform-portal",
    });
    const firing = await waitFor("UIExposureUnreachable firing for grafana", async () => (await unreachable()).find((a) => a.state === "firing"), 90_000, log);
    expect(firing.labels).toEqual(pending.labels);
    expect((await unreachable()).map((a) => a.labels.entry)).toEqual(["grafana"]);

    await scaleGrafana(1);
    await waitFor("UIExposureUnreachable to resolve", async () => ((await unreachable()).length === 0 ? true : undefined), 120_000, log);

    // sandbox status lists Prometheus among the sandbox's processes.
    const status = await exposure(["sandbox", "status"]);
    expect(status.stdout).toMatch(/^prometheus \(pid \d+\) +running$/m);
  }, 900_000);

  it("pulumi up with the portal (in a namespace of its own) and monitoring on works in the sandbox: its PrometheusRule holds the stack's rules", async () => {
    const stackFile = path.join(clone, "Pulumi.sandbox.yaml");
    const original = fs.readFileSync(stackFile);
    const config = parseYaml(original.toString("utf8")) as { config: Record<string, unknown> };
    // A namespace of its own: the sandbox seeds the contract's vendored Services, the portal's platform-portal/portal among them.
    config.config["ui-exposure:portal"] = { enabled: true, namespace: "ui-exposure-portal" };
    config.config["ui-exposure:monitoring"] = { enabled: true, release: RELEASE };
    fs.writeFileSync(stackFile, stringify(config));
    try {
      const senv = sandboxEnv();
      const pulumi = await runProcess("pulumi", ["up", "--yes", "--skip-preview", "--non-interactive", "--stack", "sandbox"], { cwd: clone, env: senv });
      const diagnostics = `${pulumi.stdout}\n${pulumi.stderr}`.split("\n").filter((l) => /error|warning/i.test(l));
      expect(pulumi.code, `${diagnostics.join("\n").slice(0, 6000)}\n${summary(pulumi)}`).toBe(0);
      const lib = await import("@kubernetes/client-node");
      const kc = new lib.KubeConfig();
      kc.loadFromFile(path.join(folder(), "kubeconfig"));
      const co = kc.makeApiClient(lib.CustomObjectsApi);
      const list = (plural: string) =>
        co.listNamespacedCustomObject({ group: "monitoring.coreos.com", version: "v1", namespace: "ui-exposure-portal", plural });
      const rule = ((await list("prometheusrules")) as { items: { spec: { groups: { name: string; rules: Record<string, unknown>[] }[] } }[] }).items;
      expect(rule).toHaveLength(1);
      expect(((await list("servicemonitors")) as { items: unknown[] }).items).toHaveLength(1);
      // The rules of the function the sandbox's Prometheus got its own from (its file: the previous test), for this namespace.
      expect(rule[0]?.spec.groups).toEqual(alertRules({ namespace: "ui-exposure-portal", release: RELEASE, stack: "sandbox" }));
      const loaded = parseYaml(fs.readFileSync(path.join(folder(), "prometheus", "rules.yaml"), "utf8")) as { groups: unknown[] };
      expect(loaded.groups).toEqual(
        alertRules({ namespace: "platform-portal", release: RELEASE, stack: "sandbox" }).map((g) => ({
          ...g,
          rules: g.rules.map((r) => ({ ...r, for: "20s" })),
        })),
      );
    } finally {
      fs.writeFileSync(stackFile, original);
    }
  }, 900_000);

  it("sandbox down stops Prometheus with the rest: nothing of the sandbox is left", async () => {
    const record = JSON.parse(fs.readFileSync(path.join(folder(), "sandbox.json"), "utf8")) as { processes: { role: string; pid: number }[] };
    const prometheus = record.processes.find((p) => p.role === "prometheus");
    if (!prometheus) throw new Error("no prometheus in the sandbox's record");
    const down = await exposure(["sandbox", "down"]);
    expect(down.code, summary(down)).toBe(0);
    expect(down.stdout).toContain(`prometheus (${prometheus.pid})`);
    expect(fs.existsSync(`/proc/${prometheus.pid}`)).toBe(false);
    const left = fs
      .readdirSync("/proc")
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return fs.readFileSync(`/proc/${d}/cmdline`, "utf8").includes(clone);
        } catch {
          return false;
        }
      });
    expect(left).toEqual([]);
  }, 180_000);
});
