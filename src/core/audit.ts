import { admittedUnit } from "./admission-preview";
import type { Contract } from "./contract/schema";
import {
  classifyCluster,
  type Declaration,
  describeDeclaration,
  exposureRules,
  holdsNoHostPort,
  isExposingService,
  isFinishedPod,
  podTooLargeToCheck,
} from "./exposure-model";
import type { ClusterReader } from "./kube/cluster";
import type { Pod, Service } from "./kube/types";
import { labelClaimProblem, ownershipProblem } from "./ownership";
import type { PublishedEndpoints } from "./published";
import type { Allowlist } from "./settings";

/** One thing that makes the cluster reachable from outside, whoever declared it. */
export interface Exposure {
  /** The Service's type ("NodePort", "LoadBalancer", "ClusterIP" with externalIPs...), or what a pod opens ("hostPort"). */
  kind: string;
  namespace: string;
  /** Service name, or the pod holding the hostPort. */
  name: string;
  /** "http 80->31001", "8090/TCP"...: what an operator needs to find it. */
  ports: string;
  /** LoadBalancer addresses (LB-IPAM) and externalIPs, when the Service has some. */
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
  /** The command that removes it (and `allowlistLine`, where the stack may declare it instead): the same words in drift, status, the portal and the policy pack. */
  fix: string;
  allowlistLine?: string;
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
  /** The Services of the cluster that open something (readExposureObjects; any other is skipped). */
  services: readonly Service[];
  /** The Pods of the cluster that hold or may hold a host port (readExposureObjects; any other is skipped). */
  pods: readonly Pod[];
  /** The last `up`'s `endpoints` output, when read: a Service at an entry's name that this stack did not create is then undeclared too. */
  published?: PublishedEndpoints;
}

/** What the audit and the deny preview read, cluster-wide; everything else is dropped as each page is read (invariant 8: a tenant's objects cost one page of memory). */
export async function readExposureObjects(cluster: Pick<ClusterReader, "listServices" | "listPods">): Promise<Pick<AuditInput, "services" | "pods">> {
  const [services, pods] = await Promise.all([cluster.listServices({ keep: isExposingService }), cluster.listPods({ keep: mayHoldHostPort })]);
  return { services, pods };
}

/** A pod the audit and the guard look at: running or pending, holding a host port or too large to check. */
export const mayHoldHostPort = (p: Pod) => !isFinishedPod(p) && (!holdsNoHostPort(p.spec) || podTooLargeToCheck(p.spec));

/** The audit behind `exposure drift` (classifyCluster, rendered): every Service reachable from outside and every host port is declared, or drift. */
export function auditExposure(input: AuditInput): AuditResult {
  const rules = exposureRules(input.contract, input.selected, input.allowlist);
  const usedPatterns = new Set<string>();
  const declared: DeclaredExposure[] = [];
  const undeclared: UndeclaredExposure[] = [];
  const declare = (exposure: Exposure, d: Declaration) => {
    if (d.by === "allowlist") usedPatterns.add(d.pattern.source);
    declared.push({ ...exposure, declaredBy: describeDeclaration(d), ...(d.by === "allowlist" && d.pattern.reason ? { reason: d.pattern.reason } : {}) });
  };
  const classified = classifyCluster(rules, input);

  for (const { svc, openings, verdict } of classified.services) {
    const namespace = svc.metadata.namespace ?? "default";
    const where = `${namespace}/${svc.metadata.name}`;
    const ports = (svc.spec?.ports ?? []).map((p) => `${p.name ? `${p.name} ` : ""}${p.port}->${p.nodePort ?? "no nodePort"}`);
    const health = openings.healthCheckNodePort ? [`health check ->${openings.healthCheckNodePort}`] : [];
    const addresses = [...(svc.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip ? [i.ip] : i.hostname ? [i.hostname] : [])), ...openings.externalIPs];
    const exposure: Exposure = {
      kind: openings.type,
      namespace,
      name: svc.metadata.name,
      ports: [...ports, ...health].join(", ") || "no ports",
      ...(addresses.length ? { addresses } : {}),
    };
    const ours = rules.ourServices.get(where);
    const notOurs = ours && input.published ? ownershipProblem(svc, input.published[ours.entry]) : undefined;
    const remove = `kubectl -n ${namespace} delete service ${svc.metadata.name}`;
    if (notOurs) undeclared.push({ ...exposure, reason: `named like contract entry '${ours?.entry}', but ${notOurs}`, fix: remove });
    else if ("declared" in verdict) declare(exposure, verdict.declared);
    else if (verdict.entry) {
      undeclared.push({
        ...exposure,
        reason: `our Service of contract entry '${verdict.entry}' opens more than the entry declares (${verdict.undeclared}): undeclared exposure; remove what was added`,
        fix: `kubectl -n ${namespace} edit service ${svc.metadata.name} (remove ${verdict.undeclared})`,
      });
    } else {
      const claim = labelClaimProblem(svc, rules.ourServices);
      const allowlistLine = `ui-exposure:allowlist.services '${where}'`;
      undeclared.push({
        ...exposure,
        reason:
          claim ??
          `${openings.externalIPs.length ? `reachable at externalIPs ${openings.externalIPs.join(", ")}; ` : ""}in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it`,
        ...(claim ? { fix: remove } : { fix: `${remove}, or declare it: ${allowlistLine}`, allowlistLine }),
      });
    }
  }

  for (const pod of classified.pods) {
    for (const o of pod.openings) {
      const exposure: Exposure = { kind: o.kind, namespace: pod.namespace, name: pod.name, ports: o.ports, ...(pod.node ? { node: pod.node } : {}) };
      if (o.declared) declare(exposure, o.declared);
      // Its workload makes it again: the hostPort goes from there, or a line names that workload (never today's pod).
      const u = admittedUnit({ ...pod, kind: "Pod" });
      const fix = `kubectl -n ${u.namespace} edit ${u.kind.toLowerCase()} ${u.name} (remove it), or declare it: ui-exposure:allowlist.hostPorts '${u.namespace}/${u.name}${u.workload ? "-*" : ""}:${o.item}'`;
      if (!o.declared) undeclared.push({ ...exposure, reason: o.undeclared ?? "undeclared", fix });
    }
  }

  return { declared, undeclared, unusedAllowlist: [...rules.services, ...rules.hostPorts].map((p) => p.source).filter((p) => !usedPatterns.has(p)) };
}
