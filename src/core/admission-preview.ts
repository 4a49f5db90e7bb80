import type { AuditInput } from "./audit";
import {
  CHECK_LIMITS,
  effectiveHostPorts,
  exposureRules,
  field,
  hostPortDeclaration,
  isExposingService,
  isFinishedPod,
  type PodIdentity,
  podTooLargeToCheck,
  serviceVerdict,
} from "./exposure-model";
import type { ClusterReader, CustomKind } from "./kube/cluster";

/**
 * What the exposure guard (src/core/admission.ts) would refuse in `deny` mode, asked of the
 * objects that exist now: each one as if it were created again. That is what the cluster meets
 * on the next rollout, node or restore: a DaemonSet's pod on a new node, a workload re-applied
 * by its chart. Pure, with the policy's own rules (same namespace, name, port and label tests),
 * so that an operator sees it before switching a stack to `deny`: the exposure model's verdicts.
 */

/** A workload read back (apps/v1 Deployment, StatefulSet, DaemonSet; batch/v1 Job, CronJob): read field by field, never trusted. */
export interface WorkloadObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  spec?: unknown;
}

export interface Refusal {
  kind: string;
  namespace: string;
  name: string;
  /** "type NodePort", "hostPort 9964/TCP, 9965/TCP". */
  what: string;
}

export type PreviewInput = Omit<AuditInput, "published"> & { workloads: readonly WorkloadObject[] };

const stringMap = (v: unknown): Record<string, string> | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string") ? (v as Record<string, string>) : undefined;

export function wouldRefuse(input: PreviewInput): Refusal[] {
  const rules = exposureRules(input.contract, input.selected, input.allowlist);
  const refusals: Refusal[] = [];

  for (const svc of input.services) {
    if (!isExposingService(svc)) continue;
    const verdict = serviceVerdict(rules, svc);
    if ("undeclared" in verdict)
      refusals.push({ kind: "Service", namespace: svc.metadata.namespace ?? "default", name: svc.metadata.name, what: verdict.undeclared });
  }

  const check = (kind: string, pod: PodIdentity, spec: unknown) => {
    const refuse = (what: string) => refusals.push({ kind, namespace: pod.namespace, name: pod.name, what });
    if (podTooLargeToCheck(spec)) {
      refuse(`too large to check (more than ${CHECK_LIMITS.containers} containers in a list or ${CHECK_LIMITS.portsPerContainer} ports in a container)`);
      return;
    }
    const refused = effectiveHostPorts(spec).filter(({ port }) => !hostPortDeclaration(rules, pod, port));
    if (refused.length) refuse(`hostPort ${refused.map((r) => `${r.port}/${r.protocol}`).join(", ")}`);
  };
  for (const p of input.pods) {
    // A finished pod is not created again; its owner's next pod is (and is checked as the owner's template).
    if (isFinishedPod(p)) continue;
    check("Pod", { namespace: p.metadata.namespace ?? "default", name: p.metadata.name, isPod: true, labels: p.metadata.labels }, p.spec);
  }
  for (const w of input.workloads) {
    const meta = field(w, "metadata");
    const name = field(meta, "name");
    if (typeof name !== "string" || !name) continue;
    const namespace = typeof field(meta, "namespace") === "string" ? (field(meta, "namespace") as string) : "default";
    const kind = typeof field(w, "kind") === "string" ? (field(w, "kind") as string) : "Workload";
    const spec = field(w, "spec");
    const template = kind === "CronJob" ? field(field(field(spec, "jobTemplate"), "spec"), "template") : field(spec, "template");
    check(kind, { namespace, name, isPod: false, labels: stringMap(field(field(template, "metadata"), "labels")) }, field(template, "spec"));
  }
  return refusals;
}

/** The workload kinds the guard matches, as list calls. */
export const GUARDED_WORKLOADS: readonly CustomKind[] = [
  { group: "apps", versions: ["v1"], plural: "deployments", kind: "Deployment" },
  { group: "apps", versions: ["v1"], plural: "statefulsets", kind: "StatefulSet" },
  { group: "apps", versions: ["v1"], plural: "daemonsets", kind: "DaemonSet" },
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
