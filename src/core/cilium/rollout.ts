import { field } from "../exposure-model";
import type { GenericObject, Pod } from "../kube/types";

/** The cilium-config checksum the chart stamps on the pod templates (rollOutCiliumPods, operator.rollOutPods); read at start only. */
export const CONFIG_CHECKSUM = "cilium.io/cilium-configmap-checksum";

/** The agents' DaemonSet, the operator's Deployment and the pods of the release's namespace (all untrusted). */
export type CiliumWorkloads = { agents?: GenericObject; operator?: GenericObject; pods: readonly Pod[] };

/** `settled`: waiting longer would not change the answer (no DaemonSet, no checksum to compare). */
export type SwitchState = { inForce: boolean; detail: string; settled?: true };

const checksum = (o: GenericObject | undefined) => {
  const v = field(field(field(field(o?.spec, "template"), "metadata"), "annotations"), CONFIG_CHECKSUM);
  return typeof v === "string" && v !== "" ? v : undefined;
};
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const ready = (p: Pod) => p.status?.phase === "Running" && (p.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

/** Whether every node's agent and the operator run the release's last configuration: the rollout complete, a Ready agent with its checksum per node. */
export function switchState(w: CiliumWorkloads): SwitchState {
  const ds = w.agents;
  const sum = checksum(ds);
  const settled = (detail: string): SwitchState => ({ inForce: false, settled: true, detail });
  if (!ds || !sum) return settled(ds ? "the agents' pod template has no checksum (rollOutCiliumPods off)" : "no agents' DaemonSet");
  const st = (k: string) => num(ds.status?.[k]);
  const waiting: string[] = [];
  if (st("observedGeneration") < num(ds.metadata.generation)) waiting.push("the DaemonSet controller has not seen the new template yet");
  else if (st("updatedNumberScheduled") < st("desiredNumberScheduled") || st("numberAvailable") < st("desiredNumberScheduled")) {
    waiting.push(`${st("updatedNumberScheduled")}/${st("desiredNumberScheduled")} agents updated, ${st("numberAvailable")} available`);
  }
  const agents = w.pods.filter((p) => p.metadata.labels?.["k8s-app"] === "cilium");
  const nodes = [...new Set(agents.map((p) => p.spec?.nodeName ?? "(unscheduled)"))].sort();
  const inForceOn = nodes.filter((node) => {
    const current = agents.filter(
      (p) => (p.spec?.nodeName ?? "(unscheduled)") === node && !p.metadata.deletionTimestamp && p.metadata.annotations?.[CONFIG_CHECKSUM] === sum,
    );
    if (!current.some(ready))
      waiting.push(`node ${node}: ${current[0] ? `agent ${current[0].metadata.name} not Ready yet` : "its agent runs the previous configuration"}`);
    return current.some(ready);
  });
  // The operator: rolled out from the same checksum (operator.rollOutPods), all replicas available.
  const op = w.operator;
  const [want, o] = [num(op?.spec?.replicas ?? 1), (k: string) => num(op?.status?.[k])];
  const stale = o("observedGeneration") < num(op?.metadata.generation) || Math.min(o("availableReplicas"), o("updatedReplicas")) < want;
  if (op && (checksum(op) !== sum || stale)) waiting.push(`operator: ${o("updatedReplicas")}/${want} updated, ${o("availableReplicas")} available`);
  if (waiting.length || !inForceOn.length) return { inForce: false, detail: waiting.join("; ") || "no agent pod" };
  return { inForce: true, detail: `every agent runs the new configuration (nodes ${inForceOn.join(", ")})${op ? ", and the operator" : ""}` };
}

/** What one batch of agents takes to restart and compile their datapath, at most (the rehearsal measured under a minute). */
export const AGENT_BATCH_MS = 120_000;
/** The least `up` waits for a switch (Helm's own --wait default). */
export const MIN_SWITCH_WAIT_MS = 300_000;

/** How long `up` waits for the agents, restarted `maxUnavailable` at a time (default 2; a % rounds up): AGENT_BATCH_MS a batch, at least MIN_SWITCH_WAIT_MS. */
export function switchWait(agents: GenericObject | undefined): { ms: number; nodes: number; atOnce: number; batches: number } {
  const nodes = num(agents?.status?.desiredNumberScheduled);
  const raw = field(field(field(agents?.spec, "updateStrategy"), "rollingUpdate"), "maxUnavailable");
  const percent = typeof raw === "string" && /^\d+%$/.test(raw) ? Number(raw.slice(0, -1)) : undefined;
  const atOnce = Math.max(1, percent !== undefined ? Math.ceil((nodes * percent) / 100) : typeof raw === "number" && raw >= 1 ? Math.floor(raw) : 2);
  const batches = Math.max(1, Math.ceil(nodes / atOnce));
  return { ms: Math.max(MIN_SWITCH_WAIT_MS, batches * AGENT_BATCH_MS), nodes, atOnce, batches };
}
