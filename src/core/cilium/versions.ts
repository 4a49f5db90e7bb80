/**
 * Which values keys each Cilium chart minor has, for the keys the L4 mode generates or
 * polices. The chart's values.schema.json is not strict (no `additionalProperties: false`),
 * so a key that a version dropped is accepted and silently ignored; this table is how the
 * program knows better.
 *
 * Read from the published chart archives (cilium/charts), values.yaml and values.schema.json
 * of 1.16.19, 1.17.18, 1.18.12, 1.19.6 and 1.20.0; copies in shared/reference/cilium/<version>/,
 * summary in shared/notes/cilium.md section 1. test/cilium.test.ts re-checks this table
 * against those copies when they are present.
 *
 * Keys do change inside a minor: `externalIPs` is still in 1.17.0 to 1.17.5, and the
 * pre-releases differ from their minor's releases (1.17.0-pre.0 has no `enableLBIPAM`,
 * 1.18.0-pre.0 to pre.2 still have `hostPort` and `externalIPs`...). So the table is keyed by
 * minor with the per-patch exceptions below, only stable releases up to the newest patch it was
 * checked against are accepted (CHECKED_PATCH), and pre-releases are refused.
 */
export interface ChartKeys {
  /**
   * `kubeProxyReplacement` is a documented values key (1.18+). In 1.16/1.17 it is commented
   * out in values.yaml and missing from the schema, but the templates still read it
   * (cilium-configmap.yaml), so the L4 mode sets it on every version.
   */
  kubeProxyReplacementDocumented: boolean;
  /** `enableLBIPAM`: the switch that turns LB-IPAM off; new in 1.17 (1.16 has no switch). */
  enableLBIPAM: boolean;
  /** `defaultLBServiceIPAM`: new in 1.17. */
  defaultLBServiceIPAM: boolean;
  /** `nodePort.enabled`: removed in 1.19 (the agent flag went away; KPR serves NodePort). */
  nodePortEnabled: boolean;
  /** `hostPort` (the whole block): removed in 1.18 (KPR serves hostPort). */
  hostPort: boolean;
  /** `externalIPs` (the whole block): removed in 1.17. */
  externalIPs: boolean;
  /** `k8sServiceHostRef`: new in 1.18 (the chart fails if it is set together with k8sServiceHost). */
  k8sServiceHostRef: boolean;
}

export const CHART_KEYS: Readonly<Record<string, ChartKeys>> = {
  "1.16": {
    kubeProxyReplacementDocumented: false,
    enableLBIPAM: false,
    defaultLBServiceIPAM: false,
    nodePortEnabled: true,
    hostPort: true,
    externalIPs: true,
    k8sServiceHostRef: false,
  },
  "1.17": {
    kubeProxyReplacementDocumented: false,
    enableLBIPAM: true,
    defaultLBServiceIPAM: true,
    nodePortEnabled: true,
    hostPort: true,
    externalIPs: false,
    k8sServiceHostRef: false,
  },
  "1.18": {
    kubeProxyReplacementDocumented: true,
    enableLBIPAM: true,
    defaultLBServiceIPAM: true,
    nodePortEnabled: true,
    hostPort: false,
    externalIPs: false,
    k8sServiceHostRef: true,
  },
  "1.19": {
    kubeProxyReplacementDocumented: true,
    enableLBIPAM: true,
    defaultLBServiceIPAM: true,
    nodePortEnabled: false,
    hostPort: false,
    externalIPs: false,
    k8sServiceHostRef: true,
  },
  "1.20": {
    kubeProxyReplacementDocumented: true,
    enableLBIPAM: true,
    defaultLBServiceIPAM: true,
    nodePortEnabled: false,
    hostPort: false,
    externalIPs: false,
    k8sServiceHostRef: true,
  },
};

export const SUPPORTED_MINORS = Object.keys(CHART_KEYS);

/**
 * The newest patch of each minor whose chart the table was checked against: the published
 * archives, and for 1.20.1/1.20.2 the chart the Go module github.com/cilium/cilium ships
 * (install/kubernetes/cilium; the e2e installs that chart next to an agent of the same version).
 */
export const CHECKED_PATCH: Readonly<Record<string, number>> = { "1.16": 19, "1.17": 18, "1.18": 12, "1.19": 6, "1.20": 2 };

/** Per-patch exceptions inside a minor (from the chart archives of every patch). */
const PATCH_EXCEPTIONS: readonly { minor: string; upTo: number; keys: Partial<ChartKeys> }[] = [
  // `externalIPs` left the chart in 1.17.6, not 1.17.0.
  { minor: "1.17", upTo: 5, keys: { externalIPs: true } },
];

/** "1.18.12" or "1.20.0-rc.1" -> "1.18" / "1.20"; undefined when it is not a version. */
export function chartMinor(version: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.\d+/.exec(version);
  return m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
}

/** The key table of a chart version, or why the program refuses that version. */
export function chartKeysCheck(version: string): { keys: ChartKeys } | { problem: string } {
  const range = `Cilium ${SUPPORTED_MINORS[0]}.0 to ${SUPPORTED_MINORS.at(-1)}.${CHECKED_PATCH[SUPPORTED_MINORS.at(-1) as string]}`;
  const m = /^(\d+)\.(\d+)\.(\d+)(-.+)?$/.exec(version);
  const minor = m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
  const table = minor !== undefined ? CHART_KEYS[minor] : undefined;
  if (!m || minor === undefined || !table) {
    return {
      problem: `chart version ${version} is not supported: the values keys are known for ${range} only (src/core/cilium/versions.ts); pin one of those in ui-exposure:cilium.chart.version, or check the new chart's values.yaml and add its minor to that table`,
    };
  }
  if (m[4]) {
    return {
      problem: `chart version ${version} is a pre-release: its values keys differ from its minor's releases and were not checked; pin a release (${minor}.0 to ${minor}.${CHECKED_PATCH[minor]})`,
    };
  }
  const patch = Number(m[3]);
  const checked = CHECKED_PATCH[minor] ?? 0;
  if (patch > checked) {
    return {
      problem: `chart version ${version} has not been checked: keys change inside a minor, and the table was checked up to ${minor}.${checked}; pin ${minor}.${checked} or older, or check ${version}'s values.yaml and raise CHECKED_PATCH in src/core/cilium/versions.ts`,
    };
  }
  const exceptions = PATCH_EXCEPTIONS.filter((x) => x.minor === minor && patch <= x.upTo).map((x) => x.keys);
  return { keys: Object.assign({}, table, ...exceptions) };
}

/** The key table of a chart version, or undefined for a version this program refuses. */
export function chartKeysFor(version: string): ChartKeys | undefined {
  const checked = chartKeysCheck(version);
  return "keys" in checked ? checked.keys : undefined;
}
