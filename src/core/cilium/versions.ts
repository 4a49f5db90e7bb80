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
 * Assumption: keys do not change within a minor (patch releases only fix bugs), so the
 * table is keyed by minor and any patch of a listed minor is accepted.
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

/** "1.18.12" or "1.20.0-rc.1" -> "1.18" / "1.20"; undefined when it is not a version. */
export function chartMinor(version: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.\d+/.exec(version);
  return m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
}

/** The key table of a chart version, or undefined for a minor this program does not know. */
export function chartKeysFor(version: string): ChartKeys | undefined {
  const minor = chartMinor(version);
  return minor !== undefined ? CHART_KEYS[minor] : undefined;
}
