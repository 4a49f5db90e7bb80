// Cilium concern: version-aware values, every guard with its exact message, the rendered
// stacks (no Gateway API / LB-IPAM object anywhere, nothing of Cilium in cohabit), adoption.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { afterEach, describe, expect, it } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { Cilium, releaseArgs, releaseOptions } from "../components/cilium";
import { type RegisteredResource, resolved as resolve, useProgramMocks } from "../components/mocks";
import { render } from "../components/render";
import type { PathFacts } from "../scripts/cilium-chart-facts";
import { gunzipBounded } from "../src/adapters/gunzip";
import { readSnapshotFile } from "../src/adapters/snapshot-file";
import { RELEASE_TYPE, releaseImportCommand, releaseResourceName } from "../src/core/cilium/adopt";
import {
  type CiliumObservation,
  type CiliumPlan,
  ciliumSummary,
  loadBalancerPathObjects,
  planCilium,
  removalOrder,
  removalOrderProblem,
} from "../src/core/cilium/plan";
import { liveReleaseOf } from "../src/core/cilium/release";
import { deepMerge, extraValuesProblems, l4Values, maskedValues } from "../src/core/cilium/values";
import { CHART_KEYS, type ChartKeys, chartKeysFor, chartMinor, SUPPORTED_MINORS } from "../src/core/cilium/versions";
import { UserError } from "../src/core/errors";
import { SnapshotReader } from "../src/core/kube/cluster";
import type { GenericObject, Service } from "../src/core/kube/types";
import { ciliumSettingsSchema, type L4CiliumSettings } from "../src/core/settings";
import { type ReleaseFixture, releaseSecret } from "./support/helm-release";

const projectDir = path.resolve(__dirname, "..");
const VERSIONS = ["1.16.19", "1.17.18", "1.18.12", "1.19.6", "1.20.0"];
/**
 * What the published charts (and the Go module's) declare for every values path the program
 * uses, extracted by scripts/cilium-chart-facts.ts from their values.yaml and values.schema.json.
 */
const chartFacts = JSON.parse(fs.readFileSync(path.join(projectDir, "test/data/cilium-chart-facts.json"), "utf8")) as {
  paths: string[];
  versions: Record<string, Record<string, PathFacts>>;
};

function l4(over: Record<string, unknown> = {}, version = "1.18.12"): L4CiliumSettings {
  const parsed = ciliumSettingsSchema.parse({
    mode: "l4",
    chart: { repository: "https://helm.cilium.io", version },
    k8sServiceHost: "192.168.104.2",
    k8sServicePort: 6443,
    ...over,
  });
  if (parsed.mode !== "l4") throw new Error("expected l4 settings");
  return parsed;
}

const cohabit = ciliumSettingsSchema.parse({ mode: "cohabit" });
const bench = { stack: "bench", production: false };
const dirqual = { stack: "dirqual", production: true };
const nothing: CiliumObservation = { services: [], lbIpPools: [], gateways: [], gatewayClasses: [], httpRoutes: [], l2Policies: [] };

function lbService(namespace: string, name: string, ips: string[], loadBalancerClass?: string): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace },
    spec: { type: "LoadBalancer", ports: [{ name: "port-443", port: 443 }], ...(loadBalancerClass ? { loadBalancerClass } : {}) },
    status: { loadBalancer: { ingress: ips.map((ip) => ({ ip })) } },
  };
}

/** The objects of a snapshot file, to build variants of the examples. */
function snapshotObjects(file: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const doc of parseAllDocuments(fs.readFileSync(path.join(projectDir, file), "utf8"))) {
    const v = doc.toJS() as { kind?: string; items?: Record<string, unknown>[] } | null;
    if (v?.kind === "List") out.push(...(v.items ?? []));
    else if (v) out.push(v);
  }
  return out;
}

const dirqualObjects = snapshotObjects("examples/dirqual-cluster.yaml");
const dirqualObservation: CiliumObservation = {
  ...nothing,
  services: dirqualObjects.filter((o) => o.kind === "Service") as unknown as Service[],
  lbIpPools: dirqualObjects.filter((o) => o.kind === "CiliumLoadBalancerIPPool") as unknown as GenericObject[],
  gateways: dirqualObjects.filter((o) => o.kind === "Gateway") as unknown as GenericObject[],
};

/** dirqual's Services once its Gateways and pool are gone, but the Gateways' Services left behind (stale). */
const dirqualServicesOnly: CiliumObservation = { ...nothing, services: dirqualObservation.services };

const problemsOf = (r: ReturnType<typeof planCilium>) => ("problems" in r ? r.problems : []);

describe("chart version table", () => {
  it("maps a chart version to its minor; unknown minors have no table", () => {
    expect(chartMinor("1.18.12")).toBe("1.18");
    expect(chartMinor("1.20.0-rc.1")).toBe("1.20");
    expect(chartMinor("latest")).toBeUndefined();
    expect(SUPPORTED_MINORS).toEqual(["1.16", "1.17", "1.18", "1.19", "1.20"]);
    expect(chartKeysFor("1.15.7")).toBeUndefined();
    expect(chartKeysFor("1.21.0")).toBeUndefined();
  });

  const TRACKED: Record<keyof ChartKeys, string> = {
    kubeProxyReplacementDocumented: "kubeProxyReplacement",
    enableLBIPAM: "enableLBIPAM",
    defaultLBServiceIPAM: "defaultLBServiceIPAM",
    nodePortEnabled: "nodePort.enabled",
    hostPort: "hostPort",
    externalIPs: "externalIPs",
    k8sServiceHostRef: "k8sServiceHostRef",
  };
  const leaves = (v: Record<string, unknown>, prefix = ""): string[] =>
    Object.entries(v).flatMap(([k, x]) =>
      x !== null && typeof x === "object" && !Array.isArray(x) ? leaves(x as Record<string, unknown>, `${prefix}${k}.`) : [`${prefix}${k}`],
    );

  it("the chart facts cover every supported minor and every path the program uses", () => {
    expect(Object.keys(chartFacts.versions).map(chartMinor)).toEqual(expect.arrayContaining(SUPPORTED_MINORS));
    const used = new Set([
      ...Object.values(TRACKED),
      ...VERSIONS.flatMap((v) => leaves((l4Values(l4({}, v), "Pulumi.bench.yaml") as { values: Record<string, unknown> }).values)),
    ]);
    for (const facts of Object.values(chartFacts.versions)) expect(Object.keys(facts)).toEqual(expect.arrayContaining([...used]));
  });

  it.each(Object.keys(chartFacts.versions))("agrees with chart %s (its values.schema.json and values.yaml)", (version) => {
    const facts = chartFacts.versions[version] as Record<string, PathFacts>;
    const keys = chartKeysFor(version);
    expect(keys).toBeDefined();
    for (const [field, dotted] of Object.entries(TRACKED)) {
      const f = facts[dotted] as PathFacts;
      expect({ field, schema: f.schema, values: f.values }).toEqual({
        field,
        schema: keys?.[field as keyof ChartKeys],
        values: keys?.[field as keyof ChartKeys],
      });
    }
    // Every generated key is declared by that chart, with the type the value has, except
    // kubeProxyReplacement on 1.16/1.17 (commented out in values.yaml, still read by the templates).
    const generated = l4Values(l4({}, version), "Pulumi.bench.yaml");
    if (!("values" in generated)) throw new Error("expected values");
    const undeclared = leaves(generated.values).filter((p) => !facts[p]?.schema);
    expect(undeclared).toEqual(keys?.kubeProxyReplacementDocumented ? [] : ["kubeProxyReplacement"]);
    for (const p of leaves(generated.values)) {
      const type = facts[p]?.schemaType;
      if (type === undefined) continue;
      const value = p.split(".").reduce<unknown>((v, k) => (v as Record<string, unknown>)[k], generated.values);
      expect({ p, type: [type].flat().includes(typeof value === "number" ? "integer" : typeof value) }).toEqual({ p, type: true });
    }
  });

  it("accepts 1.20.1 and 1.20.2 with the 1.20.0 keys, and refuses 1.20.3", () => {
    expect(chartKeysFor("1.20.1")).toEqual(chartKeysFor("1.20.0"));
    expect(chartKeysFor("1.20.2")).toEqual(chartKeysFor("1.20.0"));
    expect(chartKeysFor("1.20.3")).toBeUndefined();
  });

  it("covers exactly the minors it claims", () => {
    expect(Object.keys(CHART_KEYS)).toEqual(VERSIONS.map((v) => chartMinor(v)));
  });
});

describe("l4 values per chart version", () => {
  const common = {
    kubeProxyReplacement: true,
    k8sServiceHost: "192.168.104.2",
    k8sServicePort: 6443,
    gatewayAPI: { enabled: false },
    l2announcements: { enabled: false },
    rollOutCiliumPods: true,
    operator: { rollOutPods: true },
  };
  // No nodePort/hostPort key: the installed release's stay as they are (see the values-diff test).
  const expected: Record<string, Record<string, unknown>> = {
    "1.16.19": common,
    "1.17.18": { ...common, enableLBIPAM: false },
    "1.18.12": { ...common, enableLBIPAM: false },
    "1.19.6": { ...common, enableLBIPAM: false },
    "1.20.0": { ...common, enableLBIPAM: false },
  };

  it.each(VERSIONS)("%s: only keys that version has", (version) => {
    expect(l4Values(l4({}, version), "Pulumi.bench.yaml")).toEqual({ values: expected[version] });
  });

  it("refuses a chart version outside 1.16-1.20 instead of guessing its keys", () => {
    for (const version of ["1.15.7", "1.21.0"]) {
      expect(l4Values(l4({}, version), "Pulumi.bench.yaml")).toEqual({
        problems: [
          `cilium (l4): chart version ${version} is not supported: the values keys are known for Cilium 1.16.0 to 1.20.2 only (src/core/cilium/versions.ts); pin one of those in ui-exposure:cilium.chart.version, or check the new chart's values.yaml and add its minor to that table`,
        ],
      });
    }
  });

  it("refuses pre-releases and patches newer than the one the table was checked against, saying so", () => {
    expect(l4Values(l4({}, "1.18.0-pre.1"), "Pulumi.bench.yaml")).toEqual({
      problems: [
        "cilium (l4): chart version 1.18.0-pre.1 is a pre-release: its values keys differ from its minor's releases and were not checked; pin a release (1.18.0 to 1.18.12)",
      ],
    });
    expect(l4Values(l4({}, "1.17.0-pre.0"), "Pulumi.bench.yaml")).toMatchObject({ problems: [expect.stringContaining("is a pre-release")] });
    expect(l4Values(l4({}, "1.18.13"), "Pulumi.bench.yaml")).toEqual({
      problems: [
        "cilium (l4): chart version 1.18.13 has not been checked: keys change inside a minor, and the table was checked up to 1.18.12; pin 1.18.12 or older, or check 1.18.13's values.yaml and raise CHECKED_PATCH in src/core/cilium/versions.ts",
      ],
    });
  });

  it("knows the keys per patch: externalIPs is still in 1.17.0 to 1.17.5", () => {
    expect(chartKeysFor("1.17.5")?.externalIPs).toBe(true);
    expect(chartKeysFor("1.17.6")?.externalIPs).toBe(false);
    expect(chartKeysFor("1.17.0")).toMatchObject({ externalIPs: true, enableLBIPAM: true, defaultLBServiceIPAM: true });
    expect(extraValuesProblems({ externalIPs: { enabled: false } }, "1.17.3", chartKeysFor("1.17.3") as ChartKeys)).toEqual([]);
    expect(extraValuesProblems({ externalIPs: { enabled: false } }, "1.17.6", chartKeysFor("1.17.6") as ChartKeys)).toEqual([
      "cilium (l4): ui-exposure:cilium.values.externalIPs does not exist in chart 1.17.6 (removed in 1.17); the chart would ignore it silently: remove it",
    ]);
  });

  it("requires the API server address, naming the stack setting and the stack file", () => {
    expect(l4Values(l4({ k8sServiceHost: undefined, k8sServicePort: undefined }), "Pulumi.bench.yaml")).toEqual({
      problems: [
        "cilium (l4): ui-exposure:cilium.k8sServiceHost is required in Pulumi.bench.yaml: with kube-proxy replacement the agents reach the API server directly, not through the kubernetes Service (give the control-plane address, e.g. its InternalIP)",
        "cilium (l4): ui-exposure:cilium.k8sServicePort is required in Pulumi.bench.yaml: the API server port (usually 6443) that goes with k8sServiceHost",
      ],
    });
    expect(l4Values(l4({ k8sServiceHost: "auto" }), "Pulumi.bench.yaml")).toEqual({
      problems: [
        "cilium (l4): ui-exposure:cilium.k8sServiceHost 'auto' is not supported: the chart resolves it with a Helm lookup of kube-public/cluster-info that a preview cannot see; give the API server address in Pulumi.bench.yaml",
      ],
    });
  });

  it("deep-merges extra values: mappings key by key, lists and scalars replaced, generated keys may be repeated (the owned value is written)", () => {
    const settings = l4({
      values: {
        bpf: { masquerade: true },
        nodePort: { bindProtection: false, enabled: true },
        gatewayAPI: { enabled: false },
        kubeProxyReplacement: "true",
        devices: ["eth0", "eth1"],
        operator: { replicas: 1 },
      },
    });
    expect(l4Values(settings, "Pulumi.bench.yaml")).toEqual({
      values: {
        kubeProxyReplacement: true,
        k8sServiceHost: "192.168.104.2",
        k8sServicePort: 6443,
        gatewayAPI: { enabled: false },
        l2announcements: { enabled: false },
        enableLBIPAM: false,
        rollOutCiliumPods: true,
        operator: { rollOutPods: true, replicas: 1 },
        nodePort: { bindProtection: false, enabled: true },
        bpf: { masquerade: true },
        devices: ["eth0", "eth1"],
      },
    });
    expect(deepMerge({ a: { b: [1, 2], c: 1 } }, { a: { b: [3] } })).toEqual({ a: { b: [3], c: 1 } });
  });
});

describe("extra values that contradict the mode", () => {
  const at = (version: string) => chartKeysFor(version) as ChartKeys;
  const cases: [string, Record<string, unknown>, string, string][] = [
    [
      "Gateway API back on",
      { gatewayAPI: { enabled: true } },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.gatewayAPI.enabled is true; mode 'l4' needs false (no GatewayClass, Gateway or HTTPRoute on the L4 path)",
    ],
    [
      "L2 announcements on",
      { l2announcements: { enabled: true } },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.l2announcements.enabled is true; mode 'l4' needs false (L2 announcements only advertise LoadBalancer addresses, which the L4 path does not use)",
    ],
    [
      "LB-IPAM on",
      { enableLBIPAM: true },
      "1.17.18",
      "cilium (l4): ui-exposure:cilium.values.enableLBIPAM is true; mode 'l4' needs false (no LB-IPAM on the L4 path)",
    ],
    [
      "kube-proxy replacement off (boolean)",
      { kubeProxyReplacement: false },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.kubeProxyReplacement is false; mode 'l4' needs true (kube-proxy replacement is what serves NodePorts and hostPorts in eBPF on the L4 path)",
    ],
    [
      "kube-proxy replacement off (string)",
      { kubeProxyReplacement: "false" },
      "1.16.19",
      "cilium (l4): ui-exposure:cilium.values.kubeProxyReplacement is \"false\"; mode 'l4' needs true (kube-proxy replacement is what serves NodePorts and hostPorts in eBPF on the L4 path)",
    ],
    [
      "kube-proxy replacement 'strict'",
      { kubeProxyReplacement: "strict" },
      "1.18.12",
      'cilium (l4): ui-exposure:cilium.values.kubeProxyReplacement is "strict"; mode \'l4\' needs true (kube-proxy replacement is what serves NodePorts and hostPorts in eBPF on the L4 path); "strict" is no longer a valid value: the chart fails to render with it since 1.16',
    ],
    [
      "a string where the schema wants a boolean",
      { gatewayAPI: { enabled: "false" } },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.gatewayAPI.enabled is \"false\"; mode 'l4' needs false (no GatewayClass, Gateway or HTTPRoute on the L4 path); the chart's schema wants the boolean false, not a string",
    ],
    [
      "a scalar where the mode sets a key inside",
      { gatewayAPI: true },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.gatewayAPI is true; it must be a mapping, since mode 'l4' sets gatewayAPI.enabled: false in it",
    ],
    [
      "hostPort on 1.18 (removed)",
      { hostPort: { enabled: true } },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.hostPort does not exist in chart 1.18.12 (removed in 1.18: kube-proxy replacement always serves hostPorts); the chart would ignore it silently: remove it",
    ],
    [
      "nodePort.enabled on 1.19 (removed)",
      { nodePort: { enabled: true } },
      "1.19.6",
      "cilium (l4): ui-exposure:cilium.values.nodePort.enabled does not exist in chart 1.19.6 (removed in 1.19: kube-proxy replacement always serves NodePorts); the chart would ignore it silently: remove it",
    ],
    [
      "enableLBIPAM on 1.16 (not there yet)",
      { enableLBIPAM: false },
      "1.16.19",
      "cilium (l4): ui-exposure:cilium.values.enableLBIPAM does not exist in chart 1.16.19 (added in 1.17; before, LB-IPAM stays dormant only while no CiliumLoadBalancerIPPool exists); the chart would ignore it silently: remove it",
    ],
    [
      "externalIPs on 1.17 (removed)",
      { externalIPs: { enabled: true } },
      "1.17.18",
      "cilium (l4): ui-exposure:cilium.values.externalIPs does not exist in chart 1.17.18 (removed in 1.17); the chart would ignore it silently: remove it",
    ],
    [
      "the API server address in values",
      { k8sServiceHost: "10.0.0.1" },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.k8sServiceHost: set ui-exposure:cilium.k8sServiceHost instead (one place for the API server address)",
    ],
    [
      "k8sServiceHostRef next to k8sServiceHost",
      { k8sServiceHostRef: { name: "cm", key: "host" } },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values.k8sServiceHostRef: the chart refuses it together with k8sServiceHost, which mode 'l4' sets from ui-exposure:cilium.k8sServiceHost",
    ],
    [
      "a --set style dotted key",
      { "gatewayAPI.enabled": true },
      "1.18.12",
      "cilium (l4): ui-exposure:cilium.values has the key 'gatewayAPI.enabled': values are nested mappings, not --set paths; write gatewayAPI: {enabled: ...} instead",
    ],
  ];

  it.each(cases)("%s", (_label, values, version, message) => {
    expect(extraValuesProblems(values, version, at(version))).toEqual([message]);
    // And through planning, nothing is planned.
    expect(planCilium(l4({ values }, version), bench, nothing)).toEqual({ problems: [message] });
  });

  it("reports every contradiction at once, in a stable order", () => {
    const r = l4Values(
      l4({ values: { gatewayAPI: { enabled: true }, kubeProxyReplacement: "strict", hostPort: { enabled: true } } }, "1.19.6"),
      "Pulumi.bench.yaml",
    );
    expect("problems" in r ? r.problems.map((p) => p.split(" is ")[0]?.split(" does ")[0]) : []).toEqual([
      "cilium (l4): ui-exposure:cilium.values.hostPort",
      "cilium (l4): ui-exposure:cilium.values.kubeProxyReplacement",
      "cilium (l4): ui-exposure:cilium.values.gatewayAPI.enabled",
    ]);
  });

  it('accepts the mode\'s own values repeated, and kubeProxyReplacement as true or "true" on every version', () => {
    for (const version of VERSIONS) {
      expect(
        extraValuesProblems({ kubeProxyReplacement: "true", gatewayAPI: { enabled: false }, l2announcements: { enabled: false } }, version, at(version)),
      ).toEqual([]);
    }
  });
});

/** The Helm release as read from the cluster (a real record, decoded). */
const liveRelease = (f: ReleaseFixture): CiliumObservation["helmRelease"] => liveReleaseOf([releaseSecret(f)], "cilium", gunzipBounded);
const ciliumConfig = { metadata: { name: "cilium-config", namespace: "kube-system" }, data: { "kube-proxy-replacement": "true" } };
/** A release a platform installed with the BGP control plane, Cilium Ingress, node IPAM and its own settings (cni.sh of a BGP site). */
const bgpSite = {
  kubeProxyReplacement: true,
  k8sServiceHost: "192.168.104.2",
  k8sServicePort: 6443,
  gatewayAPI: { enabled: true },
  l2announcements: { enabled: true },
  enableLBIPAM: true,
  bgpControlPlane: { enabled: true },
  ingressController: { enabled: true, loadbalancerMode: "shared" },
  ipam: { mode: "kubernetes" },
  hubble: { relay: { enabled: true }, tls: { ca: { key: "LS0tLS1CRUdJTiBQUklWQVRF" } } },
};

describe("the l4 release keeps every live value it does not own", () => {
  const withRelease = (f: ReleaseFixture, over: Partial<CiliumObservation> = {}): CiliumObservation => ({
    ...nothing,
    ciliumConfig,
    helmRelease: liveRelease(f),
    ...over,
  });

  it("a running BGP control plane, Ingress controller and IPAM mode stay as they run; only the owned keys change, each one shown", () => {
    const plan = planCilium(l4(), bench, withRelease({ config: bgpSite, defaults: { kubeProxyReplacement: "false", rollOutCiliumPods: false } }));
    expect(plan).toMatchObject({ mode: "l4" });
    const { release, changes } = plan as Extract<CiliumPlan, { mode: "l4" }>;
    expect(release.values).toEqual({
      ...bgpSite,
      gatewayAPI: { enabled: false },
      l2announcements: { enabled: false },
      enableLBIPAM: false,
      rollOutCiliumPods: true,
      operator: { rollOutPods: true },
    });
    expect(changes).toEqual([
      "cilium values: gatewayAPI.enabled: true -> false (owned by mode 'l4')",
      "cilium values: l2announcements.enabled: true -> false (owned by mode 'l4')",
      "cilium values: enableLBIPAM: true -> false (owned by mode 'l4')",
      "cilium values: rollOutCiliumPods: false -> true (owned by mode 'l4')",
      "cilium values: operator.rollOutPods: (unset) -> true (owned by mode 'l4')",
    ]);
  });

  it("the BGP control plane, node IPAM and Cilium Ingress may be set in cilium.values; a key set there that changes is shown, a credential hidden", () => {
    const values = {
      bgpControlPlane: { enabled: true },
      nodeIPAM: { enabled: true },
      ipam: { mode: "cluster-pool" },
      hubble: { tls: { ca: { key: "bmV3" } } },
    };
    const plan = planCilium(l4({ values, chart: { version: "1.18.12" } }), bench, withRelease({ chartVersion: "1.18.11", config: bgpSite }));
    expect(plan).toMatchObject({
      mode: "l4",
      release: { values: { bgpControlPlane: { enabled: true }, nodeIPAM: { enabled: true }, ipam: { mode: "cluster-pool" } } },
    });
    expect((plan as Extract<CiliumPlan, { mode: "l4" }>).changes).toEqual([
      "cilium values: chart 1.18.11 -> 1.18.12 (a Cilium upgrade: keys nobody set take the new chart's defaults; follow Cilium's upgrade notes)",
      "cilium values: gatewayAPI.enabled: true -> false (owned by mode 'l4')",
      "cilium values: l2announcements.enabled: true -> false (owned by mode 'l4')",
      "cilium values: enableLBIPAM: true -> false (owned by mode 'l4')",
      "cilium values: rollOutCiliumPods: (unset) -> true (owned by mode 'l4')",
      "cilium values: operator.rollOutPods: (unset) -> true (owned by mode 'l4')",
      "cilium values: nodeIPAM.enabled: (unset) -> true (set in ui-exposure:cilium.values)",
      'cilium values: ipam.mode: "kubernetes" -> "cluster-pool" (set in ui-exposure:cilium.values)',
      "cilium values: hubble.tls.ca.key: (hidden) -> (hidden) (set in ui-exposure:cilium.values)",
    ]);
  });

  it("kube-proxy replacement off on the live release: refused, never turned on by l4", () => {
    expect(problemsOf(planCilium(l4(), bench, withRelease({ config: { ...bgpSite, kubeProxyReplacement: false } })))).toEqual([
      "cilium (l4): the live release (kube-system/sh.helm.release.v1.cilium.v1) runs with kubeProxyReplacement false (its values); mode 'l4' keeps kube-proxy replacement as it runs and never turns it on: that is a cluster-wide change (kube-proxy goes, every node's Services move to eBPF), to make through the cluster's own Cilium procedure first; then run up again (docs/cilium.md)",
    ]);
    expect(
      problemsOf(
        planCilium(
          l4(),
          bench,
          withRelease({ chartVersion: "1.18.12", config: { ipam: { mode: "kubernetes" } }, defaults: { kubeProxyReplacement: "false" } }),
        ),
      ),
    ).toEqual([
      "cilium (l4): the live release (kube-system/sh.helm.release.v1.cilium.v1) runs with kubeProxyReplacement \"false\" (the default of chart 1.18.12); mode 'l4' keeps kube-proxy replacement as it runs and never turns it on: that is a cluster-wide change (kube-proxy goes, every node's Services move to eBPF), to make through the cluster's own Cilium procedure first; then run up again (docs/cilium.md)",
    ]);
    // "strict" (charts up to 1.15) is on: the owned key writes the boolean the new chart wants.
    expect(planCilium(l4(), bench, withRelease({ config: { kubeProxyReplacement: "strict" } }))).toMatchObject({
      mode: "l4",
      release: { values: { kubeProxyReplacement: true } },
    });
  });

  it("Cilium runs but no Helm release record is found: refused, saying how to provide it", () => {
    expect(problemsOf(planCilium(l4(), bench, { ...nothing, ciliumConfig, helmRelease: { ok: true, value: undefined } }))).toEqual([
      "cilium (l4): Cilium runs (ConfigMap kube-system/cilium-config) but no deployed Helm release kube-system/cilium was found (Secrets sh.helm.release.v1.cilium.v<N> labelled owner=helm,name=cilium); mode 'l4' starts from the live release's values so that the upgrade changes only the keys it owns. Check the release's name and namespace (helm list -A) against ui-exposure:cilium.chart.releaseName and .namespace in Pulumi.bench.yaml; for render, add the records to the snapshot (kubectl -n kube-system get secret -l owner=helm,name=cilium -o yaml); a Cilium not installed by Helm cannot be managed by mode 'l4' (keep mode 'cohabit')",
    ]);
  });

  it("an unreadable record is one problem", () => {
    const unreadable = liveReleaseOf([releaseSecret({}, "bm90IGd6aXA=")], "cilium", gunzipBounded);
    expect(problemsOf(planCilium(l4(), bench, { ...nothing, ciliumConfig, helmRelease: unreadable }))).toEqual([
      "cilium (l4): the Helm release record Secret kube-system/sh.helm.release.v1.cilium.v1 cannot be read: data.release does not hold base64 text (a Helm release record is base64 of gzip)",
    ]);
  });

  it("a fresh install (no Cilium, no release): the owned keys and the stack's values, as before", () => {
    const plan = planCilium(l4({ values: { ipam: { mode: "kubernetes" } } }), bench, { ...nothing, helmRelease: { ok: true, value: undefined } });
    expect(plan).toMatchObject({ mode: "l4" });
    expect((plan as Extract<CiliumPlan, { mode: "l4" }>).release.values).toEqual(
      (l4Values(l4({ values: { ipam: { mode: "kubernetes" } } }), "Pulumi.bench.yaml") as { values: unknown }).values,
    );
  });
});

describe("guards", () => {
  it("the pool step waits on the Services LB-IPAM addressed only: no address, another controller's class, node IPAM: not waited on", () => {
    const services = [
      lbService("argocd", "argocd-lb", ["10.67.3.240"]),
      lbService("web", "pending", []),
      lbService("metal", "metallb-owned", ["10.1.2.3"], "metallb.io/metallb"),
      lbService("node", "node-ipam", ["10.67.2.11"], "io.cilium/node"),
      lbService("l2", "announced", ["10.67.3.250"], "io.cilium/l2-announcer"),
    ];
    const pool = dirqualObservation.lbIpPools;
    const waits = (removalOrderProblem({ ...nothing, services, lbIpPools: pool }) ?? "").split("\n").filter((l) => l.includes("until ["));
    expect(waits).toEqual([
      `         until [ -z "$(kubectl -n argocd get service argocd-lb -o jsonpath='{..ingress}')" ]; do sleep 2; done`,
      `         until [ -z "$(kubectl -n l2 get service announced -o jsonpath='{..ingress}')" ]; do sleep 2; done`,
    ]);
    // No pool left: addresses that stay are no pool's, and l4 has nothing to strip (node IPAM's Services are refused on their own, below).
    expect(planCilium(l4(), bench, { ...nothing, services: services.filter((s) => s.spec?.loadBalancerClass !== "io.cilium/node") })).toMatchObject({
      mode: "l4",
    });
    expect(removalOrderProblem({ ...nothing, services })).toContain("Services of class io.cilium/node (node IPAM) node/node-ipam are still");
  });

  it("NodePort and hostPort settings are carried as the installed release has them (l4 leaves them alone)", () => {
    expect(extraValuesProblems({ nodePort: { enabled: false, range: "30000,32767" } }, "1.17.18", chartKeysFor("1.17.18") as ChartKeys)).toEqual([]);
    expect(extraValuesProblems({ hostPort: { enabled: false } }, "1.16.19", chartKeysFor("1.16.19") as ChartKeys)).toEqual([]);
  });

  it("a production stack refuses l4 until phase 2 is decided, and says so with the other problems", () => {
    expect(problemsOf(planCilium(l4({ k8sServiceHost: undefined }), dirqual, dirqualObservation))).toEqual([
      "cilium (l4): stack 'dirqual' is production (ui-exposure:production) and refuses mode 'l4' until phase 2 is decided: set ui-exposure:cilium.phase2Decided: true in Pulumi.dirqual.yaml (runbook: docs/cilium.md)",
      "cilium (l4): ui-exposure:cilium.k8sServiceHost is required in Pulumi.dirqual.yaml: with kube-proxy replacement the agents reach the API server directly, not through the kubernetes Service (give the control-plane address, e.g. its InternalIP)",
      removalOrderProblem(dirqualObservation),
    ]);
    // Phase 2: decided, the Gateways and the pool gone (their Services stale or not: no pool, nothing to strip).
    const phase2 = l4({ phase2Decided: true });
    expect(planCilium(phase2, dirqual, dirqualServicesOnly)).toMatchObject({
      mode: "l4",
      release: { namespace: "kube-system", releaseName: "cilium", version: "1.18.12" },
    });
    // phase2Decided means nothing on a non-production stack: bench needs no such flag.
    expect(planCilium(l4(), bench, nothing)).toMatchObject({ mode: "l4" });
  });

  it("what the cluster says about Gateways and routes is untrusted: null or odd items are skipped, never a crash", () => {
    const gateway = { apiVersion: "gateway.networking.k8s.io/v1", kind: "Gateway", metadata: { namespace: "a", name: "g" }, spec: { gatewayClassName: 7 } };
    const route = { apiVersion: "gateway.networking.k8s.io/v1", kind: "HTTPRoute", metadata: { namespace: "a", name: "r" }, spec: { parentRefs: "g" } };
    const odd = {
      ...nothing,
      gateways: [gateway],
      httpRoutes: [route],
      gatewayClasses: [{ ...gateway, kind: "GatewayClass", spec: null }],
    } as unknown as CiliumObservation;
    expect(removalOrderProblem(odd)).toBeUndefined();
  });

  it("acknowledgeLoadBalancerLoss is no setting: deleting the pools in the order above is the acknowledgement", () => {
    const r = ciliumSettingsSchema.safeParse({ mode: "l4", chart: { version: "1.18.12" }, acknowledgeLoadBalancerLoss: ["argocd/*"] });
    expect(r.success).toBe(false);
    // And no shipped file speaks of one.
    const shipped = ["README.md", "Pulumi.bench.yaml", "Pulumi.dirqual.yaml", ...fs.readdirSync(path.join(projectDir, "docs")).map((f) => `docs/${f}`)];
    const stale = shipped
      .filter((f) => f.endsWith(".md") || f.endsWith(".yaml"))
      .filter((f) => /LoadBalancer acknowledg|acknowledgeLoadBalancer/i.test(fs.readFileSync(path.join(projectDir, f), "utf8")));
    expect(stale).toEqual([]);
  });

  it("cohabit: kube-proxy replacement must be on in the live cilium-config", () => {
    const withKpr = (data: Record<string, string>): CiliumObservation => ({
      ...nothing,
      ciliumConfig: { metadata: { name: "cilium-config", namespace: "kube-system" }, data },
    });
    expect(planCilium(cohabit, dirqual, withKpr({ "kube-proxy-replacement": "false" }))).toEqual({
      problems: [
        "cilium (cohabit): kube-proxy-replacement is 'false' in kube-system/cilium-config; without kube-proxy replacement Cilium does not serve NodePorts and hostPorts in eBPF, so the URLs would not answer (mode 'cohabit' never changes Cilium: turn it on through the cluster's own Cilium procedure first)",
      ],
    });
    expect(problemsOf(planCilium(cohabit, dirqual, withKpr({ "kube-proxy-replacement": "partial" })))[0]).toContain("kube-proxy-replacement is 'partial' in");
    expect(problemsOf(planCilium(cohabit, dirqual, withKpr({ "enable-lb-ipam": "true" })))[0]).toContain("kube-proxy-replacement is 'unset' in");
    expect(planCilium(cohabit, dirqual, nothing)).toEqual({
      problems: [
        "cilium (cohabit): ConfigMap kube-system/cilium-config not found; is Cilium installed in this cluster? (mode 'cohabit' reads it to check kube-proxy replacement)",
      ],
    });
    // "strict" is the pre-1.16 spelling of full replacement.
    expect(planCilium(cohabit, dirqual, withKpr({ "kube-proxy-replacement": "strict" }))).toMatchObject({
      mode: "cohabit",
      observed: { "kube-proxy-replacement": "strict" },
    });
  });

  it("cohabit reports ahead what phase 2's removal order will ask for (nothing left: no phase2)", () => {
    const plan = planCilium(cohabit, dirqual, {
      ...dirqualObservation,
      ciliumConfig: {
        metadata: { name: "cilium-config", namespace: "kube-system" },
        data: { "kube-proxy-replacement": "true", "enable-lb-ipam": "true", "unrelated-key": "x" },
      },
    });
    const order = removalOrder(dirqualObservation);
    expect(plan).toEqual({
      mode: "cohabit",
      observed: { "kube-proxy-replacement": "true", "enable-lb-ipam": "true" },
      phase2: [order?.found, ...(order?.steps ?? []).map((l) => l.trim())],
    });
    expect(order?.found).toBe(
      "Gateways argocd/argocd, dagster/dagster, gitea/gitea, kubernetes-dashboard/k8s-dashboard, marquez/marquez-web, mlflow/mlflow, monitoring/grafana, platform-portal/portal; CiliumLoadBalancerIPPools default-pool",
    );
    expect(
      planCilium(cohabit, dirqual, { ...nothing, ciliumConfig: { metadata: { name: "cilium-config" }, data: { "kube-proxy-replacement": "true" } } }),
    ).toEqual({
      mode: "cohabit",
      observed: { "kube-proxy-replacement": "true" },
    });
  });
});

/** A throw-away project folder holding one stack file, for render() with other settings. */
function stackDir(stack: string, config: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cilium-test-"));
  fs.writeFileSync(path.join(dir, `Pulumi.${stack}.yaml`), stringify({ config }));
  return dir;
}

const exampleContract = path.join(projectDir, "contract/endpoints.example.yaml");
const FORBIDDEN_KINDS = ["CiliumLoadBalancerIPPool", "CiliumL2AnnouncementPolicy", "GatewayClass", "Gateway", "HTTPRoute"];

describe("the order of phase 2 (l4 refuses while the Gateway API / LB-IPAM era remains)", () => {
  const gw = (namespace: string, name: string, gatewayClassName: string): GenericObject => ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { namespace, name },
    spec: { gatewayClassName, listeners: [] },
  });
  const route = (namespace: string, name: string, parentRefs: unknown[]): GenericObject => ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace, name },
    spec: { parentRefs } as Record<string, unknown>,
  });
  const observed: CiliumObservation = {
    ...nothing,
    gatewayClasses: [
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "GatewayClass",
        metadata: { name: "cilium" },
        spec: { controllerName: "io.cilium/gateway-controller" },
      },
      {
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "GatewayClass",
        metadata: { name: "envoy" },
        spec: { controllerName: "gateway.envoyproxy.io/gatewayclass-controller" },
      },
    ],
    gateways: [gw("gitea", "gitea", "cilium"), gw("web", "other", "envoy")],
    httpRoutes: [
      route("gitea", "gitea", [{ name: "gitea" }]),
      route("web", "shop", [{ name: "other" }]),
      route("web", "cross", [{ name: "gitea", namespace: "gitea" }]),
      route("web", "odd", [null, 3, { kind: "Service", name: "gitea", namespace: "gitea" }]),
    ],
    l2Policies: [{ apiVersion: "cilium.io/v2alpha1", kind: "CiliumL2AnnouncementPolicy", metadata: { name: "l2-policy" } }],
    lbIpPools: [{ apiVersion: "cilium.io/v2", kind: "CiliumLoadBalancerIPPool", metadata: { name: "default-pool" }, spec: {} }],
    services: [
      lbService("gitea", "cilium-gateway-gitea", ["10.67.3.242"]),
      lbService("web", "shop-lb", ["10.67.3.250"]),
      lbService("metal", "m", ["10.1.2.3"], "metallb.io/metallb"),
    ],
  };

  it("names each object and gives the commands in the order that works, each with what to wait for", () => {
    expect(removalOrderProblem(observed)).toBe(
      [
        "cilium (l4): HTTPRoutes gitea/gitea, web/cross; Gateways gitea/gitea; CiliumL2AnnouncementPolicies l2-policy; CiliumLoadBalancerIPPools default-pool are still in the cluster, and once mode 'l4' turns Gateway API, LB-IPAM and L2 announcements off nothing cleans up after them (stale Services, addresses, leases and BGP routes stay; the BGP control plane itself stays on): remove them first, in this order, then run up again (GatewayClass and CRDs stay, or go last; runbook: docs/cilium.md):",
        "    1. delete the HTTPRoutes:",
        "         kubectl -n gitea delete httproute gitea",
        "         kubectl -n web delete httproute cross",
        "    2. delete the Gateways and wait until their Services, Endpoints and CiliumEnvoyConfigs are gone (garbage collection of what the Gateway owns):",
        "         kubectl -n gitea delete gateway gitea && kubectl -n gitea wait --for=delete --timeout=5m service/cilium-gateway-gitea endpoints/cilium-gateway-gitea ciliumenvoyconfig/cilium-gateway-gitea",
        "    3. delete the L2 announcement policies:",
        "         kubectl delete ciliuml2announcementpolicy l2-policy",
        "    4. delete the pools, while LB-IPAM still runs, and wait until its Services have no ingress address left (LB-IPAM strips them):",
        "         kubectl delete ciliumloadbalancerippool default-pool",
        `         until [ -z "$(kubectl -n web get service shop-lb -o jsonpath='{..ingress}')" ]; do sleep 2; done`,
        "    5. delete the L2 announcement leases left (once nothing is announced the agents release them, and delete released ones only every minute):",
        "         kubectl -n kube-system get leases -o name | grep '/cilium-l2announce-' | xargs -r kubectl -n kube-system delete",
      ].join("\n"),
    );
    // Through planning: refused, with the other guards' problems, nothing planned.
    expect(problemsOf(planCilium(l4(), bench, observed))).toEqual([removalOrderProblem(observed)]);
  });

  it("Cilium Ingresses, node IPAM Services and BGP advertisements of LoadBalancer IPs: refused in the order, each with its command; the BGP control plane stays", () => {
    const obj = (kind: string, name: string, spec: Record<string, unknown>, namespace?: string, annotations?: Record<string, string>): GenericObject => ({
      apiVersion: kind.startsWith("Cilium") ? "cilium.io/v2" : "networking.k8s.io/v1",
      kind,
      metadata: { name, ...(namespace ? { namespace } : {}), ...(annotations ? { annotations } : {}) },
      spec,
    });
    const orphans: CiliumObservation = {
      ...nothing,
      ingressClasses: [
        obj("IngressClass", "cilium", { controller: "cilium.io/ingress-controller" }, undefined, { "ingressclass.kubernetes.io/is-default-class": "true" }),
        obj("IngressClass", "nginx", { controller: "k8s.io/ingress-nginx" }),
      ],
      ingresses: [
        obj("Ingress", "wiki", { ingressClassName: "cilium" }, "docs"),
        obj("Ingress", "blog", {}, "docs"),
        obj("Ingress", "shop", { ingressClassName: "nginx" }, "web"),
      ],
      services: [lbService("kube-system", "cilium-ingress", ["10.67.3.9"]), lbService("lab", "edge", ["192.168.104.2"], "io.cilium/node")],
      bgpAdvertisements: [
        obj("CiliumBGPAdvertisement", "lb-and-pods", {
          advertisements: [
            { advertisementType: "PodCIDR" },
            { advertisementType: "Service", service: { addresses: ["ClusterIP", "LoadBalancerIP"] } },
            { advertisementType: "Service", service: { addresses: ["LoadBalancerIP"] } },
          ],
        }),
        obj("CiliumBGPAdvertisement", "pods-only", { advertisements: [{ advertisementType: "PodCIDR" }] }),
      ],
      bgpPeeringPolicies: [
        obj("CiliumBGPPeeringPolicy", "rack1", { virtualRouters: [{ localASN: 65001, exportPodCIDR: true, serviceSelector: { matchLabels: { lb: "bgp" } } }] }),
      ],
    };
    const order = removalOrderProblem(orphans) ?? "";
    expect(order.split("\n")).toEqual([
      "cilium (l4): Cilium Ingresses docs/blog, docs/wiki; Services of class io.cilium/node (node IPAM) lab/edge; BGP advertisements of LoadBalancer IPs CiliumBGPAdvertisement lb-and-pods, CiliumBGPPeeringPolicy rack1 are still in the cluster, and once mode 'l4' turns Gateway API, LB-IPAM and L2 announcements off nothing cleans up after them (stale Services, addresses, leases and BGP routes stay; the BGP control plane itself stays on): remove them first, in this order, then run up again (GatewayClass and CRDs stay, or go last; runbook: docs/cilium.md):",
      "    1. delete the Cilium Ingresses (or move them to another IngressClass) and wait until they are gone:",
      "         kubectl -n docs delete ingress blog wiki && kubectl -n docs wait --for=delete --timeout=5m ingress/blog ingress/wiki",
      "    2. turn the node IPAM Services into NodePort Services (their nodePorts stay; publish them as contract entries if they serve a UI):",
      `         kubectl -n lab patch service edge --type merge -p '{"spec":{"type":"NodePort","loadBalancerClass":null}}'`,
      "    3. stop advertising LoadBalancer IPs over BGP (the BGP control plane stays on: pod CIDRs and every other advertisement keep running):",
      `         kubectl patch ciliumbgpadvertisement lb-and-pods --type json -p '[{"op":"remove","path":"/spec/advertisements/2"},{"op":"replace","path":"/spec/advertisements/1/service/addresses","value":["ClusterIP"]}]'`,
      `         kubectl patch ciliumbgppeeringpolicy rack1 --type json -p '[{"op":"remove","path":"/spec/virtualRouters/0/serviceSelector"}]'`,
    ]);
    // Through planning, with the live release running Cilium Ingress: the shared Service is refused until the controller is turned off in cilium.values.
    const running = { ...orphans, ciliumConfig, helmRelease: liveRelease({ config: bgpSite }) };
    expect(problemsOf(planCilium(l4(), bench, running))).toEqual([
      "cilium (l4): Service kube-system/cilium-ingress (Cilium Ingress's shared LoadBalancer Service) gets its address from LB-IPAM, which mode 'l4' turns off, and Cilium's ingress controller stays as it runs: once no Cilium Ingress is left, turn it off (the chart then removes that Service): pulumi config set --path 'ui-exposure:cilium.values.ingressController.enabled' false",
      order,
    ]);
    const cleared = { ...running, ingresses: [], bgpAdvertisements: [], bgpPeeringPolicies: [], services: [orphans.services[0] as Service] };
    expect(problemsOf(planCilium(l4(), bench, cleared))).toHaveLength(1);
    const off = planCilium(l4({ values: { ingressController: { enabled: false } } }), bench, cleared);
    expect(off).toMatchObject({
      mode: "l4",
      release: { values: { bgpControlPlane: { enabled: true }, ingressController: { enabled: false, loadbalancerMode: "shared" } } },
    });
    expect((off as Extract<CiliumPlan, { mode: "l4" }>).changes).toContain(
      "cilium values: ingressController.enabled: true -> false (set in ui-exposure:cilium.values)",
    );
  });

  it("an Ingress of Cilium's by the legacy annotation or by one of two default classes, and a peering policy's LoadBalancerIP only (outside tester)", () => {
    const meta = (name: string, namespace?: string, annotations?: Record<string, string>) => ({
      name,
      ...(namespace ? { namespace } : {}),
      ...(annotations ? { annotations } : {}),
    });
    const klass = (name: string, controller: string, isDefault: boolean): GenericObject => ({
      apiVersion: "networking.k8s.io/v1",
      kind: "IngressClass",
      metadata: meta(name, undefined, isDefault ? { "ingressclass.kubernetes.io/is-default-class": "true" } : undefined),
      spec: { controller },
    });
    const ingress = (name: string, annotations?: Record<string, string>): GenericObject => ({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: meta(name, "docs", annotations),
      spec: {},
    });
    const legacy = loadBalancerPathObjects({
      ...nothing,
      ingresses: [ingress("old", { "kubernetes.io/ingress.class": "cilium" }), ingress("other", { "kubernetes.io/ingress.class": "nginx" })],
    });
    expect(legacy.ingresses.map((i) => i.metadata.name)).toEqual(["old"]);
    const twoDefaults = loadBalancerPathObjects({
      ...nothing,
      ingressClasses: [klass("nginx", "k8s.io/ingress-nginx", true), klass("cilium", "cilium.io/ingress-controller", true)],
      ingresses: [ingress("classless")],
    });
    expect(twoDefaults.ingresses.map((i) => i.metadata.name)).toEqual(["classless"]);
    const router = (extra: Record<string, unknown>) => ({ localASN: 65001, serviceSelector: { matchLabels: { a: "b" } }, ...extra });
    const policy = (routers: unknown[]): GenericObject => ({
      apiVersion: "cilium.io/v2alpha1",
      kind: "CiliumBGPPeeringPolicy",
      metadata: meta("rack0"),
      spec: { virtualRouters: routers },
    });
    const ops = (routers: unknown[]) => loadBalancerPathObjects({ ...nothing, bgpPeeringPolicies: [policy(routers)] }).bgp.map((b) => b.ops);
    // ClusterIP only: nothing of LoadBalancer IPs to stop; with ClusterIP too, only LoadBalancerIP goes; alone (or the CRD's default), the selector.
    expect(ops([router({ serviceAdvertisements: ["ClusterIP"] })])).toEqual([]);
    expect(ops([router({ serviceAdvertisements: ["ClusterIP", "LoadBalancerIP"] })])).toEqual([
      [{ op: "replace", path: "/spec/virtualRouters/0/serviceAdvertisements", value: ["ClusterIP"] }],
    ]);
    expect(ops([router({})])).toEqual([[{ op: "remove", path: "/spec/virtualRouters/0/serviceSelector" }]]);
  });

  it("each kind alone is refused; another controller's Gateways and routes, and a GatewayClass, are not", () => {
    expect(removalOrderProblem({ ...nothing, lbIpPools: observed.lbIpPools })).toContain("CiliumLoadBalancerIPPools default-pool are still");
    expect(removalOrderProblem({ ...nothing, l2Policies: observed.l2Policies })).toContain("CiliumL2AnnouncementPolicies l2-policy are still");
    expect(removalOrderProblem({ ...nothing, gatewayClasses: observed.gatewayClasses, httpRoutes: observed.httpRoutes })).toBeUndefined();
    expect(removalOrderProblem({ ...nothing, gatewayClasses: observed.gatewayClasses, gateways: [gw("web", "other", "envoy")] })).toBeUndefined();
    // A Gateway whose class is gone counts as Cilium's when the class had the chart's name.
    expect(removalOrderProblem({ ...nothing, gateways: [gw("a", "b", "cilium")] })).toContain("Gateways a/b are still");
    expect(planCilium(l4(), bench, { ...nothing, gatewayClasses: observed.gatewayClasses })).toMatchObject({ mode: "l4" });
  });
});

/**
 * What a cohabit-era release has (dirqual's and the bench's before phase 2: cni.sh's values,
 * kube-proxy replacement on, Gateway API, L2 announcements and LB-IPAM on, NodePort settings),
 * per chart version, as runbook step 1 carries it into ui-exposure:cilium.values: every value but
 * those the mode owns. The effective values (chart defaults from the chart facts, then the
 * release's) before and after may differ only where the mode means them to.
 */
describe("the phase-2 values diff from a cohabit-era release", () => {
  const OWNED = ["kubeProxyReplacement", "k8sServiceHost", "k8sServicePort", "gatewayAPI", "l2announcements", "enableLBIPAM"];
  const INTENDED = ["gatewayAPI.enabled", "l2announcements.enabled", "enableLBIPAM", "rollOutCiliumPods", "operator.rollOutPods"];
  const effective = (version: string, values: Record<string, unknown>) => {
    const facts = chartFacts.versions[version] as Record<string, PathFacts>;
    const out: Record<string, unknown> = {};
    for (const [p, f] of Object.entries(facts)) {
      const set = p.split(".").reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), values);
      const v = set !== undefined ? set : f.default;
      if (v !== undefined && (v === null || typeof v !== "object" || Array.isArray(v))) out[p] = p === "kubeProxyReplacement" ? String(v) : v;
    }
    return out;
  };
  const installs = (version: string): Record<string, unknown>[] => {
    const keys = chartKeysFor(version) as ChartKeys;
    const base = {
      kubeProxyReplacement: true,
      k8sServiceHost: "192.168.104.2",
      k8sServicePort: 6443,
      gatewayAPI: { enabled: true },
      l2announcements: { enabled: true },
      ...(keys.enableLBIPAM ? { enableLBIPAM: true } : {}),
      ipam: { mode: "kubernetes" },
    };
    return [
      base,
      { ...base, kubeProxyReplacement: "true", nodePort: { range: "30000,32767", bindProtection: false, addresses: ["192.168.104.0/24"] } },
      ...(keys.nodePortEnabled ? [{ ...base, nodePort: { enabled: true, enableHealthCheck: false } }] : []),
    ];
  };

  it.each(Object.keys(chartFacts.versions))("chart %s: only Gateway API, L2 announcements, LB-IPAM and the roll-out keys change", (version) => {
    for (const install of installs(version)) {
      const carried = Object.fromEntries(Object.entries(install).filter(([k]) => !OWNED.includes(k)));
      const l4Release = l4Values(l4({ values: carried }, version), "Pulumi.bench.yaml");
      if (!("values" in l4Release)) throw new Error(`expected values: ${JSON.stringify(l4Release)}`);
      const before = effective(version, install);
      const after = effective(version, l4Release.values);
      const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])]
        .filter((p) => JSON.stringify(before[p]) !== JSON.stringify(after[p]))
        .sort();
      expect(changed.filter((p) => /^(kubeProxyReplacement|nodePort|hostPort|k8sService)/.test(p))).toEqual([]);
      expect(changed.filter((p) => !INTENDED.includes(p))).toEqual([]);
      expect(after).toMatchObject({ rollOutCiliumPods: true, "operator.rollOutPods": true, "gatewayAPI.enabled": false, "l2announcements.enabled": false });
    }
  });
});

describe("rendered stacks (the real program under mocks, example snapshots)", () => {
  // render() leaves the mocks connected when the program throws; close them between tests.
  afterEach(() => pulumi.runtime.disconnect());

  it("bench (l4): one Cilium release, the live release's values with the owned keys changed, nothing else of Cilium", async () => {
    const out = await render({ projectDir, stack: "bench", cluster: readSnapshotFile(path.join(projectDir, "examples/bench-cluster.yaml")) });
    expect(out.releases).toEqual([
      {
        chart: "cilium",
        version: "1.18.12",
        namespace: "kube-system",
        name: "cilium",
        repository: "https://helm.cilium.io",
        values: {
          kubeProxyReplacement: true,
          k8sServiceHost: "192.168.104.2",
          k8sServicePort: 6443,
          gatewayAPI: { enabled: false },
          l2announcements: { enabled: false },
          enableLBIPAM: false,
          rollOutCiliumPods: true,
          // Carried from the live release (cni.sh's values), untouched.
          operator: { rollOutPods: true, replicas: 1 },
          ipam: { mode: "kubernetes" },
          prometheus: { enabled: false },
        },
      },
    ]);
    expect(out.objects.filter((o) => FORBIDDEN_KINDS.includes(String(o.kind)))).toEqual([]);
    expect(out.outputs.cilium).toEqual({
      mode: "l4",
      chartVersion: "1.18.12",
      release: "kube-system/cilium",
      adopt: "pulumi import kubernetes:helm.sh/v3:Release cilium-release kube-system/cilium --generate-code=false --protect=false --yes",
    });
  });

  it("dirqual (cohabit): no release and no Cilium object; outputs what phase 2 will remove, in order", async () => {
    const out = await render({ projectDir, stack: "dirqual", cluster: readSnapshotFile(path.join(projectDir, "examples/dirqual-cluster.yaml")) });
    expect(out.releases).toEqual([]);
    // Only our Services, and the exposure guard (dirqual: mode warn), which is not Cilium's.
    const isGuard = (o: Record<string, unknown>) => o.apiVersion === "admissionregistration.k8s.io/v1";
    expect(out.objects.filter((o) => !isGuard(o) && (o.kind !== "Service" || (o.metadata as { namespace?: string }).namespace === "kube-system"))).toEqual([]);
    const cilium = out.outputs.cilium as {
      mode: string;
      observed: Record<string, string>;
      phase2: string[];
    };
    expect(cilium.mode).toBe("cohabit");
    expect(cilium.observed).toEqual({
      "kube-proxy-replacement": "true",
      "enable-lb-ipam": "true",
      "enable-gateway-api": "true",
      "enable-l2-announcements": "true",
      "enable-l7-proxy": "true",
    });
    expect(cilium.phase2[0]).toContain("Gateways argocd/argocd, dagster/dagster");
    expect(cilium.phase2).toContain("kubectl delete ciliumloadbalancerippool default-pool");
  });

  it("neither stack declares a CiliumLoadBalancerIPPool, GatewayClass, Gateway or HTTPRoute, nor turns Gateway API / LB-IPAM on", async () => {
    for (const [stack, snapshot] of [
      ["bench", "examples/bench-cluster.yaml"],
      ["dirqual", "examples/dirqual-cluster.yaml"],
    ] as const) {
      const out = await render({ projectDir, stack, cluster: readSnapshotFile(path.join(projectDir, snapshot)) });
      await pulumi.runtime.disconnect();
      const declared = out.objects.map((o) => `${o.apiVersion} ${o.kind}`);
      expect(declared.filter((d) => FORBIDDEN_KINDS.some((k) => d.endsWith(` ${k}`)))).toEqual([]);
      expect(declared.filter((d) => /^(cilium\.io|gateway\.networking\.k8s\.io)\//.test(d))).toEqual([]);
      // Components whose children mocks cannot see (yaml/v2, helm/v4) would hide objects: none used.
      expect(declared.filter((d) => /^(yaml|helm\.sh)\//.test(d))).toEqual([]);
      for (const r of out.releases) {
        expect(r.values).toMatchObject({ gatewayAPI: { enabled: false }, l2announcements: { enabled: false }, enableLBIPAM: false });
      }
    }
  });

  it("cohabit guard stops the whole run with its exact message when kube-proxy replacement is off", async () => {
    const objects = dirqualObjects.map((o) =>
      o.kind === "ConfigMap" ? { ...o, data: { ...(o.data as Record<string, string>), "kube-proxy-replacement": "false" } } : o,
    );
    const run = render({ projectDir, stack: "dirqual", cluster: new SnapshotReader(objects) });
    await expect(run).rejects.toBeInstanceOf(UserError);
    await expect(run).rejects.toThrow(
      "stack dirqual cannot be deployed (nothing was changed): cilium (cohabit): kube-proxy-replacement is 'false' in kube-system/cilium-config; without kube-proxy replacement Cilium does not serve NodePorts and hostPorts in eBPF, so the URLs would not answer (mode 'cohabit' never changes Cilium: turn it on through the cluster's own Cilium procedure first)",
    );
  });

  it("dirqual switched to l4 by a one-word mistake: refused (production, addresses in use), nothing declared", async () => {
    const config = parse(fs.readFileSync(path.join(projectDir, "Pulumi.dirqual.yaml"), "utf8")).config as Record<string, unknown>;
    config["ui-exposure:cilium"] = {
      mode: "l4",
      chart: { repository: "https://helm.cilium.io", version: "1.18.12" },
      k8sServiceHost: "10.67.2.11",
      k8sServicePort: 6443,
    };
    const dir = stackDir("dirqual", config);
    const run = render({
      projectDir: dir,
      stack: "dirqual",
      contract: exampleContract,
      cluster: readSnapshotFile(path.join(projectDir, "examples/dirqual-cluster.yaml")),
    });
    await expect(run).rejects.toThrow(
      [
        "stack dirqual cannot be deployed (nothing was changed) (3 problems):",
        "  - cilium (l4): stack 'dirqual' is production (ui-exposure:production) and refuses mode 'l4' until phase 2 is decided: set ui-exposure:cilium.phase2Decided: true in Pulumi.dirqual.yaml (runbook: docs/cilium.md)",
        // The snapshot of the dirqual runbook (cohabit) holds no Helm release record.
        "  - cilium (l4): Cilium runs (ConfigMap kube-system/cilium-config) but no deployed Helm release kube-system/cilium was found (Secrets sh.helm.release.v1.cilium.v<N> labelled owner=helm,name=cilium); mode 'l4' starts from the live release's values so that the upgrade changes only the keys it owns. Check the release's name and namespace (helm list -A) against ui-exposure:cilium.chart.releaseName and .namespace in Pulumi.dirqual.yaml; for render, add the records to the snapshot (kubectl -n kube-system get secret -l owner=helm,name=cilium -o yaml); a Cilium not installed by Helm cannot be managed by mode 'l4' (keep mode 'cohabit')",
        `  - ${removalOrderProblem(dirqualObservation)}`,
      ].join("\n"),
    );
  });

  it("bench (l4) on a cluster whose Cilium runs the BGP control plane and Cilium Ingress: render keeps them on, and prints no credential", async () => {
    const objects = snapshotObjects("examples/bench-cluster.yaml").map((o) => (o.kind === "Secret" ? releaseSecret({ config: bgpSite }) : o));
    const out = await render({ projectDir, stack: "bench", cluster: new SnapshotReader(objects) });
    expect(out.releases[0]?.values).toEqual({
      ...bgpSite,
      hubble: { relay: { enabled: true }, tls: { ca: { key: "(hidden)" } } },
      gatewayAPI: { enabled: false },
      l2announcements: { enabled: false },
      enableLBIPAM: false,
      rollOutCiliumPods: true,
      operator: { rollOutPods: true },
    });
  });

  it("bench with contradicting extra values: refused with the key named", async () => {
    const config = parse(fs.readFileSync(path.join(projectDir, "Pulumi.bench.yaml"), "utf8")).config as Record<string, Record<string, unknown>>;
    config["ui-exposure:cilium"] = { ...config["ui-exposure:cilium"], values: { gatewayAPI: { enabled: true } } };
    const dir = stackDir("bench", config);
    const run = render({
      projectDir: dir,
      stack: "bench",
      contract: exampleContract,
      cluster: readSnapshotFile(path.join(projectDir, "examples/bench-cluster.yaml")),
    });
    await expect(run).rejects.toThrow(
      "stack bench cannot be deployed (nothing was changed): cilium (l4): ui-exposure:cilium.values.gatewayAPI.enabled is true; mode 'l4' needs false (no GatewayClass, Gateway or HTTPRoute on the L4 path)",
    );
  });
});

describe("the component under mocks", () => {
  let registered: RegisteredResource[] = [];

  async function mocks(stack: string) {
    registered = (await useProgramMocks({ stack })).resources;
  }
  afterEach(() => pulumi.runtime.disconnect());

  it("cohabit registers no Cilium resource at all (only the component itself)", async () => {
    await mocks("dirqual");
    const plan = planCilium(cohabit, dirqual, {
      ...dirqualObservation,
      ciliumConfig: { metadata: { name: "cilium-config", namespace: "kube-system" }, data: { "kube-proxy-replacement": "true" } },
    }) as CiliumPlan;
    const c = new Cilium("cilium", { plan }, { providers: [new k8s.Provider("kubernetes", { context: "dirqual" })] });
    expect(c.release).toBeUndefined();
    expect((await resolve(c.summary)).mode).toBe("cohabit");
    await pulumi.runtime.disconnect();
    // The recording works (the component itself went through the mocks), and nothing else did.
    expect(registered.map((r) => `${r.type}::${r.name}`)).toEqual(["pulumi:providers:kubernetes::kubernetes", "ui-exposure:cilium:Cilium::cilium"]);
  });

  it("l4: the Release has the URN and the name/namespace the documented import command adopts", async () => {
    await mocks("bench");
    const plan = planCilium(l4(), bench, nothing) as CiliumPlan;
    const c = new Cilium("cilium", { plan }, { providers: [new k8s.Provider("kubernetes", { context: "bench" })] });
    const urn = await resolve(c.release?.urn as pulumi.Output<string>);
    expect(urn).toBe("urn:pulumi:bench::ui-exposure::ui-exposure:cilium:Cilium$kubernetes:helm.sh/v3:Release::cilium-release");
    await pulumi.runtime.disconnect();
    const release = registered.find((r) => r.type === RELEASE_TYPE);
    expect(release?.name).toBe(releaseResourceName("cilium"));
    // Through the stack's provider, never the default one (the ambient kube context).
    expect(release?.provider).toBe("kubernetes");
    expect(release?.inputs).toMatchObject({ name: "cilium", namespace: "kube-system", chart: "cilium", version: "1.18.12", createNamespace: false });

    // The command in docs/cilium.md is exactly the one the outputs give, and names this release.
    const docs = fs.readFileSync(path.join(projectDir, "docs/cilium.md"), "utf8");
    const documented = [...docs.matchAll(/pulumi import ([a-z]+:\S+) (\S+) (\S+)/g)].map((m) => ({ type: m[1], name: m[2], id: m[3] }));
    expect(documented.length).toBeGreaterThan(0);
    for (const d of documented) expect(d).toEqual({ type: RELEASE_TYPE, name: release?.name, id: `${release?.inputs.namespace}/${release?.inputs.name}` });
    expect(docs).toContain(releaseImportCommand("cilium", { namespace: "kube-system", releaseName: "cilium" }));
    expect(ciliumSummary(plan, "cilium")).toMatchObject({ adopt: releaseImportCommand("cilium", { namespace: "kube-system", releaseName: "cilium" }) });
  });

  it("l4 under the engine logs the values diff, one line per key (pulumi.log.info); render does not", async () => {
    await mocks("bench");
    const plan = planCilium(l4(), bench, { ...nothing, ciliumConfig, helmRelease: liveRelease({ config: bgpSite }) }) as CiliumPlan;
    const logged: string[] = [];
    const info = pulumi.log.info;
    pulumi.log.info = async (message: string) => void logged.push(message);
    try {
      const providers = [new k8s.Provider("kubernetes", { context: "bench" })];
      new Cilium("quiet", { plan }, { providers });
      expect(logged).toEqual([]);
      new Cilium("cilium", { plan, logChanges: true }, { providers });
    } finally {
      pulumi.log.info = info;
    }
    expect(logged).toEqual([
      "cilium values: gatewayAPI.enabled: true -> false (owned by mode 'l4')",
      "cilium values: l2announcements.enabled: true -> false (owned by mode 'l4')",
      "cilium values: enableLBIPAM: true -> false (owned by mode 'l4')",
      "cilium values: rollOutCiliumPods: (unset) -> true (owned by mode 'l4')",
      "cilium values: operator.rollOutPods: (unset) -> true (owned by mode 'l4')",
    ]);
  });

  it("refuses to build without a Kubernetes provider (no fallback to the ambient context)", async () => {
    await mocks("bench");
    const plan = planCilium(l4(), bench, nothing) as CiliumPlan;
    expect(() => new Cilium("cilium", { plan })).toThrow(
      "Cilium cilium: no Kubernetes provider given (opts.providers): it would deploy through the ambient kube context",
    );
  });

  it("l4: what makes the first up after the import an in-place upgrade", async () => {
    await mocks("bench");
    const plan = planCilium(l4(), bench, nothing) as Extract<CiliumPlan, { mode: "l4" }>;
    // name and namespace are the provider's only replace-triggering fields: always explicit.
    expect(releaseArgs(plan.release)).toMatchObject({ name: "cilium", namespace: "kube-system" });
    // The values (the live release's, which may hold credentials) are a secret: encrypted in the state, hidden by preview (outside tester).
    const values = releaseArgs(plan.release).values as pulumi.Output<unknown>;
    expect(await pulumi.isSecret(values)).toBe(true);
    const opts = releaseOptions(new pulumi.ComponentResource("ui-exposure:cilium:Cilium", "probe", {}, {}));
    // `{ parent: rootStackResource }` = the root-level URN `pulumi import` created.
    expect(opts.aliases).toEqual([{ parent: pulumi.rootStackResource }]);
    expect(Object.hasOwn(opts.aliases?.[0] as object, "parent")).toBe(true);
    expect(opts.retainOnDelete).toBe(true);
    expect(opts.protect).toBeUndefined();
  });
});

describe("printed Cilium values never show a credential (outside tester)", () => {
  it("masks under a sensitive key at any depth of mappings and lists, an env-style item by its name, and a URL's user and password", () => {
    const live = {
      clustermesh: { config: { clusters: [{ name: "c2", address: "c2.example", tls: { cert: "C", key: "K", caCert: "CA" } }] } },
      extraEnv: [
        { name: "AWS_SECRET_ACCESS_KEY", value: "S" },
        { name: "LOG_LEVEL", value: "debug" },
      ],
      bgp: { auth: { pass: "P" } },
      etcd: { endpoints: ["https://user:URLPASS@etcd:2379"] },
      tolerations: [{ operator: "Exists" }],
      credentials: "X",
      passphrase: "Y",
      pwd: "Z",
    };
    const shown = JSON.stringify(maskedValues(live));
    for (const secret of ['"C"', '"K"', '"CA"', '"S"', '"P"', "URLPASS", '"X"', '"Y"', '"Z"']) expect(shown, secret).not.toContain(secret);
    expect(maskedValues(live)).toMatchObject({
      clustermesh: { config: { clusters: [{ name: "c2", address: "c2.example", tls: { cert: "(hidden)", key: "(hidden)", caCert: "(hidden)" } }] } },
      extraEnv: [
        { name: "AWS_SECRET_ACCESS_KEY", value: "(hidden)" },
        { name: "LOG_LEVEL", value: "debug" },
      ],
      etcd: { endpoints: ["https://user:****@etcd:2379"] },
      tolerations: [{ operator: "Exists" }],
    });
  });
});
