// The e2e suite runs in two lanes: vitest's two workers (vitest.e2e.config.mts) each take the next
// file as soon as they are free, in the order below, the longest first. The same figures give that
// order and .ci/run's budget guard (test/support/e2e-lanes-seconds.ts), which counts
// the longer lane, not the sum. Every file can share the machine with any other: each one's ports,
// folders, PULUMI_HOME, namespaces, nftables and BPF are its own (docs/e2e-toolchain.md, "Lanes").
export const LANES = 2;

/**
 * Seconds each e2e file took, hooks included, in the suite's two lanes (each beside another file),
 * from test-output/e2e-files.json of 2026-12-02 (load average about 8 from other jobs); where they
 * come from: docs/e2e-toolchain.md, "Budget guard".
 */
export const MEASURED_SECONDS: Readonly<Record<string, number>> = {
  sandbox: 541,
  team: 280,
  admission: 266,
  "cilium-datapath": 236,
  monitoring: 215,
  ownership: 187,
  drift: 158,
  scenarios: 88,
  "policy-pack": 102,
  "tenant-load": 83,
  datapath: 75,
  runbook: 60,
  stacks: 53,
  infra: 46,
  processes: 30,
  "portal-incluster": 24,
};

export interface LanePlan {
  /** The files (as given), longest first: the order vitest hands them to its workers. */
  order: string[];
  /** Which files each lane runs, had each file its measured time. */
  lanes: string[][];
  /** The longer lane's seconds: the suite's expected time. */
  seconds: number;
  /** Files with no figure yet, counted as the longest measured one. */
  unmeasured: string[];
}

/** `test/e2e/team.e2e.ts` or `team` -> `team`. */
const nameOf = (file: string) => file.replace(/^.*\//, "").replace(/\.e2e\.ts$/, "");

/** Each next file goes to the lane that frees first (what vitest's workers do), longest first. */
export function planLanes(files: readonly string[], figures: Readonly<Record<string, number>> = MEASURED_SECONDS, lanes = LANES): LanePlan {
  const longest = Math.max(0, ...Object.values(figures));
  const unmeasured = files.filter((f) => figures[nameOf(f)] === undefined);
  const secs = (f: string) => figures[nameOf(f)] ?? longest;
  const order = [...files].sort((a, b) => secs(b) - secs(a) || nameOf(a).localeCompare(nameOf(b)));
  const plan = Array.from({ length: lanes }, () => ({ files: [] as string[], seconds: 0 }));
  for (const f of order) {
    const lane = plan.reduce((free, l) => (l.seconds < free.seconds ? l : free));
    lane.files.push(f);
    lane.seconds += secs(f);
  }
  return { order, lanes: plan.map((l) => l.files), seconds: Math.max(0, ...plan.map((l) => l.seconds)), unmeasured };
}
