import type { AuditInput } from "./audit";
import type { PodIdentity } from "./exposure-model";
import { CHECK_LIMITS, classifyCluster, describeRefused, exposureRules, matchesPattern, namePattern, namesPod, type WorkloadObject } from "./exposure-model";
import type { ClusterReader, CustomKind } from "./kube/cluster";
import { printableValue } from "./text";

/**
 * What the exposure guard (src/core/admission.ts) would refuse in `deny` mode of the objects that exist now, each as if
 * created again: what the cluster meets on the next rollout, node or restore: the exposure model's verdicts, pure but
 * readWorkloads, which lists the guarded workload kinds through a ClusterReader.
 */

export type { WorkloadObject };

/** `what`: "type NodePort", "hostPort 9964/TCP, hostPort 9965/TCP". */
export type Refusal = { kind: string; namespace: string; name: string; what: string };

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

/**
 * The workload an allowlist line should name for a refused pod or template, so that it admits every pod made again (a new
 * node, a new revision): the controller owner when the object is named from it ("<owner>-..."), else the object itself.
 */
export function admittedUnit(p: Omit<PodIdentity, "labels"> & { kind: string }) {
  const own = p.isPod ? (p.generateName ?? p.name) : p.name;
  if (p.owner && own.startsWith(`${p.owner.name}-`)) return { kind: p.owner.kind, namespace: p.namespace, name: p.owner.name, workload: true };
  return { kind: p.kind, namespace: p.namespace, name: p.name, workload: !p.isPod };
}

/**
 * Never lock the cluster: what `deny` would refuse of the pods and workload templates running now (no controller creates
 * a Service again), each under the workload that makes it again (admittedUnit) with the allowlist line that admits all
 * its pods, or the setting that acknowledges it; undefined: deny may be put in force. A kind not read: refused too.
 */
export function denyWouldLock(
  input: Omit<PreviewInput, "services"> & { unread: readonly string[]; acknowledge: readonly string[]; stackFile: string },
): string | undefined {
  if (input.unread.length)
    return `deny is not put in force without checking what it would refuse (not read: ${input.unread.join("; ")}): let the stack's identity list them, or keep mode warn`;
  const classified = classifyCluster(exposureRules(input.contract, input.selected, input.allowlist), { ...input, services: [] });
  const acknowledged = input.acknowledge.map(namePattern);
  const refused = [...classified.workloads, ...classified.pods].filter(
    (p) => (p.tooLarge || p.openings.some((o) => !o.declared)) && !acknowledged.some((a) => matchesPattern(a, `${p.namespace}/${p.name}`) || namesPod(a, p)),
  );
  // Workloads first, shorter names first: a CronJob before its Jobs, a Deployment before its ReplicaSets, then their pods.
  const units = refused
    .map((p) => ({ p, unit: admittedUnit(p) }))
    .sort((a, b) => Number(b.unit.workload) - Number(a.unit.workload) || a.unit.name.length - b.unit.name.length);
  const prefixes: string[] = [];
  const lines = units.flatMap(({ p, unit }) => {
    const key = `${unit.namespace}/${unit.name}`;
    if (prefixes.some((prefix) => namesPod({ prefix: true, text: prefix }, p))) return [];
    if (unit.workload) prefixes.push(`${key}-`);
    const undeclared = p.openings.filter((o) => !o.declared);
    const admit = p.tooLarge
      ? "too large to check, no allowlist line admits it: make it smaller"
      : `admit it with ui-exposure:allowlist.hostPorts ${undeclared.map((o) => `'${unit.workload ? `${key}-*` : key}:${o.item}'`).join(", ")}`;
    const what = p.tooLarge ? "too large to check" : describeRefused(undeclared);
    const acknowledge = `acknowledge its refusal in ui-exposure:admission.acknowledge ('${unit.workload ? `${key}-*` : key}') of ${input.stackFile}`;
    // Names read back from the cluster (or a snapshot) may hold anything: one line each, escaped.
    return [printableValue(`    ${unit.kind} ${key} (${what}): ${admit}, or ${acknowledge}`)];
  });
  if (lines.length === 0) return undefined;
  const shown = lines.length > 20 ? [...lines.slice(0, 20), `    and ${lines.length - 20} more (exposure drift lists them all)`] : lines;
  const head =
    "the exposure guard in deny mode would refuse what runs in the cluster when it is created again (a rollout, a new node, a deleted pod): deny is not put in force while it would lock the cluster";
  return [head, ...shown].join("\n");
}

const workloadKinds = (group: string, kinds: string[]): CustomKind[] =>
  kinds.map((kind) => ({ group, versions: ["v1"], plural: `${kind.toLowerCase()}s`, kind }));
/** The workload kinds whose pod templates become pods the guard checks, as list calls (each plural: its kind, lowercased, with an s). */
export const GUARDED_WORKLOADS: readonly CustomKind[] = [
  ...workloadKinds("apps", ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"]),
  ...workloadKinds("batch", ["Job", "CronJob"]),
];

/** Every workload the guard matches; a kind that cannot be listed is named in `unread`, so the report says it is partial. */
export async function readWorkloads(cluster: Pick<ClusterReader, "listCustom">): Promise<{ workloads: WorkloadObject[]; unread: string[] }> {
  const lists = await Promise.all(
    GUARDED_WORKLOADS.map((k) =>
      cluster.listCustom(k).then(
        (items) => ({ items: (items as WorkloadObject[]).map((o) => ({ ...o, kind: o.kind ?? k.kind })), unread: [] }),
        (err: unknown) => ({ items: [], unread: [`${k.plural}.${k.group} (${err instanceof Error ? err.message : String(err)})`] }),
      ),
    ),
  );
  return { workloads: lists.flatMap((l) => l.items), unread: lists.flatMap((l) => l.unread) };
}
