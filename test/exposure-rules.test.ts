// The exposure rules' table (src/core/exposure-rules.ts): the model and the guard's CEL both loop over it, so a rule
// added to a table is applied by both. Shown with rules of this file's own tables that the shipped ones do not read: a
// LoadBalancer field (`spec.loadBalancerIP`: a fixed address asked of the load balancer) and a pod field (`spec.hostPID`:
// the node's processes), the guard evaluated with cel-js.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admissionManifests } from "../src/core/admission";
import { contractSchema } from "../src/core/contract/schema";
import { classifyCluster, describeDeclaration, describeRefused, exposureRules, serviceVerdict } from "../src/core/exposure-model";
import { field, ourServiceExcess, POD_RULES, type PodRule, SERVICE_RULES, type ServiceRule } from "../src/core/exposure-rules";
import type { Pod, Service } from "../src/core/kube/types";
import type { Allowlist } from "../src/core/settings";
import { policyRefusals } from "./support/admission-eval";
import { celProblems } from "./support/cel-compile";

const contract = contractSchema.parse({
  version: 1,
  endpoints: [{ name: "web", exposed: true, scheme: "http", service: { namespace: "tools", name: "web-ui", port: 80 } }],
});
const none: Allowlist = { services: [], hostPorts: [] };

/** The rule a maintainer would add to SERVICE_RULES: one entry, its TypeScript and its CEL side by side. */
const loadBalancerIP: ServiceRule = {
  field: "spec.loadBalancerIP",
  opens: (svc) => {
    const ip = field(svc.spec, "loadBalancerIP");
    return svc.spec?.type === "LoadBalancer" && typeof ip === "string" && ip ? `loadBalancerIP ${ip}` : undefined;
  },
  cel: {
    opens: "variables.serviceType == 'LoadBalancer' && has(object.spec.loadBalancerIP) && object.spec.loadBalancerIP != ''",
    describe:
      "(variables.serviceType == 'LoadBalancer' && has(object.spec.loadBalancerIP) && object.spec.loadBalancerIP != '' ? ', loadBalancerIP ' + object.spec.loadBalancerIP : '')",
    newOnUpdate:
      "variables.serviceType == 'LoadBalancer' && has(object.spec.loadBalancerIP) && object.spec.loadBalancerIP != '' && !(has(oldObject.spec.loadBalancerIP) && oldObject.spec.loadBalancerIP == object.spec.loadBalancerIP)",
  },
};
const table = [...SERVICE_RULES, loadBalancerIP];

const lb = (spec: Record<string, unknown>): Service =>
  ({ metadata: { name: "gw", namespace: "tools" }, spec: { type: "LoadBalancer", ports: [{ port: 443, nodePort: 30443 }], ...spec } }) as Service;
const policy = (serviceRules?: readonly ServiceRule[], podRules?: readonly PodRule[], allowlist = none) =>
  admissionManifests({
    contract,
    selected: ["web"],
    allowlist,
    stack: "p",
    mode: "deny",
    failurePolicy: "Ignore",
    contractFile: "c.yaml",
    serviceRules,
    podRules,
  }).policy.spec;
const update = (spec: ReturnType<typeof policy>, object: Service, oldObject: Service) =>
  policyRefusals(spec, { kind: "Service", namespace: "tools", operation: "UPDATE", object, oldObject });

describe("exposure rules: a rule added to the table is applied by the model and by the generated CEL", () => {
  const pinned = lb({ loadBalancerIP: "198.18.0.7" });

  it("the model names the new opening in its verdicts (and the shipped table does not)", () => {
    expect(serviceVerdict(exposureRules(contract, ["web"], none, table), pinned)).toEqual({ undeclared: "type LoadBalancer; loadBalancerIP 198.18.0.7" });
    expect(serviceVerdict(exposureRules(contract, ["web"], none), pinned)).toEqual({ undeclared: "type LoadBalancer" });
    const [classified] = classifyCluster(exposureRules(contract, ["web"], none, table), { services: [pinned], pods: [] }).services;
    expect(classified?.openings.opens).toEqual(["type LoadBalancer", "loadBalancerIP 198.18.0.7"]);
  });

  it("the guard refuses an UPDATE that pins an address on a Service that already was a LoadBalancer, naming it (the shipped table admits it)", async () => {
    expect(await celProblems(policy(table))).toEqual([]);
    const [message] = await update(policy(table), pinned, lb({}));
    expect(message).toBe(
      "Service tools/gw (type LoadBalancer, loadBalancerIP 198.18.0.7) is not in the ui-exposure contract of stack p: publish the UI through an entry of c.yaml (ui-exposure then creates '<entry>-nodeport'), or declare the Service in ui-exposure:allowlist.services of Pulumi.p.yaml",
    );
    expect(await update(policy(), pinned, lb({}))).toEqual([]);
    // Kept as it was: nothing new.
    expect(await update(policy(table), pinned, pinned)).toEqual([]);
  });

  it("our Service opening by the new rule is beyond its entry, for the model and the guard alike", async () => {
    const ours = { ...pinned, metadata: { name: "web-nodeport", namespace: "tools" } } as Service;
    expect(serviceVerdict(exposureRules(contract, ["web"], none, table), ours)).toEqual({
      undeclared: "type LoadBalancer (the contract declares NodePort); loadBalancerIP 198.18.0.7",
      entry: "web",
    });
    const create = await policyRefusals(policy(table), { kind: "Service", namespace: "tools", operation: "CREATE", object: ours });
    expect(create[0]).toMatch(/^Service tools\/web-nodeport \(type LoadBalancer, loadBalancerIP 198\.18\.0\.7\) is not in/);
  });

  it("on drawn Services, the generated CEL refuses a CREATE exactly when the model finds it undeclared, with the rule registered", async () => {
    const drawn = fc.record({
      name: fc.constantFrom("gw", "web-nodeport"),
      type: fc.constantFrom("ClusterIP", "NodePort", "LoadBalancer", undefined),
      loadBalancerIP: fc.option(fc.constantFrom("", "198.18.0.7"), { nil: undefined }),
      externalIPs: fc.option(fc.constant(["198.18.0.9"]), { nil: undefined }),
      ports: fc.constantFrom([{ port: 80 }], [{ port: 80 }, { port: 81 }]),
    });
    const spec = policy(table);
    const rules = exposureRules(contract, ["web"], none, table);
    await fc.assert(
      fc.asyncProperty(drawn, async ({ name, ...s }) => {
        const svc = { metadata: { name, namespace: "tools" }, spec: Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined)) } as Service;
        const opens = classifyCluster(rules, { services: [svc], pods: [] }).services[0];
        const refused = await policyRefusals(spec, { kind: "Service", namespace: "tools", operation: "CREATE", object: svc });
        expect(refused.length > 0, JSON.stringify(svc)).toBe(opens !== undefined && "undeclared" in opens.verdict);
      }),
      { numRuns: 100 },
    );
  });
});

/** The rule a maintainer would add to POD_RULES: one entry, its TypeScript and its CEL side by side. */
const hostPID: PodRule = {
  item: "hostPID",
  field: "hostPID",
  opens: (spec) => field(spec, "hostPID") === true,
  cel: (t) => `(has(${t}.spec.hostPID) && ${t}.spec.hostPID)`,
  coversPorts: false,
  words: {
    ports: "the node's processes",
    refused: "the node's processes (hostPID)",
    undeclared: "shares the node's processes: declare it in ui-exposure:allowlist.hostPorts as 'namespace/pod-prefix*:hostPID', or drop hostPID",
    says: "shares the node's processes (hostPID)",
  },
};
const podTable = [...POD_RULES, hostPID];

describe("exposure rules: a pod rule added to the table is applied by the model and by the generated CEL", () => {
  const agent = (spec: Record<string, unknown>): Pod =>
    ({ metadata: { name: "agent-0", namespace: "tools" }, spec: { containers: [{ name: "c" }], ...spec } }) as Pod;
  const pid = agent({ hostPID: true });
  const allowPID = { services: [], hostPorts: ["tools/agent-*:hostPID"] };
  const openings = (pod: Pod, allowlist = none, podRules?: readonly PodRule[]) =>
    classifyCluster(exposureRules(contract, ["web"], allowlist, SERVICE_RULES, podRules), { services: [], pods: [pod] }).pods[0]?.openings;

  it("the model names the new opening, declared by its allowlist item (and the shipped table reads nothing there)", () => {
    expect(openings(pid, none, podTable)?.map((o) => [o.kind, o.ports, o.undeclared])).toEqual([["hostPID", "the node's processes", hostPID.words.undeclared]]);
    expect(describeRefused(openings(pid, none, podTable) ?? [])).toBe("the node's processes (hostPID)");
    expect(openings(pid, allowPID, podTable)?.map((o) => o.declared && describeDeclaration(o.declared))).toEqual(["allowlist 'tools/agent-*:hostPID'"]);
    expect(openings(pid)).toEqual([]);
    // It covers no port: a host port beside it needs its own declaration.
    const both = agent({ hostPID: true, containers: [{ name: "c", ports: [{ containerPort: 80, hostPort: 8080 }] }] });
    expect(openings(both, allowPID, podTable)?.map((o) => [o.kind, o.declared === undefined])).toEqual([
      ["hostPort", true],
      ["hostPID", false],
    ]);
  });

  it("the guard refuses a pod and a workload UPDATE that open by the new rule, naming it; admits what its item declares or was held before", async () => {
    const spec = policy(undefined, podTable);
    expect(await celProblems(spec)).toEqual([]);
    const create = (object: Pod, s = spec) => policyRefusals(s, { kind: "Pod", namespace: "tools", operation: "CREATE", object });
    expect(await create(pid)).toEqual([
      "Pod tools/agent-0 shares the node's processes (hostPID), which is not in the ui-exposure contract of stack p: declare it in ui-exposure:allowlist.hostPorts of Pulumi.p.yaml as 'namespace/pod-prefix*:hostPID'",
    ]);
    expect(await create(pid, policy())).toEqual([]);
    expect(await create(pid, policy(undefined, podTable, allowPID))).toEqual([]);
    const deploy = (podSpec: Record<string, unknown>) => ({
      metadata: { name: "agent", namespace: "tools" },
      spec: { template: { spec: { containers: [{ name: "c" }], ...podSpec } } },
    });
    const update = (object: unknown, oldObject: unknown) =>
      policyRefusals(spec, { kind: "Deployment", namespace: "tools", operation: "UPDATE", object, oldObject });
    expect((await update(deploy({ hostPID: true }), deploy({})))[0]).toMatch(
      /^Deployment tools\/agent \(pod template\) shares the node's processes \(hostPID\), which is not in/,
    );
    // Held before this UPDATE: not new.
    expect(await update(deploy({ hostPID: true }), deploy({ hostPID: true }))).toEqual([]);
  });

  it("on drawn pods, the generated CEL refuses a CREATE exactly when the model finds an opening undeclared, with the rule registered", async () => {
    const drawn = fc.record({
      name: fc.constantFrom("agent-0", "debug"),
      hostPID: fc.option(fc.boolean(), { nil: undefined }),
      hostNetwork: fc.option(fc.boolean(), { nil: undefined }),
      ports: fc.constantFrom([], [{ containerPort: 80 }], [{ containerPort: 80, hostPort: 8080 }]),
      items: fc.subarray(["tools/agent-*:hostPID", "tools/agent-*:hostNetwork", "tools/agent-*:8080", "tools/debug:hostPID"]),
    });
    await fc.assert(
      fc.asyncProperty(drawn, async ({ name, ports, items, ...flags }) => {
        const pod = {
          metadata: { name, namespace: "tools" },
          spec: { ...Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined)), containers: [{ name: "c", ports }] },
        } as unknown as Pod;
        const allowlist = { services: [], hostPorts: items };
        const found = classifyCluster(exposureRules(contract, ["web"], allowlist, SERVICE_RULES, podTable), { services: [], pods: [pod] }).pods[0];
        const refused = await policyRefusals(policy(undefined, podTable, allowlist), { kind: "Pod", namespace: "tools", operation: "CREATE", object: pod });
        expect(refused.length > 0, JSON.stringify({ pod, items })).toBe(found?.openings.some((o) => !o.declared) ?? false);
      }),
      { numRuns: 150 },
    );
  });
});

describe("ourServiceExcess", () => {
  it("tells our own port from the others by position, not identity (a proxy that makes a new object per read)", () => {
    const port = { name: "http", port: 80, nodePort: 30080, protocol: "TCP" };
    const ports = new Proxy([port], { get: (t, k) => (k === "0" ? { ...port } : Reflect.get(t, k)) });
    const svc = { metadata: { name: "a-nodeport", namespace: "a" }, spec: { type: "NodePort", ports } } as unknown as Service;
    expect(ourServiceExcess(svc, "http").extraPorts).toEqual([]);
  });
});
