import { isObject as isMapping } from "../exposure-rules";
import type { L4CiliumSettings } from "../settings";
import { redactUrlPasswords } from "../text";
import type { LiveRelease } from "./release";
import { type ChartKeys, chartKeysCheck } from "./versions";

/** Where the extra values live in the stack file, for messages. */
const VALUES_SETTING = "ui-exposure:cilium.values";

export type Values = Record<string, unknown>;

/** Helm-style deep merge: mappings merge key by key, anything else (scalars, lists, null) in `over` replaces what `base` had. Neither input is modified. */
export function deepMerge(base: Values, over: Values): Values {
  const out: Values = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isMapping(prev) && isMapping(value) ? deepMerge(prev, value) : value;
  }
  return out;
}

/** The values an L4-only Cilium needs, of the chart version's keys. NodePort/hostPort keys stay as installed: changing them disrupts connections. */
function l4BaseValues(keys: ChartKeys, apiServer: { host: string; port: number }): Values {
  return {
    // A boolean works on every version (cilium-configmap.yaml compares its `toString` with "true"/"false"); "strict" fails the render since 1.16.
    kubeProxyReplacement: true,
    k8sServiceHost: apiServer.host,
    k8sServicePort: apiServer.port,
    gatewayAPI: { enabled: false },
    l2announcements: { enabled: false },
    // 1.16 has no switch: there LB-IPAM is "always enabled but dormant" until a pool exists.
    ...(keys.enableLBIPAM ? { enableLBIPAM: false } : {}),
    rollOutCiliumPods: true,
    operator: { rollOutPods: true },
  };
}

/**
 * A values path mode 'l4' owns at `expected` (`why` said in the message): extra values may repeat it, never contradict it. `applies`: whether the pinned
 * version has the key (VERSIONED covers the others).
 */
function needs(path: readonly string[], expected: boolean, why: string, applies = (_keys: ChartKeys) => true) {
  return {
    path,
    expected: String(expected),
    accepts: (v: unknown) => v === expected,
    applies,
    explain: (where: string, value: unknown) => {
      const hint =
        value === "strict"
          ? `; "strict" is no longer a valid value: the chart fails to render with it since 1.16`
          : value === String(expected)
            ? `; the chart's schema wants the boolean ${expected}, not a string`
            : "";
      return `cilium (l4): ${where} is ${show(value)}; mode 'l4' needs ${expected} (${why})${hint}`;
    },
  };
}

const PINNED: readonly ReturnType<typeof needs>[] = [
  {
    ...needs(["kubeProxyReplacement"], true, "kube-proxy replacement is what serves NodePorts and hostPorts in eBPF on the L4 path"),
    accepts: (v) => v === true || v === "true",
  },
  needs(["gatewayAPI", "enabled"], false, "no GatewayClass, Gateway or HTTPRoute on the L4 path"),
  needs(["l2announcements", "enabled"], false, "L2 announcements only advertise LoadBalancer addresses, which the L4 path does not use"),
  needs(["enableLBIPAM"], false, "no LB-IPAM on the L4 path", (k) => k.enableLBIPAM),
  needs(["rollOutCiliumPods"], true, "the agents must restart to run the new configuration; without it helm upgrade changes only the ConfigMap"),
  needs(["operator", "rollOutPods"], true, "the operator must restart to run the new configuration; without it helm upgrade changes only the ConfigMap"),
];

/** Keys a chart version dropped (or does not have yet): the schema would accept and ignore them. */
const VERSIONED: readonly { path: readonly string[]; has(keys: ChartKeys): boolean; note: string }[] = [
  { path: ["enableLBIPAM"], has: (k) => k.enableLBIPAM, note: "added in 1.17; before, LB-IPAM stays dormant only while no CiliumLoadBalancerIPPool exists" },
  { path: ["defaultLBServiceIPAM"], has: (k) => k.defaultLBServiceIPAM, note: "added in 1.17" },
  { path: ["nodePort", "enabled"], has: (k) => k.nodePortEnabled, note: "removed in 1.19: kube-proxy replacement always serves NodePorts" },
  { path: ["hostPort"], has: (k) => k.hostPort, note: "removed in 1.18: kube-proxy replacement always serves hostPorts" },
  { path: ["externalIPs"], has: (k) => k.externalIPs, note: "removed in 1.17" },
  { path: ["k8sServiceHostRef"], has: (k) => k.k8sServiceHostRef, note: "added in 1.18" },
];

type Lookup = { kind: "absent" } | { kind: "value"; value: unknown } | { kind: "notMapping"; at: readonly string[]; value: unknown };

/** Follows `path` in `values`, telling apart "not there" from "an ancestor is not a mapping". */
function lookup(values: Values, path: readonly string[]): Lookup {
  let current: Values = values;
  for (const [i, key] of path.entries()) {
    if (!Object.hasOwn(current, key)) return { kind: "absent" };
    const value = current[key];
    if (i === path.length - 1) return { kind: "value", value };
    if (!isMapping(value)) return { kind: "notMapping", at: path.slice(0, i + 1), value };
    current = value;
  }
  return { kind: "absent" };
}

const show = (v: unknown) => (v === undefined ? "undefined" : JSON.stringify(v));
const setting = (path: readonly string[]) => `${VALUES_SETTING}.${path.join(".")}`;

/** The stack's extra values' problems: against mode l4, unknown to the pinned chart, with a setting of their own, dotted (Helm takes `a.b` literally). */
export function extraValuesProblems(extra: Values, version: string, keys: ChartKeys): string[] {
  return [
    ...Object.keys(extra)
      .filter((key) => key.includes("."))
      .map((key) => {
        const [head, ...rest] = key.split(".");
        return `cilium (l4): ${VALUES_SETTING} has the key '${key}': values are nested mappings, not --set paths; write ${head}: {${rest.join(".")}: ...} instead`;
      }),
    ...["k8sServiceHost", "k8sServicePort"]
      .filter((key) => Object.hasOwn(extra, key))
      .map((key) => `cilium (l4): ${setting([key])}: set ui-exposure:cilium.${key} instead (one place for the API server address)`),
    ...VERSIONED.filter((v) => lookup(extra, v.path).kind !== "absent" && !v.has(keys)).map(
      (v) => `cilium (l4): ${setting(v.path)} does not exist in chart ${version} (${v.note}); the chart would ignore it silently: remove it`,
    ),
    keys.k8sServiceHostRef && Object.hasOwn(extra, "k8sServiceHostRef")
      ? `cilium (l4): ${setting(["k8sServiceHostRef"])}: the chart refuses it together with k8sServiceHost, which mode 'l4' sets from ui-exposure:cilium.k8sServiceHost`
      : undefined,
    ...PINNED.filter((rule) => rule.applies(keys)).flatMap((rule) => {
      const found = lookup(extra, rule.path);
      if (found.kind === "notMapping") {
        return [
          `cilium (l4): ${setting(found.at)} is ${show(found.value)}; it must be a mapping, since mode 'l4' sets ${rule.path.join(".")}: ${rule.expected} in it`,
        ];
      }
      return found.kind === "value" && !rule.accepts(found.value) ? [rule.explain(setting(rule.path), found.value)] : [];
    }),
  ].filter((p): p is string => p !== undefined);
}

/** Leaf paths of a values tree (lists, scalars and empty mappings are leaves). */
const leafPaths = (v: Values, at: string[] = []): string[][] =>
  Object.entries(v).flatMap(([k, x]) => (isMapping(x) && Object.keys(x).length ? leafPaths(x, [...at, k]) : [[...at, k]]));
/** The paths mode 'l4' owns: the only ones it changes on a live release. */
const OWNED = leafPaths(l4BaseValues({ enableLBIPAM: true } as ChartKeys, { host: "", port: 0 })).map((p) => p.join("."));
const valueAt = (v: Values, path: readonly string[]) => {
  const found = lookup(v, path);
  return found.kind === "value" ? found.value : undefined;
};
/** The effective value on the live release: the user-supplied one, else the live chart's default. */
const liveValue = (live: LiveRelease, path: readonly string[]) => valueAt(live.config, path) ?? valueAt(live.defaults, path);
/** A key whose value may be a credential: never shown. */
const SENSITIVE = /pass|pwd|token|key|cert|secret|credential|auth|private/i;
/** A value as printed: "(hidden)" under a sensitive key at any depth, or in an env-style item with a sensitive name; a URL's password as ****. */
function masked(x: unknown, sensitive: boolean): unknown {
  if (sensitive) return "(hidden)";
  if (Array.isArray(x)) return x.map((item) => masked(item, false));
  if (isMapping(x)) {
    const named = typeof x.name === "string" && SENSITIVE.test(x.name);
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, masked(v, SENSITIVE.test(k) || (named && k !== "name"))]));
  }
  return typeof x === "string" ? redactUrlPasswords(x) : x;
}
/** A leaf of the values diff, masked; long values are cut. */
const shownLeaf = (path: readonly string[], v: unknown) =>
  v === undefined ? "(unset)" : SENSITIVE.test(path.join(".")) ? "(hidden)" : JSON.stringify(masked(v, false)).replace(/^(.{120}).+$/s, "$1...");
/** Values to print (render), masked. */
export const maskedValues = (v: Values): Values => masked(v, false) as Values;

/** Why mode 'l4' refuses the live release: kube-proxy replacement off (it never turns it on), or a k8sServiceHostRef that clashes with k8sServiceHost. */
function liveReleaseProblems(live: LiveRelease): string[] {
  const kpr = liveValue(live, ["kubeProxyReplacement"]);
  const from = valueAt(live.config, ["kubeProxyReplacement"]) !== undefined ? "its values" : `the default of chart ${live.chartVersion}`;
  return [
    kpr === true || kpr === "true" || kpr === "strict"
      ? undefined
      : `cilium (l4): the live release (${live.record}) runs with kubeProxyReplacement ${show(kpr)} (${from}); mode 'l4' keeps kube-proxy replacement as it runs and never turns it on: that is a cluster-wide change (kube-proxy goes, every node's Services move to eBPF), to make through the cluster's own Cilium procedure first; then run up again (docs/cilium.md)`,
    valueAt(live.config, ["k8sServiceHostRef"]) === undefined
      ? undefined
      : `cilium (l4): the live release (${live.record}) sets k8sServiceHostRef, which the chart refuses next to the k8sServiceHost mode 'l4' sets: remove it through the cluster's own Cilium procedure first`,
  ].filter((p): p is string => p !== undefined);
}

/** The diff against the live release (its values, else its chart's defaults), one line per changed key: the owned ones and those cilium.values sets. */
export function releaseValuesDiff(settings: L4CiliumSettings, values: Values, live: LiveRelease | undefined): string[] {
  const version = settings.chart.version;
  const lines =
    live && live.chartVersion !== version
      ? [
          `cilium values: chart ${live.chartVersion} -> ${version} (a Cilium upgrade: keys nobody set take the new chart's defaults; follow Cilium's upgrade notes)`,
        ]
      : [];
  for (const key of new Set([...OWNED, ...leafPaths(settings.values).map((p) => p.join("."))])) {
    const path = key.split(".");
    const [before, after] = [live ? liveValue(live, path) : undefined, valueAt(values, path)];
    if ((after === undefined && OWNED.includes(key)) || JSON.stringify(before) === JSON.stringify(after)) continue;
    lines.push(
      `cilium values: ${key}: ${shownLeaf(path, before)} -> ${shownLeaf(path, after)} (${OWNED.includes(key) ? "owned by mode 'l4'" : `set in ${VALUES_SETTING}`})`,
    );
  }
  return lines;
}

/** Full values of the L4 release: the live release's user-supplied values (none on a fresh install), then the stack's extra values, then the owned keys. */
export function l4Values(settings: L4CiliumSettings, stackFile: string, live?: LiveRelease): { values: Values } | { problems: string[] } {
  const version = settings.chart.version;
  const checked = chartKeysCheck(version);
  if ("problem" in checked) return { problems: [`cilium (l4): ${checked.problem}`] };
  const host = settings.k8sServiceHost;
  const problems = [
    host === undefined
      ? `cilium (l4): ui-exposure:cilium.k8sServiceHost is required in ${stackFile}: with kube-proxy replacement the agents reach the API server directly, not through the kubernetes Service (give the control-plane address, e.g. its InternalIP)`
      : undefined,
    host === "auto"
      ? `cilium (l4): ui-exposure:cilium.k8sServiceHost 'auto' is not supported: the chart resolves it with a Helm lookup of kube-public/cluster-info that a preview cannot see; give the API server address in ${stackFile}`
      : undefined,
    settings.k8sServicePort === undefined
      ? `cilium (l4): ui-exposure:cilium.k8sServicePort is required in ${stackFile}: the API server port (usually 6443) that goes with k8sServiceHost`
      : undefined,
    ...extraValuesProblems(settings.values, version, checked.keys),
    ...(live ? liveReleaseProblems(live) : []),
  ].filter((p): p is string => p !== undefined);
  if (problems.length || host === undefined || settings.k8sServicePort === undefined) return { problems };
  return { values: deepMerge(deepMerge(live?.config ?? {}, settings.values), l4BaseValues(checked.keys, { host, port: settings.k8sServicePort })) };
}
