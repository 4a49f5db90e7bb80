// The exposure rules' table (src/core/exposure-rules.ts): the model and the guard's CEL both loop over it, so a rule
// added to a table is applied by both. Shown with a rule of this file's own table, a LoadBalancer field the shipped
// table does not read (`spec.loadBalancerIP`: a fixed address asked of the load balancer), evaluated with cel-js.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admissionManifests } from "../src/core/admission";
import { contractSchema } from "../src/core/contract/schema";
import { classifyCluster, exposureRules, serviceVerdict } from "../src/core/exposure-model";
import { field, SERVICE_RULES, type ServiceRule } from "../src/core/exposure-rules";
import type { Service } from "../src/core/kube/types";
import { policyRefusals } from "./support/admission-eval";
import { celProblems } from "./support/cel-compile";

const contract = contractSchema.parse({
  version: 1,
  endpoints: [{ name: "web", exposed: true, scheme: "http", service: { namespace: "tools", name: "web-ui", port: 80 } }],
});
const none = { services: [], hostPorts: [] };

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
const policy = (serviceRules?: readonly ServiceRule[]) =>
  admissionManifests({ contract, selected: ["web"], allowlist: none, stack: "p", mode: "deny", failurePolicy: "Ignore", contractFile: "c.yaml", serviceRules })
    .policy.spec;
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
