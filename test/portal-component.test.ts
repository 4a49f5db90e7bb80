// The stack with `ui-exposure:portal.enabled: true`, under Pulumi's mocks: what the Portal
// component creates, and how the contract's `portal` entry is planned in the same `up`.
import * as fs from "node:fs";
import * as path from "node:path";
import { gunzipSync } from "node:zlib";
import * as pulumi from "@pulumi/pulumi";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { parseAllDocuments } from "yaml";
import { type RegisteredResource, resolved as resolve, useProgramMocks } from "../components/mocks";
import { declareStack } from "../components/program";
import { parseContract } from "../src/core/contract/parse";
import { SnapshotReader } from "../src/core/kube/cluster";
import type { Service } from "../src/core/kube/types";
import { namespaceTakeoverRefusal, takeoverRefusal } from "../src/core/ownership";
import { withStackServices } from "../src/core/plan";
import { PORTAL_SELECTOR, portalRbacRules, portalService, selectsHostPort } from "../src/core/portal/spec";
import { argocdServer } from "./support/command-helpers";
import { ciliumConfig } from "./support/fixtures";
import { runbookBlock } from "./support/harness";
import { readyNode } from "./support/portal-fixtures";

const projectDir = path.resolve(__dirname, "..");
const CONTRACT = path.join(projectDir, "contract", "endpoints.example.yaml");

let registered: RegisteredResource[] = [];

async function useMocks() {
  registered = (await useProgramMocks({ stack: "test" })).resources;
}

function config(portal: Record<string, unknown>, entries: string[] | "all" = ["argocd", "portal"]): Record<string, string> {
  return {
    "kubernetes:context": "test",
    "ui-exposure:contract": CONTRACT,
    "ui-exposure:entries": JSON.stringify(entries),
    "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }),
    "ui-exposure:portal": JSON.stringify(portal),
  };
}

/** A cluster where the portal was never deployed: no platform-portal namespace, no Service `portal`. */
const freshCluster = (extra: unknown[] = []) =>
  new SnapshotReader([readyNode("bench", "127.0.0.2"), argocdServer, ciliumConfig({ "kube-proxy-replacement": "true" }), ...extra]);

const ofType = (type: string) => registered.filter((r) => r.type === type);
const one = (type: string, name?: string) => {
  const found = ofType(type).filter((r) => name === undefined || r.name === name);
  if (found.length !== 1) throw new Error(`expected one ${type} ${name ?? ""}, got ${found.map((r) => r.name).join(", ") || "none"}`);
  return found[0] as RegisteredResource;
};

describe("program with the portal enabled (mocks)", () => {
  beforeEach(useMocks);
  afterEach(() => pulumi.runtime.disconnect());

  it("deploys the portal and publishes its entry in the same up, although its Service does not exist yet", async () => {
    const out = await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster() });
    const urls = await resolve(out.urls);
    expect(urls).toEqual({ argocd: "http://127.0.0.2:31000", portal: "http://127.0.0.2:31001" });
    await pulumi.runtime.disconnect();

    expect(one("ui-exposure:portal:Portal").name).toBe("portal-server");
    expect(one("kubernetes:core/v1:Namespace").inputs.metadata).toMatchObject({ name: "platform-portal" });

    // The NodePort Service mirrors the spec the Portal component creates.
    const nodePort = one("kubernetes:core/v1:Service", "portal-svc").inputs;
    expect(nodePort.metadata).toMatchObject({
      name: "portal-nodeport",
      namespace: "platform-portal",
      annotations: { "ui-exposure.io/mirrors": "platform-portal/portal" },
      labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "portal", "ui-exposure.io/stack": "test" },
    });
    expect(nodePort.spec).toEqual({
      type: "NodePort",
      selector: PORTAL_SELECTOR,
      externalTrafficPolicy: "Cluster",
      ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }],
    });
    const clusterIp = one("kubernetes:core/v1:Service", "portal-server-svc").inputs;
    expect(clusterIp.metadata).toMatchObject({ name: "portal", namespace: "platform-portal", labels: { "ui-exposure.io/stack": "test" } });
    expect(clusterIp.spec).toEqual({ type: "ClusterIP", selector: PORTAL_SELECTOR, ports: [{ name: "http", port: 80, targetPort: "http", protocol: "TCP" }] });
    expect(clusterIp.spec).toEqual({ ...portalService("platform-portal").spec });
  });

  it("gives the ServiceAccount read-only access (list only: the portal never gets one object) to exactly services, endpointslices and nodes: no pods without a hostPort entry", async () => {
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster() });
    await pulumi.runtime.disconnect();
    const role = one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole").inputs;
    expect(role.rules).toEqual([
      { apiGroups: [""], resources: ["services", "nodes"], verbs: ["list"] },
      { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list"] },
    ]);
    expect(role.rules).toEqual(portalRbacRules({ hostPort: false }));
    const rules = role.rules as { verbs: string[]; resources: string[] }[];
    expect(new Set(rules.flatMap((r) => r.verbs))).toEqual(new Set(["list"]));
    expect(rules.flatMap((r) => r.resources).sort()).toEqual(["endpointslices", "nodes", "services"]);

    const binding = one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding").inputs;
    expect(binding.roleRef).toEqual({ apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "portal-server-reader-abc123" });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "portal-server-sa-abc123", namespace: "platform-portal" }]);
  });

  it("adds pods to the role only when a selected entry uses a hostPort (the only case the portal lists them)", () => {
    const contract = parseContract(
      `version: 1
endpoints:
  - { name: argocd, exposed: true, service: { namespace: argocd, name: argocd-server, port: http } }
  - { name: lineage, exposed: true, hostPort: { namespace: lineage, port: 8090 } }
`,
      "c.yaml",
    );
    expect(selectsHostPort(contract, ["argocd"])).toBe(false);
    expect(selectsHostPort(contract, ["argocd", "lineage"])).toBe(true);
    expect(selectsHostPort(contract, "all")).toBe(true);
    expect(portalRbacRules({ hostPort: true })[0]).toEqual({ apiGroups: [""], resources: ["services", "nodes", "pods"], verbs: ["list"] });
    // The portal's reads are list calls only (readObservedCluster in src/core/observe.ts, the audit): no `get` granted.
    for (const opts of [{ hostPort: false }, { hostPort: true, audit: true }]) for (const r of portalRbacRules(opts)) expect(r.verbs).toEqual(["list"]);
  });

  it("ships the server as plain JS (loader + gzipped bundle) and the validated contract in a ConfigMap", async () => {
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster() });
    await pulumi.runtime.disconnect();
    const cm = one("kubernetes:core/v1:ConfigMap", "portal-server-code").inputs as {
      data: Record<string, string>;
      binaryData: Record<string, string>;
      metadata: { namespace: string };
    };
    expect(cm.metadata.namespace).toBe("platform-portal");
    expect(Object.keys(cm.data).sort()).toEqual(["contract.yaml", "portal.js"]);
    expect(cm.data["portal.js"]).toContain('vm.compileFunction(code, ["exports", "require", "module", "__filename", "__dirname"]');
    const bundle = gunzipSync(Buffer.from(cm.binaryData["server.js.gz"] ?? "", "base64")).toString("utf8");
    expect(bundle).toContain("portal listening on");
    expect(bundle).not.toContain(projectDir);
    const shipped = parseContract(cm.data["contract.yaml"] ?? "", "contract.yaml");
    expect(shipped.endpoints.map((e) => e.name)).toContain("portal");
    // Kubernetes refuses ConfigMaps over 1 MiB.
    expect(Buffer.byteLength(cm.data["portal.js"] ?? "") + Buffer.from(cm.binaryData["server.js.gz"] ?? "", "base64").length).toBeLessThan(1024 * 1024);
  });

  it("runs `node /app/portal.js` on the stock image, probed on /healthz, non-root with a read-only root filesystem", async () => {
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster() });
    await pulumi.runtime.disconnect();
    const deployment = one("kubernetes:apps/v1:Deployment").inputs as {
      metadata: { annotations?: Record<string, string> };
      spec: { template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } } };
    };
    expect(deployment.metadata.annotations).toBeUndefined();
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe("portal-server-sa-abc123");
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: "RuntimeDefault" } });
    expect(pod.volumes).toEqual([
      { name: "code", configMap: { name: "portal-server-code-abc123" } },
      { name: "published", configMap: { name: "ui-exposure-published", optional: true } },
    ]);
    const [container] = pod.containers;
    expect(container).toMatchObject({
      image: "node:24-alpine",
      command: ["node", "/app/portal.js"],
      ports: [{ name: "http", containerPort: 8080, protocol: "TCP" }],
      readinessProbe: { httpGet: { path: "/healthz", port: "http" } },
      livenessProbe: { httpGet: { path: "/healthz", port: "http" } },
      resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "256Mi" } },
      securityContext: { runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
      volumeMounts: [
        { name: "code", mountPath: "/app", readOnly: true },
        { name: "published", mountPath: "/published", readOnly: true },
      ],
    });
    expect(container?.env).toEqual([
      { name: "PORTAL_LISTEN", value: "0.0.0.0:8080" },
      { name: "PORTAL_CONTRACT", value: "/app/contract.yaml" },
      { name: "PORTAL_ENTRIES", value: '["argocd","portal"]' },
      { name: "PORTAL_STACK", value: "test" },
      // The stack's kubernetes:context: the cluster's name on /metrics.
      { name: "PORTAL_CLUSTER", value: "test" },
      { name: "PORTAL_IN_CLUSTER", value: "1" },
      { name: "PORTAL_PUBLISHED", value: "/published/endpoints.json" },
      { name: "PORTAL_VERSION", value: "0.1.0" },
    ]);
  });

  it("writes what the up published into the ConfigMap the portal reads, so it judges as `exposure status` does (issue 23 #8)", async () => {
    const out = await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster() });
    const endpoints = await resolve(out.endpoints);
    await pulumi.runtime.disconnect();
    const published = one("kubernetes:core/v1:ConfigMap", "portal-server-published").inputs as {
      metadata: Record<string, unknown>;
      data: Record<string, string>;
    };
    expect(published.metadata).toMatchObject({ name: "ui-exposure-published", namespace: "platform-portal" });
    const written = JSON.parse(published.data["endpoints.json"] as string);
    expect(written).toEqual(JSON.parse(JSON.stringify(endpoints)));
    expect(written.argocd).toMatchObject({ nodePort: 31000, url: "http://127.0.0.2:31000" });
  });

  it("skips the awaits only when portal.skipAwait is set (the e2e harness has no kubelet)", async () => {
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true, skipAwait: true, image: "node:20.19-alpine" }), cluster: freshCluster() });
    await pulumi.runtime.disconnect();
    const deployment = one("kubernetes:apps/v1:Deployment").inputs as { metadata: { annotations?: Record<string, string> } };
    expect(deployment.metadata.annotations).toEqual({ "pulumi.com/skipAwait": "true" });
    expect(one("kubernetes:core/v1:Service", "portal-server-svc").inputs.metadata).toMatchObject({ annotations: { "pulumi.com/skipAwait": "true" } });
    expect(JSON.stringify(one("kubernetes:apps/v1:Deployment").inputs)).toContain('"image":"node:20.19-alpine"');
  });

  it("uses an existing namespace when createNamespace is false", async () => {
    // Only argocd selected: the contract's portal entry names platform-portal, not `tools` (up warns).
    const warn = vi.spyOn(pulumi.log, "warn").mockImplementation(async () => undefined);
    await declareStack({
      projectDir,
      stack: "test",
      config: config({ enabled: true, createNamespace: false, namespace: "tools" }, ["argocd"]),
      cluster: freshCluster(),
    });
    await pulumi.runtime.disconnect();
    expect(ofType("kubernetes:core/v1:Namespace")).toEqual([]);
    expect(one("kubernetes:apps/v1:Deployment").inputs.metadata).toMatchObject({ namespace: "tools" });
    expect(one("kubernetes:core/v1:Service", "portal-server-svc").inputs.metadata).toMatchObject({ name: "portal", namespace: "tools" });
    expect(warn).toHaveBeenCalledWith(
      expect.stringContaining("the portal is deployed but not published: no selected contract entry mirrors Service tools/portal"),
    );
    warn.mockRestore();
  });

  it("with other clusters: get on exactly their Secrets (a Role in the portal's namespace), PORTAL_CLUSTERS for the pod; none without", async () => {
    const clusters = [
      { name: "prod", secret: "cluster-prod" },
      { name: "lab", secret: "cluster-lab" },
    ];
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true, clusters }), cluster: freshCluster() });
    await pulumi.runtime.disconnect();
    const role = one("kubernetes:rbac.authorization.k8s.io/v1:Role").inputs;
    expect(role.metadata).toMatchObject({ namespace: "platform-portal" });
    expect(role.rules).toEqual([{ apiGroups: [""], resources: ["secrets"], resourceNames: ["cluster-lab", "cluster-prod"], verbs: ["get"] }]);
    expect(one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding").inputs).toMatchObject({
      metadata: { namespace: "platform-portal" },
      roleRef: { kind: "Role", name: "portal-server-secrets-abc123" },
      subjects: [{ kind: "ServiceAccount", name: "portal-server-sa-abc123", namespace: "platform-portal" }],
    });
    const container = (one("kubernetes:apps/v1:Deployment").inputs.spec as { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } })
      .template.spec.containers[0];
    expect(container?.env.find((e) => e.name === "PORTAL_CLUSTERS")?.value).toBe(JSON.stringify({ namespace: "platform-portal", clusters }));
  });

  it("refuses another cluster named like the stack before anything is declared, and reads none by default", async () => {
    await expect(
      declareStack({ projectDir, stack: "test", config: config({ enabled: true, clusters: [{ name: "test", secret: "x" }] }), cluster: freshCluster() }),
    ).rejects.toThrow(
      "invalid stack configuration in Pulumi.test.yaml: ui-exposure:portal.clusters: 'test' is this stack's own name; give the other cluster another name",
    );
    await pulumi.runtime.disconnect();
    expect(registered).toEqual([]);
    registered = [];
    await useMocks();
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster() });
    await pulumi.runtime.disconnect();
    expect(ofType("kubernetes:rbac.authorization.k8s.io/v1:Role")).toEqual([]);
  });

  it("documents the other cluster's read-only recipe with exactly the portal's own read rules (docs/portal.md)", () => {
    const docs = fs.readFileSync(path.join(projectDir, "docs", "portal.md"), "utf8");
    const recipe = parseAllDocuments(runbookBlock(docs, "reader-recipe", "yaml")).map((d) => d.toJS());
    expect(recipe.map((o) => o.kind)).toEqual(["Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding"]);
    expect(recipe.find((o) => o.kind === "ClusterRole").rules).toEqual(portalRbacRules({ hostPort: true }));
  });

  it("creates nothing of the portal when it is not enabled, and then the entry needs the real Service", async () => {
    await expect(declareStack({ projectDir, stack: "test", config: config({ enabled: false }), cluster: freshCluster() })).rejects.toThrow(
      "entry 'portal': Service platform-portal/portal not found",
    );
    await pulumi.runtime.disconnect();
    expect(registered).toEqual([]);
  });

  it("warns when the portal is deployed but no selected entry publishes it", async () => {
    // Caught, not printed: `npm test` prints no warning on a clean run.
    const warn = vi.spyOn(pulumi.log, "warn").mockImplementation(async () => undefined);
    try {
      await declareStack({ projectDir, stack: "test", config: config({ enabled: true }, ["argocd"]), cluster: freshCluster() });
      await pulumi.runtime.disconnect();
      expect(warn).toHaveBeenCalledWith(
        "the portal is deployed but not published: no selected contract entry mirrors Service platform-portal/portal port http (add it to the contract and ui-exposure:entries)",
      );
      expect(ofType("ui-exposure:portal:Portal")).toHaveLength(1);
    } finally {
      warn.mockRestore();
    }
  });

  it("plans a Service `portal` that exists outside the stack, whatever its labels: the state-based takeover hook refuses its creation (never a label check, which refused an imported Service)", async () => {
    const oldPortal: Service = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "portal", namespace: "platform-portal" },
      spec: { type: "ClusterIP", selector: { app: "portal" }, ports: [{ name: "http", port: 80, targetPort: 8000 }] },
    };
    const out = await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster([oldPortal]) });
    expect((await resolve(out.endpoints)).portal).toMatchObject({ mirrors: "portal", service: "portal-nodeport" });
    expect(takeoverRefusal({ what: "portal", kind: "Service", resourceName: "portal-server-svc", namespace: "platform-portal", name: "portal" }, "test")).toBe(
      "portal: Service platform-portal/portal already exists and this stack did not create it; ui-exposure never takes over a Service it did not create. Remove it (kubectl -n platform-portal delete service portal), or adopt it on purpose: pulumi import kubernetes:core/v1:Service portal-server-svc platform-portal/portal --stack test --generate-code=false --protect=false --yes, then pulumi up",
    );
  });

  it("re-plans from the component's spec on later ups, when its own Service is in the cluster", async () => {
    const deployed = { ...portalService("platform-portal"), spec: { ...portalService("platform-portal").spec, clusterIP: "10.96.0.50" } };
    const out = await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: freshCluster([deployed]) });
    expect((await resolve(out.endpoints)).portal).toMatchObject({ mirrors: "portal", service: "portal-nodeport", namespace: "platform-portal" });
  });
});

describe("withStackServices (pure)", () => {
  const svc = (namespace: string, name: string, labels?: Record<string, string>): Service => ({
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: { type: "ClusterIP", selector: { app: name }, ports: [{ name: "http", port: 80 }] },
  });

  it("adds the Services the stack creates to the observed ones", () => {
    const observed = [svc("argocd", "argocd-server")];
    const created = portalService("platform-portal");
    expect(withStackServices(observed, [created])).toEqual([observed[0], created]);
  });

  it("prefers the created spec over our own observed copy (it is what the cluster holds after up)", () => {
    const stale = { ...portalService("platform-portal"), spec: { type: "ClusterIP", selector: { old: "1" }, ports: [] } };
    const created = portalService("platform-portal");
    expect(withStackServices([stale], [created])).toEqual([created]);
  });

  it("plans from the created spec over an observed Service of the same name, whatever its labels (ownership is the state's: the takeover hook)", () => {
    expect(withStackServices([svc("platform-portal", "portal")], [portalService("platform-portal")])).toEqual([portalService("platform-portal")]);
  });

  it("does not touch the observed list", () => {
    const observed = [svc("a", "b")];
    withStackServices(observed, [portalService("a")]);
    expect(observed).toEqual([svc("a", "b")]);
  });
});

describe("namespaceTakeoverRefusal (pure)", () => {
  it("refuses to create a namespace that already holds Services, naming them and the safe remedies", () => {
    expect(
      namespaceTakeoverRefusal("platform-portal", [
        { metadata: { name: "portal", namespace: "platform-portal" } },
        { metadata: { name: "x", namespace: "other" } },
      ]),
    ).toBe(
      "portal: namespace platform-portal already exists (it holds Services portal) and this stack did not create it; set ui-exposure:portal.createNamespace: false (the stack then only adds its own objects there and never deletes the namespace), or choose another portal.namespace",
    );
    expect(namespaceTakeoverRefusal("platform-portal", [{ metadata: { name: "x", namespace: "other" } }])).toBeUndefined();
  });
});
