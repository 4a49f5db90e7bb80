import { describe, expect, it } from "vitest";
import { parseContract } from "../src/core/contract/parse";
import { UserError } from "../src/core/errors";
import type { Service } from "../src/core/kube/types";
import { observe } from "../src/core/observe";
import { entryService, takeoverRefusal } from "../src/core/ownership";
import { buildUrl, chooseNode, planHostPort, planNodePort, portToKeep, resolveExposures, selectEntries, unusableNodes } from "../src/core/plan";
import { benchServices, node, pod, service } from "./support/fixtures";

const contract = parseContract(
  `version: 1
endpoints:
  - name: argocd
    exposed: true
    service: { namespace: argocd, name: argocd-server, port: http }
  - name: grafana
    exposed: true
    service: { namespace: monitoring, name: kube-prometheus-stack-grafana, port: http-web }
  - name: gitea
    exposed: true
    scheme: https
    service: { namespace: gitea, name: gitea-http, port: 3000 }
  - name: agent
    exposed: true
    hostPort: { namespace: lineage, port: 8090, podSelector: { app: agent } }
  - name: postgres
    scheme: postgresql
    service: { namespace: data, name: postgres, port: 5432 }
`,
  "c.yaml",
);
const entry = (name: string) => {
  const e = contract.endpoints.find((x) => x.name === name);
  if (!e) throw new Error(name);
  return e;
};
const services = new Map(benchServices.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s]));

describe("chooseNode", () => {
  it("takes the first Ready node with an InternalIP in name order, whatever the list order", () => {
    const nodes = [node("node-c", "127.0.0.13"), node("node-a", "127.0.0.11", false), node("node-b", "127.0.0.12"), node("node-0", undefined)];
    expect(chooseNode(nodes)).toEqual({ name: "node-b", address: "127.0.0.12", pinned: false });
    expect(chooseNode([...nodes].reverse())).toEqual({ name: "node-b", address: "127.0.0.12", pinned: false });
  });

  it("prefers schedulable nodes over cordoned ones", () => {
    const cordoned = { ...node("node-a", "127.0.0.11"), spec: { unschedulable: true } };
    expect(chooseNode([cordoned, node("node-b", "127.0.0.12")])).toMatchObject({ name: "node-b" });
  });

  it("uses a pinned address as is, naming the node that has it", () => {
    expect(chooseNode([node("w1", "127.0.0.21")], "127.0.0.21")).toEqual({ name: "w1", address: "127.0.0.21", pinned: true });
    expect(chooseNode([], "10.67.2.11")).toEqual({ name: "(pinned)", address: "10.67.2.11", pinned: true });
  });

  it("explains when no node qualifies", () => {
    expect(chooseNode([node("n1", "127.0.0.11", false), node("n2", undefined)])).toEqual({
      problem: "no Ready node with an InternalIP (nodes: n1 (NotReady), n2 (Ready, no InternalIP)); wait for a node to be Ready or pin ui-exposure:nodeAddress",
    });
  });
});

describe("planNodePort", () => {
  it("copies selector and target port from the vendored Service; names the port by scheme", () => {
    expect(planNodePort(entry("grafana") as never, services)).toEqual({
      kind: "nodePort",
      entry: "grafana",
      scheme: "http",
      namespace: "monitoring",
      mirrors: "kube-prometheus-stack-grafana",
      serviceName: "grafana-nodeport",
      selector: { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "kube-prometheus-stack" },
      portName: "http",
      port: 80,
      targetPort: 3000,
      protocol: "TCP",
    });
    expect(planNodePort(entry("gitea") as never, services)).toMatchObject({ portName: "https", port: 3000, targetPort: 3000 });
  });

  it("plans the same whether or not our Service already exists (no observed value leaks into the inputs)", () => {
    const ours = service("argocd", "argocd-nodeport", {
      type: "NodePort",
      labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" },
      ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 31358 }],
    });
    const withOurs = new Map([...services, ["argocd/argocd-nodeport", ours]]);
    expect(planNodePort(entry("argocd") as never, withOurs)).toEqual(planNodePort(entry("argocd") as never, services));
  });

  it("fails with what to do: missing Service, no selector, unknown port", () => {
    expect(planNodePort(entry("argocd") as never, new Map())).toEqual({
      problem:
        "entry 'argocd': Service argocd/argocd-server not found; install the UI first, fix the contract's service, or leave 'argocd' out of ui-exposure:entries",
    });
    const noSelector = new Map([["argocd/argocd-server", service("argocd", "argocd-server")]]);
    expect(planNodePort(entry("argocd") as never, noSelector)).toEqual({
      problem:
        "entry 'argocd': Service argocd/argocd-server has no selector (its endpoints are managed by hand), so a NodePort Service cannot select the same pods; point the contract at a Service with a selector",
    });
    const wrongPort = new Map([
      ["argocd/argocd-server", service("argocd", "argocd-server", { selector: { a: "b" }, ports: [{ name: "web", port: 80 }, { port: 9090 }] })],
    ]);
    expect(planNodePort(entry("argocd") as never, wrongPort)).toEqual({
      problem: "entry 'argocd': Service argocd/argocd-server has no port named 'http' (ports: web/80, (unnamed)/9090); fix service.port in the contract",
    });
  });

  it("never decides ownership by labels: an existing <entry>-nodeport is planned, the state decides (refused at create)", () => {
    const taken = new Map([...services, ["argocd/argocd-nodeport", service("argocd", "argocd-nodeport", { type: "NodePort" })]]);
    expect(planNodePort(entry("argocd") as never, taken)).toMatchObject({ kind: "nodePort", serviceName: "argocd-nodeport" });
    expect(takeoverRefusal(entryService({ entry: "argocd", namespace: "argocd", serviceName: "argocd-nodeport" }), "bench")).toBe(
      "entry 'argocd': Service argocd/argocd-nodeport already exists and this stack did not create it; ui-exposure never takes over a Service it did not create. Remove it (kubectl -n argocd delete service argocd-nodeport), or adopt it on purpose: pulumi import kubernetes:core/v1:Service argocd-svc argocd/argocd-nodeport --stack bench --generate-code=false --protect=false --yes, then pulumi up",
    );
  });
});

describe("portToKeep (stable ports)", () => {
  const plan = { entry: "argocd", namespace: "argocd", serviceName: "argocd-nodeport" };
  const holding = (namespace: string, name: string, nodePort: number) =>
    service(namespace, name, { type: "NodePort", ports: [{ name: "http", port: 80, nodePort }] });
  it("asks for the port the last up published, unless another Service now holds it", () => {
    expect(portToKeep(plan, undefined, [])).toEqual({});
    expect(portToKeep(plan, 31358, [holding("argocd", "argocd-nodeport", 30001)])).toEqual({ keep: 31358 });
    expect(portToKeep(plan, 31358, [holding("argocd", "argocd-nodeport", 31358)])).toEqual({ keep: 31358 });
    expect(portToKeep(plan, 31358, [holding("tenant", "squatter", 31358)])).toEqual({
      note: "entry 'argocd': its nodePort 31358 (published by the last up) is now held by Service tenant/squatter, so Kubernetes allocates a new one: the URL changes (update bookmarks and .env files)",
    });
  });
});

describe("planHostPort", () => {
  const nodes = new Map([
    ["n1", node("n1", "127.0.0.11")],
    ["n2", node("n2", "127.0.0.12")],
  ]);
  it("uses the node of the running pod holding the port", () => {
    const pods = [
      pod("lineage", "agent-pending", "n1", { labels: { app: "agent" }, hostPort: 8090, phase: "Pending" }),
      pod("lineage", "agent-running", "n2", { labels: { app: "agent" }, hostPort: 8090 }),
      pod("lineage", "other", "n1", { labels: { app: "other" }, hostPort: 8090 }),
    ];
    expect(planHostPort(entry("agent") as never, pods, nodes)).toEqual({
      kind: "hostPort",
      entry: "agent",
      scheme: "http",
      namespace: "lineage",
      hostPort: 8090,
      pod: "agent-running",
      node: "n2",
      address: "127.0.0.12",
    });
  });
  it("fails when no pod holds it", () => {
    expect(planHostPort(entry("agent") as never, [], nodes)).toEqual({
      problem: "entry 'agent': no scheduled pod in namespace lineage matching app=agent declares hostPort 8090; deploy the brick first or fix the contract",
    });
  });
});

describe("selectEntries / resolveExposures", () => {
  it("rejects unknown and non-exposed names from the stack", () => {
    expect(selectEntries(contract, ["argocd", "nope", "postgres"]).problems).toEqual([
      "ui-exposure:entries names 'nope', which the contract does not declare (declared: argocd, grafana, gitea, agent)",
      "ui-exposure:entries names 'postgres', which the contract does not expose (set exposed: true in the contract or drop it from the stack)",
    ]);
    expect(selectEntries(contract, "all").entries.map((e) => e.name)).toEqual(["argocd", "grafana", "gitea", "agent"]);
  });

  it("collects every problem of every entry at once", () => {
    const result = resolveExposures(selectEntries(contract, "all").entries, { services: [], nodes: [], pods: [] });
    expect(result).toEqual({
      problems: [
        "no Ready node with an InternalIP (nodes: none); wait for a node to be Ready or pin ui-exposure:nodeAddress",
        "entry 'argocd': Service argocd/argocd-server not found; install the UI first, fix the contract's service, or leave 'argocd' out of ui-exposure:entries",
        "entry 'grafana': Service monitoring/kube-prometheus-stack-grafana not found; install the UI first, fix the contract's service, or leave 'grafana' out of ui-exposure:entries",
        "entry 'gitea': Service gitea/gitea-http not found; install the UI first, fix the contract's service, or leave 'gitea' out of ui-exposure:entries",
        "entry 'agent': no scheduled pod in namespace lineage matching app=agent declares hostPort 8090; deploy the brick first or fix the contract",
      ],
    });
  });
});

describe("buildUrl", () => {
  it("builds http(s)://address:port, brackets IPv6, shows a pending port as such", () => {
    expect(buildUrl("http", "127.0.0.11", 31358)).toBe("http://127.0.0.11:31358");
    expect(buildUrl("https", "fd00::1", 30443)).toBe("https://[fd00::1]:30443");
    expect(buildUrl("http", "10.67.2.11", undefined)).toBe("http://10.67.2.11:<nodePort allocated on apply>");
  });
});

describe("unusableNodes: a Ready node whose InternalIP is not an IP is said, never skipped in silence (issue 23 #7)", () => {
  const nodes = [node("a", "10.0.0.5"), node("z", "evil.example/x?")];
  it("names it, for status, the portal and up alike", () => {
    expect(unusableNodes(nodes)).toEqual([
      'node z is Ready but its InternalIP "evil.example/x?" is not an IP address: it is not used for URLs; fix its addresses, or pin ui-exposure:nodeAddress',
    ]);
  });
  it("is silent for NotReady nodes, nodes without an InternalIP, and with a pinned address", () => {
    expect(unusableNodes([node("a", "10.0.0.5"), node("b", "x", false), node("c", undefined)])).toEqual([]);
    expect(unusableNodes(nodes, "10.0.0.9")).toEqual([]);
  });
  it("makes up fail: planning reports it with the chosen node", () => {
    const result = resolveExposures([entry("argocd")], { services: benchServices, nodes, pods: [] });
    expect(result).toEqual({ problems: [unusableNodes(nodes)[0]] });
  });
});

describe("only an IP address goes into a URL", () => {
  it.each(["fe80::1%eth0", "1.2.3.4 x", "evil.example/x?", "127.0.0.1:80", " 127.0.0.1", "::ffff:1.2.3.4.5"])(
    "a node whose InternalIP is %j is not chosen, and says why",
    (address) => {
      const choice = chooseNode([node("n1", address)]);
      expect(choice).toHaveProperty("problem");
      expect((choice as { problem: string }).problem).toContain("not an IP address");
    },
  );

  it("refuses a pinned address that is not an IP (the portal reads it from its environment)", () => {
    expect(chooseNode([], "evil.example/x?")).toEqual({ problem: 'the pinned node address "evil.example/x?" is not an IP address' });
  });

  it("brackets IPv6 and refuses anything else", () => {
    expect(buildUrl("http", "fd00::1", 31000)).toBe("http://[fd00::1]:31000");
    expect(() => buildUrl("http", "evil.example/x?", 31000)).toThrow(UserError);
  });

  it("a hostPort entry on a node with a bad address gets no URL", () => {
    const contract = parseContract(
      `version: 1
endpoints:
  - name: agent
    exposed: true
    hostPort: { namespace: lineage, port: 8090 }
`,
      "c.yaml",
    );
    const o = observe(contract, {
      services: [],
      endpointSlices: [],
      nodes: [node("bench", "evil.example/x?")],
      pods: [
        {
          metadata: { name: "agent-0", namespace: "lineage" },
          spec: { nodeName: "bench", containers: [{ name: "c", ports: [{ containerPort: 8090, hostPort: 8090 }] }] },
          status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
        },
      ],
    });
    expect(o.entries[0]?.url).toBeUndefined();
    expect(o.entries[0]?.verdict).toBe("DRIFT");
  });
});

describe("what cannot be published", () => {
  const contract = (namespace: string) =>
    parseContract(
      `version: 1
endpoints:
  - name: ui
    exposed: true
    service: { namespace: ${namespace}, name: ui, port: http }
`,
      "c.yaml",
    );
  const resolve = (svc: Service, opts: { allowKubeSystem?: boolean } = {}, namespace = "apps") =>
    resolveExposures(contract(namespace).endpoints, { services: [svc], nodes: [node("n", "127.0.0.2")], pods: [] }, undefined, opts);
  const problemsOf = (r: ReturnType<typeof resolveExposures>) => ("problems" in r ? r.problems.join("\n") : "");

  it("refuses a Service in kube-system unless the stack allows it", () => {
    const svc = service("kube-system", "ui", { selector: { app: "ui" } });
    expect(problemsOf(resolve(svc, {}, "kube-system"))).toContain("unless the stack sets ui-exposure:allowKubeSystem: true");
    expect(resolve(svc, { allowKubeSystem: true }, "kube-system")).toHaveProperty("plans");
  });

  it("refuses an ExternalName Service", () => {
    const svc: Service = {
      metadata: { name: "ui", namespace: "apps" },
      spec: { type: "ExternalName", externalName: "example.invalid", ports: [{ name: "http", port: 80 }] } as never,
    };
    expect(problemsOf(resolve(svc))).toContain("is of type ExternalName");
  });

  it("never publishes a UDP port as an http URL", () => {
    const svc = service("apps", "ui", { selector: { app: "ui" }, ports: [{ name: "http", port: 80, protocol: "UDP" }] });
    expect(problemsOf(resolve(svc))).toContain("is UDP: only a TCP port is published as an http URL");
  });

  it("mirrors a headless Service like any other (same pods, same target port)", () => {
    const svc = service("apps", "ui", { selector: { app: "ui" } });
    (svc.spec as { clusterIP?: string }).clusterIP = "None";
    const r = resolve(svc);
    expect("plans" in r && r.plans[0]).toMatchObject({ kind: "nodePort", selector: { app: "ui" }, targetPort: 8080 });
  });

  it("refuses a selector that is not a map of strings", () => {
    const svc = service("apps", "ui", { selector: { app: 3 as unknown as string } });
    expect(problemsOf(resolve(svc))).toContain("has a selector that is not a map of strings");
  });
});
