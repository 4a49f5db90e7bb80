/** The values keys each chart minor has, of those l4 sets or polices (the schema ignores a dropped key); test/cilium.test.ts checks them against the charts. */
export type ChartKeys = Record<keyof typeof KEY_CHANGES, boolean>;

export const SUPPORTED_MINORS = ["1.16", "1.17", "1.18", "1.19", "1.20"];

/** The minor that added each key, or the one that removed it; the others have it in every supported minor. */
const KEY_CHANGES = {
  // Documented from 1.18; commented out before, but cilium-configmap.yaml reads it on every version.
  kubeProxyReplacementDocumented: { added: "1.18" },
  // The switch that turns LB-IPAM off (1.16 has no switch).
  enableLBIPAM: { added: "1.17" },
  defaultLBServiceIPAM: { added: "1.17" },
  // `nodePort.enabled`, the `hostPort` and `externalIPs` blocks (KPR serves them all).
  nodePortEnabled: { removed: "1.19" },
  hostPort: { removed: "1.18" },
  externalIPs: { removed: "1.17" },
  // The chart fails if it is set together with k8sServiceHost.
  k8sServiceHostRef: { added: "1.18" },
} satisfies Record<string, { added: string } | { removed: string }>;

const since = (minor: string, other: string) => SUPPORTED_MINORS.indexOf(minor) >= SUPPORTED_MINORS.indexOf(other);

export const CHART_KEYS: Readonly<Record<string, ChartKeys>> = Object.fromEntries(
  SUPPORTED_MINORS.map((minor) => [
    minor,
    Object.fromEntries(
      Object.entries(KEY_CHANGES).map(([key, change]) => [key, "added" in change ? since(minor, change.added) : !since(minor, change.removed)]),
    ) as ChartKeys,
  ]),
);

/** The newest patch per minor the table was checked against: the published charts; for 1.20.1/1.20.2 the one github.com/cilium/cilium ships (the e2e's). */
export const CHECKED_PATCH: Readonly<Record<string, number>> = { "1.16": 19, "1.17": 18, "1.18": 12, "1.19": 6, "1.20": 2 };

/** "1.18.12" or "1.20.0-rc.1" -> "1.18" / "1.20"; undefined when it is not a version. */
export function chartMinor(version: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.\d+/.exec(version);
  return m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
}

/** The key table of a chart version, or why the program refuses that version. */
export function chartKeysCheck(version: string): { keys: ChartKeys } | { problem: string } {
  const m = /^(\d+)\.(\d+)\.(\d+)(-.+)?$/.exec(version);
  const minor = m ? `${Number(m[1])}.${Number(m[2])}` : undefined;
  const table = minor !== undefined ? CHART_KEYS[minor] : undefined;
  if (!m || minor === undefined || !table) {
    return {
      problem: `chart version ${version} is not supported: the values keys are known for Cilium ${SUPPORTED_MINORS[0]}.0 to ${SUPPORTED_MINORS.at(-1)}.${CHECKED_PATCH[SUPPORTED_MINORS.at(-1) as string]} only (src/core/cilium/versions.ts); pin one of those in ui-exposure:cilium.chart.version, or check the new chart's values.yaml and add its minor to that table`,
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
  // The one change inside a minor: `externalIPs` left the chart in 1.17.6, not 1.17.0.
  return { keys: minor === "1.17" && patch <= 5 ? { ...table, externalIPs: true } : table };
}

/** The key table of a chart version, or undefined for a version this program refuses. */
export function chartKeysFor(version: string): ChartKeys | undefined {
  const checked = chartKeysCheck(version);
  return "keys" in checked ? checked.keys : undefined;
}
