import type { Contract } from "./contract/schema";
import { isHostPortEntry, isNodePortEntry } from "./contract/schema";
import type { ClusterReader, CustomKind } from "./kube/cluster";
import type { Pod, Service } from "./kube/types";
import { ourServiceName } from "./plan";
import type { Allowlist } from "./settings";

/**
 * What the exposure guard (src/core/admission.ts) would refuse in `deny` mode, asked of the
 * objects that exist now: each one as if it were created again. That is what the cluster meets
 * on the next rollout, node or restore: a DaemonSet's pod on a new node, a workload re-applied
 * by its chart. Pure, with the policy's own rules (same namespace, name, port and label tests),
 * so that an operator sees it before switching a stack to `deny`.
 */

/** A workload read back (apps/v1 Deployment, StatefulSet, DaemonSet; batch/v1 Job, CronJob): the shape expected, never trusted. */
export interface WorkloadObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  spec?: {
    template?: PodTemplateLike;
    jobTemplate?: { spec?: { template?: PodTemplateLike } };
  };
}

interface PodTemplateLike {
  metadata?: { labels?: Record<string, string> };
  spec?: PodSpecLike;
}

interface PodSpecLike {
  hostNetwork?: boolean;
  containers?: { ports?: { containerPort?: number; hostPort?: number; protocol?: string }[] }[];
  initContainers?: { ports?: { containerPort?: number; hostPort?: number; protocol?: string }[] }[];
}

export interface Refusal {
  kind: string;
  namespace: string;
  name: string;
  /** "type NodePort", "hostPort 9964/TCP, 9965/TCP". */
  what: string;
}

export interface PreviewInput {
  contract: Contract;
  selected: readonly string[];
  allowlist: Allowlist;
  services: readonly Service[];
  pods: readonly Pod[];
  workloads: readonly WorkloadObject[];
}

const pattern = (p: string) => (p.endsWith("*") ? { prefix: true, text: p.slice(0, -1) } : { prefix: false, text: p });

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const field = (v: unknown, key: string): unknown =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined;
const portNumber = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 65535 ? v : 0);
const stringMap = (v: unknown): Record<string, string> | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string") ? (v as Record<string, string>) : undefined;

/**
 * Effective hostPorts of a pod spec: a host-network pod holds every containerPort. Workloads
 * are read back unvalidated (any group's list call, or a snapshot file): what is not a list, a
 * map or a port number is no port (the API server would not have stored it).
 */
function hostPorts(spec: unknown): { port: number; protocol: string }[] {
  const hostNetwork = field(spec, "hostNetwork") === true;
  const seen = new Set<string>();
  const out: { port: number; protocol: string }[] = [];
  for (const c of [...list(field(spec, "initContainers")), ...list(field(spec, "containers"))]) {
    for (const p of list(field(c, "ports"))) {
      const port = portNumber(field(p, "hostPort")) || (hostNetwork ? portNumber(field(p, "containerPort")) : 0);
      const protocol = typeof field(p, "protocol") === "string" ? (field(p, "protocol") as string) : "TCP";
      if (!port || seen.has(`${port}/${protocol}`)) continue;
      seen.add(`${port}/${protocol}`);
      out.push({ port, protocol });
    }
  }
  return out;
}

export function wouldRefuse(input: PreviewInput): Refusal[] {
  const selected = new Set(input.selected);
  const entries = input.contract.endpoints.filter((e) => selected.has(e.name));
  const ours = new Set(entries.filter(isNodePortEntry).map((e) => `${e.service.namespace}/${ourServiceName(e.name)}`));
  const servicePatterns = input.allowlist.services.map(pattern);
  const hostPortEntries = entries.filter(isHostPortEntry);
  const hostPortPatterns = input.allowlist.hostPorts.map((p) => {
    const colon = p.lastIndexOf(":");
    return { port: Number(p.slice(colon + 1)), ...pattern(p.slice(0, colon)) };
  });
  const refusals: Refusal[] = [];

  for (const svc of input.services) {
    const type = svc.spec?.type ?? "ClusterIP";
    if (type !== "NodePort" && type !== "LoadBalancer") continue;
    const namespace = svc.metadata.namespace ?? "default";
    const key = `${namespace}/${svc.metadata.name}`;
    const declared = ours.has(key) || servicePatterns.some((p) => (p.prefix ? key.startsWith(p.text) : key === p.text));
    if (!declared) refusals.push({ kind: "Service", namespace, name: svc.metadata.name, what: `type ${type}` });
  }

  // podKey is "<namespace>/<pod>" for a pod, "<namespace>/<workload>-" for a template (its pods' names start so).
  const check = (kind: string, namespace: string, name: string, isPod: boolean, labels: Record<string, string> | undefined, spec: unknown) => {
    const podKey = `${namespace}/${name}${isPod ? "" : "-"}`;
    const refused = hostPorts(spec).filter(({ port }) => {
      const byContract = hostPortEntries.some(
        (e) =>
          e.hostPort.namespace === namespace && e.hostPort.port === port && Object.entries(e.hostPort.podSelector ?? {}).every(([k, v]) => labels?.[k] === v),
      );
      const byAllowlist = hostPortPatterns.some((p) => p.port === port && (p.prefix ? podKey.startsWith(p.text) : isPod && podKey === p.text));
      return !byContract && !byAllowlist;
    });
    if (refused.length) refusals.push({ kind, namespace, name, what: `hostPort ${refused.map((r) => `${r.port}/${r.protocol}`).join(", ")}` });
  };
  for (const p of input.pods) {
    // A finished pod is not created again; its owner's next pod is (and is checked as the owner's template).
    if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") continue;
    check("Pod", p.metadata.namespace ?? "default", p.metadata.name, true, p.metadata.labels, p.spec);
  }
  for (const w of input.workloads) {
    const meta = field(w, "metadata");
    const name = field(meta, "name");
    if (typeof name !== "string" || !name) continue;
    const namespace = typeof field(meta, "namespace") === "string" ? (field(meta, "namespace") as string) : "default";
    const kind = typeof field(w, "kind") === "string" ? (field(w, "kind") as string) : "Workload";
    const spec = field(w, "spec");
    const template = kind === "CronJob" ? field(field(field(spec, "jobTemplate"), "spec"), "template") : field(spec, "template");
    check(kind, namespace, name, false, stringMap(field(field(template, "metadata"), "labels")), field(template, "spec"));
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
