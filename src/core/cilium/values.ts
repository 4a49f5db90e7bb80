import type { L4CiliumSettings } from "../settings";
import type { LiveRelease } from "./release";
import { type ChartKeys, chartKeysCheck } from "./versions";

/** Where the extra values live in the stack file, for messages. */
const VALUES_SETTING = "ui-exposure:cilium.values";

export type Values = Record<string, unknown>;

function isMapping(v: unknown): v is Values {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Helm-style deep merge: mappings merge key by key, anything else (scalars, lists, null) in `over` replaces what `base` had. Neither input is modified. */
export function deepMerge(base: Values, over: Values): Values {
  const out: Values = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isMapping(prev) && isMapping(value) ? deepMerge(prev, value) : value;
  }
  return out;
}

/**
 * The values an L4-only Cilium needs, only keys the chart version has (versions.ts): kube-proxy
 * replacement (with the API server address), no Gateway API, L2 announcements or LB-IPAM, and
 * agents and operator restarted by a config change (else `helm upgrade` changes only the
 * ConfigMap). NodePort/hostPort keys stay as installed: changing them disrupts connections.
 */
function l4BaseValues(keys: ChartKeys, apiServer: { host: string; port: number }): Values {
  return {
    // A boolean is fine on every version: cilium-configmap.yaml compares `toString` of it with "true"/"false". The old "strict" fails the chart's render since
    // 1.16.
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

/** A values path the L4 mode owns: extra values may repeat it, never contradict it. */
interface Pinned {
  path: readonly string[];
  /** Shown in messages. */
  expected: string;
  accepts(value: unknown): boolean;
  /** Whether the pinned version has the key (the stale-key rules cover the others). */
  applies(keys: ChartKeys): boolean;
  /** The message for a value it does not accept (`where` names the setting). */
  explain(where: string, value: unknown): string;
}

const always = () => true;

/** A key mode 'l4' needs at `expected`, `why` said in the message. */
function needs(path: readonly string[], expected: boolean, why: string, applies: (keys: ChartKeys) => boolean = always): Pinned {
  return {
    path,
    expected: String(expected),
    accepts: (v) => v === expected,
    applies,
    explain: (where, value) => {
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

const PINNED: readonly Pinned[] = [
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

/**
 * Problems with the extra values of the stack config, one message per key: a value that contradicts the L4 mode, a key the pinned chart version does not have,
 * a key that has its own stack setting, a `--set`-style dotted key (which Helm would take literally and which would slip past the checks above).
 */
export function extraValuesProblems(extra: Values, version: string, keys: ChartKeys): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(extra)) {
    if (key.includes(".")) {
      const [head, ...rest] = key.split(".");
      problems.push(
        `cilium (l4): ${VALUES_SETTING} has the key '${key}': values are nested mappings, not --set paths; write ${head}: {${rest.join(".")}: ...} instead`,
      );
    }
  }
  for (const key of ["k8sServiceHost", "k8sServicePort"]) {
    if (Object.hasOwn(extra, key)) {
      problems.push(`cilium (l4): ${setting([key])}: set ui-exposure:cilium.${key} instead (one place for the API server address)`);
    }
  }
  for (const v of VERSIONED) {
    const found = lookup(extra, v.path);
    if (found.kind !== "absent" && !v.has(keys)) {
      problems.push(`cilium (l4): ${setting(v.path)} does not exist in chart ${version} (${v.note}); the chart would ignore it silently: remove it`);
    }
  }
  if (keys.k8sServiceHostRef && Object.hasOwn(extra, "k8sServiceHostRef")) {
    problems.push(
      `cilium (l4): ${setting(["k8sServiceHostRef"])}: the chart refuses it together with k8sServiceHost, which mode 'l4' sets from ui-exposure:cilium.k8sServiceHost`,
    );
  }
  for (const rule of PINNED) {
    if (!rule.applies(keys)) continue;
    const found = lookup(extra, rule.path);
    if (found.kind === "notMapping") {
      problems.push(
        `cilium (l4): ${setting(found.at)} is ${show(found.value)}; it must be a mapping, since mode 'l4' sets ${rule.path.join(".")}: ${rule.expected} in it`,
      );
    } else if (found.kind === "value" && !rule.accepts(found.value)) {
      problems.push(rule.explain(setting(rule.path), found.value));
    }
  }
  return problems;
}

/** The values paths mode 'l4' owns (the keys l4BaseValues sets): the only ones it changes on a live release. */
export const OWNED_PATHS: readonly (readonly string[])[] = [
  ["kubeProxyReplacement"],
  ["k8sServiceHost"],
  ["k8sServicePort"],
  ["gatewayAPI", "enabled"],
  ["l2announcements", "enabled"],
  ["enableLBIPAM"],
  ["rollOutCiliumPods"],
  ["operator", "rollOutPods"],
];

/** `kubeProxyReplacement` meaning full replacement: true, "true", or "strict" (charts up to 1.15). */
const kprOn = (v: unknown) => v === true || v === "true" || v === "strict";

/** The effective value of `path` on the live release: the user-supplied value, else the live chart's default. */
function liveValue(live: LiveRelease, path: readonly string[]): unknown {
  const set = lookup(live.config, path);
  if (set.kind === "value") return set.value;
  const dflt = lookup(live.defaults, path);
  return dflt.kind === "value" ? dflt.value : undefined;
}

/** Why the live release cannot be switched by mode 'l4' (kube-proxy replacement off; a k8sServiceHostRef that would clash with k8sServiceHost). */
function liveReleaseProblems(live: LiveRelease): string[] {
  const problems: string[] = [];
  const kpr = liveValue(live, ["kubeProxyReplacement"]);
  if (!kprOn(kpr)) {
    const from = lookup(live.config, ["kubeProxyReplacement"]).kind === "value" ? "its values" : `the default of chart ${live.chartVersion}`;
    problems.push(
      `cilium (l4): the live release (${live.record}) runs with kubeProxyReplacement ${show(kpr)} (${from}); mode 'l4' keeps kube-proxy replacement as it runs and never turns it on: that is a cluster-wide change (kube-proxy goes, every node's Services move to eBPF), to make through the cluster's own Cilium procedure first; then run up again (docs/cilium.md)`,
    );
  }
  if (lookup(live.config, ["k8sServiceHostRef"]).kind === "value") {
    problems.push(
      `cilium (l4): the live release (${live.record}) sets k8sServiceHostRef; the chart refuses it together with k8sServiceHost, which mode 'l4' sets from ui-exposure:cilium.k8sServiceHost: remove it from the release through the cluster's own procedure, or give the same address in ui-exposure:cilium.k8sServiceHost and drop k8sServiceHostRef`,
    );
  }
  return problems;
}

/** Leaf paths of a values tree (a mapping's keys, recursively; lists, scalars and empty mappings are leaves). */
function leafPaths(values: Values, prefix: readonly string[] = []): string[][] {
  return Object.entries(values).flatMap(([k, v]) => (isMapping(v) && Object.keys(v).length ? leafPaths(v, [...prefix, k]) : [[...prefix, k]]));
}

/** A key path whose value may be a credential: its values are never shown. */
const SENSITIVE = /password|token|key|cert|secret/i;
const MAX_SHOWN = 120;
function shownLeaf(path: readonly string[], v: unknown): string {
  if (v === undefined) return "(unset)";
  if (SENSITIVE.test(path.join("."))) return "(hidden)";
  const text = JSON.stringify(v);
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}

/**
 * The values diff of an l4 `up` against the live release, one line per key that changes: the owned keys, and every key the stack's cilium.values sets to
 * another value than the live one (the user's, else the live chart's default). Nothing else can change: every other value is carried from the live release.
 * Values under a key path that looks like a credential are hidden.
 */
export function releaseValuesDiff(settings: L4CiliumSettings, values: Values, live: LiveRelease | undefined): string[] {
  const lines: string[] = [];
  const at = (v: Values, path: readonly string[]) => {
    const found = lookup(v, path);
    return found.kind === "value" ? found.value : undefined;
  };
  if (live && live.chartVersion !== settings.chart.version) {
    lines.push(
      `cilium values: chart ${live.chartVersion} -> ${settings.chart.version} (a Cilium upgrade: keys nobody set take the new chart's defaults; follow Cilium's upgrade notes)`,
    );
  }
  const owned = new Set(OWNED_PATHS.map((p) => p.join(".")));
  const seen = new Set<string>();
  for (const path of [...OWNED_PATHS, ...leafPaths(settings.values)]) {
    const key = path.join(".");
    if (seen.has(key)) continue;
    seen.add(key);
    const after = at(values, path);
    if (after === undefined && owned.has(key)) continue;
    const before = live ? liveValue(live, path) : undefined;
    if (JSON.stringify(before) === JSON.stringify(after)) continue;
    lines.push(
      `cilium values: ${key}: ${shownLeaf(path, before)} -> ${shownLeaf(path, after)} (${owned.has(key) ? "owned by mode 'l4'" : `set in ${VALUES_SETTING}`})`,
    );
  }
  return lines;
}

/**
 * Full values of the L4 release: the live release's user-supplied values (`live`; none on a fresh install), then the stack's extra values, then the keys mode
 * 'l4' owns. Every key l4 does not own keeps its live value unless the stack's values say otherwise.
 */
export function l4Values(settings: L4CiliumSettings, stackFile: string, live?: LiveRelease): { values: Values } | { problems: string[] } {
  const version = settings.chart.version;
  const checked = chartKeysCheck(version);
  if ("problem" in checked) return { problems: [`cilium (l4): ${checked.problem}`] };
  const keys = checked.keys;
  const problems: string[] = [];
  const host = settings.k8sServiceHost;
  if (host === undefined) {
    problems.push(
      `cilium (l4): ui-exposure:cilium.k8sServiceHost is required in ${stackFile}: with kube-proxy replacement the agents reach the API server directly, not through the kubernetes Service (give the control-plane address, e.g. its InternalIP)`,
    );
  } else if (host === "auto") {
    problems.push(
      `cilium (l4): ui-exposure:cilium.k8sServiceHost 'auto' is not supported: the chart resolves it with a Helm lookup of kube-public/cluster-info that a preview cannot see; give the API server address in ${stackFile}`,
    );
  }
  if (settings.k8sServicePort === undefined) {
    problems.push(
      `cilium (l4): ui-exposure:cilium.k8sServicePort is required in ${stackFile}: the API server port (usually 6443) that goes with k8sServiceHost`,
    );
  }
  problems.push(...extraValuesProblems(settings.values, version, keys));
  if (live) problems.push(...liveReleaseProblems(live));
  if (problems.length || host === undefined || settings.k8sServicePort === undefined) return { problems };
  return { values: deepMerge(deepMerge(live?.config ?? {}, settings.values), l4BaseValues(keys, { host, port: settings.k8sServicePort })) };
}
