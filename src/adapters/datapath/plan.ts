// The address plan and names of one data-path run (no I/O). Every address comes from
// 198.18.0.0/15, reserved for network tests (RFC 2544): nothing on a real network uses it, and
// the namespaces that carry it have no route anywhere else.
//
//   operator ns   br0 198.18.L.1/24 ── vn<i> ═╗      (L = 0; with the host as operator, a free L,
//   node i ns     lan0 198.18.L.(10+i)/24 ════╝       the host's end 198.18.L.1, br0 198.18.L.2)
//                 (the nodes' InternalIPs; nodePorts answer here)
//                 vp<k> 198.19.i.1/32 ═══ pod k ns: eth0 198.19.i.(1+k)/32, default via 198.19.i.1
//   Services      ClusterIPs from 198.19.128.0/20 (kube-apiserver --service-cluster-ip-range)
import * as crypto from "node:crypto";

export const TEST_NET = "198.18.0.0/15";
/** The segment the nodes and the operator share (the "LAN" of a real cluster): 198.18.<lan>.0/24. */
export const lanCidr = (lan = 0) => `198.18.${lan}.0/24`;
export const LAN_CIDR = lanCidr(0);
/** The operator's address on the LAN: the operator namespace's bridge, or the host's end of its link. */
export const operatorIp = (lan = 0) => `198.18.${lan}.1`;
export const OPERATOR_IP = operatorIp(0);
/** Every pod address; node i owns 198.19.i.0/24. kube-proxy's --cluster-cidr. */
export const POD_CIDR = "198.19.0.0/17";
/** ClusterIPs (kube-apiserver --service-cluster-ip-range): inside the test range, outside the pods'. */
export const SERVICE_CIDR = "198.19.128.0/20";
export const MAX_NODES = 100;
export const MAX_PODS_PER_NODE = 250;

/** Prefix of every namespace name of a run: `uxdp` and 8 hex digits, unique per run. */
export const PREFIX_PATTERN = /^uxdp[0-9a-f]{8}$/;

export function newPrefix(): string {
  return `uxdp${crypto.randomBytes(4).toString("hex")}`;
}

export interface NodePlan {
  /** The Kubernetes Node name (kube-proxy --hostname-override). */
  name: string;
  index: number;
  netns: string;
  /** The node's InternalIP, on the LAN. */
  ip: string;
  /** The pods' gateway on this node (its end of every pod veth). */
  gateway: string;
  podCidr: string;
}

export const operatorNetns = (prefix: string) => `${prefix}-op`;
/** The host's end of the operator link (an interface name: at most 15 characters). */
export const hostLink = (prefix: string) => `${prefix}h`;
export const nodeNetns = (prefix: string, index: number) => `${prefix}-n${index}`;
export const podNetns = (prefix: string, node: number, pod: number) => `${prefix}-n${node}p${pod}`;

/** `lan`: the third octet of the LAN (0..254), so that runs routed from the host never share one. */
export function planNodes(prefix: string, names: readonly string[], lan = 0): NodePlan[] {
  if (!Number.isInteger(lan) || lan < 0 || lan > 254) throw new Error(`data path: bad LAN number ${lan}`);
  if (!PREFIX_PATTERN.test(prefix)) throw new Error(`data path: bad run prefix '${prefix}'`);
  if (names.length === 0 || names.length > MAX_NODES) throw new Error(`data path: between 1 and ${MAX_NODES} nodes, not ${names.length}`);
  if (new Set(names).size !== names.length) throw new Error("data path: node names must be unique");
  return names.map((name, i) => {
    const index = i + 1;
    return {
      name,
      index,
      netns: nodeNetns(prefix, index),
      ip: `198.18.${lan}.${10 + index}`,
      gateway: `198.19.${index}.1`,
      podCidr: `198.19.${index}.0/24`,
    };
  });
}

/** The address of pod `k` (1-based) on a node. */
export function podAddress(node: NodePlan, k: number): string {
  if (!Number.isInteger(k) || k < 1 || k > MAX_PODS_PER_NODE) throw new Error(`data path: node ${node.name} holds at most ${MAX_PODS_PER_NODE} pods`);
  return `198.19.${node.index}.${1 + k}`;
}
