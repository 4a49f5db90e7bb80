import type { AuditInput } from "./audit";
import { CHECK_LIMITS, classifyCluster, describeRefused, exposureRules, type WorkloadObject } from "./exposure-model";
import type { ClusterReader, CustomKind } from "./kube/cluster";

/**
 * What the exposure guard (src/core/admission.ts) would refuse in `deny` mode, asked of the
 * objects that exist now: each one as if it were created again. That is what the cluster meets
 * on the next rollout, node or restore: a DaemonSet's pod on a new node, a workload re-applied
 * by its chart. Pure, with the policy's own rules (same namespace, name, port and label tests),
 * so that an operator sees it before switching a stack to `deny`: the exposure model's verdicts.
 */

export type { WorkloadObject };

export interface Refusal {
  kind: string;
  namespace: string;
  name: string;
  /** "type NodePort", "hostPort 9964/TCP, 9965/TCP". */
  what: string;
}

export type PreviewInput = Omit<AuditInput, "published"> & { workloads: readonly WorkloadObject[] };

/** The pre-deny report: a rendering of the exposure model's classifyCluster, as the policy would judge each object's CREATE. */
export function wouldRefuse(input: PreviewInput): Refusal[] {
  const classified = classifyCluster(exposureRules(input.contract, input.selected, input.allowlist), input);
  const services = classified.services.flatMap(({ svc, verdict }) =>
    "undeclared" in verdict ? [{ kind: "Service", namespace: svc.metadata.namespace ?? "default", name: svc.metadata.name, what: verdict.undeclared }] : [],
  );
  const pods = [...classified.pods, ...classified.workloads].flatMap(({ kind, namespace, name, tooLarge, openings }) => {
    const what = tooLarge
      ? `too large to check (more than ${CHECK_LIMITS.containers} containers in a list or ${CHECK_LIMITS.portsPerContainer} ports in a container)`
      : describeRefused(openings.filter((o) => !o.declared));
    return what ? [{ kind, namespace, name, what }] : [];
  });
  return [...services, ...pods];
}

/** The workload kinds whose pod templates become pods the guard checks, as list calls. */
export const GUARDED_WORKLOADS: readonly CustomKind[] = [
  { group: "apps", versions: ["v1"], plural: "deployments", kind: "Deployment" },
  { group: "apps", versions: ["v1"], plural: "statefulsets", kind: "StatefulSet" },
  { group: "apps", versions: ["v1"], plural: "daemonsets", kind: "DaemonSet" },
  { group: "apps", versions: ["v1"], plural: "replicasets", kind: "ReplicaSet" },
  { group: "batch", versions: ["v1"], plural: "jobs", kind: "Job" },
  { group: "batch", versions: ["v1"], plural: "cronjobs", kind: "CronJob" },
];

/**
 * Every workload the guard matches (one list call per kind). A kind that cannot be listed (no
 * RBAC) is named in `unread`, so the report says it is partial instead of looking clean.
 */
export async function readWorkloads(cluster: Pick<ClusterReader, "listCustom">): Promise<{ workloads: WorkloadObject[]; unread: string[] }> {
  const lists = await Promise.all(
    GUARDED_WORKLOADS.map(async (k) => {
      try {
        return { kind: k, items: (await cluster.listCustom(k)) as WorkloadObject[] };
      } catch (err) {
        return { kind: k, error: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
  return {
    workloads: lists.flatMap((l) => ("items" in l ? (l.items ?? []).map((o) => ({ ...o, kind: o.kind ?? l.kind.kind })) : [])),
    unread: lists.flatMap((l) => ("error" in l ? [`${l.kind.plural}.${l.kind.group} (${l.error})`] : [])),
  };
}
