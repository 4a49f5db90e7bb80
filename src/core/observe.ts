import type { Contract, Endpoint } from "./contract/schema";
import { isHostPortEntry, isNodePortEntry } from "./contract/schema";
import { matchesLabels, ourServiceExcess, webScheme } from "./exposure-model";
import { type Finding, finding } from "./findings";
import type { ClusterReader } from "./kube/cluster";
import type { EndpointSlice, Node } from "./kube/types";
import {
  droppedSelectorProblem,
  foreignSelectorProblem,
  ourServiceKey,
  ourServiceName,
  ownershipProblem,
  selectorKeysBeyond,
  uidsUnknownTo,
} from "./ownership";
import {
  buildUrl,
  type ClusterView,
  chooseNode,
  findHostPortHolder,
  findServicePort,
  groupBy,
  indexServices,
  internalIP,
  internalIPProblem,
  isReadyNode,
  type NodeChoice,
  nodeWithAddress,
  readHostPortPods,
  unusableNodes,
} from "./plan";
import type { PublishedEndpoints } from "./published";

export type Verdict = "MATCH" | "DRIFT" | "ABSENT" | "NOT-EXPOSED";

/** One contract entry as the cluster shows it right now (status, portal). */
export interface ObservedEntry {
  name: string;
  description?: string;
  exposed: boolean;
  exposure: "nodePort" | "hostPort" | "none";
  namespace?: string;
  /** Our NodePort Service ("ns/name"), when it exists. */
  service?: string;
  /** Ready endpoints behind our Service (or 1/0 for the hostPort pod). */
  readyEndpoints: number;
  nodePort?: number;
  hostPort?: number;
  url?: string;
  /** The URL the last `up` published, when not `url` (a port moved by hand...): the one users have (`usersUrl`). */
  publishedUrl?: string;
  verdict: Verdict;
  /** Why the verdict is DRIFT or ABSENT, each with its stable code (DRIFT_CODES); empty for MATCH. */
  findings: Finding[];
  /** The same, messages only (`findings[].message`). */
  reasons: string[];
}

/** The stable code of every reason an entry is DRIFT or ABSENT (docs/commands.md, status). */
export const DRIFT_CODES = [
  "service-absent",
  "service-not-ours",
  "port-name-changed",
  "extra-exposure",
  "service-type-changed",
  "external-traffic-local",
  "vendored-service-gone",
  "selector-differs",
  "selector-key-added",
  "selector-key-dropped-by-chart",
  "vendored-port-gone",
  "target-port-differs",
  "node-port-moved",
  "node-not-ready",
  "url-node-moved",
  "no-ready-endpoints",
  "no-node-address",
  "no-node-port",
  "host-port-absent",
  "pod-not-ready",
  "node-without-address",
  "pod-moved",
] as const;
export type DriftCode = (typeof DRIFT_CODES)[number];

/** An entry's verdict from its findings: each one a DRIFT reason. */
function verdictOf(entry: string, found: readonly [DriftCode, string][]): Pick<ObservedEntry, "verdict" | "findings" | "reasons"> {
  const findings = found.map(([code, message]) => finding(code, "drift", entry, message));
  return { verdict: findings.length ? "DRIFT" : "MATCH", findings, reasons: findings.map((f) => f.message) };
}

/** An entry whose object is absent: ABSENT, for that one reason. */
const absentEntry = (entry: Omit<ObservedEntry, "readyEndpoints" | "verdict" | "findings" | "reasons">, code: DriftCode, message: string): ObservedEntry => ({
  ...entry,
  readyEndpoints: 0,
  ...verdictOf(entry.name, [[code, message]]),
  verdict: "ABSENT",
});

export type Observation = ReturnType<typeof observe>;

export type { PublishedEndpoints };

export interface ObservedCluster extends ClusterView {
  endpointSlices: readonly EndpointSlice[];
}

const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** What the verdicts of these entries read, where they are (invariant 8): each entry namespace's vendored Service and ours, our slices, the Nodes, hostPort pods. */
export async function readObservedCluster(cluster: ClusterReader, entries: readonly Endpoint[]): Promise<ObservedCluster> {
  const names = new Map<string, Set<string>>();
  const ours = new Map<string, string[]>();
  for (const e of entries) {
    if (!e.service) continue;
    const ns = e.service.namespace;
    names.set(ns, (names.get(ns) ?? new Set<string>()).add(e.service.name));
    if (!e.exposed) continue;
    names.get(ns)?.add(ourServiceName(e.name));
    // A contract entry's name is a DNS label short enough that ours is a label value (entryName).
    ours.set(ns, [...(ours.get(ns) ?? []), ourServiceName(e.name)]);
  }
  const namespaces = [...names.keys()].sort();
  const [services, endpointSlices, nodes, pods] = await Promise.all([
    Promise.all(namespaces.map((namespace) => cluster.listServices({ namespace, keep: (s) => names.get(namespace)?.has(s.metadata.name) === true }))),
    Promise.all([...ours].map(([namespace, names]) => cluster.listEndpointSlices({ namespace, labels: { [SERVICE_NAME_LABEL]: names.sort() } }))),
    cluster.listNodes(),
    readHostPortPods(cluster, entries),
  ]);
  return { services: services.flat(), endpointSlices: endpointSlices.flat(), nodes, pods };
}

/** What a stack judges: its contract, the exposed entries it publishes ("all": every one), its pinned node address. */
export type StackToObserve = { contract: Contract; selected: readonly string[] | "all"; nodeAddress?: string | undefined };
export type StackObservation<P, X = undefined> = Awaited<ReturnType<typeof observeStack<P & { proven?: PublishedEndpoints }, X>>>;

/**
 * The one read sequence of status, drift, access, probe and the portal: the cluster and the last up's outputs (whose `proven` endpoints prove which
 * Services the stack created) concurrently, then the entries' objects, then every verdict (observe). `alsoRead` reads more in the same round (drift's
 * audit); `recheck` is told the uids the outputs do not know (an `up` just re-created one) and may read them again.
 */
export async function observeStack<P extends { proven?: PublishedEndpoints }, X = undefined>(
  stack: StackToObserve,
  read: {
    connect: () => Promise<ClusterReader>;
    published: () => Promise<P>;
    entries: readonly Endpoint[];
    alsoRead?: (reader: ClusterReader) => Promise<X>;
    recheck?: (unknownUids: string[]) => Promise<P> | undefined;
  },
) {
  const [first, { reader, cluster, also }] = await Promise.all([
    read.published(),
    read.connect().then(async (reader) => {
      const [cluster, also] = await Promise.all([readObservedCluster(reader, read.entries), read.alsoRead?.(reader) as Promise<X>]);
      return { reader, cluster, also };
    }),
  ]);
  const published = (first.proven && (await read.recheck?.(uidsUnknownTo(first.proven, cluster.services)))) || first;
  const observation = observe(stack.contract, cluster, { ...stack, ...(published.proven ? { published: published.proven } : {}) });
  return { source: reader.source, reader, cluster, published, observation, also };
}

const sameMap = (a: Record<string, string> | undefined, b: Record<string, string> | undefined) =>
  Object.keys(a ?? {}).length === Object.keys(b ?? {}).length && matchesLabels(a, b);

/** The URL users have for an entry: the one the last `up` published, else the live one. Probe, portal and sandbox check this one. */
export const usersUrl = (e: Pick<ObservedEntry, "url" | "publishedUrl">): string | undefined => e.publishedUrl ?? e.url;

/** A URL's host, without an IPv6 address's brackets. */
const hostOfUrl = (u: string | undefined) => (u && URL.canParse(u) ? new URL(u).hostname.replace(/^\[|\]$/g, "") : undefined);

/** The published URL where it is not the live one, if on an address of this cluster: outputs are untrusted, and it gets probed. */
function publishedUrlOf(published: string | undefined, live: string | undefined, nodes: readonly Node[]): { publishedUrl?: string } {
  const h = published !== live && /^https?:\/\//.test(published ?? "") ? hostOfUrl(published) : undefined;
  return live && h !== undefined && (h === hostOfUrl(live) || nodeWithAddress(nodes, h)) ? { publishedUrl: published } : {};
}

// Why the users' URL failed (`error`, the probe's words), as probe and portal say it: it moved since the last `up`, or (refused: kube-proxy refuses
// alike) no Service, a selector beyond the vendored one, or no ready endpoint.
export function failureCause(e: ObservedEntry, error: string): string | undefined {
  const refused = error.startsWith("connection refused");
  const found = (codes: readonly string[]) => e.findings.find((f) => codes.includes(f.code))?.message;
  const moved = e.publishedUrl ? found(["node-port-moved", "url-node-moved", "pod-moved"]) : undefined;
  if (moved) return `${refused ? "connection refused" : error}: ${moved}`;
  if (!refused || e.exposure !== "nodePort") return undefined;
  // A key our selector has beyond the vendored one selects other pods or none: that finding (with its fix) is the cause, not readiness.
  const why =
    found(["service-absent", "selector-key-added", "selector-key-dropped-by-chart"]) ??
    (e.readyEndpoints === 0 ? `no ready endpoint behind Service ${e.service} (its pods are gone or not Ready)` : undefined);
  return why && `connection refused: ${why}`;
}

// The verdict of every entry (the one implementation behind `exposure status` and the portal). `selected`: the exposed entries the stack publishes (others are
// not its business); the others are listed without a URL. Pure.
export function observe(
  contract: Contract,
  cluster: ObservedCluster,
  opts: { selected?: readonly string[] | "all"; nodeAddress?: string; published?: PublishedEndpoints } = {},
) {
  const nodeChoice = chooseNode(cluster.nodes, opts.nodeAddress);
  // Problems that concern the whole view (no Ready node...).
  const problems = ["problem" in nodeChoice ? [nodeChoice.problem] : [], unusableNodes(cluster.nodes, opts.nodeAddress)].flat();
  const node = "problem" in nodeChoice ? undefined : nodeChoice;
  const ctx = entryContext(cluster, node, opts.published);
  const selected = opts.selected === undefined || opts.selected === "all" ? undefined : new Set(opts.selected);

  const entries = contract.endpoints
    .filter((e) => !selected || selected.has(e.name) || !e.exposed)
    .map((e): ObservedEntry => {
      const base = { name: e.name, ...(e.description ? { description: e.description } : {}), exposed: e.exposed };
      if (isNodePortEntry(e)) return observeNodePort(e, base, ctx);
      if (isHostPortEntry(e)) return observeHostPort(e, base, ctx);
      return {
        ...base,
        exposure: "none",
        ...(e.service ? { namespace: e.service.namespace } : {}),
        readyEndpoints: 0,
        verdict: "NOT-EXPOSED",
        findings: [],
        reasons: [],
      };
    });
  return { ...(node ? { node } : {}), entries, problems };
}

/** What every entry's verdict reads, indexed once per view. */
const entryContext = (cluster: ObservedCluster, node: NodeChoice | undefined, published: PublishedEndpoints | undefined) => ({
  services: indexServices(cluster.services),
  slicesByService: groupBy(cluster.endpointSlices, (s) => `${s.metadata.namespace}/${s.metadata.labels?.[SERVICE_NAME_LABEL] ?? ""}`),
  node,
  nodes: cluster.nodes,
  nodesByName: new Map(cluster.nodes.map((n) => [n.metadata.name, n])),
  podsByNamespace: groupBy(cluster.pods, (p) => p.metadata.namespace),
  // Undefined when no published outputs were read (no Pulumi CLI, or a portal pod without the published ConfigMap's file).
  published,
});
type EntryContext = ReturnType<typeof entryContext>;

type EntryBase = Pick<ObservedEntry, "name" | "description" | "exposed">;

function observeNodePort(e: Endpoint & { service: NonNullable<Endpoint["service"]> }, base: EntryBase, ctx: EntryContext): ObservedEntry {
  const ns = e.service.namespace;
  const portName = webScheme(e.scheme);
  const published = ctx.published?.[e.name];
  const entry = { ...base, exposure: "nodePort" as const, namespace: ns };
  // Ours is `<entry>-nodeport` in the entry's own namespace, and only that: a Service elsewhere carrying our labels is a look-alike (anyone can copy labels),
  // reported by the audit.
  const ours = ctx.services.get(ourServiceKey(e));
  if (!ours) return absentEntry(entry, "service-absent", `Service ${ns}/${ourServiceName(e.name)} does not exist (run pulumi up)`);
  const service = `${ns}/${ours.metadata.name}`;
  const endpoints = (ctx.slicesByService.get(service) ?? []).flatMap((slice) => slice.endpoints ?? []);
  const ready = endpoints.filter((ep) => ep.conditions?.ready !== false && ep.addresses.length > 0).length;
  // Created by this stack: the last `up` published this very Service (same uid); without the outputs, only its name is checked.
  const notOurs = ctx.published ? ownershipProblem(ours, published) : undefined;
  if (notOurs) {
    return { ...entry, service, readyEndpoints: ready, ...verdictOf(e.name, [["service-not-ours", notOurs]]) };
  }
  const reasons: [DriftCode, string][] = [];
  const add = (code: DriftCode, message: string) => reasons.push([code, message]);
  const ourPort = ours.spec?.ports?.find((p) => p.name === portName) ?? ours.spec?.ports?.[0];
  const nodePort = ourPort?.nodePort;
  if (ourPort && ourPort.name !== portName) add("port-name-changed", `port name is ${ourPort.name ?? "(unnamed)"}, not ${portName}`);
  // What our Service opens beyond what the contract declares (one port on the nodes' addresses) is the model's to say.
  const excess = ourServiceExcess(ours, portName);
  if (excess.type) add("service-type-changed", `type is ${excess.type}, not NodePort`);
  if (excess.extraPorts.length)
    add(
      "extra-exposure",
      `undeclared port ${excess.extraPorts.map((p) => `${p.name ?? "(unnamed)"} ${p.port}->${p.nodePort ?? "no nodePort"}`).join(", ")} added to our Service: undeclared exposure, remove it`,
    );
  if (excess.externalIPs.length)
    add("extra-exposure", `undeclared externalIPs ${excess.externalIPs.join(", ")} on our Service: undeclared exposure, remove them`);
  if (ours.spec?.externalTrafficPolicy === "Local") add("external-traffic-local", "externalTrafficPolicy is Local (only nodes running a pod answer)");
  const vendored = ctx.services.get(`${ns}/${e.service.name}`);
  if (!vendored) add("vendored-service-gone", `vendored Service ${ns}/${e.service.name} is gone`);
  else {
    if (!sameMap(vendored.spec?.selector, ours.spec?.selector)) {
      // A key the vendored Service does not have: added to ours outside this stack (up refuses it: named, with what removes it), or mirrored by the last up
      // and dropped by the chart since (up drops it). The same rule as up's (selectorKeysBeyond).
      const { foreign, dropped } = selectorKeysBeyond(vendored.spec?.selector ?? {}, ours, published?.selector);
      const differs = `selector differs from the vendored Service ${ns}/${e.service.name}`;
      if (foreign.length) add("selector-key-added", `${differs}: ${foreignSelectorProblem(ours, foreign)}`);
      if (dropped.length) add("selector-key-dropped-by-chart", `${differs}: ${droppedSelectorProblem(ours, dropped, `${ns}/${e.service.name}`)}`);
      if (!foreign.length && !dropped.length) add("selector-differs", differs);
    }
    const vport = findServicePort(vendored, e.service.port);
    const vTarget = vport ? (vport.targetPort ?? vport.port) : undefined;
    if (!vport) add("vendored-port-gone", `vendored Service ${ns}/${e.service.name} has no port ${e.service.port}`);
    else if (String(vTarget) !== String(ourPort?.targetPort ?? ourPort?.port))
      add("target-port-differs", `target port ${ourPort?.targetPort} differs from the vendored ${vTarget}`);
  }
  const publishedPort = published?.nodePort;
  const url = ctx.node && nodePort !== undefined ? buildUrl(e.scheme, ctx.node.address, nodePort) : undefined;
  if (publishedPort !== undefined && nodePort !== undefined && publishedPort !== nodePort) {
    const where = published?.url && url ? ` ${published.url} no longer reaches this Service, which now listens on ${url}` : " no longer reaches this Service";
    add(
      "node-port-moved",
      `nodePort changed since the last up (${publishedPort} -> ${nodePort}): the published URL${where}; pulumi up puts ${publishedPort} back`,
    );
  }
  const nodeReason = nodeProblem(ctx.node, ctx.nodes, published?.url, url);
  if (nodeReason) add(ctx.node?.pinned ? "node-not-ready" : "url-node-moved", nodeReason);
  if (ready === 0) add("no-ready-endpoints", "no ready endpoints");
  // An entry without a URL is never MATCH: there is nothing to open.
  if (!ctx.node) add("no-node-address", "no node address to build its URL (no Ready node with an InternalIP)");
  else if (nodePort === undefined) add("no-node-port", "no nodePort allocated on our Service");
  return {
    ...entry,
    service,
    readyEndpoints: ready,
    ...(nodePort !== undefined ? { nodePort } : {}),
    ...(url ? { url } : {}),
    ...publishedUrlOf(published?.url, url, ctx.nodes),
    ...verdictOf(e.name, reasons),
  };
}

function observeHostPort(e: Endpoint & { hostPort: NonNullable<Endpoint["hostPort"]> }, base: EntryBase, ctx: EntryContext): ObservedEntry {
  const hp = e.hostPort;
  const published = ctx.published?.[e.name];
  const entry = { ...base, exposure: "hostPort" as const, namespace: hp.namespace };
  const holder = findHostPortHolder(ctx.podsByNamespace.get(hp.namespace) ?? [], hp);
  if (!holder) return absentEntry({ ...entry, hostPort: hp.port }, "host-port-absent", `no pod in ${hp.namespace} holds hostPort ${hp.port}`);
  const node = ctx.nodesByName.get(holder.spec?.nodeName as string);
  const address = node ? internalIP(node) : undefined;
  const ready = holder.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? 1 : 0;
  const url = address ? buildUrl(e.scheme, address, hp.port) : undefined;
  const reasons: [DriftCode, string][] = [];
  if (!ready) reasons.push(["pod-not-ready", `pod ${hp.namespace}/${holder.metadata.name} is not ready`]);
  if (!address) reasons.push(["node-without-address", `node ${holder.spec?.nodeName} has ${internalIPProblem(node)}`]);
  if (published?.url && url && published.url !== url) reasons.push(["pod-moved", `pod moved since the last up (${published.url} -> ${url})`]);
  return {
    ...entry,
    readyEndpoints: ready,
    hostPort: hp.port,
    ...(url ? { url } : {}),
    ...publishedUrlOf(published?.url, url, ctx.nodes),
    ...verdictOf(e.name, reasons),
  };
}

// Why the URLs' node is wrong: the URL the last `up` published points elsewhere (its node is no longer the Ready one the stack would pick), or the pinned
// address belongs to a node that is not Ready.
export function nodeProblem(
  node: NodeChoice | undefined,
  nodes: readonly Node[],
  publishedUrl: string | undefined,
  url: string | undefined,
): string | undefined {
  if (node?.pinned) {
    const owner = nodeWithAddress(nodes, node.address);
    return owner && !isReadyNode(owner) ? `node ${owner.metadata.name} (pinned address ${node.address}) is not Ready` : undefined;
  }
  const host = hostOfUrl(publishedUrl);
  if (node && host && host !== node.address) {
    const was = nodeWithAddress(nodes, host);
    const why = was ? `node ${was.metadata.name} is ${isReadyNode(was) ? "no longer the one chosen" : "not Ready"}` : `no node has address ${host} any more`;
    return `the published URL ${publishedUrl} uses ${host}, but ${why}: the URLs move to ${node.name} ${node.address}${url ? ` (${url})` : ""}; pulumi up publishes them`;
  }
  return undefined;
}
