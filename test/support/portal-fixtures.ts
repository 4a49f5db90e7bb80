// Shared by the portal tests: a small contract, a recorded cluster (plain objects, as the API
// returns them) and an in-memory ClusterReader that counts its list calls and can fail.
// Fake nodes use 127.0.0.x InternalIPs: nothing here ever reaches a non-loopback address.
import { parseContract } from "../../src/core/contract/parse";
import type { Contract } from "../../src/core/contract/schema";
import { UserError } from "../../src/core/errors";
import { type ClusterReader, inScope, type ListScope, labelSelector } from "../../src/core/kube/cluster";
import { ENTRY_LABEL, type EndpointSlice, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Node, type Pod, type Service } from "../../src/core/kube/types";
import { readObservedCluster } from "../../src/core/observe";
import { buildPortalView, type PortalSource, type PortalView, wantedEntries } from "../../src/core/portal/view";

/** The description carries markup and quotes: the page must show it as text. */
export const HOSTILE_DESCRIPTION = `Argo CD <script>alert("x")</script> & 'friends'`;

export const PORTAL_TEST_CONTRACT = `version: 1
endpoints:
  - name: argocd
    description: ${JSON.stringify(HOSTILE_DESCRIPTION)}
    exposed: true
    scheme: http
    service: { namespace: argocd, name: argocd-server, port: http }
  - name: grafana
    description: Grafana
    exposed: true
    scheme: http
    service: { namespace: monitoring, name: kube-prometheus-stack-grafana, port: http-web }
  - name: gitea
    exposed: true
    scheme: http
    service: { namespace: gitea, name: gitea-http, port: http }
  - name: postgres
    description: Platform PostgreSQL
    scheme: postgresql
    service: { namespace: data, name: postgres, port: 5432 }
`;

export const portalContract = (): Contract => parseContract(PORTAL_TEST_CONTRACT, "portal-test.yaml");

export const NODE_IP = "127.0.0.2";

export function readyNode(name: string, ip: string, ready = true): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    status: { addresses: [{ type: "InternalIP", address: ip }], conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

function vendored(namespace: string, name: string, selector: Record<string, string>, portName: string, targetPort: number): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace },
    spec: { type: "ClusterIP", selector, ports: [{ name: portName, port: 80, targetPort, protocol: "TCP" }] },
  };
}

function ours(namespace: string, entry: string, selector: Record<string, string>, targetPort: number, nodePort: number): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: `${entry}-nodeport`, namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [ENTRY_LABEL]: entry } },
    spec: {
      type: "NodePort",
      selector,
      externalTrafficPolicy: "Cluster",
      ports: [{ name: "http", port: 80, targetPort, protocol: "TCP", nodePort }],
    },
  };
}

function slice(namespace: string, service: string, ready: boolean[]): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${service}-x1`, namespace, labels: { "kubernetes.io/service-name": service } },
    endpoints: ready.map((r, i) => ({ addresses: [`10.244.0.${i + 10}`], conditions: { ready: r } })),
  };
}

export interface RecordedCluster {
  services: Service[];
  endpointSlices: EndpointSlice[];
  nodes: Node[];
  pods: Pod[];
}

/**
 * argocd: MATCH on `nodePorts.argocd`; grafana: DRIFT (our Service selects other pods than
 * the vendored one), on `nodePorts.grafana`; gitea: ABSENT (never published); postgres: not
 * exposed. The nodePorts are parameters so the browser test can point them at live servers.
 */
export function recordedCluster(nodePorts: { argocd: number; grafana: number } = { argocd: 31358, grafana: 31088 }): RecordedCluster {
  const argoSel = { "app.kubernetes.io/name": "argocd-server" };
  const grafanaSel = { "app.kubernetes.io/name": "grafana" };
  return {
    nodes: [readyNode("bench", NODE_IP)],
    services: [
      vendored("argocd", "argocd-server", argoSel, "http", 8080),
      ours("argocd", "argocd", argoSel, 8080, nodePorts.argocd),
      vendored("monitoring", "kube-prometheus-stack-grafana", grafanaSel, "http-web", 3000),
      ours("monitoring", "grafana", { "app.kubernetes.io/name": "grafana-old" }, 3000, nodePorts.grafana),
      vendored("gitea", "gitea-http", { app: "gitea" }, "http", 3000),
      vendored("data", "postgres", { app: "postgres" }, "postgresql", 5432),
    ],
    endpointSlices: [slice("argocd", "argocd-nodeport", [true, true]), slice("monitoring", "grafana-nodeport", [true])],
    pods: [],
  };
}

export const GRAFANA_DRIFT_REASON = "selector differs from the vendored Service monitoring/kube-prometheus-stack-grafana";

/** A ClusterReader over plain objects that can be changed between page loads, or made to fail. */
export class MemoryCluster implements ClusterReader {
  readonly source = "recorded cluster (test)";
  calls = { services: 0, endpointSlices: 0, nodes: 0, pods: 0, other: 0 };
  /** The scope of each list call ("services ns=argocd"), in order. */
  scopes: string[] = [];
  /** When set, every call rejects with it (an unreachable API server). */
  failure: Error | undefined;

  /** The cluster's name (/metrics' `cluster` label), as a kube context names it. */
  constructor(
    public data: RecordedCluster,
    readonly name = "lima-bench",
  ) {}

  get total() {
    return Object.values(this.calls).reduce((a, b) => a + b, 0);
  }

  private async answer<T>(kind: keyof MemoryCluster["calls"], value: T): Promise<T> {
    this.calls[kind]++;
    if (this.failure) throw this.failure;
    return structuredClone(value);
  }
  /** The items in `scope`, as the API server filters and the reader keeps them. */
  private scoped<T extends { metadata: { namespace?: string; labels?: Record<string, string> } }>(
    kind: "services" | "endpointSlices" | "pods",
    items: T[],
    scope: ListScope<T> = {},
  ) {
    this.scopes.push(`${kind}${scope.namespace !== undefined ? ` ns=${scope.namespace}` : ""}${scope.labels ? ` ${labelSelector(scope.labels)}` : ""}`);
    return this.answer(kind, items).then((all) => all.filter((o) => inScope(scope, o)));
  }
  listServices(scope?: ListScope<Service>) {
    return this.scoped("services", this.data.services, scope);
  }
  listEndpointSlices(scope?: ListScope<EndpointSlice>) {
    return this.scoped("endpointSlices", this.data.endpointSlices, scope);
  }
  listNodes() {
    return this.answer("nodes", this.data.nodes);
  }
  listPods(scope?: ListScope<Pod>) {
    return this.scoped("pods", this.data.pods, scope);
  }
  getConfigMap() {
    return this.answer("other", undefined);
  }
  listSecrets() {
    return this.answer("other", []);
  }
  listCustom() {
    return this.answer("other", []);
  }
}

/** What LiveClusterReader throws when the API server does not answer. */
export const unreachable = () =>
  new UserError(
    "cluster unreachable: context bench (https://127.0.0.1:6443): ECONNREFUSED while reading services; check the kube context and that the API server is up",
  );

/** The contract of the in-cluster portal e2e files: three exposed UIs (one the portal) and a data endpoint. */
export const PORTAL_E2E_CONTRACT = `version: 1
endpoints:
  - name: argocd
    description: Argo CD
    group: Delivery
    exposed: true
    service: { namespace: argocd, name: argocd-server, port: http }
    probe: { path: /healthz, expectStatus: [200] }
  - name: grafana
    description: Grafana
    group: Observability
    exposed: true
    service: { namespace: monitoring, name: kube-prometheus-stack-grafana, port: http-web }
    probe: { path: /api/health }
  - name: portal
    description: Platform portal
    exposed: true
    service: { namespace: platform-portal, name: portal, port: http }
    probe: { path: /healthz, expectStatus: [200] }
  - name: postgres
    description: Platform PostgreSQL
    group: Data
    scheme: postgresql
    service: { namespace: data, name: postgres, port: 5432 }
`;

/**
 * One page load without any sharing or probing: one list call per kind (readObservedCluster),
 * then the view. The server shares reads between loads (src/portal/shared-read.ts) and adds
 * reachability; the tests compare its answers with this plain path.
 */
export async function observePortal(src: PortalSource & { cluster: ClusterReader }): Promise<PortalView> {
  const cluster = await readObservedCluster(src.cluster, wantedEntries(src));
  const now = src.now?.() ?? new Date();
  return buildPortalView({ ...src, source: src.cluster.source }, cluster, { observedAt: now, generatedAt: now });
}
