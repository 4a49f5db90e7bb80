import type { UndeclaredExposure } from "../audit";
import type { Contract } from "../contract/schema";
import type { ProbeResultJson } from "../json-api";
import type { ClusterReader } from "../kube/cluster";
import { type ObservedCluster, type ObservedEntry, observe, type PublishedEndpoints, type Verdict } from "../observe";
import type { NodeChoice } from "../plan";

// Whether the users' URL answers, as the portal's own probe saw it (`exposure probe`'s expectations). `null` fields are unknown (no answer: no status).
export interface Reachability extends Pick<ProbeResultJson, "ok" | "url" | "expected" | "location"> {
  status: number | null;
  latencyMs: number | null;
  /** Why it is not OK (unexpected status, refused, timeout...); null when OK. */
  error: string | null;
  /** When the probe answered (ISO 8601). */
  checkedAt: string;
  /** https only: the certificate is not verified (self-signed UIs), and the page says so. */
  tlsVerified?: false;
}

/** One row of the portal: the verdict of `exposure status`, the contract's group, the probe's answer. */
export interface PortalEntry extends ObservedEntry {
  group?: string;
  /** Absent when the entry has no URL to probe, or when probing is off. */
  reachability?: Reachability;
  /** ABSENT entries only: the URL the last `up` published (users' bookmark), dead now: text, never a link. */
  lastPublishedUrl?: string;
}

/** What the portal shows (HTML) and serves (JSON): one observation of the cluster. */
export interface PortalView {
  generatedAt: string;
  /** When the cluster was read (shared by the loads of one read interval). */
  observedAt: string;
  /** Where the cluster was read ("context bench (https://...)", "in-cluster ServiceAccount (...)"). */
  source: string;
  stack?: string;
  contract?: string;
  node?: NodeChoice;
  problems: string[];
  summary: Record<Verdict, number>;
  /** The portal's own probes: on or off, and how long an answer is reused. */
  reachability: { enabled: boolean; cacheSeconds?: number };
  entries: PortalEntry[];
  /** With the audit: the undeclared exposure `exposure drift` finds (count, the first UNDECLARED_SHOWN), or why its last round could not read the cluster. */
  undeclared?: { count: number; shown: UndeclaredExposure[] } | { unread: string };
}

/** How many undeclared exposures the portal keeps and shows (the count is whole): a tenant's thousands cost a page of memory. */
export const UNDECLARED_SHOWN = 20;

/** What the portal shows instead when the cluster cannot be read. */
export interface PortalError extends Pick<PortalView, "generatedAt" | "source" | "stack"> {
  error: string;
}

/** A cluster whose credential is looked up at each read (the in-cluster portal's other clusters, from Secrets): `connect` opens it for one round. */
export interface RemoteCluster {
  readonly source: string;
  readonly name?: string;
  connect(): Promise<ClusterReader>;
}

export interface PortalSource {
  contract: Contract;
  cluster: ClusterReader | RemoteCluster;
  /** The exposed entries the stack publishes; default all (the portal without a stack). */
  selected?: readonly string[] | "all";
  /** The stack's pinned node address (`ui-exposure:nodeAddress`). */
  nodeAddress?: string;
  /** Stack outputs of the last `up`, when known: a changed nodePort then shows as DRIFT. */
  published?: PublishedEndpoints;
  stack?: string;
  /** Contract file, as shown on the page. */
  contractLabel?: string;
  now?: () => Date;
}

/** The exposed entries the portal judges (and whose Services, nodes, pods it reads). */
export function wantedEntries(src: Pick<PortalSource, "contract" | "selected">) {
  const selected = src.selected ?? "all";
  return src.contract.endpoints.filter((e) => e.exposed && (selected === "all" || selected.includes(e.name)));
}

/** The view of one cluster read: `exposure status`'s verdicts (observe), each with its contract group (the server adds the answers). Pure. */
export function buildPortalView(
  src: Omit<PortalSource, "cluster"> & { source: string },
  cluster: ObservedCluster,
  at: { observedAt: Date; generatedAt: Date },
  reachability: PortalView["reachability"] = { enabled: false },
  // Given when the read already judged the entries (observeStack): observe() walks every Service, once per read.
  observation = observe(src.contract, cluster, src),
): PortalView {
  const groups = new Map(src.contract.endpoints.map((e) => [e.name, e.group]));
  const summary: Record<Verdict, number> = { MATCH: 0, DRIFT: 0, ABSENT: 0, "NOT-EXPOSED": 0 };
  for (const e of observation.entries) summary[e.verdict]++;
  const entries = observation.entries.map((e): PortalEntry => {
    const group = groups.get(e.name);
    const last = e.verdict === "ABSENT" && !e.url ? src.published?.[e.name]?.url : undefined;
    return { ...e, ...(group ? { group } : {}), ...(last ? { lastPublishedUrl: last } : {}) };
  });
  return {
    generatedAt: at.generatedAt.toISOString(),
    observedAt: at.observedAt.toISOString(),
    source: src.source,
    ...(src.stack ? { stack: src.stack } : {}),
    ...(src.contractLabel ? { contract: src.contractLabel } : {}),
    ...(observation.node ? { node: observation.node } : {}),
    problems: observation.problems,
    summary,
    reachability,
    entries,
  };
}
