// The platform of test/e2e/datapath.e2e.ts (and of the data-path bench): a loopback control
// plane, two nodes and their pods as network namespaces with kube-proxy (src/adapters/datapath),
// the vendored UIs with their upstream charts' Service and pod shapes, and a sandbox project.
import * as fs from "node:fs";
import * as path from "node:path";
import { stringify } from "yaml";
import { cleanupStaleRuns, DataPath, type DataPathTools } from "../../src/adapters/datapath/datapath";
import { createPod, type PodPort, writeNode, writePodStatus } from "../../src/adapters/datapath/kubelet";
import { SERVICE_CIDR } from "../../src/adapters/datapath/plan";
import type { PodListener } from "../../src/adapters/datapath/pod-server";
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
  pod: PodShape;
}

export const UIS: Ui[] = [
  {
    // Argo CD: `http` and `https` both to the server's 8080 (numeric).
    entry: "argocd",
    scheme: "http",
    namespace: "argocd",
    service: "argocd-server",
    port: "http",
    selector: { "app.kubernetes.io/name": "argocd-server" },
    ports: [
      { name: "http", port: 80, targetPort: 8080 },
      { name: "https", port: 443, targetPort: 8080 },
    ],
    pod: {
      name: "argocd-server-0",
      node: "dp-node-1",
      container: "server",
      ports: [{ name: "server", containerPort: 8080 }],
      listeners: [{ port: 8080, tls: false }],
    },
  },
  {
    // Grafana of kube-prometheus-stack: a named targetPort.
    entry: "grafana",
    scheme: "http",
    namespace: "monitoring",
    service: "kube-prometheus-stack-grafana",
    port: "http-web",
    selector: { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "kube-prometheus-stack" },
    ports: [{ name: "http-web", port: 80, targetPort: "grafana" }],
    pod: {
      name: "grafana-0",
      node: "dp-node-2",
      container: "grafana",
      ports: [{ name: "grafana", containerPort: 3000 }],
      listeners: [{ port: 3000, tls: false }],
    },
  },
  {
    // Gitea: headless (clusterIP None), targetPort unset.
    entry: "gitea",
    scheme: "http",
    namespace: "gitea",
    service: "gitea-http",
    port: "http",
    headless: true,
    selector: { "app.kubernetes.io/name": "gitea", "app.kubernetes.io/instance": "gitea" },
    ports: [{ name: "http", port: 3000 }],
    pod: {
      name: "gitea-0",
      node: "dp-node-1",
      container: "gitea",
      ports: [
        { name: "http", containerPort: 3000 },
        { name: "ssh", containerPort: 2222 },
      ],
      listeners: [{ port: 3000, tls: false }],
    },
  },
  {
    // Dagster's webserver: targetPort unset on port 80.
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
  },
  {
    // MLflow: a named targetPort.
    entry: "mlflow",
    scheme: "http",
    namespace: "mlflow",
    service: "mlflow",
    port: "http",
    selector: { "app.kubernetes.io/name": "mlflow" },
    ports: [{ name: "http", port: 5000, targetPort: "mlflow" }],
    pod: {
      name: "mlflow-0",
      node: "dp-node-1",
      container: "mlflow",
      ports: [{ name: "mlflow", containerPort: 5000 }],
      listeners: [{ port: 5000, tls: false }],
    },
  },
  {
    // The Kubernetes Dashboard's Kong proxy: https with a self-signed certificate.
    entry: "k8s-dashboard",
    scheme: "https",
    namespace: "kubernetes-dashboard",
    service: "kubernetes-dashboard-kong-proxy",
    port: "kong-proxy-tls",
    selector: { "app.kubernetes.io/name": "kong", "app.kubernetes.io/instance": "kubernetes-dashboard" },
    ports: [{ name: "kong-proxy-tls", port: 443, targetPort: 8443 }],
    pod: { name: "kong-0", node: "dp-node-2", container: "proxy", ports: [{ name: "proxy-tls", containerPort: 8443 }], listeners: [{ port: 8443, tls: true }] },
  },
];

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
  sandbox: Sandbox;
  timings: Record<string, number>;
  /** Who answered a URL (from the operator's namespace unless `from`): the pod's name, or what went wrong. */
  who(url: string, from?: string): Promise<string>;
  /** Polls until the URL's answer is `expected` (kube-proxy applies a change within a second or so); returns the last answer. */
  answers(url: string, expected: string, opts?: { from?: string; timeoutMs?: number }): Promise<string>;
  outputs(): { urls: Record<string, string>; node: { name: string; address: string } };
  startPod(shape: PodShape & { namespace: string; labels: Record<string, string> }): Promise<void>;
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
  const cluster = await startCluster(bin, { E2E_SERVICE_CIDR: SERVICE_CIDR });
  let dp: DataPath | undefined;
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
        containers: [{ name: shape.container, ports: shape.ports }],
      });
      await d.addPod({ pod: podId(shape.namespace, shape.name), node: shape.node, listeners: shape.listeners });
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
    await d.addHostPorts(podId(LINEAGE.namespace, LINEAGE.pod), [{ hostPort: LINEAGE.port, containerPort: LINEAGE.port }]);
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
        await d.stop();
        stopPlatform({ cluster: c, sandbox: s });
      },
    };
  } catch (err) {
    await dp?.stop();
    stopPlatform({ cluster, ...(sandbox ? { sandbox } : {}) });
    throw err;
  }
}
