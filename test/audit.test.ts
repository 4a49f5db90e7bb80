import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { openStack } from "../cli/stack";
import { readSnapshotFile } from "../src/adapters/snapshot-file";
import { auditExposure } from "../src/core/audit";
import { parseContract } from "../src/core/contract/parse";
import { matchesPattern as matchesParsed } from "../src/core/exposure-model";
import type { Pod, Service } from "../src/core/kube/types";
import type { PublishedEndpoints } from "../src/core/observe";
import type { Allowlist } from "../src/core/settings";
import { podsOf, readAllChartFixtures } from "./support/chart-fixtures";
import { managedService, managedServices, pod, service, TEST_CONTRACT, vendoredServices } from "./support/command-helpers";
import { parseSettings } from "./support/fixtures";

const contract = parseContract(TEST_CONTRACT, "test-contract.yaml");
const allExposed = ["argocd", "gitea", "grafana", "lineage-agent"];
const noAllowlist: Allowlist = { services: [], hostPorts: [] };

function audit(opts: { services?: Service[]; pods?: Pod[]; selected?: string[]; allowlist?: Allowlist; published?: PublishedEndpoints }) {
  return auditExposure({
    contract,
    selected: opts.selected ?? allExposed,
    allowlist: opts.allowlist ?? noAllowlist,
    services: opts.services ?? [],
    pods: opts.pods ?? [],
    ...(opts.published ? { published: opts.published } : {}),
  });
}

const matchesPattern = (p: string, value: string) => matchesParsed({ prefix: p.endsWith("*"), text: p.endsWith("*") ? p.slice(0, -1) : p }, value);

describe("matchesPattern", () => {
  it("matches exactly, or by prefix when the pattern ends with '*'", () => {
    expect(matchesPattern("argocd/cilium-gateway-*", "argocd/cilium-gateway-argocd")).toBe(true);
    expect(matchesPattern("argocd/cilium-gateway-*", "gitea/cilium-gateway-gitea")).toBe(false);
    expect(matchesPattern("kube-system/hubble-relay", "kube-system/hubble-relay")).toBe(true);
    expect(matchesPattern("kube-system/hubble-relay", "kube-system/hubble-relay-2")).toBe(false);
    // '*' is only a suffix wildcard: elsewhere it is a literal that no Kubernetes name contains.
    expect(matchesPattern("argocd/*-gateway", "argocd/cilium-gateway")).toBe(false);
  });
});

describe("auditExposure: look-alikes of our Services", () => {
  it("reports a Service carrying an entry's labels outside <namespace>/<entry>-nodeport as undeclared exposure impersonating the entry", () => {
    const lookAlike = managedService("gitea", "tenant", 31999, { selector: { app: "tenant" }, targetPort: 8080 });
    lookAlike.metadata.name = "gitea-http";
    const result = audit({ services: [...managedServices, lookAlike] });
    expect(result.undeclared).toEqual([
      {
        kind: "NodePort",
        namespace: "tenant",
        name: "gitea-http",
        ports: "http 80->31999",
        reason:
          "impersonates contract entry 'gitea' (carries its labels, but that entry's Service is gitea/gitea-nodeport created by this stack): undeclared exposure; remove it",
        fix: "kubectl -n tenant delete service gitea-http",
      },
    ]);
    expect(result.declared.map((d) => d.name)).not.toContain("gitea-http");
  });

  it("reports a Service at an entry's name that this stack did not create (per the last up's outputs) as undeclared", () => {
    const foreign = { ...managedServices[1], metadata: { ...(managedServices[1] as Service).metadata, uid: "someone-else" } } as Service;
    const result = audit({
      services: [managedServices[0] as Service, foreign],
      selected: ["argocd", "gitea"],
      published: { argocd: { service: "argocd-nodeport" }, gitea: { service: "gitea-nodeport", uid: "ours" } },
    });
    expect(result.declared.map((d) => d.name)).toEqual(["argocd-nodeport"]);
    expect(result.undeclared.map((u) => u.reason)).toEqual([
      "named like contract entry 'gitea', but gitea/gitea-nodeport is not the Service the last up published (its uid someone-else; the last up published ours); ui-exposure never takes over a Service it did not create: remove it (kubectl -n gitea delete service gitea-nodeport), then pulumi up recreates this stack's own",
    ]);
  });
});

describe("auditExposure: Services", () => {
  it("ignores ClusterIP and headless Services (default/kubernetes, the vendored UIs)", () => {
    const result = audit({ services: [service("default", "kubernetes", { ports: [{ name: "https", port: 443 }] }), ...vendoredServices] });
    expect(result).toEqual({ declared: [], undeclared: [], unusedAllowlist: [] });
  });

  it("declares our NodePort Services of the entries the stack publishes by their contract entry", () => {
    const result = audit({ services: [...vendoredServices, ...managedServices] });
    expect(result.undeclared).toEqual([]);
    expect(result.declared).toEqual([
      { kind: "NodePort", namespace: "argocd", name: "argocd-nodeport", ports: "http 80->31001", declaredBy: "contract entry 'argocd'" },
      { kind: "NodePort", namespace: "gitea", name: "gitea-nodeport", ports: "http 80->31002", declaredBy: "contract entry 'gitea'" },
      { kind: "NodePort", namespace: "monitoring", name: "grafana-nodeport", ports: "http 80->31003", declaredBy: "contract entry 'grafana'" },
    ]);
  });

  it("flags our Service of an entry this stack does not publish (an orphan of an earlier up)", () => {
    const result = audit({ services: managedServices, selected: ["argocd", "gitea"] });
    expect(result.undeclared).toEqual([
      {
        kind: "NodePort",
        namespace: "monitoring",
        name: "grafana-nodeport",
        ports: "http 80->31003",
        reason:
          "labelled as made by ui-exposure for entry 'grafana', which this stack does not publish (left over from an earlier up or another stack?): delete it or select the entry",
        fix: "kubectl -n monitoring delete service grafana-nodeport",
      },
    ]);
  });

  it("does not accept a Service named like ours in another namespace than the entry's", () => {
    const stray = managedService("argocd", "default", 31500, { selector: { app: "x" }, targetPort: 80 });
    const result = audit({ services: [stray] });
    expect(result.declared).toEqual([]);
    expect(result.undeclared.map((u) => `${u.namespace}/${u.name}`)).toEqual(["default/argocd-nodeport"]);
  });

  it("flags an undeclared NodePort or LoadBalancer Service, with its ports and LB addresses", () => {
    const lb: Service = {
      ...service("monitoring", "prometheus-lb", { type: "LoadBalancer", ports: [{ name: "web", port: 9090, nodePort: 30900 }] }),
      status: { loadBalancer: { ingress: [{ ip: "10.67.3.250" }] } },
    };
    const debug = service("default", "debug", { type: "NodePort", ports: [{ port: 8080, nodePort: 32000 }] });
    const result = audit({ services: [lb, debug] });
    expect(result.undeclared).toEqual([
      {
        kind: "LoadBalancer",
        namespace: "monitoring",
        name: "prometheus-lb",
        ports: "web 9090->30900",
        addresses: ["10.67.3.250"],
        reason: "in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it",
        fix: "kubectl -n monitoring delete service prometheus-lb, or declare it: ui-exposure:allowlist.services 'monitoring/prometheus-lb'",
        allowlistLine: "ui-exposure:allowlist.services 'monitoring/prometheus-lb'",
      },
      {
        kind: "NodePort",
        namespace: "default",
        name: "debug",
        ports: "8080->32000",
        reason: "in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it",
        fix: "kubectl -n default delete service debug, or declare it: ui-exposure:allowlist.services 'default/debug'",
        allowlistLine: "ui-exposure:allowlist.services 'default/debug'",
      },
    ]);
  });

  it("accepts allowlisted Services (exact name or prefix*) and reports allowlist entries that matched nothing", () => {
    const gateway = service("argocd", "cilium-gateway-argocd", { type: "LoadBalancer", ports: [{ port: 443, nodePort: 30240 }] });
    const relay = service("kube-system", "hubble-relay", { type: "NodePort", ports: [{ port: 80, nodePort: 31234 }] });
    const result = audit({
      services: [gateway, relay],
      allowlist: { services: ["argocd/cilium-gateway-*", "kube-system/hubble-relay", "gitea/cilium-gateway-*"], hostPorts: ["kube-system/cilium-*:4244"] },
    });
    expect(result.undeclared).toEqual([]);
    expect(result.declared.map((d) => d.declaredBy)).toEqual(["allowlist 'argocd/cilium-gateway-*'", "allowlist 'kube-system/hubble-relay'"]);
    expect(result.unusedAllowlist).toEqual(["gitea/cilium-gateway-*", "kube-system/cilium-*:4244"]);
  });
});

describe("auditExposure: hostPorts", () => {
  it("declares a hostPort held by the pod the contract's hostPort entry selects", () => {
    const agent = pod("lineage", "lineage-agent-0", "bench", { labels: { app: "lineage-agent" }, hostPort: 8090 });
    expect(audit({ pods: [agent] }).declared).toEqual([
      { kind: "hostPort", namespace: "lineage", name: "lineage-agent-0", ports: "8090/TCP", node: "bench", declaredBy: "contract entry 'lineage-agent'" },
    ]);
  });

  it("flags the same hostPort held by a pod the entry's podSelector does not select, or when the stack does not publish the entry", () => {
    const impostor = pod("lineage", "other-0", "bench", { labels: { app: "other" }, hostPort: 8090 });
    expect(audit({ pods: [impostor] }).undeclared.map((u) => u.name)).toEqual(["other-0"]);
    const agent = pod("lineage", "lineage-agent-0", "bench", { labels: { app: "lineage-agent" }, hostPort: 8090 });
    expect(audit({ pods: [agent], selected: ["argocd"] }).undeclared.map((u) => u.name)).toEqual(["lineage-agent-0"]);
  });

  it("accepts allowlisted hostPorts by pod prefix and port, and says when the pod uses the host network", () => {
    const cilium = pod("kube-system", "cilium-x7k2p", "bench", { hostPort: 4244, hostNetwork: true });
    const metrics = pod("kube-system", "cilium-x7k2p-metrics", "bench", { hostPort: 9962, hostNetwork: true });
    const result = audit({ pods: [cilium, metrics], allowlist: { services: [], hostPorts: ["kube-system/cilium-*:4244"] } });
    expect(result.declared.map((d) => `${d.name} ${d.ports} ${d.declaredBy}`)).toEqual(["cilium-x7k2p 4244/TCP allowlist 'kube-system/cilium-*:4244'"]);
    expect(result.undeclared).toEqual([
      {
        kind: "hostPort",
        namespace: "kube-system",
        name: "cilium-x7k2p-metrics",
        ports: "9962/TCP",
        node: "bench",
        reason:
          "hostNetwork pod (every containerPort is a hostPort); in neither a contract hostPort entry nor ui-exposure:allowlist.hostPorts: remove the hostPort or declare it",
        fix: "kubectl -n kube-system edit pod cilium-x7k2p-metrics (remove it), or declare it: ui-exposure:allowlist.hostPorts 'kube-system/cilium-x7k2p-metrics:9962'",
      },
    ]);
  });

  it("names, for a pod its workload makes, the workload to edit and the allowlist line that admits all its pods (issue 40 #5)", () => {
    const made = pod("kube-system", "cilium-x7k2p", "bench", { hostPort: 9962, hostNetwork: true });
    made.metadata = {
      ...made.metadata,
      generateName: "cilium-",
      ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "cilium", uid: "u", controller: true }],
    };
    expect(audit({ pods: [made] }).undeclared.map((u) => u.fix)).toEqual([
      "kubectl -n kube-system edit daemonset cilium (remove it), or declare it: ui-exposure:allowlist.hostPorts 'kube-system/cilium-*:9962'",
    ]);
  });

  it("gives the allowlist item's reason with what it declares", () => {
    const envoy = pod("kube-system", "cilium-envoy-x7k2p", "bench", { hostPort: 9964, hostNetwork: true });
    const allowlist: Allowlist = {
      services: [],
      hostPorts: ["kube-system/cilium-envoy-*:9964"],
      reasons: { "kube-system/cilium-envoy-*:9964": "Cilium's Envoy metrics" },
    };
    expect(audit({ pods: [envoy], allowlist }).declared).toEqual([
      {
        kind: "hostPort",
        namespace: "kube-system",
        name: "cilium-envoy-x7k2p",
        ports: "9964/TCP",
        node: "bench",
        declaredBy: "allowlist 'kube-system/cilium-envoy-*:9964'",
        reason: "Cilium's Envoy metrics",
      },
    ]);
  });

  it("counts a host-network pod's containerPorts as hostPorts even when the object read back has no hostPort (as the guard does)", () => {
    const exporter: Pod = {
      kind: "Pod",
      metadata: { name: "node-exporter-abcde", namespace: "monitoring" },
      spec: {
        nodeName: "n1",
        hostNetwork: true,
        containers: [{ name: "node-exporter", ports: [{ name: "http-metrics", containerPort: 9100 }] }],
      } as Pod["spec"],
      status: { phase: "Running" },
    };
    expect(audit({ pods: [exporter] }).undeclared.map((u) => `${u.name} ${u.ports}`)).toEqual(["node-exporter-abcde 9100/TCP"]);
  });

  it("reads init containers, reports each port/protocol once per pod, and skips finished pods", () => {
    const multi: Pod = {
      kind: "Pod",
      metadata: { name: "dns-0", namespace: "infra" },
      spec: {
        nodeName: "n1",
        initContainers: [{ name: "init", ports: [{ containerPort: 53, hostPort: 53, protocol: "UDP" }] }],
        containers: [
          {
            name: "a",
            ports: [
              { containerPort: 53, hostPort: 53, protocol: "UDP" },
              { containerPort: 53, hostPort: 53 },
            ],
          },
          { name: "b", ports: [{ containerPort: 8080 }] },
        ],
      },
      status: { phase: "Running" },
    };
    const done = pod("infra", "job-1", "n1", { hostPort: 9999, phase: "Succeeded" });
    expect(audit({ pods: [multi, done] }).undeclared.map((u) => `${u.name} ${u.ports}`)).toEqual(["dns-0 53/UDP", "dns-0 53/TCP"]);
  });
});

describe("auditExposure on examples/dirqual-cluster.yaml with the dirqual stack's allowlist", () => {
  it("finds the eight Gateway LoadBalancer Services and the platform's host-network agents, all allowlisted: no drift", async () => {
    const projectDir = path.resolve(__dirname, "..");
    const opened = openStack({ projectDir, stack: "dirqual" });
    const cluster = readSnapshotFile(path.join(projectDir, "examples", "dirqual-cluster.yaml"));
    const result = auditExposure({
      contract: opened.contract,
      selected: opened.selected,
      allowlist: opened.settings.allowlist,
      services: await cluster.listServices(),
      pods: await cluster.listPods(),
    });
    expect(result.undeclared).toEqual([]);
    expect(result.unusedAllowlist).toEqual([]);
    expect(result.declared.filter((d) => d.kind === "hostPort").map((d) => `${d.namespace}/${d.name} ${d.ports} on ${d.node}: ${d.declaredBy}`)).toEqual([
      "kube-system/cilium-envoy-npgwp 9964/TCP on dirqual-cp1: allowlist 'kube-system/cilium-envoy-*:9964'",
      "kube-system/cilium-envoy-nwh9m 9964/TCP on dirqual-w1: allowlist 'kube-system/cilium-envoy-*:9964'",
      "kube-system/cilium-envoy-r8bk6 9964/TCP on dirqual-w2: allowlist 'kube-system/cilium-envoy-*:9964'",
      "kube-system/cilium-operator-psdrr7g2l7-jb469 9963/TCP on dirqual-cp1: allowlist 'kube-system/cilium-operator-*:9963'",
      "kube-system/cilium-operator-psdrr7g2l7-8pnl5 9963/TCP on dirqual-w1: allowlist 'kube-system/cilium-operator-*:9963'",
      "monitoring/kube-prometheus-stack-prometheus-node-exporter-8chsx 9100/TCP on dirqual-cp1: allowlist 'monitoring/kube-prometheus-stack-prometheus-node-exporter-*:9100'",
      "monitoring/kube-prometheus-stack-prometheus-node-exporter-7fksp 9100/TCP on dirqual-w1: allowlist 'monitoring/kube-prometheus-stack-prometheus-node-exporter-*:9100'",
      "monitoring/kube-prometheus-stack-prometheus-node-exporter-bqd57 9100/TCP on dirqual-w2: allowlist 'monitoring/kube-prometheus-stack-prometheus-node-exporter-*:9100'",
    ]);
    // The Cilium agent: on the host network, no port listed (metrics off), declared whole.
    expect(result.declared.filter((d) => d.kind === "hostNetwork").map((d) => `${d.namespace}/${d.name} ${d.ports} on ${d.node}: ${d.declaredBy}`)).toEqual([
      "kube-system/cilium-4xq2m every port of the node on dirqual-cp1: allowlist 'kube-system/cilium-*:hostNetwork'",
      "kube-system/cilium-b7kz9 every port of the node on dirqual-w1: allowlist 'kube-system/cilium-*:hostNetwork'",
      "kube-system/cilium-tr5lw every port of the node on dirqual-w2: allowlist 'kube-system/cilium-*:hostNetwork'",
    ]);
    expect(
      result.declared
        .filter((d) => d.kind !== "hostPort" && d.kind !== "hostNetwork")
        .map((d) => `${d.kind} ${d.namespace}/${d.name} ${d.addresses?.join(",")}`),
    ).toEqual([
      "LoadBalancer argocd/cilium-gateway-argocd 10.67.3.240",
      "LoadBalancer monitoring/cilium-gateway-grafana 10.67.3.241",
      "LoadBalancer gitea/cilium-gateway-gitea 10.67.3.242",
      "LoadBalancer dagster/cilium-gateway-dagster 10.67.3.243",
      "LoadBalancer mlflow/cilium-gateway-mlflow 10.67.3.244",
      "LoadBalancer marquez/cilium-gateway-marquez-web 10.67.3.245",
      "LoadBalancer kubernetes-dashboard/cilium-gateway-k8s-dashboard 10.67.3.246",
      "LoadBalancer platform-portal/cilium-gateway-portal 10.67.3.247",
    ]);
  });
});

describe("ui-exposure:allowlist items: a pattern, or { match, reason }", () => {
  const parse = (allowlist: unknown) =>
    parseSettings({ "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }), "ui-exposure:allowlist": JSON.stringify(allowlist) }, "Pulumi.x.yaml").allowlist;

  it("keeps the patterns in order and the reasons by pattern", () => {
    expect(
      parse({
        services: ["argocd/cilium-gateway-*"],
        hostPorts: ["kube-system/cilium-operator-*:9963", { match: "monitoring/node-exporter-*:9100", reason: "node-exporter on the host network" }],
      }),
    ).toEqual({
      services: ["argocd/cilium-gateway-*"],
      hostPorts: ["kube-system/cilium-operator-*:9963", "monitoring/node-exporter-*:9100"],
      reasons: { "monitoring/node-exporter-*:9100": "node-exporter on the host network" },
    });
    expect(parseSettings({ "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }) }, "Pulumi.x.yaml").allowlist).toEqual({
      services: [],
      hostPorts: [],
      reasons: {},
    });
  });

  it("says which part of an item is wrong", () => {
    expect(() => parse({ hostPorts: [{ match: "bad", reason: "x" }] })).toThrow(
      "ui-exposure:allowlist.hostPorts[0].match: must be 'namespace/pod-name-or-prefix*:port' or 'namespace/pod-name-or-prefix*:hostNetwork', found a string (\"bad\")",
    );
    expect(() => parse({ hostPorts: ["bad"] })).toThrow(
      "ui-exposure:allowlist.hostPorts[0]: must be 'namespace/pod-name-or-prefix*:port' or 'namespace/pod-name-or-prefix*:hostNetwork', found a string (\"bad\")",
    );
    expect(() => parse({ services: [{ match: "a/b", reason: "" }] })).toThrow("ui-exposure:allowlist.services[0].reason: must say why it is allowed");
    expect(() => parse({ services: [{ match: "a/b" }] })).toThrow("ui-exposure:allowlist.services[0].reason: required setting is missing");
    expect(() => parse({ services: [{ match: "a/b", reason: "x", why: "y" }] })).toThrow("ui-exposure:allowlist.services[0]: unknown key 'why'");
    expect(() => parse({ hostPorts: [5] })).toThrow(
      "ui-exposure:allowlist.hostPorts[0]: expected a pattern (a string) or { match, reason }, found a number (5)",
    );
  });
});

describe("the shipped stacks on a cluster running the real charts (test/data/charts)", () => {
  const projectDir = path.resolve(__dirname, "..");
  const nodes = ["node-a", "node-b"];
  const charts = readAllChartFixtures();
  // One real undeclared exposure next to the platform: a debug pod holding a hostPort.
  const debug = pod("tenant", "debug-shell", "node-a", { hostPort: 2222 });
  const services = charts.flatMap((c) => c.services);
  const pods = [...charts.flatMap((c) => c.workloads.flatMap((w) => podsOf(w, nodes))), debug];

  it.each(["bench", "dirqual"])("%s: drift's audit flags only the debug pod, and says why each platform agent is allowed", (stack) => {
    const opened = openStack({ projectDir, stack });
    const result = auditExposure({ contract: opened.contract, selected: opened.selected, allowlist: opened.settings.allowlist, services, pods });
    expect(result.undeclared.map((u) => `${u.namespace}/${u.name} ${u.ports}`)).toEqual(["tenant/debug-shell 2222/TCP"]);
    const agents = result.declared.map((d) => `${d.namespace}/${d.name.replace(/-[a-z0-9]{10}-[a-z0-9]{5}$|-[a-z0-9]{5}$/, "-*")} ${d.ports}`);
    expect([...new Set(agents)].sort()).toEqual([
      "kube-system/cilium-* every port of the node",
      "kube-system/cilium-envoy-* 9964/TCP",
      "kube-system/cilium-operator-* 9963/TCP",
      "monitoring/kube-prometheus-stack-prometheus-node-exporter-* 9100/TCP",
    ]);
    for (const d of result.declared) expect(d.reason, `${d.name}: the stack file says why`).toMatch(/host network/);
  });
});
