import * as path from "node:path";
import * as util from "node:util";
import * as pulumi from "@pulumi/pulumi";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { PROGRAM_READ_TIMEOUT_MS } from "../components/engine";
import { type RegisteredResource, resolved as resolve, useProgramMocks } from "../components/mocks";
import { asRunError, declareStack } from "../components/program";
import { UserError } from "../src/core/errors";
import { SnapshotReader } from "../src/core/kube/cluster";
import { benchServices, ciliumConfig, node, parseSettings, stackConfig } from "./support/fixtures";
import { readyNode } from "./support/portal-fixtures";

const projectDir = path.resolve(__dirname, "..");

let registered: RegisteredResource[] = [];

/** Mocks that behave like the API server for what matters here: a created NodePort Service gets a port. */
async function useMocks(preview = false) {
  registered = (await useProgramMocks({ stack: "test", preview })).resources;
}

function cluster(extra: unknown[] = []) {
  return new SnapshotReader([
    node("node-b", "127.0.0.12"),
    node("node-a", "127.0.0.11", false),
    ...benchServices,
    ciliumConfig({ "kube-proxy-replacement": "true" }),
    ...extra,
  ]);
}

describe("program under mocks", () => {
  beforeEach(useMocks);
  // Let every registration of a test finish before the next test replaces the mocks.
  afterEach(() => pulumi.runtime.disconnect());

  it("creates one separate NodePort Service per selected entry, with the vendored selector and target port", async () => {
    const reader = cluster();
    const out = await declareStack({ projectDir, stack: "test", config: stackConfig(), cluster: reader });
    await resolve(out.urls);
    const services = registered.filter((r) => r.type === "kubernetes:core/v1:Service");
    expect(services.map((s) => s.name)).toEqual(["argocd-svc", "gitea-svc", "grafana-svc"]);
    expect(services[2]?.inputs).toEqual({
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "grafana-nodeport",
        namespace: "monitoring",
        labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "grafana", "ui-exposure.io/stack": "test" },
        annotations: { "ui-exposure.io/mirrors": "monitoring/kube-prometheus-stack-grafana", "pulumi.com/skipAwait": "true", "pulumi.com/patchForce": "true" },
      },
      spec: {
        type: "NodePort",
        selector: { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "kube-prometheus-stack" },
        externalTrafficPolicy: "Cluster",
        ports: [{ name: "http", port: 80, targetPort: 3000, protocol: "TCP" }],
      },
    });
    // No nodePort is ever written by the program.
    expect(JSON.stringify(services.map((s) => s.inputs))).not.toContain("nodePort");
    // The vendored Services are only read: nothing registered under their names.
    expect(registered.some((r) => JSON.stringify(r.inputs).includes('"name":"argocd-server"'))).toBe(false);
  });

  it("outputs URLs built from the observed nodePort and the Ready node's InternalIP", async () => {
    const out = await declareStack({ projectDir, stack: "test", config: stackConfig(), cluster: cluster() });
    expect(await resolve(out.urls)).toEqual({ argocd: "http://127.0.0.12:31000", gitea: "http://127.0.0.12:31001", grafana: "http://127.0.0.12:31002" });
    expect(out.node).toEqual({ name: "node-b", address: "127.0.0.12", pinned: false });
    expect((await resolve(out.endpoints)).grafana).toEqual({
      exposure: "nodePort",
      namespace: "monitoring",
      mirrors: "kube-prometheus-stack-grafana",
      service: "grafana-nodeport",
      // The selector this up applied: what proves, at the next up, which keys were ours (issue 39 #3).
      selector: { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "kube-prometheus-stack" },
      nodePort: 31002,
      url: "http://127.0.0.12:31002",
    });
  });

  it("in a preview, a Service still to be created shows its URL as pending, an existing one its real port", async () => {
    await useMocks(true);
    const ours = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "argocd-nodeport", namespace: "argocd", labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" } },
      spec: { type: "NodePort", ports: [{ name: "http", port: 80, nodePort: 31000 }] },
    };
    const out = await declareStack({ projectDir, stack: "test", config: stackConfig(), cluster: cluster([ours]) });
    expect(await resolve(out.urls)).toEqual({
      argocd: "http://127.0.0.12:31000",
      gitea: "http://127.0.0.12:<nodePort allocated on apply>",
      grafana: "http://127.0.0.12:<nodePort allocated on apply>",
    });
  });

  it("uses a pinned node address from the stack", async () => {
    const out = await declareStack({ projectDir, stack: "test", config: stackConfig({ "ui-exposure:nodeAddress": "127.0.0.99" }), cluster: cluster() });
    expect((await resolve(out.urls)).argocd).toBe("http://127.0.0.99:31000");
    expect(out.node).toEqual({ name: "(pinned)", address: "127.0.0.99", pinned: true });
  });

  it("reads the cluster with one list call per kind, whatever the number of entries", async () => {
    const reader = cluster();
    await declareStack({ projectDir, stack: "test", config: stackConfig({ "ui-exposure:entries": ["argocd"] }), cluster: reader });
    const one = reader.requests;
    const reader3 = cluster();
    await declareStack({ projectDir, stack: "test", config: stackConfig(), cluster: reader3 });
    expect(reader3.requests).toBe(one);
    // services, nodes, cilium-config, LB pools, L2 policies, gateways, gateway classes, HTTP routes, ingresses, ingress classes,
    // BGP advertisements, BGP peering policies (no pods: no hostPort entry selected; no Helm release: mode cohabit)
    expect(one).toBe(12);
  });

  it("fails before declaring anything when a backing Service is missing", async () => {
    const reader = new SnapshotReader([node("node-b", "127.0.0.12"), ciliumConfig({ "kube-proxy-replacement": "true" }), ...benchServices.slice(0, 1)]);
    const run = declareStack({ projectDir, stack: "test", config: stackConfig(), cluster: reader });
    await expect(run).rejects.toBeInstanceOf(UserError);
    await expect(run).rejects.toThrow(
      [
        "stack test cannot be deployed (nothing was changed) (2 problems):",
        "  - entry 'gitea': Service gitea/gitea-http not found; install the UI first, fix the contract's service, or leave 'gitea' out of ui-exposure:entries",
        "  - entry 'grafana': Service monitoring/kube-prometheus-stack-grafana not found; install the UI first, fix the contract's service, or leave 'grafana' out of ui-exposure:entries",
      ].join("\n"),
    );
    expect(registered).toEqual([]);
  });

  describe("ownership proven by the published outputs, which no refresh rewrites (issue 33 #1)", () => {
    const ours = (uid: string, selector: Record<string, string> = { "app.kubernetes.io/name": "argocd-server" }) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: "argocd-nodeport",
        namespace: "argocd",
        uid,
        labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" },
      },
      spec: { type: "NodePort", selector, ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 31001 }] },
    });
    const lastEndpoints = async () => ({
      argocd: { exposure: "nodePort", namespace: "argocd", service: "argocd-nodeport", uid: "uid-published", nodePort: 31001, url: "http://127.0.0.11:31001" },
    });
    const deploy = (live: unknown, stateUid: string) =>
      declareStack({
        projectDir,
        stack: "test",
        config: stackConfig(),
        cluster: cluster([live]),
        lastEndpoints,
        // What the state holds: after a refresh (the up's own, or a bare one), the copy's uid.
        stateUids: async () => ({ services: new Map([["argocd/argocd-nodeport", stateUid]]), configMaps: new Map(), guard: new Set<string>() }),
      });
    const REFUSED =
      "stack test cannot be deployed (nothing was changed): entry 'argocd': Service argocd/argocd-nodeport is not the Service the last up published (its uid uid-of-the-copy; the last up published uid-published); ui-exposure never takes over a Service it did not create: remove it (kubectl -n argocd delete service argocd-nodeport), then pulumi up recreates this stack's own";

    it.each([
      ["the state still holds the published uid (no refresh, or a preview's)", "uid-published"],
      ["a refresh wrote the copy's uid into the state (up --skip-preview with refresh, a bare pulumi refresh)", "uid-of-the-copy"],
      ["an up killed after recording another create holds a third uid", "uid-of-a-killed-up"],
    ])("a copy made by hand is refused in one line, touching nothing, when %s", async (_case, stateUid) => {
      await expect(deploy(ours("uid-of-the-copy"), stateUid)).rejects.toThrow(REFUSED);
      expect(registered).toEqual([]);
    });

    it("the Service the last up published goes on, whatever the state says", async () => {
      await expect(deploy(ours("uid-published"), "uid-published")).resolves.toBeDefined();
    });

    it("a selector key added to ours by hand is refused with the command that removes it (issue 34 #11)", async () => {
      const patched = ours("uid-published", { "app.kubernetes.io/name": "argocd-server", tier: "frontend" });
      await expect(deploy(patched, "uid-published")).rejects.toThrow(
        `stack test cannot be deployed (nothing was changed): entry 'argocd': selector key tier=frontend of argocd/argocd-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n argocd patch service argocd-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]', then pulumi up`,
      );
      expect(registered).toEqual([]);
    });
  });

  describe("our Service follows the vendored selector (issue 39 #3)", () => {
    // The chart's upgrade dropped `app` from argocd-server's selector; the last up mirrored it.
    const mirrored = { app: "argocd-server", "app.kubernetes.io/name": "argocd-server" };
    const ours = (selector: Record<string, string>) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "argocd-nodeport", namespace: "argocd", uid: "uid-published", labels: { "app.kubernetes.io/managed-by": "ui-exposure" } },
      spec: { type: "NodePort", selector, ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 31001 }] },
    });
    const deploy = (selector: Record<string, string>) =>
      declareStack({
        projectDir,
        stack: "test",
        config: stackConfig({ "ui-exposure:entries": ["argocd"] }),
        cluster: cluster([ours(selector)]),
        lastEndpoints: async () => ({
          argocd: { namespace: "argocd", service: "argocd-nodeport", uid: "uid-published", nodePort: 31001, selector: mirrored },
        }),
        stateUids: async () => ({ services: new Map([["argocd/argocd-nodeport", "uid-published"]]), configMaps: new Map(), guard: new Set<string>() }),
      });

    it("a key the last up mirrored and the chart dropped is dropped: up applies the vendored selector alone and publishes it", async () => {
      const out = await deploy(mirrored);
      expect((await resolve(out.endpoints)).argocd?.selector).toEqual({ "app.kubernetes.io/name": "argocd-server" });
      const argocd = registered.find((r) => r.type === "kubernetes:core/v1:Service" && r.name === "argocd-svc");
      expect((argocd?.inputs as { spec?: { selector?: unknown } } | undefined)?.spec?.selector).toEqual({ "app.kubernetes.io/name": "argocd-server" });
    });

    it("a key added by hand next to it is still refused, naming it alone, touching nothing", async () => {
      await expect(deploy({ ...mirrored, tier: "frontend" })).rejects.toThrow(
        `stack test cannot be deployed (nothing was changed): entry 'argocd': selector key tier=frontend of argocd/argocd-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n argocd patch service argocd-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]', then pulumi up`,
      );
      expect(registered).toEqual([]);
    });
  });

  it("rejects wrong stack configuration with the setting's name", async () => {
    const bad = stackConfig({ "ui-exposure:entrys": ["argocd"], "ui-exposure:nodeAddress": "not-an-ip", "ui-exposure:cilium": { mode: "gateway" } });
    await expect(declareStack({ projectDir, stack: "test", config: bad, cluster: cluster() })).rejects.toThrow(
      [
        "invalid stack configuration in Pulumi.test.yaml (3 problems):",
        `  - ui-exposure:nodeAddress: must be an IPv4 or IPv6 address, found a string ("not-an-ip")`,
        `  - ui-exposure:cilium.mode: mode must be 'l4' or 'cohabit', found a string ("gateway")`,
        "  - ui-exposure: unknown key 'entrys'",
      ].join("\n"),
    );
    expect(registered).toEqual([]);
  });

  it("says what a setting of the wrong type holds, never that it is missing (found by review)", () => {
    const cilium = { mode: "l4", chart: { version: "1.18.12" }, k8sServiceHost: "192.168.104.2", k8sServicePort: "6443" };
    const config = { "ui-exposure:cilium": JSON.stringify(cilium), "ui-exposure:production": "yes", "ui-exposure:portal": '{"enabled": 1.5}' };
    expect(() => parseSettings(config, "Pulumi.test.yaml")).toThrow(
      [
        "invalid stack configuration in Pulumi.test.yaml (3 problems):",
        '  - ui-exposure:cilium.k8sServicePort: expected a number, found a string ("6443")',
        "  - ui-exposure:portal.enabled: expected a boolean, found a number (1.5)",
        '  - ui-exposure:production: expected a boolean, found a string ("yes")',
      ].join("\n"),
    );
    // A list where 'all' or a list is accepted: its bad items, at their index (found by a second outside tester).
    expect(() => parseSettings({ "ui-exposure:cilium": '{"mode": "cohabit"}', "ui-exposure:entries": '["argocd", "", 5]' }, "Pulumi.test.yaml")).toThrow(
      /ui-exposure:entries\[1\]: entry name must be a DNS label.*\n.*ui-exposure:entries\[2\]: expected a string, found a number \(5\)/,
    );
    // Absent is still told as absent.
    expect(() => parseSettings({}, "Pulumi.test.yaml")).toThrow("ui-exposure:cilium: required setting is missing");
  });

  it("says what a setting holds and what was expected, never zod's own wording (found by a tester)", () => {
    const problemOf = (key: string, value: unknown) => {
      const config = stackConfig({ [`ui-exposure:${key}`]: value });
      try {
        parseSettings(config, "Pulumi.test.yaml");
      } catch (err) {
        return (err as Error).message.replace("invalid stack configuration in Pulumi.test.yaml: ", "");
      }
      return "accepted";
    };
    const l4 = { mode: "l4", chart: { version: "1.18.12" } };
    expect(problemOf("entries", "grafana")).toBe(`ui-exposure:entries: expected 'all' or a list of entry names, found a string ("grafana")`);
    expect(problemOf("entries", 5)).toBe("ui-exposure:entries: expected 'all' or a list of entry names, found a number (5)");
    expect(problemOf("entries", { a: 1 })).toBe("ui-exposure:entries: expected 'all' or a list of entry names, found a map");
    expect(problemOf("entries", [])).toBe("ui-exposure:entries: must list at least one entry (or be 'all')");
    expect(problemOf("contract", "")).toBe("ui-exposure:contract: must not be empty");
    expect(problemOf("cilium", { ...l4, k8sServicePort: 70000 })).toBe(
      "ui-exposure:cilium.k8sServicePort: expected a port number between 1 and 65535, found a number (70000)",
    );
    expect(problemOf("cilium", { ...l4, k8sServicePort: 1e20 })).toBe(
      "ui-exposure:cilium.k8sServicePort: expected a port number between 1 and 65535, found a number (100000000000000000000)",
    );
    expect(problemOf("nodeAddress", "999.1.1.1")).toBe(`ui-exposure:nodeAddress: must be an IPv4 or IPv6 address, found a string ("999.1.1.1")`);
    expect(problemOf("cilium", { mode: "L4" })).toBe(`ui-exposure:cilium.mode: mode must be 'l4' or 'cohabit', found a string ("L4")`);
    expect(problemOf("cilium", { mode: 5 })).toBe("ui-exposure:cilium.mode: mode must be 'l4' or 'cohabit', found a number (5)");
    expect(problemOf("cilium", { mode: "l4", chart: { version: "latest" } })).toBe(
      `ui-exposure:cilium.chart.version: must be an exact chart version such as 1.18.12, found a string ("latest")`,
    );
    expect(problemOf("allowlist", { services: ["Kube-System/x"] })).toBe(
      `ui-exposure:allowlist.services[0]: must be 'namespace/name' (name may end with '*'), found a string ("Kube-System/x")`,
    );
  });

  it("validates the portal's namespace (a DNS label) and image (no blank, no space) (found by a tester)", () => {
    const portal = (p: Record<string, unknown>) => stackConfig({ "ui-exposure:portal": { enabled: true, ...p } });
    expect(() => parseSettings(portal({ namespace: "Bad NS", image: "  " }), "Pulumi.test.yaml")).toThrow(
      [
        "invalid stack configuration in Pulumi.test.yaml (2 problems):",
        `  - ui-exposure:portal.namespace: namespace must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, found a string ("Bad NS")`,
        `  - ui-exposure:portal.image: image must be an image reference without spaces (e.g. node:24-alpine), found a string ("  ")`,
      ].join("\n"),
    );
    expect(() => parseSettings(portal({ image: "" }), "Pulumi.test.yaml")).toThrow("ui-exposure:portal.image: image must be an image reference");
    expect(parseSettings(portal({ namespace: "tools", image: "registry.internal/node:20-alpine" }), "Pulumi.test.yaml").portal).toMatchObject({
      namespace: "tools",
      image: "registry.internal/node:20-alpine",
    });
  });

  it("declares every Kubernetes resource through one explicit provider built from the stack's kube settings", async () => {
    const config = stackConfig({ "kubernetes:kubeconfig": "/home/op/.kube/bench", "ui-exposure:portal": { enabled: true } });
    // The portal without an entry publishing it: up warns (caught here, portal-component.test.ts checks it).
    const warn = vi.spyOn(pulumi.log, "warn").mockImplementation(async () => undefined);
    const out = await declareStack({ projectDir, stack: "test", config, cluster: cluster() });
    await resolve(out.urls);
    await pulumi.runtime.disconnect();
    const providers = registered.filter((r) => r.type.startsWith("pulumi:providers:"));
    expect(providers).toEqual([{ type: "pulumi:providers:kubernetes", name: "kubernetes", inputs: { context: "test", kubeconfig: "/home/op/.kube/bench" } }]);
    const kubernetes = registered.filter((r) => r.type.startsWith("kubernetes:"));
    expect(kubernetes.length).toBeGreaterThan(3);
    // None through the default provider (the ambient current context).
    expect(kubernetes.filter((r) => r.provider !== "kubernetes").map((r) => `${r.type} ${r.name}`)).toEqual([]);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("the portal is deployed but not published"));
    warn.mockRestore();
  });

  it("refuses a stack without kubernetes:context before reading the cluster or declaring anything", async () => {
    const reader = cluster();
    const listServices = vi.spyOn(reader, "listServices");
    const config = stackConfig({ "kubernetes:context": undefined });
    await expect(declareStack({ projectDir, stack: "test", config, cluster: reader })).rejects.toThrow(
      `invalid stack configuration in Pulumi.test.yaml: kubernetes:context is not set; set it (pulumi config set kubernetes:context <context> --stack test) so the stack never deploys to (or reads) whatever context is current${"\nadd under 'config:' in Pulumi.test.yaml:\n  kubernetes:context: <context>        # the cluster's, from: kubectl config get-contexts -o name"}`,
    );
    expect(listServices).not.toHaveBeenCalled();
    expect(registered).toEqual([]);
  });

  it("rejects entries the contract does not declare", async () => {
    await expect(declareStack({ projectDir, stack: "test", config: stackConfig({ "ui-exposure:entries": ["argo"] }), cluster: cluster() })).rejects.toThrow(
      "invalid stack configuration in Pulumi.test.yaml: ui-exposure:entries names 'argo', which the contract does not declare (declared: argocd, grafana, gitea, dagster, mlflow, marquez-web, k8s-dashboard, portal)",
    );
  });

  it("an invalid contract stops the run with the contract's message", async () => {
    const config = stackConfig({ "ui-exposure:contract": "test/data/legacy-contract.yaml" });
    await expect(declareStack({ projectDir, stack: "test", config, cluster: cluster() })).rejects.toThrow(
      "invalid contract test/data/legacy-contract.yaml (1 problem):\ntest/data/legacy-contract.yaml:6:5: endpoints[0].ui_nodeport: legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'",
    );
    expect(registered).toEqual([]);
  });
});

// `up` must fail before the first resource when the portal bundle cannot be built (everything
// that can fail fails first), under Pulumi's mocks.
describe("nothing is registered when the portal bundle fails", () => {
  afterEach(() => {
    vi.doUnmock("../src/adapters/portal-bundle");
    vi.resetModules();
  });

  it("fails before the Cilium component (or anything else) is declared", async () => {
    vi.resetModules();
    vi.doMock("../src/adapters/portal-bundle", () => ({
      bundlePortalServer: () => {
        throw new UserError("cannot bundle the portal server (src/portal/main.ts): test failure");
      },
    }));
    const program = await import("../components/program.js");
    const registered: string[] = [];
    await pulumi.runtime.setMocks(
      {
        newResource: (args) => {
          registered.push(`${args.type} ${args.name}`);
          return { id: `${args.name}-id`, state: args.inputs };
        },
        call: () => ({}),
      },
      "ui-exposure",
      "test",
      false,
    );
    const reader = new SnapshotReader([
      readyNode("bench", "127.0.0.2"),
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "argocd-server", namespace: "argocd" },
        spec: { selector: { app: "argocd" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
      },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cilium-config", namespace: "kube-system" }, data: { "kube-proxy-replacement": "true" } },
    ]);
    await expect(
      program.declareStack({
        projectDir,
        stack: "test",
        config: {
          "kubernetes:context": "test",
          "ui-exposure:contract": path.join(projectDir, "contract", "endpoints.example.yaml"),
          "ui-exposure:entries": JSON.stringify(["argocd"]),
          "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }),
          "ui-exposure:portal": JSON.stringify({ enabled: true }),
        },
        cluster: reader,
      }),
    ).rejects.toThrow("cannot bundle the portal server");
    // Registrations are RPCs: wait until every one started by the program has reached the mocks.
    await pulumi.runtime.disconnect();
    expect(registered).toEqual([]);
  });
});

// A stack whose cluster cannot be reached fails `preview`/`up` within seconds: bounded cluster
// reads, and an error the SDK formats cheaply.
describe("failing fast when the cluster does not answer", () => {
  it("turns a user error into a RunError whose stack is its message alone (the SDK inspects it on the way out)", () => {
    let thrown: unknown;
    try {
      asRunError(new UserError("cluster unreachable: context lima-bench (https://127.0.0.1:1): ECONNREFUSED while reading services"));
    } catch (err) {
      thrown = err;
    }
    const err = thrown as Error;
    expect(err.constructor.name).toBe("RunError");
    expect(err.message).toBe("cluster unreachable: context lima-bench (https://127.0.0.1:1): ECONNREFUSED while reading services");
    expect(err.stack).toBe(`RunError: ${err.message}`);
    expect(util.inspect(err)).not.toContain("    at ");
  });

  it("bounds each cluster read of the program", () => {
    expect(PROGRAM_READ_TIMEOUT_MS).toBeLessThanOrEqual(5_000);
  });
});
