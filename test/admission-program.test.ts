import * as path from "node:path";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { afterEach, describe, expect, it } from "vitest";
import { AdmissionGuard } from "../components/admission-guard";
import { useProgramMocks } from "../components/mocks";
import { declareStack } from "../components/program";
import { admissionManifests } from "../src/core/admission";
import { contractSchema } from "../src/core/contract/schema";
import { SnapshotReader } from "../src/core/kube/cluster";
import { benchServices, ciliumConfig, node, stackConfig } from "./support/fixtures";

const projectDir = path.resolve(__dirname, "..");
let registered: { type: string; name: string; inputs: Record<string, unknown> }[] = [];

async function useMocks(preview: boolean) {
  registered = [];
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        registered.push({ type: args.type, name: args.name, inputs: args.inputs });
        return { id: `${args.name}-id`, state: args.inputs };
      },
      call: () => ({}),
    },
    "ui-exposure",
    "test",
    preview,
  );
}

const resolve = <T>(o: pulumi.Output<T>) => new Promise<T>((r) => o.apply(r));
const discovery = (resources: string[]) => ({
  kind: "APIResourceList",
  groupVersion: "admissionregistration.k8s.io/v1",
  resources: resources.map((name) => ({ name })),
});
const cluster = (extra: unknown[] = []) =>
  new SnapshotReader([node("node-b", "127.0.0.12"), ...benchServices, ciliumConfig({ "kube-proxy-replacement": "true" }), ...extra]);

describe("program: the exposure guard at admission", () => {
  afterEach(() => pulumi.runtime.disconnect());

  it("creates nothing with the default mode (off)", async () => {
    await useMocks(false);
    const out = await declareStack({ projectDir, stack: "test", config: stackConfig(), cluster: cluster() });
    await resolve(out.urls);
    expect(registered.filter((r) => r.type.includes("admissionregistration"))).toEqual([]);
  });

  it("creates the policy and its binding before our NodePort Services, which wait for it", async () => {
    await useMocks(false);
    const config = stackConfig({ "ui-exposure:admission": { mode: "deny" } });
    const out = await declareStack({ projectDir, stack: "test", config, cluster: cluster() });
    await resolve(out.urls);
    const order = registered.map((r) => r.type.split(":").pop());
    expect(order.filter((t) => t !== "ComponentResource" && t?.startsWith("Validating"))).toEqual([
      "ValidatingAdmissionPolicy",
      "ValidatingAdmissionPolicyBinding",
    ]);
    expect(order.indexOf("ValidatingAdmissionPolicyBinding")).toBeLessThan(order.indexOf("Service"));
    const policy = registered.find((r) => r.type === "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy");
    expect(policy?.name).toBe("admission-policy");
    if (!policy) throw new Error("no policy registered");
    expect((policy.inputs.metadata as { name: string }).name).toBe("ui-exposure-guard-test");
    const variables = (policy.inputs.spec as { variables: { name: string; expression: string }[] }).variables;
    expect(variables.find((v) => v.name === "serviceDeclared")?.expression).toBe(
      'variables.serviceKey in ["argocd/argocd-nodeport", "gitea/gitea-nodeport", "monitoring/grafana-nodeport"] ? variables.serviceType == \'NodePort\' && size(variables.servicePorts) <= 1 && size(variables.externalIPs) == 0 : false',
    );
    const binding = registered.find((r) => r.type === "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding");
    expect(binding?.inputs.spec).toEqual({ policyName: "ui-exposure-guard-test", validationActions: ["Deny"] });
  });

  it("never locks the cluster: deny is refused, declaring nothing, while a running workload would be refused; allowlisted or acknowledged, it applies (issue 33 #2)", async () => {
    // A CNI agent on the host network with a metrics port, not allowlisted, and its pod.
    const cniAgent = {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "cni-agent", namespace: "kube-system" },
      spec: {
        template: {
          metadata: { labels: { app: "cni-agent" } },
          spec: { hostNetwork: true, containers: [{ name: "agent", ports: [{ containerPort: 9962 }] }] },
        },
      },
    };
    const cniPod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "cni-agent-x7k2p", namespace: "kube-system", labels: { app: "cni-agent" } },
      spec: { nodeName: "node-b", hostNetwork: true, containers: [{ name: "agent", ports: [{ containerPort: 9962, hostPort: 9962 }] }] },
      status: { phase: "Running" },
    };
    const withAgent = () => cluster([cniAgent, cniPod]);
    for (const preview of [true, false]) {
      await useMocks(preview);
      const config = stackConfig({ "ui-exposure:admission": { mode: "deny" } });
      await expect(declareStack({ projectDir, stack: "test", config, cluster: withAgent() })).rejects.toThrow(
        "stack test cannot be deployed (nothing was changed): the exposure guard in deny mode would refuse what runs in the cluster when it is created again (a rollout, a new node, a deleted pod): deny is not put in force while it would lock the cluster\n" +
          "    DaemonSet kube-system/cni-agent (hostPort 9962/TCP): admit it with ui-exposure:allowlist.hostPorts 'kube-system/cni-agent-*:9962', or acknowledge its refusal in ui-exposure:admission.acknowledge ('kube-system/cni-agent-*') of Pulumi.test.yaml",
      );
      expect(registered).toEqual([]);
      pulumi.runtime.disconnect();
    }
    // Warn refuses nothing: no check.
    await useMocks(false);
    await resolve(
      (await declareStack({ projectDir, stack: "test", config: stackConfig({ "ui-exposure:admission": { mode: "warn" } }), cluster: withAgent() })).urls,
    );
    pulumi.runtime.disconnect();
    for (const settings of [
      { "ui-exposure:admission": { mode: "deny" }, "ui-exposure:allowlist": { services: [], hostPorts: ["kube-system/cni-agent-*:9962"] } },
      { "ui-exposure:admission": { mode: "deny", acknowledge: ["kube-system/cni-agent*"] } },
    ]) {
      await useMocks(false);
      await resolve((await declareStack({ projectDir, stack: "test", config: stackConfig(settings), cluster: withAgent() })).urls);
      expect(registered.some((r) => r.type.endsWith("ValidatingAdmissionPolicyBinding"))).toBe(true);
      pulumi.runtime.disconnect();
    }
  });

  it("refuses, declaring nothing, a guard of its name that its state does not hold (another stack's, or made by hand), like any takeover (issue 33 #4)", async () => {
    const guard = (kind: string, uid: string) => ({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind,
      metadata: { name: "ui-exposure-guard-test", uid },
      spec: {},
    });
    const withGuard = () => cluster([guard("ValidatingAdmissionPolicy", "uid-other"), guard("ValidatingAdmissionPolicyBinding", "uid-other-b")]);
    const config = stackConfig({ "ui-exposure:admission": { mode: "deny" } });
    const none = async () => ({ services: new Map(), configMaps: new Map(), guard: new Set<string>() });
    await useMocks(true);
    await expect(declareStack({ projectDir, stack: "test", config, cluster: withGuard(), stateUids: none })).rejects.toThrow(
      "stack test cannot be deployed (nothing was changed): the exposure guard: ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding ui-exposure-guard-test exists but this stack did not create it (another stack's guard: earlier versions named a guard by its stack lowercased, '_' as '-'; or one made by hand); ui-exposure never takes over what it did not create: run pulumi up in the stack that created it first (its guard moves to its own name), or remove one made by hand (kubectl delete validatingadmissionpolicy,validatingadmissionpolicybinding ui-exposure-guard-test), then pulumi up",
    );
    expect(registered).toEqual([]);
    pulumi.runtime.disconnect();
    // The state holds them (uids by name): ours, updated.
    const held = async () => ({
      services: new Map(),
      configMaps: new Map(),
      guard: new Set(["uid-other", "uid-other-b"]),
    });
    await useMocks(false);
    await resolve((await declareStack({ projectDir, stack: "test", config, cluster: withGuard(), stateUids: held })).urls);
    expect(registered.some((r) => r.type.endsWith("ValidatingAdmissionPolicyBinding"))).toBe(true);
  });

  it("fails the preview, declaring nothing, on a cluster without the ValidatingAdmissionPolicy API", async () => {
    await useMocks(true);
    const config = stackConfig({ "ui-exposure:admission": { mode: "warn" } });
    const run = declareStack({ projectDir, stack: "test", config, cluster: cluster([discovery(["validatingwebhookconfigurations"])]) });
    await expect(run).rejects.toThrow("does not serve validatingadmissionpolicies and validatingadmissionpolicybindings in admissionregistration.k8s.io/v1");
    expect(registered).toEqual([]);
  });

  it("goes ahead on a cluster that serves the API", async () => {
    await useMocks(true);
    const config = stackConfig({ "ui-exposure:admission": { mode: "warn" } });
    const api = discovery(["validatingadmissionpolicies", "validatingadmissionpolicies/status", "validatingadmissionpolicybindings"]);
    const out = await declareStack({ projectDir, stack: "test", config, cluster: cluster([api]) });
    await resolve(out.urls);
    expect(registered.some((r) => r.type.endsWith("ValidatingAdmissionPolicyBinding"))).toBe(true);
  });
});

describe("program: a policy the API server's type check flags fails the update", () => {
  afterEach(() => pulumi.runtime.disconnect());

  it("applies the binding with [Warn], then rejects the program with the check's one message, declaring none of our Services", async () => {
    await useMocks(false);
    const flagged = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicy",
      metadata: { name: "ui-exposure-guard-test", generation: 1 },
      status: { observedGeneration: 1, typeChecking: { expressionWarnings: [{ fieldRef: "spec.validations[0].expression", warning: "undefined field 'x'" }] } },
    };
    const config = stackConfig({ "ui-exposure:admission": { mode: "deny" } });
    // As under the engine: the cluster read is the one applied to (the policy just applied is read back from it).
    await expect(declareStack({ projectDir, stack: "test", config, cluster: cluster([flagged]), live: true })).rejects.toThrow(
      "ValidatingAdmissionPolicy ui-exposure-guard-test: the API server's type check of the generated expressions warns (spec.validations[0].expression: undefined field 'x'); its binding refuses nothing until an up passes this check. This is a ui-exposure bug: report it, and set ui-exposure:admission.mode to warn or off meanwhile",
    );
    const binding = registered.find((r) => r.type === "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding");
    expect(binding?.inputs.spec).toEqual({ policyName: "ui-exposure-guard-test", validationActions: ["Warn"] });
    expect(registered.filter((r) => r.type === "kubernetes:core/v1:Service" || r.type.endsWith("NodePortExposure"))).toEqual([]);
  });
});

describe("program: a guard whose outputs stay unknown in an update (the engine skipped it, --target)", () => {
  afterEach(() => pulumi.runtime.disconnect());

  it("does not wait for a type check that never runs: the program finishes and declares our Services", async () => {
    registered = [];
    await pulumi.runtime.setMocks(
      {
        newResource: (args) => {
          registered.push({ type: args.type, name: args.name, inputs: args.inputs });
          const skipped = args.type.endsWith(":ValidatingAdmissionPolicy");
          const state = skipped ? { ...args.inputs, metadata: { ...args.inputs.metadata, generation: pulumi.runtime.unknownValue } } : args.inputs;
          return { id: `${args.name}-id`, state };
        },
        call: () => ({}),
      },
      "ui-exposure",
      "test",
      false,
    );
    // The engine answers a skipped step with Result SKIP: the SDK then keeps the unknowns it sends.
    type Respond = (err: unknown, resp?: { setResult(r: number): void }) => void;
    const monitor = pulumi.runtime.getMonitor() as unknown as { registerResource(req: { getType(): string }, respond: Respond): void };
    const register = monitor.registerResource.bind(monitor);
    monitor.registerResource = (req, respond) =>
      register(req, (err, resp) => {
        if (resp && req.getType().endsWith(":ValidatingAdmissionPolicy")) resp.setResult(2);
        respond(err, resp);
      });
    const config = stackConfig({ "ui-exposure:admission": { mode: "deny" } });
    const out = await declareStack({ projectDir, stack: "test", config, cluster: cluster() });
    expect(out.contract).toBe("contract/endpoints.example.yaml");
    // Registrations are RPCs: wait until every one the program started has reached the mocks.
    await pulumi.runtime.disconnect();
    expect(registered.filter((r) => r.type === "kubernetes:core/v1:Service").map((r) => r.name)).toEqual(["argocd-svc", "gitea-svc", "grafana-svc"]);
  });
});

describe("component: the binding waits for the API server's type check of the policy (issue 23 #4)", () => {
  afterEach(() => pulumi.runtime.disconnect());
  const manifests = admissionManifests({
    stack: "test",
    contract: contractSchema.parse({ version: 1, endpoints: [{ name: "ui", exposed: true, service: { namespace: "a", name: "b", port: "http" } }] }),
    selected: ["ui"],
    allowlist: { services: [], hostPorts: [] },
    mode: "deny",
    failurePolicy: "Ignore",
    contractFile: "contract/endpoints.yaml",
  });
  const bindingType = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding";

  it("registers the binding only once the check is clean", async () => {
    await useMocks(false);
    let release: (v: string | undefined) => void = () => {};
    const check = new Promise<string | undefined>((r) => {
      release = r;
    });
    let asked = 0;
    const guard = new AdmissionGuard(
      "admission",
      {
        manifests,
        untilTypeChecked: () => {
          asked++;
          return check;
        },
      },
      { providers: [new k8s.Provider("kubernetes", { context: "test" })] },
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(asked).toBe(1);
    expect(registered.filter((r) => r.type === bindingType)).toEqual([]);
    release(undefined);
    await resolve(guard.binding.urn);
    expect(registered.filter((r) => r.type === bindingType).map((r) => r.inputs.spec)).toEqual([
      { policyName: "ui-exposure-guard-test", validationActions: ["Deny"] },
    ]);
  });

  it("names the stack's provider for its policy and binding, and refuses to build without one", async () => {
    const recording = await useProgramMocks({ stack: "test" });
    expect(() => new AdmissionGuard("admission", { manifests })).toThrow(
      "AdmissionGuard admission: no Kubernetes provider given (opts.providers): it would deploy through the ambient kube context",
    );
    const guard = new AdmissionGuard("admission", { manifests }, { providers: [new k8s.Provider("kubernetes", { context: "test" })] });
    await resolve(guard.binding.urn);
    const children = recording.resources.filter((r) => r.type.includes("admissionregistration"));
    expect(children.map((r) => r.provider)).toEqual(["kubernetes", "kubernetes"]);
  });
});
