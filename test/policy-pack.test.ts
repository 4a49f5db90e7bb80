// The policy pack's judge (policy-pack/judge.ts): its configuration from the pack's config or the
// stack's settings, and what it reports of each Kubernetes resource, as the engine hands it over.
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type Judge, opaqueRelease, packJudge, undeclaredExposure } from "../policy-pack/judge";
import { parseContract } from "../src/core/contract/parse";

const CONTRACT = {
  version: 1,
  endpoints: [
    { name: "argocd", exposed: true, scheme: "http", service: { namespace: "argocd", name: "argocd-server", port: "http" } },
    { name: "lineage", exposed: true, scheme: "http", hostPort: { namespace: "lineage", port: 8090, podSelector: { app: "lineage" } } },
  ],
};
const ALLOWLIST = { services: ["tools/allowed-*"], hostPorts: ["tools/agent-*:9964", "kube-system/cilium-*:hostNetwork"] };
const files: Record<string, string> = { "/c/endpoints.yaml": stringify(CONTRACT) };
/** As index.ts's loader: a named file, or without a name the project's default (here /c/endpoints.yaml). */
const readFile = (file = "/c/endpoints.yaml") => {
  const text = files[file];
  if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${file}'`);
  return parseContract(text, file);
};

function judge(config: Record<string, unknown> = { contract: "/c/endpoints.yaml", allowlist: ALLOWLIST }, stack = new Map<string, string>()): Judge {
  const j = packJudge(config, stack, readFile);
  if ("problem" in j) throw new Error(j.problem);
  return j;
}

const svc = (namespace: string, name: string, spec: Record<string, unknown>) => ({ apiVersion: "v1", kind: "Service", metadata: { name, namespace }, spec });
const nodePort = { type: "NodePort", selector: { app: "x" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] };
const template = (labels: Record<string, string>, spec: Record<string, unknown>) => ({
  selector: { matchLabels: labels },
  template: { metadata: { labels }, spec },
});
const hostPortSpec = (port: number) => ({ containers: [{ name: "agent", image: "x", ports: [{ containerPort: port, hostPort: port }] }] });

describe("the judge's configuration", () => {
  it("takes each key from the pack's config, else from the stack's ui-exposure settings (JSON text)", () => {
    const stack = new Map([
      ["ui-exposure:contract", "/c/endpoints.yaml"],
      ["ui-exposure:allowlist", JSON.stringify({ services: ["other/*"], hostPorts: [] })],
      ["ui-exposure:entries", JSON.stringify(["argocd"])],
    ]);
    const j = judge({ allowlist: ALLOWLIST }, stack);
    expect(j.selected).toEqual(["argocd"]);
    expect(j.allowlist.services).toEqual(["tools/allowed-*"]);
    expect(j.contract.endpoints.map((e) => e.name)).toEqual(["argocd", "lineage"]);
  });

  it("takes the contract inline, and without one the program's default", () => {
    expect(judge({ contract: CONTRACT }).selected).toEqual(["argocd", "lineage"]);
    expect(judge({}).contract.endpoints.map((e) => e.name)).toEqual(["argocd", "lineage"]);
  });

  it("says every problem at once, worded as the stack's settings are", () => {
    const j = packJudge({ contract: "/c/missing.yaml", allowlist: { services: ["Bad"], hostPorts: ["tools/a:99999"] } }, new Map(), readFile);
    expect("problem" in j && j.problem).toBe(
      [
        "the ui-exposure policy pack's configuration (--policy-pack-config, policy 'undeclared-exposure', else the stack's ui-exposure:contract, entries and allowlist) is invalid:",
        "  - ui-exposure:allowlist.services[0]: must be 'namespace/name' (name may end with '*'), found a string (\"Bad\")",
        "  - ui-exposure:allowlist.hostPorts[0]: must end with a port number between 1 and 65535 ('namespace/pod-name-or-prefix*:port' or 'namespace/pod-name-or-prefix*:hostNetwork'), found a string (\"tools/a:99999\")",
        "  - contract /c/missing.yaml: cannot be read (ENOENT: no such file or directory, open '/c/missing.yaml')",
      ].join("\n"),
    );
  });

  it("refuses a key it does not know (a typo is never silently ignored)", () => {
    const j = packJudge({ contrat: "/c/endpoints.yaml", enforcementLevel: "advisory" }, new Map(), readFile);
    expect("problem" in j && j.problem).toContain("  - contrat: not a key of this policy (contract, entries, allowlist, enforcementLevel)");
  });

  it("refuses an entry the contract does not declare, and a contract with a problem by its place", () => {
    const j = packJudge({ contract: CONTRACT, entries: ["grafana"] }, new Map(), readFile);
    expect("problem" in j && j.problem).toContain("ui-exposure:entries names 'grafana', which the contract does not declare");
    const broken = packJudge({ contract: { version: 1, endpoints: [{ name: "x" }] } }, new Map(), readFile);
    expect("problem" in broken && broken.problem).toMatch(/invalid contract contract \(inline in the policy config\).*\n.*:\d+:\d+: endpoints\[0\]/);
  });
});

describe("what a resource opens undeclared", () => {
  it("a chart's NodePort Service: named, with its port, why, and the allowlist line that admits it", () => {
    expect(undeclaredExposure(judge(), "kubernetes:core/v1:Service", svc("monitoring", "grafana-np", nodePort))).toEqual([
      "Service monitoring/grafana-np (NodePort, ports http 80): in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it; the allowlist line that admits it: ui-exposure:allowlist.services 'monitoring/grafana-np'",
    ]);
  });

  it("LoadBalancer and externalIPs too; a ClusterIP Service, an allowlisted one and the contract's own Service pass", () => {
    const j = judge();
    expect(undeclaredExposure(j, "kubernetes:core/v1:Service", svc("a", "lb", { ...nodePort, type: "LoadBalancer" }))[0]).toContain(
      "Service a/lb (LoadBalancer",
    );
    expect(undeclaredExposure(j, "kubernetes:core/v1:Service", svc("a", "ext", { ports: [{ port: 80 }], externalIPs: ["198.18.0.9"] }))[0]).toContain(
      "reachable at externalIPs 198.18.0.9",
    );
    expect(undeclaredExposure(j, "kubernetes:core/v1:Service", svc("a", "plain", { ports: [{ port: 80 }] }))).toEqual([]);
    expect(undeclaredExposure(j, "kubernetes:core/v1:Service", svc("tools", "allowed-ui", nodePort))).toEqual([]);
    expect(undeclaredExposure(j, "kubernetes:core/v1:Service", svc("argocd", "argocd-nodeport", nodePort))).toEqual([]);
    // Our Service of an entry, opening more than the entry declares.
    expect(undeclaredExposure(j, "kubernetes:core/v1:Service", svc("argocd", "argocd-nodeport", { ...nodePort, type: "LoadBalancer" }))[0]).toContain(
      "our Service of contract entry 'argocd' opens more than the entry declares (type LoadBalancer (the contract declares NodePort))",
    );
  });

  it("a DaemonSet with a hostPort: its pods' prefix in the line; declared by the allowlist or a contract hostPort entry, it passes", () => {
    const j = judge();
    expect(
      undeclaredExposure(j, "kubernetes:apps/v1:DaemonSet", {
        metadata: { name: "node-exporter", namespace: "monitoring" },
        spec: template({ app: "ne" }, hostPortSpec(9100)),
      }),
    ).toEqual([
      "DaemonSet monitoring/node-exporter (hostPort 9100/TCP): in neither a contract hostPort entry nor ui-exposure:allowlist.hostPorts: remove the hostPort or declare it; the allowlist line that admits it: ui-exposure:allowlist.hostPorts 'monitoring/node-exporter-*:9100'",
    ]);
    expect(
      undeclaredExposure(j, "kubernetes:apps/v1:DaemonSet", {
        metadata: { name: "agent", namespace: "tools" },
        spec: template({ app: "a" }, hostPortSpec(9964)),
      }),
    ).toEqual([]);
    expect(
      undeclaredExposure(j, "kubernetes:apps/v1:Deployment", {
        metadata: { name: "lin", namespace: "lineage" },
        spec: template({ app: "lineage" }, hostPortSpec(8090)),
      }),
    ).toEqual([]);
  });

  it("the host network, a CronJob's template, a Pod, a List's items, a Patch", () => {
    const j = judge();
    const onHost = { hostNetwork: true, containers: [{ name: "c", image: "x" }] };
    expect(
      undeclaredExposure(j, "kubernetes:apps/v1:DaemonSet", { metadata: { name: "cilium", namespace: "kube-system" }, spec: template({}, onHost) }),
    ).toEqual([]);
    expect(
      undeclaredExposure(j, "kubernetes:batch/v1:CronJob", {
        metadata: { name: "probe", namespace: "ops" },
        spec: { jobTemplate: { spec: { template: { spec: onHost } } } },
      }),
    ).toEqual([
      "CronJob ops/probe (the host network (no port listed)): on the host network with no port listed: it may serve on every port of its node; declare it in ui-exposure:allowlist.hostPorts as 'namespace/pod-prefix*:hostNetwork', or take it off the host network; the allowlist line that admits it: ui-exposure:allowlist.hostPorts 'ops/probe-*:hostNetwork'",
    ]);
    expect(undeclaredExposure(j, "kubernetes:core/v1:Pod", { metadata: { name: "debug", namespace: "ops" }, spec: hostPortSpec(2222) })[0]).toContain(
      "ui-exposure:allowlist.hostPorts 'ops/debug:2222'",
    );
    expect(undeclaredExposure(j, "kubernetes:core/v1:ServiceList", { items: [svc("a", "one", nodePort), svc("tools", "allowed-2", nodePort)] })).toHaveLength(
      1,
    );
    expect(undeclaredExposure(j, "kubernetes:core/v1:ServicePatch", svc("a", "patched", nodePort))[0]).toContain("Service a/patched (NodePort");
  });

  it("a pod too large to check is reported, never passed", () => {
    const containers = Array.from({ length: 33 }, (_, i) => ({ name: `c${i}`, image: "x", ports: [{ containerPort: 80, hostPort: 80 }] }));
    expect(
      undeclaredExposure(judge(), "kubernetes:apps/v1:Deployment", { metadata: { name: "big", namespace: "a" }, spec: template({}, { containers }) }),
    ).toEqual(["Deployment a/big: too large to check (more than 32 containers in a list or 32 ports in a container): make it smaller"]);
  });

  it("an object without a name cannot be judged and says so; other resources are not its business", () => {
    expect(undeclaredExposure(judge(), "kubernetes:core/v1:Service", { metadata: {}, spec: nodePort })).toEqual([
      "Service in default has no metadata.name: it cannot be judged (name it, or let the provider name it)",
    ]);
    expect(undeclaredExposure(judge(), "kubernetes:core/v1:ConfigMap", { metadata: { name: "x" } })).toEqual([]);
    expect(undeclaredExposure(judge(), "aws:s3/bucket:Bucket", {})).toEqual([]);
  });

  it("a value unknown at preview is read as @pulumi/policy hands it over: reading it throws, the object is not passed", () => {
    const unknown = new Proxy(
      { metadata: { name: "late", namespace: "a" } },
      {
        get: (o, k) => {
          if (k === "spec") throw new Error("object value at .spec can't be known during preview");
          return (o as Record<string | symbol, unknown>)[k];
        },
      },
    );
    expect(() => undeclaredExposure(judge(), "kubernetes:core/v1:Service", unknown)).toThrow("can't be known during preview");
  });

  it("names and values from the program are shown on one line, escaped", () => {
    expect(undeclaredExposure(judge(), "kubernetes:core/v1:Service", svc("a", "x\ny", nodePort))[0]).toContain("Service a/x\\x0ay");
  });
});

describe("a Helm v3 Release", () => {
  it("installs objects no policy sees: reported, with what to do", () => {
    expect(opaqueRelease("kubernetes:helm.sh/v3:Release", { name: "cilium", namespace: "kube-system", chart: "cilium" })).toMatch(
      /^Helm Release kube-system\/cilium \(chart cilium\): the objects it installs are not shown to policy packs.*kubernetes:helm\.sh\/v4:Chart/,
    );
    expect(opaqueRelease("kubernetes:helm.sh/v4:Chart", {})).toBeUndefined();
  });
});
