// Whether a Cilium switch is in force (src/core/cilium/rollout.ts): the rollout complete and, per
// node, the agent pod started from the configuration the release rendered (its checksum), Ready.
import { describe, expect, it, vi } from "vitest";
import { awaitSwitch } from "../components/cilium";
import { type CiliumWorkloads, CONFIG_CHECKSUM, switchState, switchWait } from "../src/core/cilium/rollout";
import type { GenericObject, Pod } from "../src/core/kube/types";

const daemonSet = (sum: string | undefined, status: Record<string, number>, generation = 2): GenericObject => ({
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "cilium", namespace: "kube-system", generation },
  spec: { template: { metadata: { annotations: sum ? { [CONFIG_CHECKSUM]: sum } : {} } } },
  status,
});
const agent = (name: string, node: string, sum: string, ready = true, deleting = false): Pod => ({
  metadata: {
    name,
    namespace: "kube-system",
    labels: { "k8s-app": "cilium" },
    annotations: { [CONFIG_CHECKSUM]: sum },
    ...(deleting ? { deletionTimestamp: "2026-12-02T01:00:00Z" } : {}),
  },
  spec: { nodeName: node },
  status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
});
const done = { observedGeneration: 2, desiredNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2 };

describe("switchState", () => {
  it("in force: rollout complete, every node's agent carries the new checksum and is Ready", () => {
    const w: CiliumWorkloads = { agents: daemonSet("new", done), pods: [agent("cilium-a", "n1", "new"), agent("cilium-b", "n2", "new")] };
    expect(switchState(w)).toEqual({ inForce: true, detail: "every agent runs the new configuration (nodes n1, n2)" });
  });

  it("not in force: says which node still runs the previous configuration, and the rollout counts", () => {
    const w: CiliumWorkloads = {
      agents: daemonSet("new", { ...done, updatedNumberScheduled: 1, numberAvailable: 1 }),
      pods: [agent("cilium-a", "n1", "new"), agent("cilium-b", "n2", "old"), agent("cilium-c", "n2", "new", false), agent("cilium-d", "n1", "new", true, true)],
    };
    expect(switchState(w)).toEqual({ inForce: false, detail: "1/2 agents updated, 1 available; node n2: agent cilium-c not Ready yet" });
    expect(switchState({ agents: daemonSet("new", done), pods: [agent("cilium-b", "n2", "old")] }).detail).toBe(
      "node n2: its agent runs the previous configuration",
    );
    expect(switchState({ agents: daemonSet("new", { ...done, observedGeneration: 1 }), pods: [] }).detail).toBe(
      "the DaemonSet controller has not seen the new template yet",
    );
  });

  it("the operator counts too, when the release has one", () => {
    const operator = (sum: string | undefined, status: Record<string, number>): GenericObject => ({
      ...daemonSet(sum, status),
      kind: "Deployment",
      metadata: { name: "cilium-operator", namespace: "kube-system", generation: 2 },
      spec: { replicas: 1, template: { metadata: { annotations: sum ? { [CONFIG_CHECKSUM]: sum } : {} } } },
    });
    const pods = [agent("cilium-a", "n1", "new")];
    const ds = daemonSet("new", { ...done, desiredNumberScheduled: 1, updatedNumberScheduled: 1, numberAvailable: 1 });
    expect(switchState({ agents: ds, pods, operator: operator("new", { observedGeneration: 2, updatedReplicas: 0, availableReplicas: 1 }) }).detail).toBe(
      "operator: 0/1 updated, 1 available",
    );
    expect(switchState({ agents: ds, pods, operator: operator(undefined, {}) }).detail).toBe("operator: 0/1 updated, 0 available");
    expect(switchState({ agents: ds, pods, operator: operator("new", { observedGeneration: 2, updatedReplicas: 1, availableReplicas: 1 }) })).toEqual({
      inForce: true,
      detail: "every agent runs the new configuration (nodes n1), and the operator",
    });
  });

  it("settled answers (nothing to wait for): no DaemonSet, or no checksum (rollOutCiliumPods off); hostile status values count as 0", async () => {
    expect(switchState({ pods: [] })).toEqual({ inForce: false, detail: "no agents' DaemonSet", settled: true });
    expect(switchState({ agents: daemonSet(undefined, done), pods: [] })).toMatchObject({ inForce: false, settled: true });
    const hostile = daemonSet("new", { observedGeneration: "x" as unknown as number, desiredNumberScheduled: Number.NaN });
    expect(switchState({ agents: hostile, pods: [] })).toMatchObject({ inForce: false });
    // awaitSwitch returns a settled answer at once instead of waiting out its timeout: one read, no poll.
    const read = vi.fn(async () => ({ pods: [] }));
    expect(await awaitSwitch(read, 60_000)).toMatchObject({ settled: true });
    expect(read).toHaveBeenCalledTimes(1);
  });
});

describe("switchWait: up's wait for the agents grows with the nodes", () => {
  const agents = (desired: number, maxUnavailable?: number | string) => ({
    ...daemonSet("new", { desiredNumberScheduled: desired }),
    spec: { updateStrategy: maxUnavailable === undefined ? {} : { type: "RollingUpdate", rollingUpdate: { maxUnavailable } } },
  });

  it("one batch of 2 agents per 120 s (the chart's default), never under 300 s; a percentage rounds up; no DaemonSet: the floor", () => {
    expect(switchWait(agents(1))).toEqual({ ms: 300_000, nodes: 1, atOnce: 2, batches: 1 });
    expect(switchWait(agents(12))).toEqual({ ms: 720_000, nodes: 12, atOnce: 2, batches: 6 });
    expect(switchWait(agents(40, 5))).toEqual({ ms: 960_000, nodes: 40, atOnce: 5, batches: 8 });
    expect(switchWait(agents(30, "10%"))).toEqual({ ms: 1_200_000, nodes: 30, atOnce: 3, batches: 10 });
    // Hostile values read back: a zero, a negative or a malformed maxUnavailable is the default, never a division by zero.
    expect(switchWait(agents(12, 0)).atOnce).toBe(2);
    expect(switchWait(agents(12, "x%")).atOnce).toBe(2);
    expect(switchWait(undefined)).toEqual({ ms: 300_000, nodes: 0, atOnce: 2, batches: 1 });
  });

  it("awaitSwitch says how long it will wait, from the first read's DaemonSet", async () => {
    const said: string[] = [];
    const read = vi.fn(async () => ({ agents: { ...agents(12), spec: {} }, pods: [] }));
    expect(await awaitSwitch(read, undefined, (m) => said.push(m))).toMatchObject({ settled: true });
    expect(said).toEqual([
      "cilium: waiting up to 720 s for the agents of 12 node(s), restarted 2 at a time (6 batch(es) of at most 120 s), and the operator to run the new configuration",
    ]);
  });
});
