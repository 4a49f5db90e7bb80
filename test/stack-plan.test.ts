// The program's read and decide steps (src/core/stack-plan.ts) against a snapshot, without Pulumi: what the stack declares, or every refusal at once.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { openStack } from "../src/adapters/stack-inputs";
import { guardProbe } from "../src/core/admission";
import { SnapshotReader } from "../src/core/kube/cluster";
import { stateUids } from "../src/core/ownership";
import type { NodePortPlan } from "../src/core/plan";
import { guardChecks, planStack, readStack, type StackRecord } from "../src/core/stack-plan";
import { benchServices, ciliumConfig, node, service, stackConfig } from "./support/fixtures";

const projectDir = path.resolve(__dirname, "..");
const noInflate = () => {
  throw new Error("no Helm release is read in cohabit");
};
const cluster = (extra: unknown[] = []) =>
  new SnapshotReader([node("node-b", "127.0.0.12"), ...benchServices, ciliumConfig({ "kube-proxy-replacement": "true" }), ...extra]);

async function decide(overrides: Record<string, unknown> = {}, extra: unknown[] = [], record: StackRecord = {}) {
  const opened = openStack({ projectDir, stack: "test", config: stackConfig(overrides) });
  const reads = await readStack(cluster(extra), opened, record, noInflate);
  return { reads, plan: planStack(opened, reads) };
}

describe("planStack", () => {
  it("plans every selected entry on the chosen node, nothing to keep before the first up", async () => {
    const { plan } = await decide();
    if ("problems" in plan) throw new Error(plan.problems.join("\n"));
    expect(plan.node).toEqual({ name: "node-b", address: "127.0.0.12", pinned: false });
    expect(plan.exposures.map((e) => [e.plan.entry, e.keepNodePort, e.note, e.mirrorsPortal])).toEqual([
      ["argocd", undefined, undefined, false],
      ["gitea", undefined, undefined, false],
      ["grafana", undefined, undefined, false],
    ]);
    expect(plan.cilium.mode).toBe("cohabit");
    expect(plan.portal).toBeUndefined();
  });

  it("asks again for the nodePort the last up published, and says why when another Service now holds it", async () => {
    const holder = service("other", "holder", { type: "NodePort", ports: [{ name: "http", port: 80, nodePort: 31002 }] });
    const lastEndpoints = async () => ({ argocd: { nodePort: 31001 }, grafana: { nodePort: 31002 } });
    const { plan } = await decide({}, [holder], { lastEndpoints });
    if ("problems" in plan) throw new Error(plan.problems.join("\n"));
    expect(plan.exposures.find((e) => e.plan.entry === "argocd")?.keepNodePort).toBe(31001);
    const grafana = plan.exposures.find((e) => e.plan.entry === "grafana");
    expect(grafana?.keepNodePort).toBeUndefined();
    expect(grafana?.note).toContain("entry 'grafana': its nodePort 31002 (published by the last up) is now held by Service other/holder");
  });

  it("returns every refusal at once, the guard's takeover and the plans', instead of the first", async () => {
    const policy = { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name: "x", uid: "u1" } };
    const opened = openStack({ projectDir, stack: "test", config: stackConfig({ "ui-exposure:admission": { mode: "warn" } }) });
    const reader = new SnapshotReader([node("node-b", "127.0.0.12"), ciliumConfig({ "kube-proxy-replacement": "true" }), ...benchServices.slice(0, 1)]);
    const reads = await readStack(reader, opened, {}, noInflate);
    const plan = planStack(opened, { ...reads, liveGuard: { policy: policy.metadata.uid, binding: undefined } });
    expect("problems" in plan && plan.problems.map((p) => p.slice(0, 50))).toEqual([
      "the exposure guard: ValidatingAdmissionPolicy ui-e",
      "entry 'gitea': Service gitea/gitea-http not found;",
      "entry 'grafana': Service monitoring/kube-prometheu",
    ]);
  });

  it("the portal: the takeover refusals of its fixed-name objects, and the warning when no selected entry publishes it", async () => {
    const portal = service("platform-portal", "portal");
    const published = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "ui-exposure-published", namespace: "platform-portal" }, data: {} };
    const { plan } = await decide({ "ui-exposure:portal": { enabled: true } }, [portal, published]);
    if ("problems" in plan) throw new Error(plan.problems.join("\n"));
    expect(plan.portal?.namespaceRefusal).toMatch(/^portal: namespace platform-portal already exists \(it holds Services portal\)/);
    expect(plan.portal?.serviceRefusal).toMatch(/^portal: Service platform-portal\/portal already exists and this stack did not create it/);
    expect(plan.portal?.publishedRefusal).toMatch(/^portal: ConfigMap platform-portal\/ui-exposure-published already exists and this stack did not create it/);
    expect(plan.portal?.unpublished).toBe(
      "the portal is deployed but not published: no selected contract entry mirrors Service platform-portal/portal port http (add it to the contract and ui-exposure:entries)",
    );
    const selected = await decide({ "ui-exposure:portal": { enabled: true }, "ui-exposure:entries": ["argocd", "portal"] });
    if ("problems" in selected.plan) throw new Error(selected.plan.problems.join("\n"));
    expect(selected.plan.portal?.unpublished).toBeUndefined();
    expect(selected.plan.exposures.map((e) => [e.plan.entry, e.mirrorsPortal])).toEqual([
      ["argocd", false],
      ["portal", true],
    ]);
  });
});

describe("readStack", () => {
  const held = stateUids({ svc: { type: "kubernetes:core/v1:Service", outputs: { metadata: { namespace: "argocd", name: "argocd-nodeport", uid: "u" } } } });

  it("asks the state only once an up has completed: a stack without one has none to read", async () => {
    let asked = 0;
    const record: StackRecord = {
      stateUids: async () => {
        asked++;
        return held;
      },
    };
    expect((await decide({}, [], record)).reads.stateUids.services.size).toBe(0);
    expect(asked).toBe(0);
    const after = await decide({}, [], { ...record, lastEndpoints: async () => ({ argocd: { nodePort: 31001 } }) });
    expect([asked, after.reads.stateUids.services.get("argocd/argocd-nodeport")]).toEqual([1, "u"]);
  });

  it("a state that cannot be read fails the run once an up has completed, and counts as empty before", async () => {
    const stateUidsFail = async () => Promise.reject(new Error("state unreadable"));
    const policy = { apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", metadata: { name: "x", uid: "u1" } };
    const guarded = { "ui-exposure:admission": { mode: "warn" } };
    const first = await decide(guarded, [policy], { stateUids: stateUidsFail });
    expect(first.reads.stateUids.guard.size).toBe(0);
    await expect(decide({}, [], { stateUids: stateUidsFail, lastEndpoints: async () => ({ argocd: { nodePort: 31001 } }) })).rejects.toThrow(
      "state unreadable",
    );
  });
});

describe("guardChecks", () => {
  it("dry-runs our Services still to be created (admitted) and the probe only this guard refuses, in the default namespace when it has a Service", () => {
    const plan = { kind: "nodePort", entry: "argocd", namespace: "argocd", serviceName: "argocd-nodeport", mirrors: "argocd-server" } as NodePortPlan;
    const other = { ...plan, entry: "gitea", namespace: "gitea", serviceName: "gitea-nodeport" };
    const existing = new Map([
      ["argocd/argocd-nodeport", {}],
      ["default/kubernetes", {}],
    ]);
    const { checks, probeKey } = guardChecks("guard", [plan, other], existing);
    expect(checks.map((c) => [`${c.service.metadata.namespace}/${c.service.metadata.name}`, c.admitted])).toEqual([
      ["gitea/gitea-nodeport", true],
      [probeKey, false],
    ]);
    expect(probeKey).toBe(`default/${guardProbe("guard", "default").metadata.name}`);
  });
});
