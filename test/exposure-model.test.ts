// The one model of exposure (src/core/exposure-model.ts): drawn clusters get the same answer, for
// every object, from the planner, the live verdicts, drift's audit, the pre-deny report and the
// generated ValidatingAdmissionPolicy evaluated with a maintained CEL implementation (cel-js).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admissionManifests } from "../src/core/admission";
import { wouldRefuse } from "../src/core/admission-preview";
import { auditExposure } from "../src/core/audit";
import { contractSchema } from "../src/core/contract/schema";
import {
  CHECK_LIMITS,
  effectiveHostPorts,
  exposureRules,
  isExposingService,
  isFinishedPod,
  serviceVerdict,
  stateServiceUids,
} from "../src/core/exposure-model";
import type { Node, Pod, Service } from "../src/core/kube/types";
import { observe } from "../src/core/observe";
import { planHostPort } from "../src/core/plan";
import type { Allowlist } from "../src/core/settings";
import { policyRefusals } from "./support/admission-eval";

const contract = contractSchema.parse({
  version: 1,
  endpoints: [
    { name: "web", exposed: true, scheme: "http", service: { namespace: "tools", name: "web-ui", port: 80 } },
    { name: "agent", exposed: true, scheme: "http", hostPort: { namespace: "tools", port: 7000, podSelector: { app: "agent" } } },
  ],
});
const node: Node = {
  metadata: { name: "n1" },
  status: { addresses: [{ type: "InternalIP", address: "198.18.0.2" }], conditions: [{ type: "Ready", status: "True" }] },
};

// Small alphabets so that names, prefixes and ports collide often.
const ns = fc.constantFrom("tools", "kube-system");
const port = fc.constantFrom(80, 2222, 7000, 9964);
const servicePort = fc.record(
  { name: fc.constantFrom("http", "https", "ssh"), port, protocol: fc.constantFrom("TCP", "UDP"), nodePort: fc.constantFrom(30080, 31022) },
  { requiredKeys: ["port"] },
);
const service = fc
  .record({
    namespace: ns,
    name: fc.constantFrom("web-nodeport", "web-nodeport-2", "debug", "gw-1"),
    type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer", "ExternalName", undefined),
    ports: fc.array(servicePort, { minLength: 1, maxLength: 3 }),
    externalIPs: fc.option(fc.array(fc.constantFrom("198.18.0.2", "198.18.0.9"), { minLength: 1, maxLength: 2 }), { nil: undefined }),
    allocateLoadBalancerNodePorts: fc.option(fc.boolean(), { nil: undefined }),
  })
  .map(
    (s): Service =>
      ({
        metadata: { name: s.name, namespace: s.namespace, uid: `uid-${s.name}` },
        spec: {
          ...(s.type ? { type: s.type } : {}),
          selector: { app: "web" },
          ports: s.ports,
          ...(s.externalIPs ? { externalIPs: s.externalIPs } : {}),
          ...(s.type === "LoadBalancer" && s.allocateLoadBalancerNodePorts !== undefined
            ? { allocateLoadBalancerNodePorts: s.allocateLoadBalancerNodePorts }
            : {}),
        },
      }) as Service,
  );
const containerPorts = fc.array(
  fc.record(
    { containerPort: port, hostPort: fc.option(fc.constantFrom(0, 80, 7000, 9964), { nil: undefined }), protocol: fc.constantFrom("TCP", "UDP") },
    {
      requiredKeys: ["containerPort"],
    },
  ),
  { maxLength: 3 },
);
const containers = fc.array(fc.record({ name: fc.constant("c"), ports: containerPorts }), { maxLength: 2 });
const pod = fc
  .record({
    namespace: ns,
    name: fc.constantFrom("agent", "agent-x", "agent-x-1", "debug-0"),
    labels: fc.dictionary(fc.constantFrom("app", "tier"), fc.constantFrom("agent", "web"), { maxKeys: 2 }),
    hostNetwork: fc.boolean(),
    containers,
    initContainers: containers,
    phase: fc.constantFrom("Running", "Pending", "Succeeded", "Failed"),
    scheduled: fc.boolean(),
  })
  .map(
    (p): Pod =>
      ({
        metadata: { name: p.name, namespace: p.namespace, labels: p.labels },
        spec: {
          ...(p.scheduled ? { nodeName: "n1" } : {}),
          hostNetwork: p.hostNetwork,
          containers: p.containers,
          ...(p.initContainers.length ? { initContainers: p.initContainers } : {}),
        },
        status: { phase: p.phase, conditions: [{ type: "Ready", status: "True" }] },
      }) as Pod,
  );
const pattern = fc
  .tuple(ns, fc.constantFrom("agent", "agent-", "agent-x", "debug", "debug-0", "web-nodeport", "gw-"), fc.boolean())
  .map(([n, t, star]) => `${n}/${t}${star ? "*" : ""}`);
const allowlist: fc.Arbitrary<Allowlist> = fc.record({
  services: fc.array(pattern, { maxLength: 2 }),
  hostPorts: fc.array(
    fc.tuple(pattern, port).map(([p, n]) => `${p}:${n}`),
    { maxLength: 3 },
  ),
});
const selected = fc.subarray(["web", "agent"]);
const key = (o: { metadata: { namespace?: string; name: string } }) => `${o.metadata.namespace}/${o.metadata.name}`;

describe("one model of exposure: every reader gives the same answer (property, policy evaluated with cel-js)", () => {
  it("on drawn clusters: Services of every type, multi-port, externalIPs; pods with host ports anywhere; allowlists with wildcards", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(service, { maxLength: 3, selector: key }),
        fc.uniqueArray(pod, { maxLength: 3, selector: key }),
        allowlist,
        selected,
        async (services, pods, list, chosen) => {
          const stack = { contract, selected: chosen, allowlist: list };
          const audit = auditExposure({ ...stack, services, pods });
          const refusals = wouldRefuse({ ...stack, services, pods, workloads: [] });
          const { policy } = admissionManifests({ ...stack, stack: "p", mode: "deny", failurePolicy: "Fail", contractFile: "c.yaml" });
          const undeclared = new Set(audit.undeclared.map((u) => `${u.namespace}/${u.name}`));
          const refused = new Set(refusals.map((r) => `${r.namespace}/${r.name}`));
          const context = JSON.stringify({ services, pods, list, chosen, audit, refusals });

          for (const svc of services) {
            const byPolicy = await policyRefusals(policy.spec, {
              kind: "Service",
              namespace: svc.metadata.namespace as string,
              operation: "CREATE",
              object: svc,
            });
            // Service and pod names never collide in these alphabets.
            expect(undeclared.has(key(svc)), `audit, ${key(svc)}: ${context}`).toBe(byPolicy.length > 0);
            expect(refused.has(key(svc)), `pre-deny report, ${key(svc)}: ${context}`).toBe(byPolicy.length > 0);
            // The live verdict of our Service: an opening the entry does not declare is drift there too.
            if (chosen.includes("web") && key(svc) === "tools/web-nodeport" && isExposingService(svc)) {
              const verdict = observe(contract, { services, endpointSlices: [], nodes: [node], pods: [] }, { selected: chosen }).entries.find(
                (e) => e.name === "web",
              );
              const opensMore = verdict?.findings.some((f) => f.code === "extra-exposure" || f.code === "service-type-changed") ?? false;
              expect(opensMore, `status, ${context}`).toBe(byPolicy.length > 0);
            }
          }
          for (const p of pods) {
            if (isFinishedPod(p)) {
              expect(undeclared.has(key(p)) || refused.has(key(p)), `a finished pod holds nothing: ${context}`).toBe(false);
              continue;
            }
            const byPolicy = await policyRefusals(policy.spec, { kind: "Pod", namespace: p.metadata.namespace as string, operation: "CREATE", object: p });
            expect(undeclared.has(key(p)), `audit, ${key(p)}: ${context}`).toBe(byPolicy.length > 0);
            expect(refused.has(key(p)), `pre-deny report, ${key(p)}: ${context}`).toBe(byPolicy.length > 0);
          }
          // The planner finds the hostPort entry's pod exactly when the audit declares a scheduled pod's port by that entry.
          if (chosen.includes("agent")) {
            const entry = contract.endpoints.find((e) => e.name === "agent") as never;
            const plan = planHostPort(entry, pods, new Map([["n1", node]]));
            const holders = audit.declared.filter((d) => d.declaredBy === "contract entry 'agent'" && d.node);
            expect("problem" in plan, `planner: ${context}`).toBe(holders.length === 0);
          }
        },
      ),
      { numRuns: 250 },
    );
  });
});

describe("exposure model: what each reader missed before", () => {
  const rules = exposureRules(contract, ["web", "agent"], { services: [], hostPorts: [] });
  const ours = (spec: Service["spec"]): Service => ({ metadata: { name: "web-nodeport", namespace: "tools" }, spec });
  const one = { name: "http", port: 80, nodePort: 30080 };

  it("a second port on our Service is undeclared exposure: audit, pre-deny report, status and policy (CREATE and UPDATE)", async () => {
    const patched = ours({ type: "NodePort", ports: [one, { name: "ssh", port: 22, nodePort: 31022 }] });
    expect(serviceVerdict(rules, ours({ type: "NodePort", ports: [one] }))).toEqual({ declared: { by: "contract", entry: "web" } });
    expect(serviceVerdict(rules, patched)).toEqual({ undeclared: "2 ports (the contract declares one)", entry: "web" });
    const stack = { contract, selected: ["web"], allowlist: { services: [], hostPorts: [] } };
    expect(auditExposure({ ...stack, services: [patched], pods: [] }).undeclared.map((u) => u.name)).toEqual(["web-nodeport"]);
    expect(wouldRefuse({ ...stack, services: [patched], pods: [], workloads: [] })).toEqual([
      { kind: "Service", namespace: "tools", name: "web-nodeport", what: "2 ports (the contract declares one)" },
    ]);
    const web = observe(
      contract,
      {
        services: [patched, { metadata: { name: "web-ui", namespace: "tools" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } }],
        endpointSlices: [],
        nodes: [node],
        pods: [],
      },
      { selected: ["web"] },
    ).entries[0];
    expect(web?.findings.map((f) => f.code)).toContain("extra-exposure");
    const { policy } = admissionManifests({ ...stack, stack: "p", mode: "deny", failurePolicy: "Ignore", contractFile: "c.yaml" });
    const update = (object: Service, oldObject: Service) =>
      policyRefusals(policy.spec, { kind: "Service", namespace: "tools", operation: "UPDATE", object, oldObject });
    expect(await update(patched, ours({ type: "NodePort", ports: [one] }))).toEqual([
      "Service tools/web-nodeport (type NodePort, 2 ports where the contract declares one) is not in the ui-exposure contract of stack p: publish the UI through an entry of c.yaml (ui-exposure then creates '<entry>-nodeport'), or declare the Service in ui-exposure:allowlist.services of Pulumi.p.yaml",
    ]);
    // `up` re-applying the Service (or the port hold) changes nothing it opens: admitted.
    expect(await update(ours({ type: "NodePort", ports: [one] }), ours({ type: "NodePort", ports: [one] }))).toEqual([]);
  });

  it("externalIPs make any Service reachable from outside: ClusterIP with externalIPs counts in the audit, the report and the policy", async () => {
    const svc: Service = {
      metadata: { name: "debug", namespace: "tools" },
      spec: { type: "ClusterIP", ports: [{ port: 80 }], externalIPs: ["198.18.0.2"] },
    } as Service;
    const stack = { contract, selected: [], allowlist: { services: [], hostPorts: [] } };
    expect(auditExposure({ ...stack, services: [svc], pods: [] }).undeclared).toEqual([
      {
        kind: "ClusterIP",
        namespace: "tools",
        name: "debug",
        ports: "80->no nodePort",
        addresses: ["198.18.0.2"],
        reason: "reachable at externalIPs 198.18.0.2; in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it",
      },
    ]);
    expect(wouldRefuse({ ...stack, services: [svc], pods: [], workloads: [] })).toEqual([
      { kind: "Service", namespace: "tools", name: "debug", what: "externalIPs 198.18.0.2" },
    ]);
    const { policy } = admissionManifests({ ...stack, stack: "p", mode: "deny", failurePolicy: "Ignore", contractFile: "c.yaml" });
    expect((await policyRefusals(policy.spec, { kind: "Service", namespace: "tools", operation: "CREATE", object: svc }))[0]).toContain(
      "Service tools/debug (type ClusterIP, externalIPs 198.18.0.2) is not in the ui-exposure contract",
    );
    // Adding an address to a Service that already had one is new exposure; keeping it is not.
    const without = { ...svc, spec: { ...svc.spec, externalIPs: [] } } as Service;
    expect(await policyRefusals(policy.spec, { kind: "Service", namespace: "tools", operation: "UPDATE", object: svc, oldObject: without })).toHaveLength(1);
    expect(await policyRefusals(policy.spec, { kind: "Service", namespace: "tools", operation: "UPDATE", object: svc, oldObject: svc })).toEqual([]);
  });

  it("the planner finds a hostNetwork pod's containerPort as its hostPort (the API server's defaulting), and never a finished pod", () => {
    const agent = (phase: string, hostNetwork: boolean): Pod =>
      ({
        metadata: { name: "agent-1", namespace: "tools", labels: { app: "agent" } },
        spec: { nodeName: "n1", hostNetwork, containers: [{ name: "c", ports: [{ containerPort: 7000 }] }] },
        status: { phase },
      }) as Pod;
    const entry = contract.endpoints.find((e) => e.name === "agent") as never;
    const nodes = new Map([["n1", node]]);
    expect(planHostPort(entry, [agent("Running", true)], nodes)).toMatchObject({ kind: "hostPort", pod: "agent-1", hostPort: 7000 });
    expect(planHostPort(entry, [agent("Running", false)], nodes)).toHaveProperty("problem");
    expect(planHostPort(entry, [agent("Succeeded", true)], nodes)).toHaveProperty("problem");
  });

  it("counts init and ephemeral containers' ports; a hostPort of 0 is none", () => {
    expect(
      effectiveHostPorts({
        initContainers: [
          {
            ports: [
              { containerPort: 1, hostPort: 0 },
              { containerPort: 2, hostPort: 9000 },
            ],
          },
        ],
        ephemeralContainers: [{ ports: [{ containerPort: 3, hostPort: 9001, protocol: "UDP" }] }],
      }),
    ).toEqual([
      { port: 9000, protocol: "TCP", onHostNetwork: false },
      { port: 9001, protocol: "UDP", onHostNetwork: false },
    ]);
  });

  it("a pod too large to check is refused by the report and the policy alike, before any port is read (bounded work)", async () => {
    const many = Array.from({ length: CHECK_LIMITS.portsPerContainer + 1 }, (_, i) => ({ containerPort: 20000 + i }));
    const big: Pod = {
      metadata: { name: "agent-x", namespace: "tools", labels: { app: "agent" } },
      spec: { hostNetwork: true, containers: [{ name: "c", ports: many }] },
    } as Pod;
    const stack = { contract, selected: ["agent"], allowlist: { services: [], hostPorts: ["tools/agent-*:20000"] } };
    expect(wouldRefuse({ ...stack, services: [], pods: [big], workloads: [] })).toEqual([
      { kind: "Pod", namespace: "tools", name: "agent-x", what: "too large to check (more than 32 containers in a list or 32 ports in a container)" },
    ]);
    const { policy } = admissionManifests({ ...stack, stack: "p", mode: "deny", failurePolicy: "Ignore", contractFile: "c.yaml" });
    expect(await policyRefusals(policy.spec, { kind: "Pod", namespace: "tools", operation: "CREATE", object: big })).toEqual([
      "Pod tools/agent-x has more than 32 containers in a list or 32 ports in a container: too large for the exposure guard to check (ui-exposure refuses what it cannot check): split it or declare fewer ports",
    ]);
    const manyContainers = Array.from({ length: CHECK_LIMITS.containers + 1 }, () => ({ name: "c" }));
    const wide = { ...big, spec: { containers: manyContainers } } as Pod;
    expect(await policyRefusals(policy.spec, { kind: "Pod", namespace: "tools", operation: "CREATE", object: wide })).toHaveLength(1);
    expect(wouldRefuse({ ...stack, services: [], pods: [wide], workloads: [] })).toHaveLength(1);
  });

  it("allowlist items are parsed once: wildcard, port, reason", () => {
    const r = exposureRules(contract, [], {
      services: ["tools/gw-*"],
      hostPorts: ["kube-system/cilium-*:4244"],
      reasons: { "kube-system/cilium-*:4244": "agent" },
    });
    expect(r.services[0]).toEqual({ source: "tools/gw-*", prefix: true, text: "tools/gw-" });
    expect(r.hostPorts[0]).toEqual({ source: "kube-system/cilium-*:4244", prefix: true, text: "kube-system/cilium-", port: 4244, reason: "agent" });
  });

  it("reads the uids of the Services a state holds, trusting nothing else it holds", () => {
    const uids = stateServiceUids({
      "urn:a": { type: "kubernetes:core/v1:Service", outputs: { metadata: { namespace: "argocd", name: "argocd-nodeport", uid: "u1" } } },
      "urn:b": { type: "kubernetes:core/v1:ServicePatch", outputs: { metadata: { namespace: "argocd", name: "argocd-nodeport", uid: "u1" } } },
      "urn:c": { type: "kubernetes:core/v1:Service", outputs: { metadata: { namespace: "x", name: "y", uid: 7 } } },
      "urn:d": null,
    });
    expect([...uids]).toEqual([["argocd/argocd-nodeport", "u1"]]);
    expect(stateServiceUids("garbage").size).toBe(0);
  });
});
