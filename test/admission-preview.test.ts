// What the exposure guard in deny mode would refuse of what exists now (src/core/admission-preview.ts),
// checked against the generated policy itself, evaluated with a maintained CEL implementation.
import * as path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { openStack } from "../cli/stack";
import { admissionManifests } from "../src/core/admission";
import { denyWouldLock, type WorkloadObject, wouldRefuse } from "../src/core/admission-preview";
import { type Contract, contractSchema } from "../src/core/contract/schema";
import type { Pod, Service } from "../src/core/kube/types";
import type { Allowlist } from "../src/core/settings";
import { policyRefusals } from "./support/admission-eval";
import { podsOf, readAllChartFixtures } from "./support/chart-fixtures";
import { pod, service } from "./support/command-helpers";

const projectDir = path.resolve(__dirname, "..");
const nodes = ["node-a", "node-b"];
const charts = readAllChartFixtures();
// Real undeclared exposure next to the platform: a debug pod's hostPort and a NodePort Service.
const debug = pod("tenant", "debug-shell", "node-a", { hostPort: 2222 });
const tenantNodePort = service("tenant", "web", { type: "NodePort" });
const cluster = {
  services: [...charts.flatMap((c) => c.services), tenantNodePort],
  pods: [...charts.flatMap((c) => c.workloads.flatMap((w) => podsOf(w, nodes))), debug],
  workloads: charts.flatMap((c) => c.workloads) as WorkloadObject[],
};

/** Every object of the cluster as the policy sees its CREATE: what the cluster meets again on a rollout or a new node. */
async function refusedByPolicy(stack: { stack: string; contract: Contract; selected: string[]; allowlist: Allowlist }): Promise<string[]> {
  const { policy } = admissionManifests({ ...stack, mode: "deny", failurePolicy: "Fail", contractFile: "contract/endpoints.yaml" });
  const requests = [
    ...cluster.services.map((s: Service) => ({ kind: "Service", namespace: s.metadata.namespace ?? "default", name: s.metadata.name, object: s })),
    ...cluster.pods.map((p: Pod) => ({ kind: "Pod", namespace: p.metadata.namespace ?? "default", name: p.metadata.name, object: p })),
    ...cluster.workloads.map((w) => ({ kind: w.kind ?? "", namespace: w.metadata?.namespace ?? "default", name: w.metadata?.name ?? "", object: w })),
  ];
  const refused: string[] = [];
  for (const r of requests) {
    const messages = await policyRefusals(policy.spec, { kind: r.kind, namespace: r.namespace, operation: "CREATE", object: r.object });
    if (messages.length) refused.push(`${r.kind} ${r.namespace}/${r.name}`);
  }
  return refused;
}

describe("wouldRefuse: what deny would refuse today", () => {
  it.each(["bench", "dirqual"])("%s on a cluster running the real charts: only the real undeclared exposure, as the policy itself decides", async (name) => {
    const opened = openStack({ projectDir, stack: name });
    const stack = { stack: name, contract: opened.contract, selected: opened.selected, allowlist: opened.settings.allowlist };
    const refusals = wouldRefuse({ ...stack, ...cluster });
    expect(refusals).toEqual([
      { kind: "Service", namespace: "tenant", name: "web", what: "type NodePort" },
      { kind: "Pod", namespace: "tenant", name: "debug-shell", what: "hostPort 2222/TCP" },
    ]);
    expect(await refusedByPolicy(stack)).toEqual(refusals.map((r) => `${r.kind} ${r.namespace}/${r.name}`));
  });

  it("without the platform agents in the allowlist (the shipped stacks before), deny refuses the CNI's and the monitoring's pods and workloads", async () => {
    const opened = openStack({ projectDir, stack: "dirqual" });
    const stack = { stack: "dirqual", contract: opened.contract, selected: opened.selected, allowlist: { ...opened.settings.allowlist, hostPorts: [] } };
    const refusals = wouldRefuse({ ...stack, ...cluster }).map(
      (r) =>
        `${r.kind} ${r.namespace}/${r.kind === "Pod" ? r.name.replace(/-[b-df-hj-np-tv-xz2-9]{10}-[b-df-hj-np-tv-xz2-9]{5}$|-[b-df-hj-np-tv-xz2-9]{5}$/, "-*") : r.name} ${r.what}`,
    );
    expect([...new Set(refusals)]).toEqual([
      "Service tenant/web type NodePort",
      "Pod kube-system/cilium-envoy-* hostPort 9964/TCP",
      "Pod kube-system/cilium-operator-* hostPort 9963/TCP",
      "Pod kube-system/cilium-* the host network (no port listed)",
      "Pod monitoring/kube-prometheus-stack-prometheus-node-exporter-* hostPort 9100/TCP",
      "Pod tenant/debug-shell hostPort 2222/TCP",
      "DaemonSet kube-system/cilium-envoy hostPort 9964/TCP",
      "Deployment kube-system/cilium-operator hostPort 9963/TCP",
      "DaemonSet kube-system/cilium the host network (no port listed)",
      "DaemonSet monitoring/kube-prometheus-stack-prometheus-node-exporter hostPort 9100/TCP",
    ]);
    expect((await refusedByPolicy(stack)).length).toBe(wouldRefuse({ ...stack, ...cluster }).length);
  });

  it("follows the policy's rules on names: a prefix declares a workload's template, an exact pod name never does; a finished pod is not created again", async () => {
    const opened = openStack({ projectDir, stack: "bench" });
    const allowlist: Allowlist = { services: ["tenant/web"], hostPorts: ["tools/debug-0:2222", "tools/agent-*:7000"] };
    const tools = {
      services: [service("tenant", "web", { type: "LoadBalancer" }), service("tenant", "webx", { type: "NodePort" })],
      pods: [
        pod("tools", "debug-0", "n", { hostPort: 2222 }),
        pod("tools", "agent-x", "n", { hostPort: 7000 }),
        pod("tools", "old", "n", { hostPort: 1, phase: "Succeeded" }),
      ],
      workloads: [
        {
          kind: "StatefulSet",
          metadata: { name: "debug", namespace: "tools" },
          spec: { template: { spec: { containers: [{ ports: [{ containerPort: 22, hostPort: 2222 }] }] } } },
        },
        {
          kind: "DaemonSet",
          metadata: { name: "agent", namespace: "tools" },
          spec: { template: { spec: { hostNetwork: true, containers: [{ ports: [{ containerPort: 7000 }] }] } } },
        },
        {
          kind: "CronJob",
          metadata: { name: "scan", namespace: "tools" },
          spec: { jobTemplate: { spec: { template: { spec: { containers: [{ ports: [{ containerPort: 80, hostPort: 8080 }] }] } } } } },
        },
      ],
    };
    const stack = { stack: "bench", contract: opened.contract, selected: opened.selected, allowlist };
    expect(wouldRefuse({ ...stack, ...tools })).toEqual([
      { kind: "Service", namespace: "tenant", name: "webx", what: "type NodePort" },
      { kind: "StatefulSet", namespace: "tools", name: "debug", what: "hostPort 2222/TCP" },
      { kind: "CronJob", namespace: "tools", name: "scan", what: "hostPort 8080/TCP" },
    ]);
    const { policy } = admissionManifests({ ...stack, mode: "deny", failurePolicy: "Fail", contractFile: "c.yaml" });
    for (const w of tools.workloads) {
      const refused = (await policyRefusals(policy.spec, { kind: w.kind, namespace: "tools", operation: "CREATE", object: w })).length > 0;
      expect(refused, `${w.kind} ${w.metadata.name}`).toBe(w.metadata.name !== "agent");
    }
  });
});

describe("wouldRefuse is what the policy refuses (property, evaluated with cel-js)", () => {
  // Small alphabets so that names, prefixes and ports collide often.
  const ns = fc.constantFrom("tools", "kube-system");
  const name = fc.constantFrom("agent", "agent-x", "agent-x-1", "debug", "debug-0", "web");
  const port = fc.constantFrom(80, 2222, 7000, 9964);
  const labels = fc.dictionary(fc.constantFrom("app", "tier"), fc.constantFrom("agent", "web"), { maxKeys: 2 });
  const ports = fc.array(fc.record({ containerPort: port, hostPort: fc.option(port, { nil: undefined }) }, { requiredKeys: ["containerPort"] }), {
    maxLength: 3,
  });
  const podSpec = fc.record({ hostNetwork: fc.boolean(), containers: fc.array(fc.record({ name: fc.constant("c"), ports }), { minLength: 1, maxLength: 2 }) });
  const object = fc.oneof(
    fc.record({ kind: fc.constant("Service"), namespace: ns, name, type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer") }),
    // A controller's pod: its generateName may be longer than its name (cut to 58 characters), or unrelated to it.
    fc.record(
      { kind: fc.constant("Pod"), namespace: ns, name, labels, spec: podSpec, generateName: fc.constantFrom("agent-", "agent-x-1-", "debug-0-", "web-") },
      { requiredKeys: ["kind", "namespace", "name", "labels", "spec"] },
    ),
    fc.record({ kind: fc.constantFrom("DaemonSet", "Deployment", "CronJob"), namespace: ns, name, labels, spec: podSpec }),
  );
  const pattern = fc
    .tuple(ns, fc.constantFrom("agent", "agent-", "agent-x", "debug-0", "web"), fc.boolean())
    .map(([n, t, star]) => `${n}/${t}${star ? "*" : ""}`);
  const allowlist = fc.record({
    services: fc.array(pattern, { maxLength: 2 }),
    hostPorts: fc.array(
      fc.tuple(pattern, port).map(([p, n]) => `${p}:${n}`),
      { maxLength: 3 },
    ),
  });
  const contract = contractSchema.parse({
    version: 1,
    endpoints: [
      { name: "web", exposed: true, scheme: "http", service: { namespace: "tools", name: "web-ui", port: 80 } },
      { name: "agent", exposed: true, scheme: "http", hostPort: { namespace: "tools", port: 7000, podSelector: { app: "agent" } } },
    ],
  });

  it("on random Services, Pods and workloads, with random allowlists", async () => {
    await fc.assert(
      fc.asyncProperty(object, allowlist, fc.boolean(), async (o, list, publishAll) => {
        const selected = publishAll ? ["web", "agent"] : [];
        const stack = { stack: "p", contract, selected, allowlist: list };
        const { policy } = admissionManifests({ ...stack, mode: "deny", failurePolicy: "Fail", contractFile: "c.yaml" });
        const metadata = {
          name: o.name,
          namespace: o.namespace,
          ...("labels" in o ? { labels: o.labels } : {}),
          ...("generateName" in o ? { generateName: o.generateName } : {}),
        };
        const template = "spec" in o ? { metadata: { labels: o.labels }, spec: o.spec } : undefined;
        const obj =
          o.kind === "Service"
            ? { metadata, spec: { type: o.type } }
            : o.kind === "Pod"
              ? { metadata, spec: o.spec }
              : o.kind === "CronJob"
                ? { kind: o.kind, metadata, spec: { jobTemplate: { spec: { template } } } }
                : { kind: o.kind, metadata, spec: { template } };
        const refusals = wouldRefuse({
          ...stack,
          services: o.kind === "Service" ? [obj as Service] : [],
          pods: o.kind === "Pod" ? [obj as Pod] : [],
          workloads: o.kind !== "Service" && o.kind !== "Pod" ? [obj as WorkloadObject] : [],
        });
        const byPolicy = await policyRefusals(policy.spec, { kind: o.kind, namespace: o.namespace, operation: "CREATE", object: obj });
        expect(refusals.length > 0, JSON.stringify({ o, list, selected, byPolicy })).toBe(byPolicy.length > 0);
      }),
      {
        numRuns: 300,
        // An exact pattern equal to a template's "<namespace>/<workload>-" still never declares it (the policy's rule).
        examples: [
          [
            {
              kind: "DaemonSet",
              namespace: "tools",
              name: "agent",
              labels: {},
              spec: { hostNetwork: false, containers: [{ name: "c", ports: [{ containerPort: 80, hostPort: 7000 }] }] },
            },
            { services: [], hostPorts: ["tools/agent-:7000"] },
            false,
          ],
        ],
      },
    );
  });
});

describe("denyWouldLock: what up checks before it puts deny in force", () => {
  const opened = openStack({ projectDir, stack: "bench" });
  const base = {
    contract: opened.contract,
    selected: opened.selected,
    allowlist: opened.settings.allowlist,
    acknowledge: [],
    unread: [],
    stackFile: "Pulumi.bench.yaml",
  };
  const template = (spec: unknown) => ({ metadata: { labels: { app: "web" } }, spec });
  const web = { containers: [{ name: "c", ports: [{ containerPort: 80, hostPort: 8081 }] }] };
  const deployment = { kind: "Deployment", metadata: { name: "web", namespace: "tenant" }, spec: { template: template(web) } };
  const replicaSet = { kind: "ReplicaSet", metadata: { name: "web-5d8f7c", namespace: "tenant" }, spec: { template: template(web) } };
  const webPod = pod("tenant", "web-5d8f7c-x7k2p", "node-a", { hostPort: 8081 });

  it("names each workload once with the line that admits it and its pods and ReplicaSets; a lone pod by its own name; a finished pod never", () => {
    const done = pod("tenant", "once-abcde", "node-a", { hostPort: 9000, phase: "Succeeded" });
    const problem = denyWouldLock({ ...base, pods: [webPod, debug, done], workloads: [replicaSet, deployment] });
    expect(problem?.split("\n")).toEqual([
      "the exposure guard in deny mode would refuse what runs in the cluster when it is created again (a rollout, a new node, a deleted pod): deny is not put in force while it would lock the cluster",
      "    Deployment tenant/web (hostPort 8081/TCP): admit it with ui-exposure:allowlist.hostPorts 'tenant/web-*:8081', or acknowledge its refusal in ui-exposure:admission.acknowledge ('tenant/web-*') of Pulumi.bench.yaml",
      "    Pod tenant/debug-shell (hostPort 2222/TCP): admit it with ui-exposure:allowlist.hostPorts 'tenant/debug-shell:2222', or acknowledge its refusal in ui-exposure:admission.acknowledge ('tenant/debug-shell') of Pulumi.bench.yaml",
    ]);
    // The lines given admit them: nothing left.
    const allowlist = { ...base.allowlist, hostPorts: [...base.allowlist.hostPorts, "tenant/web-*:8081", "tenant/debug-shell:2222"] };
    expect(denyWouldLock({ ...base, allowlist, pods: [webPod, debug], workloads: [replicaSet, deployment] })).toBeUndefined();
    // So does acknowledging them.
    expect(
      denyWouldLock({ ...base, acknowledge: ["tenant/web*", "tenant/debug-shell"], pods: [webPod, debug], workloads: [replicaSet, deployment] }),
    ).toBeUndefined();
  });

  // Kubernetes names a controller's pod from its generateName "<owner>-": the first 58 characters, then 5 random ones.
  const generated = (owner: string, random: string) => `${`${owner}-`.slice(0, 58)}${random}`;
  const owned = (p: Pod, kind: string, owner: string): Pod => ({
    ...p,
    metadata: { ...p.metadata, generateName: `${owner}-`, ownerReferences: [{ apiVersion: "apps/v1", kind, name: owner, uid: "u-1", controller: true }] },
  });
  const exporterSpec = { containers: [{ name: "c", ports: [{ containerPort: 9100, hostPort: 9100 }] }] };
  /** The policy's verdict on the CREATE of `object` with the allowlist line(s) added. */
  const admittedWith = async (lines: string[], kind: string, namespace: string, object: unknown) => {
    const allowlist = { ...base.allowlist, hostPorts: [...base.allowlist.hostPorts, ...lines] };
    const { policy } = admissionManifests({
      stack: "bench",
      contract: base.contract,
      selected: base.selected,
      allowlist,
      mode: "deny",
      failurePolicy: "Fail",
      contractFile: "c.yaml",
    });
    return (await policyRefusals(policy.spec, { kind, namespace, operation: "CREATE", object })).length === 0;
  };

  it("a DaemonSet whatever its name's length: the line it advises admits its pods now and its next pod (matched by generateName)", async () => {
    const ds = "observability-kube-prometheus-stack-prometheus-node-exporter";
    expect(ds).toHaveLength(60);
    const daemonSet = { kind: "DaemonSet", metadata: { name: ds, namespace: "monitoring" }, spec: { template: template(exporterSpec) } };
    const pods = ["x7k2p", "q9w4z"].map((r) => owned(pod("monitoring", generated(ds, r), "node-a", { hostPort: 9100 }), "DaemonSet", ds));
    expect(pods[0]?.metadata.name).toBe("observability-kube-prometheus-stack-prometheus-node-exportx7k2p");
    expect(
      denyWouldLock({ ...base, pods, workloads: [daemonSet] })
        ?.split("\n")
        .slice(1),
    ).toEqual([
      `    DaemonSet monitoring/${ds} (hostPort 9100/TCP): admit it with ui-exposure:allowlist.hostPorts 'monitoring/${ds}-*:9100', or acknowledge its refusal in ui-exposure:admission.acknowledge ('monitoring/${ds}-*') of Pulumi.bench.yaml`,
    ]);
    const line = `monitoring/${ds}-*:9100`;
    const allowlist = { ...base.allowlist, hostPorts: [...base.allowlist.hostPorts, line] };
    expect(denyWouldLock({ ...base, allowlist, pods, workloads: [daemonSet] })).toBeUndefined();
    expect(denyWouldLock({ ...base, acknowledge: [`monitoring/${ds}-*`], pods, workloads: [daemonSet] })).toBeUndefined();
    // The acknowledge line advised covers that workload, not one whose name it merely starts (outside tester).
    const sibling = { ...daemonSet, metadata: { name: `${ds}2`, namespace: "monitoring" } };
    expect(denyWouldLock({ ...base, acknowledge: [`monitoring/${ds}-*`], pods: [], workloads: [sibling] })).toContain(`DaemonSet monitoring/${ds}2 `);
    // The policy admits the DaemonSet and the pod it makes next, on a new node.
    const next = owned(pod("monitoring", generated(ds, "n3w0d"), "node-c", { hostPort: 9100 }), "DaemonSet", ds);
    expect(await admittedWith([line], "DaemonSet", "monitoring", daemonSet)).toBe(true);
    expect(await admittedWith([line], "Pod", "monitoring", next)).toBe(true);
    expect(await admittedWith([], "Pod", "monitoring", next)).toBe(false);
  });

  it("the ReplicaSets of a controller it does not read (an Argo Rollout): the advice names the owner, and admits its next revision", async () => {
    const rs = (hash: string) => ({
      kind: "ReplicaSet",
      metadata: {
        name: `demo-${hash}`,
        namespace: "tenant",
        labels: { "rollouts-pod-template-hash": hash },
        ownerReferences: [{ apiVersion: "argoproj.io/v1alpha1", kind: "Rollout", name: "demo", uid: "r-1", controller: true }],
      },
      spec: { template: template(web) },
    });
    const current = rs("7c9d8f");
    const podOf = (hash: string, random: string) => owned(pod("tenant", `demo-${hash}-${random}`, "node-a", { hostPort: 8081 }), "ReplicaSet", `demo-${hash}`);
    expect(
      denyWouldLock({ ...base, pods: [podOf("7c9d8f", "abcde")], workloads: [current] })
        ?.split("\n")
        .slice(1),
    ).toEqual([
      "    Rollout tenant/demo (hostPort 8081/TCP): admit it with ui-exposure:allowlist.hostPorts 'tenant/demo-*:8081', or acknowledge its refusal in ui-exposure:admission.acknowledge ('tenant/demo-*') of Pulumi.bench.yaml",
    ]);
    // The next revision: a new ReplicaSet and its pods, admitted by the same line.
    expect(await admittedWith(["tenant/demo-*:8081"], "Pod", "tenant", podOf("55f6b9", "xyz12"))).toBe(true);
    expect(
      denyWouldLock({
        ...base,
        allowlist: { ...base.allowlist, hostPorts: ["tenant/demo-*:8081"] },
        pods: [podOf("55f6b9", "xyz12")],
        workloads: [rs("55f6b9")],
      }),
    ).toBeUndefined();
  });

  it("an owner reference of another form (a kind with a newline and an escape) is no owner: never printed (outside tester)", () => {
    const forged = owned(
      pod("tenant", "demo-abcde", "node-a", { hostPort: 8081 }),
      "Rollout\u001b[31m\n    DaemonSet kube-system/fake (hostPort 1/TCP): all fine",
      "demo",
    );
    const lines = denyWouldLock({ ...base, pods: [forged], workloads: [] })
      ?.split("\n")
      .slice(1);
    expect(lines).toEqual([
      "    Pod tenant/demo-abcde (hostPort 8081/TCP): admit it with ui-exposure:allowlist.hostPorts 'tenant/demo-abcde:8081', or acknowledge its refusal in ui-exposure:admission.acknowledge ('tenant/demo-abcde') of Pulumi.bench.yaml",
    ]);
  });

  it("a name read back with a line break or an escape is one escaped line (a hand-made snapshot; outside tester)", () => {
    const odd = pod("tenant", "q\n    DaemonSet kube-system/fake (hostPort 1/TCP): admit \u001b[31m", "node-a", { hostPort: 8081 });
    const lines = denyWouldLock({ ...base, pods: [odd], workloads: [] })?.split("\n") ?? [];
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain("Pod tenant/q\\x0a    DaemonSet kube-system/fake (hostPort 1/TCP): admit \\x1b[31m (hostPort 8081/TCP)");
  });

  it("an owner whose name does not prefix its pods' is not named: the pod is, by its own name", () => {
    const odd = owned(pod("tenant", "launcher-abcde", "node-a", { hostPort: 8081 }), "VirtualMachine", "vm-1");
    expect(
      denyWouldLock({ ...base, pods: [{ ...odd, metadata: { ...odd.metadata, generateName: "launcher-" } }], workloads: [] })
        ?.split("\n")
        .slice(1),
    ).toEqual([
      "    Pod tenant/launcher-abcde (hostPort 8081/TCP): admit it with ui-exposure:allowlist.hostPorts 'tenant/launcher-abcde:8081', or acknowledge its refusal in ui-exposure:admission.acknowledge ('tenant/launcher-abcde') of Pulumi.bench.yaml",
    ]);
  });

  it("a workload kind it could not read refuses too (the check would be partial); past 20 it says how many more", () => {
    expect(denyWouldLock({ ...base, unread: ["daemonsets.apps (403 Forbidden)"], pods: [], workloads: [] })).toBe(
      "deny is not put in force without checking what it would refuse (not read: daemonsets.apps (403 Forbidden)): let the stack's identity list them, or keep mode warn",
    );
    const many = Array.from({ length: 25 }, (_, i) => pod("tenant", `debug-${i}`, "node-a", { hostPort: 2000 + i }));
    const lines = denyWouldLock({ ...base, pods: many, workloads: [] })?.split("\n") ?? [];
    expect(lines).toHaveLength(22);
    expect(lines[21]).toBe("    and 5 more (exposure drift lists them all)");
  });
});
