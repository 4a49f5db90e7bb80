import type { Contract } from "../contract/schema";
import type { ClusterReader } from "../kube/cluster";
import { type ObservedEntry, observe, type PublishedEndpoints, readObservedCluster, type Verdict } from "../observe";
import type { NodeChoice } from "../plan";

/** What the portal shows (HTML) and serves (JSON): one observation of the cluster. */
export interface PortalView {
  generatedAt: string;
  /** Where the cluster was read ("context bench (https://...)", "in-cluster ServiceAccount (...)"). */
  source: string;
  stack?: string;
  contract?: string;
  node?: NodeChoice;
  problems: string[];
  summary: Record<Verdict, number>;
  entries: ObservedEntry[];
}

/** What the portal shows instead when the cluster cannot be read. */
export interface PortalError {
  error: string;
  generatedAt: string;
  source: string;
  stack?: string;
}

export interface PortalSource {
  contract: Contract;
  cluster: ClusterReader;
  /** The exposed entries the stack publishes; default all (the portal without a stack). */
  selected?: readonly string[] | "all";
  /** The stack's pinned node address (`ui-exposure:nodeAddress`). */
  pinnedAddress?: string;
  /** Stack outputs of the last `up`, when known: a changed nodePort then shows as DRIFT. */
  published?: PublishedEndpoints;
  stack?: string;
  /** Contract file, as shown on the page. */
  contractLabel?: string;
  now?: () => Date;
}

/**
 * One page load: one list call per kind (readObservedCluster), then the verdicts of
 * `exposure status` (observe). Nothing is cached between loads: the links are the nodePorts
 * and node address the API server reports now, even right after a Service was recreated.
 */
export async function observePortal(src: PortalSource): Promise<PortalView> {
  const selected = src.selected ?? "all";
  const wanted = src.contract.endpoints.filter((e) => e.exposed && (selected === "all" || selected.includes(e.name)));
  const cluster = await readObservedCluster(src.cluster, wanted);
  const observation = observe(src.contract, cluster, {
    selected,
    ...(src.pinnedAddress ? { pinnedAddress: src.pinnedAddress } : {}),
    ...(src.published ? { published: src.published } : {}),
  });
  const summary: Record<Verdict, number> = { MATCH: 0, DRIFT: 0, ABSENT: 0, "NOT-EXPOSED": 0 };
  for (const e of observation.entries) summary[e.verdict]++;
  return {
    generatedAt: (src.now?.() ?? new Date()).toISOString(),
    source: src.cluster.source,
    ...(src.stack ? { stack: src.stack } : {}),
    ...(src.contractLabel ? { contract: src.contractLabel } : {}),
    ...(observation.node ? { node: observation.node } : {}),
    problems: observation.problems,
    summary,
    entries: observation.entries,
  };
}
