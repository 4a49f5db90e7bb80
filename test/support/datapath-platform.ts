// The platform of test/e2e/datapath.e2e.ts (and of the data-path bench): a loopback control
// plane (with kube-scheduler), two nodes and their pods as network namespaces with kube-proxy
// (src/adapters/datapath), the node agent that runs every pod bound to those nodes (the same one
// as the sandbox's), the vendored UIs with their upstream charts' Service and pod shapes, and a
// sandbox project.
import * as fs from "node:fs";
import * as path from "node:path";
import { stringify } from "yaml";
import { cleanupStaleRuns, DataPath, type DataPathTools } from "../../src/adapters/datapath/datapath";
import { createPod, NodeAgent, type PodPort, writeNode, writePodStatus } from "../../src/adapters/datapath/kubelet";
import { SERVICE_CIDR } from "../../src/adapters/datapath/plan";
import type { PodListener } from "../../src/adapters/datapath/pod-server";
import { type ChartFixture, readAllChartFixtures } from "./chart-fixtures";
import { type Cluster, makeSandbox, providerVersions, type Sandbox, setCiliumConfig, startCluster, stopPlatform } from "./harness";

export const NODES = ["dp-node-1", "dp-node-2"] as const;
export type NodeName = (typeof NODES)[number];

export interface PodShape {
  name: string;
  node: NodeName;
  container: string;
  ports: PodPort[];
  listeners: PodListener[];
}

/**
 * The vendored UIs, with the Service and pod shapes of their upstream charts: numeric, named and
 * unset targetPorts, a headless Service, one Service with two ports to one targetPort, https.
 */
export interface Ui {
  entry: string;
  scheme: "http" | "https";
  namespace: string;
  service: string;
  port: string;
  selector: Record<string, string>;
  headless?: boolean;
  ports: { name: string; port: number; targetPort?: number | string }[];
  /** The chart and version its shapes come from ("argo-cd 10.1.1"). */
  chart?: string;
  pod: PodShape;
}

/** Where each entry's vendored Service comes from: the rendered upstream chart (test/data/charts), and the node its pod runs on. */
const FROM_CHARTS: readonly { entry: string; scheme: "http" | "https"; namespace: string; service: string; port: string; node: NodeName }[] = [
  // Argo CD: `http` and `https` both to the server's 8080 (numeric).
  { entry: "argocd", scheme: "http", namespace: "argocd", service: "argocd-server", port: "http", node: "dp-node-1" },
  // Grafana of kube-prometheus-stack: a named targetPort (grafana -> 3000).
  { entry: "grafana", scheme: "http", namespace: "monitoring", service: "kube-prometheus-stack-grafana", port: "http-web", node: "dp-node-2" },
  // Gitea: headless (clusterIP None), targetPort unset.
  { entry: "gitea", scheme: "http", namespace: "gitea", service: "gitea-http", port: "http", node: "dp-node-1" },
  // MLflow and Marquez: named targetPorts.
  { entry: "mlflow", scheme: "http", namespace: "mlflow", service: "mlflow", port: "http", node: "dp-node-1" },
  { entry: "marquez-web", scheme: "http", namespace: "marquez", service: "marquez-web", port: "http", node: "dp-node-2" },
  // The Kubernetes Dashboard's Kong proxy: https with a self-signed certificate.
  {
    entry: "k8s-dashboard",
    scheme: "https",
    namespace: "kubernetes-dashboard",
    service: "kubernetes-dashboard-kong-proxy",
    port: "kong-proxy-tls",
    node: "dp-node-2",
  },
];

/** A vendored UI from its chart's rendered Service and the pod template of the workload it selects. */
function fromChart(f: (typeof FROM_CHARTS)[number], charts: readonly ChartFixture[]): Ui {
  for (const chart of charts) {
    const svc = chart.services.find((x) => x.metadata?.namespace === f.namespace && x.metadata?.name === f.service);
    if (!svc) continue;
    const selector = svc.spec?.selector ?? {};
    const workload = chart.workloads.find((w) => Object.entries(selector).every(([k, v]) => w.spec.template.metadata.labels?.[k] === v));
    const container = workload?.spec.template.spec.containers.find((c) => c.ports?.length);
    if (!workload || !container?.ports) throw new Error(`${chart.chart}: no workload with ports behind ${f.namespace}/${f.service}`);
    const ports = (svc.spec?.ports ?? []).map((p) => ({
      name: p.name ?? "",
      port: p.port,
      ...(p.targetPort !== undefined ? { targetPort: p.targetPort } : {}),
    }));
    // The pod serves what the Service's ports resolve to: a number, a named containerPort, or the port itself.
    const targets = new Set(
      ports.map((p) => (typeof p.targetPort === "string" ? container.ports?.find((c) => c.name === p.targetPort)?.containerPort : (p.targetPort ?? p.port))),
    );
    return {
      entry: f.entry,
      scheme: f.scheme,
      namespace: f.namespace,
      service: f.service,
      port: f.port,
      selector,
      ...(svc.spec?.clusterIP === "None" ? { headless: true } : {}),
      ports,
      chart: chart.chart,
      pod: {
        name: `${workload.metadata.name}-0`,
        node: f.node,
        container: container.name,
        ports: container.ports
          .filter((p) => (p.protocol ?? "TCP") === "TCP")
          .map((p) => ({ ...(p.name ? { name: p.name } : {}), containerPort: p.containerPort })),
        listeners: [...targets].filter((t): t is number => typeof t === "number").map((port) => ({ port, tls: f.scheme === "https" })),
      },
    };
  }
  throw new Error(`no rendered chart in test/data/charts holds the Service ${f.namespace}/${f.service}`);
}

/** Dagster's webserver (no rendered chart yet): targetPort unset on port 80, as its chart has it. */
const DAGSTER: Ui = {
  entry: "dagster",
  scheme: "http",
  namespace: "dagster",
  service: "dagster-dagster-webserver",
  port: "http",
  selector: { "app.kubernetes.io/name": "dagster", component: "dagster-webserver" },
  ports: [{ name: "http", port: 80 }],
  pod: {
    name: "dagster-webserver-0",
    node: "dp-node-2",
    container: "dagster",
    ports: [{ name: "http", containerPort: 80 }],
    listeners: [{ port: 80, tls: false }],
  },
};

export const UIS: Ui[] = (() => {
  const charts = readAllChartFixtures();
  return [...FROM_CHARTS.map((f) => fromChart(f, charts)), DAGSTER];
})();

/** An in-house brick holding a hostPort on its node (through the portmap CNI plugin). */
export const LINEAGE = { entry: "lineage-api", namespace: "tools", pod: "lineage-api-0", node: "dp-node-1" as NodeName, port: 8090 };

export const CONTRACT = {
  version: 1,
  endpoints: [
    ...UIS.map((u) => ({ name: u.entry, exposed: true, scheme: u.scheme, service: { namespace: u.namespace, name: u.service, port: u.port } })),
    {
      name: LINEAGE.entry,
      exposed: true,
      scheme: "http",
      hostPort: { namespace: LINEAGE.namespace, port: LINEAGE.port, podSelector: { "app.kubernetes.io/name": "lineage-api" } },
    },
  ],
};

export function stack(admission: "off" | "deny" = "off") {
  return {
    "kubernetes:context": "e2e",
    "ui-exposure:contract": "contract/e2e-datapath.yaml",
    "ui-exposure:cilium": { mode: "cohabit" },
    "ui-exposure:admission": { mode: admission },
  };
}

export const podId = (namespace: string, name: string) => `${namespace}/${name}`;
export const uiOf = (entry: string) => {
  const u = UIS.find((x) => x.entry === entry);
  if (!u) throw new Error(`no vendored UI ${entry}`);
  return u;
};
/** Which pod each published URL must answer from, at the start. */
export const expectedAnswers = (): Record<string, string> => ({
  ...Object.fromEntries(UIS.map((u) => [u.entry, podId(u.namespace, u.pod.name)])),
  [LINEAGE.entry]: podId(LINEAGE.namespace, LINEAGE.pod),
});
export const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

export interface DataPathPlatform {
  cluster: Cluster;
  dp: DataPath;
  /** Runs every pod bound to the data path's nodes (by spec.nodeName or by the scheduler: Deployments work too). */
  agent: NodeAgent;
  sandbox: Sandbox;
  timings: Record<string, number>;
  /** Who answered a URL (from the operator's namespace unless `from`): the pod's name, or what went wrong. */
  who(url: string, from?: string): Promise<string>;
  /** Polls until the URL's answer is `expected` (kube-proxy applies a change within a second or so); returns the last answer. */
  answers(url: string, expected: string, opts?: { from?: string; timeoutMs?: number }): Promise<string>;
  outputs(): { urls: Record<string, string>; node: { name: string; address: string } };
  /** Creates the Pod bound to its node and waits until the node agent runs it (Ready). */
  startPod(shape: PodShape & { namespace: string; labels: Record<string, string> }): Promise<void>;
  /** Waits until the node agent runs the pod `namespace/name` (a Deployment's, say); its network. */
  running(namespace: string, name: string, timeoutMs?: number): Promise<void>;
  markReady(namespace: string, name: string, ready: boolean): Promise<void>;
  stop(): Promise<void>;
}

async function ensureNamespace(c: Cluster, ns: string) {
  try {
    await c.core.createNamespace({ body: { metadata: { name: ns } } });
    await c.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "default" } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}

/** Everything up to the first `pulumi up`; on failure, whatever was started is stopped again. */
export async function startDataPathPlatform(bin: string, tools: DataPathTools): Promise<DataPathPlatform> {
  const timings: Record<string, number> = {};
  const t0 = Date.now();
  const stale = await cleanupStaleRuns(tools);
  if (stale.length) console.warn(`data path: removed what earlier runs left: ${stale.join(", ")}`);
  const cluster = await startCluster(bin, { E2E_SERVICE_CIDR: SERVICE_CIDR, E2E_SCHEDULER: "1" });
  let dp: DataPath | undefined;
  let agent: NodeAgent | undefined;
  let sandbox: Sandbox | undefined;
  try {
    const c = cluster;
    dp = await DataPath.start({
      nodes: NODES,
      kubeconfig: c.kubeconfig,
      apiPort: Number(new URL(c.server).port),
      tools,
      tls: { certFile: path.join(c.dir, "pki/apiserver.crt"), keyFile: path.join(c.dir, "pki/apiserver.key") },
      say: (l) => console.log(l),
      onNodes: async (nodes) => {
        for (const n of nodes) await writeNode(c.core, { name: n.name, ip: n.ip, ready: true });
      },
    });
    const d = dp;
    timings.dataPathStartMs = Date.now() - t0;
    const kc = new c.lib.KubeConfig();
    kc.loadFromFile(c.kubeconfig);
    const a = new NodeAgent(
      c.lib,
      kc,
      d.nodes.map((n) => ({ name: n.name, ip: n.ip })),
      d.runtime(),
      { say: (l) => console.log(l), resyncMs: 2000 },
    );
    agent = a;
    await a.start();
    const running = async (namespace: string, name: string, timeoutMs = 60_000) => {
      const end = Date.now() + timeoutMs;
      while (!a.runningPods().includes(podId(namespace, name))) {
        if (Date.now() > end) throw new Error(`the node agent did not run ${podId(namespace, name)} within ${timeoutMs / 1000} s`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };

    const who = async (url: string, from?: string) => {
      const a = await d.request(url, { ...(from ? { from } : {}), timeoutMs: 2000 });
      if ("error" in a) return a.error;
      return a.status === 200 ? a.body.trim() : `HTTP ${a.status}: ${a.body.slice(0, 100)}`;
    };
    const startPod = async (shape: PodShape & { namespace: string; labels: Record<string, string> }) => {
      await createPod(c.core, {
        namespace: shape.namespace,
        name: shape.name,
        labels: shape.labels,
        node: shape.node,
        containers: [{ name: shape.container, ports: shape.ports, listeners: shape.listeners }],
      });
      a.kick();
      await running(shape.namespace, shape.name);
    };
    const markReady = async (namespace: string, name: string, ready: boolean) => {
      const net = d.pod(podId(namespace, name));
      await writePodStatus(c.core, { namespace, name }, { podIP: net.ip, hostIP: net.node.ip, ready });
    };

    // The charts' objects: vendored Services, then their pods, Ready once their server answers.
    for (const ns of new Set([...UIS.map((u) => u.namespace), LINEAGE.namespace])) await ensureNamespace(c, ns);
    for (const u of UIS) {
      await c.core.createNamespacedService({
        namespace: u.namespace,
        body: {
          metadata: { name: u.service, labels: { "app.kubernetes.io/managed-by": "Helm" } },
          spec: {
            type: "ClusterIP",
            ...(u.headless ? { clusterIP: "None" } : {}),
            selector: u.selector,
            ports: u.ports.map((p) => ({
              name: p.name,
              port: p.port,
              protocol: "TCP",
              ...(p.targetPort !== undefined ? { targetPort: p.targetPort as never } : {}),
            })),
          },
        },
      });
    }
    await Promise.all(
      UIS.map(async (u) => {
        await startPod({ ...u.pod, namespace: u.namespace, labels: u.selector });
        await markReady(u.namespace, u.pod.name, true);
      }),
    );
    await startPod({
      name: LINEAGE.pod,
      namespace: LINEAGE.namespace,
      labels: { "app.kubernetes.io/name": "lineage-api" },
      node: LINEAGE.node,
      container: "api",
      ports: [{ name: "http", containerPort: LINEAGE.port, hostPort: LINEAGE.port }],
      listeners: [{ port: LINEAGE.port, tls: false }],
    });
    await markReady(LINEAGE.namespace, LINEAGE.pod, true);
    await setCiliumConfig(c, "true");
    timings.platformReadyMs = Date.now() - t0;

    const s = makeSandbox(bin, c, providerVersions());
    sandbox = s;
    fs.writeFileSync(path.join(s.dir, "contract/e2e-datapath.yaml"), stringify(CONTRACT));
    s.writeStack(stack());
    return {
      cluster: c,
      dp: d,
      agent: a,
      running,
      sandbox: s,
      timings,
      who,
      answers: async (url, expected, opts = {}) => {
        const end = Date.now() + (opts.timeoutMs ?? 30_000);
        for (;;) {
          const got = await who(url, opts.from);
          if (got === expected || Date.now() > end) return got;
          await new Promise((r) => setTimeout(r, 200));
        }
      },
      outputs: () => {
        const out = s.pulumi(["stack", "output", "--json"]);
        if (out.code !== 0) throw new Error(summary(out));
        return JSON.parse(out.stdout);
      },
      startPod,
      markReady,
      stop: async () => {
        await a.stop();
        await d.stop();
        stopPlatform({ cluster: c, sandbox: s });
      },
    };
  } catch (err) {
    await agent?.stop();
    await dp?.stop();
    stopPlatform({ cluster, ...(sandbox ? { sandbox } : {}) });
    throw err;
  }
}
