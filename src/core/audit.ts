import type { Contract, Endpoint, HostPortExposure } from "./contract/schema";
import { isHostPortEntry, isNodePortEntry } from "./contract/schema";
import { ENTRY_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Pod, type Service } from "./kube/types";
import { ownershipProblem, type PublishedEndpoints } from "./observe";
import { ourServiceName } from "./plan";
import type { Allowlist } from "./settings";

/** Service types that open a port on every node (NodePort) or an address outside it (LoadBalancer). */
const EXPOSING_SERVICE_TYPES = new Set(["NodePort", "LoadBalancer"]);

/** One thing that makes the cluster reachable from outside, whoever declared it. */
export interface Exposure {
  kind: "NodePort" | "LoadBalancer" | "hostPort";
  namespace: string;
  /** Service name, or the pod holding the hostPort. */
  name: string;
  /** "http 80->31001", "8090/TCP"...: what an operator needs to find it. */
  ports: string;
  /** LoadBalancer addresses (LB-IPAM), when the Service has some. */
  addresses?: string[];
  /** The node of a hostPort pod. */
  node?: string;
}

export interface DeclaredExposure extends Exposure {
  /** "contract entry 'argocd'" or "allowlist 'argocd/cilium-gateway-*'". */
  declaredBy: string;
  /** Why the stack allows it: the allowlist item's `reason`, when it gives one. */
  reason?: string;
}

export interface UndeclaredExposure extends Exposure {
  /** Why it is drift, and what to do. */
  reason: string;
}

export interface AuditResult {
  declared: DeclaredExposure[];
  /** Drift: exposure that neither the contract (for this stack) nor the allowlist declares. */
  undeclared: UndeclaredExposure[];
  /** Allowlist patterns that matched nothing (stale after a cleanup, or a typo). Not drift. */
  unusedAllowlist: string[];
}

export interface AuditInput {
  contract: Contract;
  /** The exposed entries this stack publishes (an entry another stack publishes is not ours). */
  selected: readonly string[];
  allowlist: Allowlist;
  /** Every Service of the cluster (one list call). */
  services: readonly Service[];
  /** Every Pod of the cluster (one list call). */
  pods: readonly Pod[];
  /**
   * The `endpoints` output of the last `up`, when it could be read: a Service at an entry's
   * name that this stack did not create (another uid) is then undeclared too.
   */
  published?: PublishedEndpoints;
}

/**
 * Allowlist matching: "namespace/name" matches exactly, "namespace/prefix*" matches every
 * name starting with the prefix. The wildcard is only a suffix: names cannot contain '*'.
 */
export function matchesPattern(pattern: string, value: string): boolean {
  return pattern.endsWith("*") ? value.startsWith(pattern.slice(0, -1)) : pattern === value;
}

/** Splits a hostPort allowlist entry "namespace/pod-prefix*:port". */
function parseHostPortPattern(pattern: string): { target: string; port: number } {
  const colon = pattern.lastIndexOf(":");
  return { target: pattern.slice(0, colon), port: Number(pattern.slice(colon + 1)) };
}

function allowlisted(allowlist: Allowlist, pattern: string): { declaredBy: string; reason?: string } {
  const reason = allowlist.reasons?.[pattern];
  return { declaredBy: `allowlist '${pattern}'`, ...(reason ? { reason } : {}) };
}

const labelsMatch = (labels: Record<string, string> | undefined, selector: Record<string, string> | undefined) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

function describeServicePorts(svc: Service): string {
  return (svc.spec?.ports ?? []).map((p) => `${p.name ? `${p.name} ` : ""}${p.port}->${p.nodePort ?? "no nodePort"}`).join(", ") || "no ports";
}

/** Pods that can no longer hold a port: their containers have stopped for good. */
const isFinished = (pod: Pod) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";

/**
 * The cluster-wide exposure audit behind `exposure drift`: every NodePort or LoadBalancer
 * Service and every container hostPort must be declared by the contract (our Services for
 * the entries this stack publishes, its hostPort entries) or by the stack's allowlist.
 * Pure: the caller lists Services and Pods once each.
 */
export function auditExposure(input: AuditInput): AuditResult {
  const selected = new Set(input.selected);
  const entries = input.contract.endpoints.filter((e) => selected.has(e.name));
  // Our Service of each published NodePort entry, by "namespace/name".
  const ourServices = new Map(entries.filter(isNodePortEntry).map((e) => [`${e.service.namespace}/${ourServiceName(e.name)}`, e.name]));
  const entryServices = new Map([...ourServices].map(([where, entry]) => [entry, where]));
  // Contract hostPort entries by "namespace/port", in contract order: each pod port looks up
  // its few candidates instead of scanning every entry (pods × entries grows quadratically).
  const hostPortEntries = new Map<string, (Endpoint & { hostPort: HostPortExposure })[]>();
  for (const e of entries.filter(isHostPortEntry)) {
    const k = `${e.hostPort.namespace}/${e.hostPort.port}`;
    const list = hostPortEntries.get(k);
    if (list) list.push(e);
    else hostPortEntries.set(k, [e]);
  }
  const usedPatterns = new Set<string>();
  const declared: DeclaredExposure[] = [];
  const undeclared: UndeclaredExposure[] = [];

  for (const svc of input.services) {
    const type = svc.spec?.type ?? "ClusterIP";
    if (!EXPOSING_SERVICE_TYPES.has(type)) continue;
    const namespace = svc.metadata.namespace ?? "default";
    const where = `${namespace}/${svc.metadata.name}`;
    const addresses = (svc.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip ? [i.ip] : i.hostname ? [i.hostname] : []));
    const exposure: Exposure = {
      kind: type as "NodePort" | "LoadBalancer",
      namespace,
      name: svc.metadata.name,
      ports: describeServicePorts(svc),
      ...(addresses.length ? { addresses } : {}),
    };
    const entry = ourServices.get(where);
    const notOurs = entry && input.published ? ownershipProblem(where, svc.metadata.uid, input.published[entry]) : undefined;
    if (entry && !notOurs) {
      declared.push({ ...exposure, declaredBy: `contract entry '${entry}'` });
      continue;
    }
    if (notOurs) {
      undeclared.push({ ...exposure, reason: `named like contract entry '${entry}', but ${notOurs}` });
      continue;
    }
    const pattern = input.allowlist.services.find((p) => matchesPattern(p, where));
    if (pattern) {
      usedPatterns.add(pattern);
      declared.push({ ...exposure, ...allowlisted(input.allowlist, pattern) });
      continue;
    }
    const managedFor = svc.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE ? svc.metadata.labels?.[ENTRY_LABEL] : undefined;
    const ownName = managedFor ? entryServices.get(managedFor) : undefined;
    undeclared.push({
      ...exposure,
      reason: ownName
        ? // Labels are copied in one line of YAML: only `<namespace>/<entry>-nodeport` created by this stack is the entry's.
          `impersonates contract entry '${managedFor}' (carries its labels, but that entry's Service is ${ownName} created by this stack): undeclared exposure; remove it`
        : managedFor
          ? `labelled as made by ui-exposure for entry '${managedFor}', which this stack does not publish (left over from an earlier up or another stack?): delete it or select the entry`
          : "in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it",
    });
  }

  for (const pod of input.pods) {
    if (isFinished(pod)) continue;
    const namespace = pod.metadata.namespace ?? "default";
    const where = `${namespace}/${pod.metadata.name}`;
    // A hostNetwork pod gets hostPort = containerPort on every port (API defaulting).
    const hostNetwork = (pod.spec as { hostNetwork?: boolean } | undefined)?.hostNetwork === true;
    const seen = new Set<string>();
    for (const container of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      for (const containerPort of container.ports ?? []) {
        // As the guard counts it: a pod read back without the API's defaulting (a snapshot
        // written by hand or by a tool) holds its containerPorts all the same.
        const hostPort = containerPort.hostPort || (hostNetwork ? containerPort.containerPort : 0);
        if (!hostPort) continue;
        const port = { ...containerPort, hostPort };
        const protocol = port.protocol ?? "TCP";
        const key = `${port.hostPort}/${protocol}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const exposure: Exposure = {
          kind: "hostPort",
          namespace,
          name: pod.metadata.name,
          ports: key,
          ...(pod.spec?.nodeName ? { node: pod.spec.nodeName } : {}),
        };
        const entry = hostPortEntries.get(`${namespace}/${port.hostPort}`)?.find((e) => labelsMatch(pod.metadata.labels, e.hostPort.podSelector));
        if (entry) {
          declared.push({ ...exposure, declaredBy: `contract entry '${entry.name}'` });
          continue;
        }
        const pattern = input.allowlist.hostPorts.find((p) => {
          const { target, port: allowed } = parseHostPortPattern(p);
          return allowed === port.hostPort && matchesPattern(target, where);
        });
        if (pattern) {
          usedPatterns.add(pattern);
          declared.push({ ...exposure, ...allowlisted(input.allowlist, pattern) });
          continue;
        }
        undeclared.push({
          ...exposure,
          reason: `${hostNetwork ? "hostNetwork pod (every containerPort is a hostPort); " : ""}in neither a contract hostPort entry nor ui-exposure:allowlist.hostPorts: remove the hostPort or declare it`,
        });
      }
    }
  }

  const unusedAllowlist = [...input.allowlist.services, ...input.allowlist.hostPorts].filter((p) => !usedPatterns.has(p));
  return { declared, undeclared, unusedAllowlist };
}
