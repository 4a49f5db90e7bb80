// The one model of exposure (src/core/exposure-model.ts): drawn clusters get the same answer, for
// every object, from the planner, the live verdicts, drift's audit, the pre-deny report and the
// ValidatingAdmissionPolicy generated from the rule table (src/core/exposure-rules.ts), evaluated
// with a maintained CEL implementation (cel-js).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admissionManifests } from "../src/core/admission";
import { wouldRefuse } from "../src/core/admission-preview";
import { auditExposure } from "../src/core/audit";
import { contractSchema } from "../src/core/contract/schema";
import { CHECK_LIMITS, classifyCluster, effectiveHostPorts, exposureRules, isExposingService, isFinishedPod, serviceVerdict } from "../src/core/exposure-model";
import type { Node, Pod, Service } from "../src/core/kube/types";
import { observe } from "../src/core/observe";
import { stateUids } from "../src/core/ownership";
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
    headless: fc.boolean(),
  })
  .map(
    (s): Service =>
      ({
        metadata: { name: s.name, namespace: s.namespace, uid: `uid-${s.name}` },
        spec: {
          ...(s.type ? { type: s.type } : {}),
          // Headless (where the API server allows it): Kubernetes then ignores externalIPs.
          ...(s.headless && (s.type === undefined || s.type === "ClusterIP") ? { clusterIP: "None" } : {}),
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
    fc.tuple(pattern, fc.oneof(port, fc.constant("hostNetwork"))).map(([p, n]) => `${p}:${n}`),
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
            // (Of a port a regular container holds: an init container's is counted, never published.)
            const serving = new Set(pods.filter((p) => effectiveHostPorts(p.spec).some((h) => h.port === 7000 && h.serves)).map(key));
            const holders = audit.declared.filter((d) => d.declaredBy === "contract entry 'agent'" && d.node && serving.has(`${d.namespace}/${d.name}`));
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
        fix: "kubectl -n tools delete service debug, or declare it: ui-exposure:allowlist.services 'tools/debug'",
        allowlistLine: "ui-exposure:allowlist.services 'tools/debug'",
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

  it("a pod on the host network is exposure with or without listed ports: audit, pre-deny report, policy; 'namespace/prefix*:hostNetwork' declares it", async () => {
    // As `kubectl debug node/n1` creates it: host network, PID and IPC, no port listed.
    const debugger_: Pod = {
      metadata: { name: "node-debugger-n1-x7k2p", namespace: "default" },
      spec: { nodeName: "n1", hostNetwork: true, hostPID: true, hostIPC: true, containers: [{ name: "debugger" }] },
      status: { phase: "Running" },
    } as Pod;
    const listed = {
      ...debugger_,
      metadata: { ...debugger_.metadata, name: "node-debugger-n1-abcde" },
      spec: { ...debugger_.spec, containers: [{ name: "debugger", ports: [{ containerPort: 8080 }] }] },
    } as Pod;
    const judge = async (allowlist: Allowlist) => {
      const stack = { contract, selected: [], allowlist };
      const { policy } = admissionManifests({ ...stack, stack: "p", mode: "deny", failurePolicy: "Ignore", contractFile: "c.yaml" });
      const audit = auditExposure({ ...stack, services: [], pods: [debugger_, listed] });
      return {
        audit: audit.undeclared.map((u) => `${u.kind} ${u.name} ${u.ports}`),
        declared: audit.declared.map((d) => `${d.kind} ${d.name} ${d.ports} ${d.declaredBy}`),
        report: wouldRefuse({ ...stack, services: [], pods: [debugger_, listed], workloads: [] }).map((r) => `${r.name}: ${r.what}`),
        policy: [
          ...(await policyRefusals(policy.spec, { kind: "Pod", namespace: "default", operation: "CREATE", object: debugger_ })),
          ...(await policyRefusals(policy.spec, { kind: "Pod", namespace: "default", operation: "CREATE", object: listed })),
        ],
      };
    };
    const none = await judge({ services: [], hostPorts: [] });
    expect(none.audit).toEqual(["hostNetwork node-debugger-n1-x7k2p every port of the node", "hostPort node-debugger-n1-abcde 8080/TCP"]);
    expect(none.report).toEqual(["node-debugger-n1-x7k2p: the host network (no port listed)", "node-debugger-n1-abcde: hostPort 8080/TCP"]);
    expect(none.policy).toEqual([
      "Pod default/node-debugger-n1-x7k2p is on the host network (it may serve on every port of the node), which is not in the ui-exposure contract of stack p: declare it in ui-exposure:allowlist.hostPorts of Pulumi.p.yaml as 'namespace/pod-prefix*:hostNetwork'",
      "Pod default/node-debugger-n1-abcde declares hostPort 8080, which is not in the ui-exposure contract of stack p: declare it as a hostPort entry (namespace, port, podSelector) of c.yaml, or in ui-exposure:allowlist.hostPorts of Pulumi.p.yaml as 'namespace/pod-prefix*:port' (or 'namespace/pod-prefix*:hostNetwork' for a pod on the host network)",
    ]);
    // The documented line for `kubectl debug node/...` (docs/commands.md) declares both, whatever they list.
    const allowed = await judge({ services: [], hostPorts: ["default/node-debugger-*:hostNetwork"] });
    expect(allowed).toEqual({
      audit: [],
      declared: [
        "hostNetwork node-debugger-n1-x7k2p every port of the node allowlist 'default/node-debugger-*:hostNetwork'",
        "hostPort node-debugger-n1-abcde 8080/TCP allowlist 'default/node-debugger-*:hostNetwork'",
      ],
      report: [],
      policy: [],
    });
    // A port item does not declare the host network; a hostNetwork item declares nothing off it.
    expect((await judge({ services: [], hostPorts: ["default/node-debugger-*:8080"] })).report).toEqual([
      "node-debugger-n1-x7k2p: the host network (no port listed)",
    ]);
    const offHost = { ...listed, spec: { containers: [{ name: "c", ports: [{ containerPort: 80, hostPort: 8080 }] }] } } as Pod;
    const rules = exposureRules(contract, [], { services: [], hostPorts: ["default/node-debugger-*:hostNetwork"] });
    expect(classifyCluster(rules, { services: [], pods: [offHost] }).pods[0]?.openings.map((o) => o.declared)).toEqual([undefined]);
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
      { port: 9000, protocol: "TCP", onHostNetwork: false, serves: false },
      { port: 9001, protocol: "UDP", onHostNetwork: false, serves: false },
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

  it("the widest pod within the bounds is judged port by port, its message cut below the API server's 5 KiB", async () => {
    const containers = Array.from({ length: CHECK_LIMITS.containers }, (_, c) => ({
      name: `c${c}`,
      ports: Array.from({ length: CHECK_LIMITS.portsPerContainer }, (_, p) => ({ containerPort: 30_000 + c * 32 + p })),
    }));
    const widest = { metadata: { name: "widest", namespace: "tools" }, spec: { hostNetwork: true, containers } };
    const { policy } = admissionManifests({
      contract,
      selected: [],
      allowlist: { services: [], hostPorts: [] },
      stack: "p",
      mode: "deny",
      failurePolicy: "Ignore",
      contractFile: "c.yaml",
    });
    const [message] = await policyRefusals(policy.spec, { kind: "Pod", namespace: "tools", operation: "CREATE", object: widest });
    expect(message).toMatch(/^Pod tools\/widest declares hostPort 30000, 30001, .*\.\.\., which is not in the ui-exposure contract/);
    expect(message?.length).toBeLessThan(5 * 1024);
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

  it("reads the uids of the Services and ConfigMaps a state holds, trusting nothing else it holds", () => {
    const uids = stateUids({
      "urn:a": { type: "kubernetes:core/v1:Service", outputs: { metadata: { namespace: "argocd", name: "argocd-nodeport", uid: "u1" } } },
      "urn:b": { type: "kubernetes:core/v1:ServicePatch", outputs: { metadata: { namespace: "argocd", name: "argocd-nodeport", uid: "u1" } } },
      "urn:c": { type: "kubernetes:core/v1:Service", outputs: { metadata: { namespace: "x", name: "y", uid: 7 } } },
      "urn:d": null,
      "urn:e": { type: "kubernetes:core/v1:ConfigMap", outputs: { metadata: { namespace: "platform-portal", name: "ui-exposure-published", uid: "u2" } } },
    });
    expect([...uids.services]).toEqual([["argocd/argocd-nodeport", "u1"]]);
    expect([...uids.configMaps]).toEqual([["platform-portal/ui-exposure-published", "u2"]]);
    const guard = stateUids({
      "urn:p": { type: "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", outputs: { metadata: { name: "g", uid: "u3" } } },
      "urn:b": { type: "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", outputs: { metadata: { name: "g", uid: "u4" } } },
    }).guard;
    expect([...guard]).toEqual(["u3", "u4"]);
    expect(stateUids("garbage").services.size).toBe(0);
  });
});

describe("exposure model: bounded work, node ports opened by an UPDATE, ignored externalIPs, init containers' ports", () => {
  const none = { services: [], hostPorts: [] };
  const manifests = (allowlist: Allowlist, selected: string[] = []) =>
    admissionManifests({ contract, selected, allowlist, stack: "p", mode: "deny", failurePolicy: "Ignore", contractFile: "c.yaml" }).policy.spec;
  const variableOf = (spec: ReturnType<typeof manifests>, name: string) => spec.variables.find((v) => v.name === name)?.expression;
  /** The tester's shape: 32 containers x 32 ports in each list given, on the host network unless said. */
  const atBound = (lists: string[], hostNetwork = true) => {
    let next = 20_000;
    const spec: Record<string, unknown> = { hostNetwork };
    for (const l of lists) {
      spec[l] = Array.from({ length: CHECK_LIMITS.containers }, (_, c) => ({
        name: `${l.slice(0, 4)}${c}`,
        ports: Array.from({ length: CHECK_LIMITS.portsPerContainer }, () => ({ containerPort: next++ })),
      }));
    }
    return spec;
  };
  const largestAllowlist: Allowlist = {
    services: [],
    hostPorts: Array.from({ length: CHECK_LIMITS.allowlistItems }, (_, i) => `other-${i}/agent-${i}-*:${1000 + i}`),
  };

  it("the work per port does not grow with the allowlist: one map lookup, the map built once per request", () => {
    const small = manifests({ services: [], hostPorts: ["other-0/agent-0-*:1000"] });
    const large = manifests(largestAllowlist);
    for (const name of ["undeclaredHostPorts", "oldUndeclaredHostPortList", "refusedHostPorts"]) {
      expect(variableOf(large, name), name).toBe(variableOf(small, name));
    }
    expect(
      variableOf(large, "declaredPorts")?.startsWith(
        '{1000: (["other-0/agent-0-"].exists(t, variables.podKey.startsWith(t) || variables.podGeneratedKey.startsWith(t)))',
      ),
    ).toBe(true);
    // An UPDATE never compares each port with each old container's list (that grew with the product).
    expect(variableOf(large, "refusedHostPorts")).not.toMatch(/exists\(l, h in l\)/);
  });

  it("at the allowlist's bound (items and characters), every generated expression stays below CEL's default size limit (100,000 code points)", () => {
    const per = Math.floor(CHECK_LIMITS.allowlistCharacters / CHECK_LIMITS.allowlistItems);
    const item = (i: number, suffix: string) => {
      const head = `n${i}/`;
      return `${head}${"p".repeat(per - head.length - suffix.length - 1)}*${suffix}`;
    };
    const spec = manifests({
      services: Array.from({ length: CHECK_LIMITS.allowlistItems }, (_, i) => item(i, "")),
      hostPorts: Array.from({ length: CHECK_LIMITS.allowlistItems }, (_, i) => item(i, `:${1000 + i}`)),
    });
    const longest = Math.max(...[...spec.variables.map((v) => v.expression), ...spec.validations.map((v) => v.messageExpression)].map((e) => [...e].length));
    expect(longest).toBeGreaterThan(40_000);
    expect(longest).toBeLessThan(100_000);
  });

  it("with the largest allowlist accepted, a pod at the bound (containers and init containers) is refused port by port", async () => {
    const widest = { metadata: { name: "widest", namespace: "tester" }, spec: atBound(["containers", "initContainers"]) };
    const [message] = await policyRefusals(manifests(largestAllowlist), { kind: "Pod", namespace: "tester", operation: "CREATE", object: widest });
    expect(message).toMatch(/^Pod tester\/widest declares hostPort 21024, 21025, .*\.\.\., which is not in/);
  });

  it("a workload UPDATE to hostNetwork at the bound is refused; keeping what it held is admitted, and so is dropping a port", async () => {
    const deploy = (spec: unknown) => ({
      metadata: { name: "sneaky", namespace: "tester" },
      spec: { replicas: 0, template: { metadata: { labels: { app: "sneaky" } }, spec } },
    });
    const spec = manifests(none);
    const update = (object: unknown, oldObject: unknown) =>
      policyRefusals(spec, { kind: "Deployment", namespace: "tester", operation: "UPDATE", object, oldObject });
    const plain = deploy(atBound(["initContainers", "containers"], false));
    const hostNet = deploy(atBound(["initContainers", "containers"], true));
    expect(await update(plain, plain)).toEqual([]);
    expect((await update(hostNet, plain))[0]).toMatch(/^Deployment tester\/sneaky \(pod template\) declares hostPort 20000, 20001, /);
    // Already held before this UPDATE (created before deny): not new exposure, whatever its size.
    expect(await update(hostNet, hostNet)).toEqual([]);
    // One container holding these host ports (container port: the host port - 8000).
    const holding = (...hostPorts: number[]) =>
      deploy({ containers: [{ name: "c", ports: hostPorts.map((hostPort) => ({ containerPort: hostPort - 8000, hostPort })) }] });
    const held = holding(8080, 8081);
    const fewer = holding(8080);
    const more = holding(8080, 8082);
    expect(await update(fewer, held)).toEqual([]);
    expect((await update(more, held))[0]).toMatch(/^Deployment tester\/sneaky \(pod template\) declares hostPort 8082, which/);
  });

  it("a pod that holds no host port is admitted with many containerPorts (one cheap pass); with one hostPort it is too large", async () => {
    const ports = Array.from({ length: 40 }, (_, i) => ({ containerPort: 8000 + i }));
    const plain: Pod = { metadata: { name: "many", namespace: "tools" }, spec: { containers: [{ name: "c", ports }] } } as Pod;
    const withHostPort: Pod = {
      ...plain,
      spec: { containers: [{ name: "c", ports: [...ports.slice(1), { containerPort: 8000, hostPort: 8000 }] }] },
    } as Pod;
    const spec = manifests(none);
    const create = (object: Pod) => policyRefusals(spec, { kind: "Pod", namespace: "tools", operation: "CREATE", object });
    const stack = { contract, selected: [], allowlist: none };
    expect(await create(plain)).toEqual([]);
    expect(wouldRefuse({ ...stack, services: [], pods: [plain], workloads: [] })).toEqual([]);
    expect((await create(withHostPort))[0]).toContain("too large for the exposure guard to check");
    expect(wouldRefuse({ ...stack, services: [], pods: [withHostPort], workloads: [] })).toHaveLength(1);
    const tooMany = { ...plain, spec: { containers: [{ name: "c", ports: Array.from({ length: 257 }, (_, i) => ({ containerPort: 1000 + i })) }] } } as Pod;
    expect((await create(tooMany))[0]).toContain("too large for the exposure guard to check");
    expect(wouldRefuse({ ...stack, services: [], pods: [tooMany], workloads: [] })).toHaveLength(1);
  });

  it("an UPDATE that opens a node port on an undeclared Service is refused: node ports allocated, a nodePort moved, a health check node port", async () => {
    const lb = (spec: Record<string, unknown>): Service =>
      ({ metadata: { name: "lb", namespace: "tools" }, spec: { type: "LoadBalancer", ports: [{ port: 8081, protocol: "TCP" }], ...spec } }) as Service;
    const spec = manifests(none);
    const update = (object: Service, oldObject: Service) =>
      policyRefusals(spec, { kind: "Service", namespace: "tools", operation: "UPDATE", object, oldObject });
    const without = lb({ allocateLoadBalancerNodePorts: false });
    const allocated = lb({ allocateLoadBalancerNodePorts: true, ports: [{ port: 8081, protocol: "TCP", nodePort: 30461 }] });
    const moved = lb({ allocateLoadBalancerNodePorts: true, ports: [{ port: 8081, protocol: "TCP", nodePort: 30462 }] });
    const local = lb({ ...allocated.spec, externalTrafficPolicy: "Local", healthCheckNodePort: 31034 });
    expect(await update(without, without)).toEqual([]);
    expect(await update(allocated, allocated)).toEqual([]);
    expect(await update(local, local)).toEqual([]);
    expect(await update(allocated, without)).toHaveLength(1);
    // (The same before the API server has allocated: the switch itself opens them.)
    expect(await update(lb({ allocateLoadBalancerNodePorts: true }), without)).toHaveLength(1);
    expect(await update(moved, allocated)).toHaveLength(1);
    expect(await update(local, allocated)).toHaveLength(1);
    // The audit names the health check node port with the others.
    expect(auditExposure({ contract, selected: [], allowlist: none, services: [local], pods: [] }).undeclared[0]?.ports).toBe(
      "8081->30461, health check ->31034",
    );
  });

  it("externalIPs on an ExternalName or headless Service open nothing (Kubernetes ignores them): not counted, not refused", async () => {
    const withIPs = (name: string, spec: Record<string, unknown>): Service =>
      ({ metadata: { name, namespace: "tools" }, spec: { externalIPs: ["198.18.99.99"], ports: [{ port: 8080 }], ...spec } }) as Service;
    const ignored = [withIPs("extname", { type: "ExternalName", externalName: "example.invalid" }), withIPs("headless", { clusterIP: "None" })];
    const counted = withIPs("cip", { type: "ClusterIP" });
    const stack = { contract, selected: [], allowlist: none };
    expect(auditExposure({ ...stack, services: [...ignored, counted], pods: [] }).undeclared.map((u) => u.name)).toEqual(["cip"]);
    expect(wouldRefuse({ ...stack, services: [...ignored, counted], pods: [], workloads: [] }).map((r) => r.name)).toEqual(["cip"]);
    const spec = manifests(none);
    for (const svc of ignored) expect(await policyRefusals(spec, { kind: "Service", namespace: "tools", operation: "CREATE", object: svc })).toEqual([]);
    expect(await policyRefusals(spec, { kind: "Service", namespace: "tools", operation: "CREATE", object: counted })).toHaveLength(1);
  });

  it("a host port only an init container declares is counted by the audit and the guard, never published by the planner", async () => {
    const initOnly: Pod = {
      metadata: { name: "init-ui-0", namespace: "tools", labels: { app: "agent" } },
      spec: { nodeName: "n1", initContainers: [{ name: "i", ports: [{ containerPort: 80, hostPort: 7000 }] }], containers: [{ name: "c" }] },
      status: { phase: "Running" },
    } as Pod;
    const entry = contract.endpoints.find((e) => e.name === "agent") as never;
    expect(planHostPort(entry, [initOnly], new Map([["n1", node]]))).toHaveProperty("problem");
    expect(auditExposure({ contract, selected: [], allowlist: none, services: [], pods: [initOnly] }).undeclared.map((u) => u.ports)).toEqual(["7000/TCP"]);
    expect(await policyRefusals(manifests(none), { kind: "Pod", namespace: "tools", operation: "CREATE", object: initOnly })).toHaveLength(1);
    // The same port in a regular container is published.
    const served = { ...initOnly, spec: { nodeName: "n1", containers: [{ name: "c", ports: [{ containerPort: 80, hostPort: 7000 }] }] } } as Pod;
    expect(planHostPort(entry, [served], new Map([["n1", node]]))).toMatchObject({ kind: "hostPort", hostPort: 7000 });
  });
});
