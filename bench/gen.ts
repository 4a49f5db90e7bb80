// Generated platforms of any size: a contract, the vendored Services it mirrors, the pods and
// nodes behind them. Deterministic, so two runs measure the same input.
import { stringify } from "yaml";
import {
  ENTRY_LABEL,
  type EndpointSlice,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  MIRRORS_ANNOTATION,
  type Node,
  type Pod,
  type Service,
} from "../src/core/kube/types";
import { node, service } from "../test/support/fixtures";

export interface GeneratedEntry {
  name: string;
  namespace: string;
  /** The vendored ClusterIP Service the entry mirrors (nodePort entries). */
  service?: string;
  /** A fixed hostPort held by one pod (in-house bricks). */
  hostPort?: number;
  exposed: boolean;
}

/** Ten entries per namespace; one in 20 on a hostPort (the 5th: even 9 entries have one); every 25th not exposed. */
const PER_NAMESPACE = 10;
const HOST_PORT_EVERY = 20;
const HOST_PORT_AT = 4;
const NOT_EXPOSED_EVERY = 25;
const HOST_PORT_BASE = 20000;

export function generateEntries(n: number, opts: { hostPorts?: boolean } = {}): GeneratedEntry[] {
  const withHostPorts = opts.hostPorts ?? true;
  return Array.from({ length: n }, (_, i) => {
    const name = `ui-${String(i).padStart(4, "0")}`;
    const namespace = `team-${String(Math.floor(i / PER_NAMESPACE)).padStart(3, "0")}`;
    if (withHostPorts && i % HOST_PORT_EVERY === HOST_PORT_AT) return { name, namespace, hostPort: HOST_PORT_BASE + i, exposed: true };
    return { name, namespace, service: `${name}-web`, exposed: i % NOT_EXPOSED_EVERY !== NOT_EXPOSED_EVERY - 1 };
  });
}

/** The contract as a team would write it (flow maps, one entry per block). */
export function contractYaml(entries: readonly GeneratedEntry[]): string {
  return stringify({
    version: 1,
    endpoints: entries.map((e) => ({
      name: e.name,
      description: `generated UI ${e.name}`,
      exposed: e.exposed,
      scheme: "http",
      ...(e.service ? { service: { namespace: e.namespace, name: e.service, port: "http" } } : {}),
      ...(e.hostPort ? { hostPort: { namespace: e.namespace, port: e.hostPort, podSelector: { app: e.name } } } : {}),
      probe: { path: "/healthz" },
    })),
  });
}

export const selectorOf = (e: GeneratedEntry) => ({ "app.kubernetes.io/name": e.name, "app.kubernetes.io/instance": e.namespace });

/** The chart's ClusterIP Service of a nodePort entry (port http: 80 -> 8080). */
export const vendoredService = (e: GeneratedEntry & { service: string }) =>
  service(e.namespace, e.service, { selector: selectorOf(e), labels: { "app.kubernetes.io/managed-by": "Helm" } });

export const hasService = (e: GeneratedEntry): e is GeneratedEntry & { service: string } => e.service !== undefined;
/** The entries that get a NodePort Service of ours. */
export const servedEntries = (entries: readonly GeneratedEntry[]) => entries.filter(hasService).filter((e) => e.exposed);

/** 127.0.0.x addresses only: nothing generated here may point outside loopback. */
export const BENCH_NODES = [
  { name: "bench-node-a", ip: "127.0.0.21", ready: true },
  { name: "bench-node-b", ip: "127.0.0.22", ready: true },
  { name: "bench-node-c", ip: "127.0.0.23", ready: false },
];

/**
 * One running, Ready pod per UI (the chart's workload) on one of the two Ready nodes, as the API
 * server holds it; hostPort bricks declare their port on it.
 */
export function uiPod(e: GeneratedEntry, i: number) {
  const node = BENCH_NODES[i % 2] as (typeof BENCH_NODES)[number];
  const podIP = `10.244.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `${e.name}-0`, namespace: e.namespace, labels: e.hostPort ? { app: e.name } : selectorOf(e) },
    spec: {
      nodeName: node.name,
      automountServiceAccountToken: false,
      containers: [
        { name: "ui", image: "example.invalid/ui:1", ports: [{ containerPort: 8080, name: "http", ...(e.hostPort ? { hostPort: e.hostPort } : {}) }] },
      ],
    },
    status: {
      phase: "Running",
      podIP,
      podIPs: [{ ip: podIP }],
      hostIP: node.ip,
      conditions: [
        { type: "Ready", status: "True" },
        { type: "ContainersReady", status: "True" },
      ],
    },
  };
}

/** Our NodePort Service for an entry, as `pulumi up` leaves it (same labels, selector and port name). */
export function managedService(e: GeneratedEntry & { service: string }, nodePort?: number): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: `${e.name}-nodeport`,
      namespace: e.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [ENTRY_LABEL]: e.name },
      annotations: { [MIRRORS_ANNOTATION]: `${e.namespace}/${e.service}` },
    },
    spec: {
      type: "NodePort",
      selector: selectorOf(e),
      externalTrafficPolicy: "Cluster",
      ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP", ...(nodePort ? { nodePort } : {}) }],
    },
  };
}

/** The EndpointSlice the controller keeps for one of our Services (one ready pod). */
function endpointSlice(e: GeneratedEntry, i: number): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${e.name}-nodeport-x1`, namespace: e.namespace, labels: { "kubernetes.io/service-name": `${e.name}-nodeport` } },
    endpoints: [{ addresses: [`10.244.${Math.floor(i / 250)}.${i % 250}`], conditions: { ready: true } }],
  };
}

/** The cluster after `up`: the snapshot plus our Services (nodePorts allocated) and their ready endpoints. */
export function afterUpObjects(entries: readonly GeneratedEntry[]): { services: Service[]; pods: Pod[]; slices: EndpointSlice[]; nodes: Node[] } {
  const served = servedEntries(entries);
  return {
    services: [...entries.filter(hasService).map(vendoredService), ...served.map((e, i) => managedService(e, 30000 + i))],
    pods: entries.map(uiPod),
    slices: served.map(endpointSlice),
    nodes: BENCH_NODES.map((n) => node(n.name, n.ip, n.ready)),
  };
}
