import { type Contract, type Endpoint, type HostPortExposure, isHostPortEntry, isNodePortEntry, type ServiceRef } from "./contract/schema";
import { UserError } from "./errors";
import { effectiveHostPorts, isFinishedPod, matchesLabels, ourServiceName, webScheme } from "./exposure-model";
import { ipVersion, urlHost } from "./ip";
import { type ClusterReader, labelSelector } from "./kube/cluster";
import type { Node, Pod, Service, ServicePort } from "./kube/types";

/** The node whose address goes into every NodePort URL. */
export interface NodeChoice {
  name: string;
  address: string;
  /** True when the address comes from the stack (`nodeAddress`), not from observation. */
  pinned: boolean;
}

export type NodePortPlan = Exclude<ReturnType<typeof planNodePort>, { problem: string }>;
export type ExposurePlan = NodePortPlan | Exclude<ReturnType<typeof planHostPort>, { problem: string }>;

export const nodeWithAddress = (nodes: readonly Node[], address: string) => nodes.find((n) => n.status?.addresses?.some((a) => a.address === address));
export const isReadyNode = (n: Node) => n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
/** The InternalIP as the Node's status claims it (untrusted: whoever writes a Node's status writes it). */
const claimedInternalIP = (n: Node) => n.status?.addresses?.find((a) => a?.type === "InternalIP")?.address;
/** The InternalIP of a node when it is an IP literal; anything else never reaches a URL. */
export const internalIP = (n: Node) => {
  const address = claimedInternalIP(n);
  return typeof address === "string" && ipVersion(address) !== 0 ? address : undefined;
};
/** Why a node (undefined: unknown) has no usable InternalIP, for messages (the claimed value is shown escaped). */
export function internalIPProblem(n: Node | undefined): string {
  if (!n) return "no InternalIP (unknown node)";
  const claimed = claimedInternalIP(n);
  if (claimed === undefined) return "no InternalIP";
  return `InternalIP ${JSON.stringify(String(claimed)).slice(0, 80)} is not an IP address`;
}

/** The node for URLs: the pinned address, else the first Ready node with an InternalIP (schedulable first, then by name): every run picks the same one. */
export function chooseNode(nodes: readonly Node[], nodeAddress?: string): NodeChoice | { problem: string } {
  if (nodeAddress) {
    // Validated by the stack settings; checked again for the other ways in (the portal's environment).
    if (ipVersion(nodeAddress) === 0) return { problem: `the pinned node address ${JSON.stringify(nodeAddress).slice(0, 80)} is not an IP address` };
    return { name: nodeWithAddress(nodes, nodeAddress)?.metadata.name ?? "(pinned)", address: nodeAddress, pinned: true };
  }
  const [chosen] = nodes
    .filter((n) => isReadyNode(n) && internalIP(n))
    .sort((a, b) => Number(a.spec?.unschedulable ?? false) - Number(b.spec?.unschedulable ?? false) || a.metadata.name.localeCompare(b.metadata.name));
  if (!chosen) {
    const seen = nodes.map((n) => `${n.metadata.name} (${isReadyNode(n) ? "Ready" : "NotReady"}${internalIP(n) ? "" : `, ${internalIPProblem(n)}`})`);
    return {
      problem: `no Ready node with an InternalIP (nodes: ${seen.join(", ") || "none"}); wait for a node to be Ready or pin ui-exposure:nodeAddress`,
    };
  }
  return { name: chosen.metadata.name, address: internalIP(chosen) as string, pinned: false };
}

/** Ready nodes whose claimed InternalIP is not an IP, never skipped in silence; none when pinned, or when none qualifies (chooseNode's problem lists all). */
export function unusableNodes(nodes: readonly Node[], nodeAddress?: string): string[] {
  if (nodeAddress || !nodes.some((n) => isReadyNode(n) && internalIP(n))) return [];
  return nodes
    .filter((n) => isReadyNode(n) && claimedInternalIP(n) !== undefined && !internalIP(n))
    .map((n) => `node ${n.metadata.name} is Ready but its ${internalIPProblem(n)}: it is not used for URLs; fix its addresses, or pin ui-exposure:nodeAddress`);
}

/** Selects the exposed entries a stack publishes; unknown or non-exposed names are problems. */
export function selectEntries(contract: Contract, selection: "all" | readonly string[]): { entries: Endpoint[]; problems: string[] } {
  const exposed = contract.endpoints.filter((e) => e.exposed);
  if (selection === "all") return { entries: exposed, problems: [] };
  const problems: string[] = [];
  const entries: Endpoint[] = [];
  // Indexed once (a stack listing every entry would cost O(n²) lookups); the first declaration of a name wins.
  const byName = new Map([...contract.endpoints].reverse().map((x) => [x.name, x]));
  for (const name of selection) {
    const e = byName.get(name);
    if (!e) problems.push(`ui-exposure:entries names '${name}', which the contract does not declare (declared: ${exposed.map((x) => x.name).join(", ")})`);
    else if (!e.exposed)
      problems.push(`ui-exposure:entries names '${name}', which the contract does not expose (set exposed: true in the contract or drop it from the stack)`);
    else entries.push(e);
  }
  // A name listed twice is published once, where it is first listed.
  return { entries: [...new Set(entries)], problems };
}

export function findServicePort(svc: Service, ref: ServiceRef["port"]): ServicePort | undefined {
  return svc.spec?.ports?.find((p) => (typeof ref === "number" ? p.port === ref : p.name === ref));
}

const describePorts = (svc: Service) => (svc.spec?.ports ?? []).map((p) => `${p.name ?? "(unnamed)"}/${p.port}`).join(", ") || "none";

/** A Service's key in every index of this project: "namespace/name". */
export const serviceKey = (s: Service) => `${s.metadata.namespace}/${s.metadata.name}`;

/** Index of Services by serviceKey, built once from one list call. */
export const indexServices = (services: readonly Service[]): Map<string, Service> => new Map(services.map((s) => [serviceKey(s), s]));

/** Plans one NodePort exposure from the vendored Service; returns a problem when it cannot be mirrored. */
export function planNodePort(entry: Endpoint & { service: ServiceRef }, services: ReadonlyMap<string, Service>) {
  const ref = entry.service;
  const key = `${ref.namespace}/${ref.name}`;
  const vendored = services.get(key);
  const problem = (text: string) => ({ problem: `entry '${entry.name}': ${text}` });
  if (!vendored) {
    return problem(`Service ${key} not found; install the UI first, fix the contract's service, or leave '${entry.name}' out of ui-exposure:entries`);
  }
  if (vendored.spec?.type === "ExternalName") {
    return problem(
      `Service ${key} is of type ExternalName (a DNS alias, no pods behind it): there is nothing to publish on a NodePort; point the contract at the Service of the pods`,
    );
  }
  const selector = vendored.spec?.selector;
  if (selector !== undefined && (selector === null || typeof selector !== "object" || Object.values(selector).some((v) => typeof v !== "string"))) {
    return problem(`Service ${key} has a selector that is not a map of strings; it cannot be mirrored`);
  }
  if (!selector || Object.keys(selector).length === 0) {
    return problem(
      `Service ${key} has no selector (its endpoints are managed by hand), so a NodePort Service cannot select the same pods; point the contract at a Service with a selector`,
    );
  }
  const port = findServicePort(vendored, ref.port);
  if (!port) {
    return problem(
      `Service ${key} has no port ${typeof ref.port === "number" ? ref.port : `named '${ref.port}'`} (ports: ${describePorts(vendored)}); fix service.port in the contract`,
    );
  }
  // A UI is TCP: a UDP (or SCTP) port published as http://... would be a URL nothing answers.
  const protocol = port.protocol ?? "TCP";
  if (protocol !== "TCP") {
    return problem(`port ${port.name ?? port.port} of Service ${key} is ${protocol}: only a TCP port is published as an ${entry.scheme} URL`);
  }
  // A headless Service (clusterIP: None) is mirrored like any other: our NodePort Service selects the same pods.
  const scheme = webScheme(entry.scheme);
  return {
    kind: "nodePort" as const,
    entry: entry.name,
    scheme,
    namespace: ref.namespace,
    // The vendored Service, never modified.
    mirrors: ref.name,
    serviceName: ourServiceName(entry.name),
    selector: { ...selector },
    // Kubernetes keeps an allocated nodePort by port name.
    portName: scheme,
    port: port.port,
    targetPort: port.targetPort ?? port.port,
    protocol,
  };
}

/** Items by key, built once per view, so that each entry reads its own group (entries × items would grow quadratically; so would a spread copy). */
export function groupBy<T, K>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}

/** The pod holding a declared hostPort (a finished pod holds none): a running pod wins over a pending one, then name order. */
export function findHostPortHolder(pods: readonly Pod[], hp: HostPortExposure): Pod | undefined {
  return pods
    .filter(
      (p) =>
        p.metadata.namespace === hp.namespace &&
        !isFinishedPod(p) &&
        matchesLabels(p.metadata.labels, hp.podSelector) &&
        // Only a port the kubelet maps (spec.containers) serves a URL; an init container's does not.
        effectiveHostPorts(p.spec).some((h) => h.port === hp.port && h.serves) &&
        p.spec?.nodeName,
    )
    .sort((a, b) => Number(b.status?.phase === "Running") - Number(a.status?.phase === "Running") || a.metadata.name.localeCompare(b.metadata.name))[0];
}

/** The pods that may hold the entries' host ports: each hostPort entry's namespace, by its podSelector, holding its port. */
export async function readHostPortPods(cluster: Pick<ClusterReader, "listPods">, entries: readonly Endpoint[]): Promise<Pod[]> {
  const hostPorts = entries.flatMap((e) => (e.exposed && e.hostPort ? [e.hostPort] : []));
  const lists = await Promise.all(
    hostPorts.map(({ namespace, podSelector, port }) =>
      cluster.listPods({ namespace, ...(podSelector ? { labels: podSelector } : {}), keep: (p) => effectiveHostPorts(p.spec).some((h) => h.port === port) }),
    ),
  );
  // Two entries may find the same pod: held once.
  return [...new Map(lists.flat().map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p])).values()];
}

/** Plans a hostPort entry: nothing is created; the URL uses the InternalIP of the node running the pod that holds the port. */
export function planHostPort(entry: Endpoint & { hostPort: HostPortExposure }, pods: readonly Pod[], nodesByName: ReadonlyMap<string, Node>) {
  const hp = entry.hostPort;
  const problem = (text: string) => ({ problem: `entry '${entry.name}': ${text}` });
  const pod = findHostPortHolder(pods, hp);
  const selectorText = hp.podSelector ? ` matching ${labelSelector(hp.podSelector)}` : "";
  if (!pod) {
    return problem(`no scheduled pod in namespace ${hp.namespace}${selectorText} declares hostPort ${hp.port}; deploy the brick first or fix the contract`);
  }
  const nodeName = pod.spec?.nodeName as string;
  const node = nodesByName.get(nodeName);
  const address = node ? internalIP(node) : undefined;
  if (!address) {
    return problem(`pod ${hp.namespace}/${pod.metadata.name} runs on node ${nodeName}, which has ${internalIPProblem(node)}`);
  }
  return {
    kind: "hostPort" as const,
    entry: entry.name,
    scheme: webScheme(entry.scheme),
    namespace: hp.namespace,
    hostPort: hp.port,
    pod: pod.metadata.name,
    node: nodeName,
    address,
  };
}

export interface ClusterView {
  services: readonly Service[];
  nodes: readonly Node[];
  /** The hostPort entries' holders (readHostPortPods); in deny mode the program lists every pod that may hold a host port (src/core/stack-plan.ts). */
  pods: readonly Pod[];
}

/** Observed Services overlaid with those this up creates (the portal's): an entry mirroring one plans on the first up. Takeover: the state says, never labels. */
export function withStackServices(observed: readonly Service[], created: readonly Service[]): Service[] {
  const createdKeys = indexServices(created);
  return [...observed.filter((s) => !createdKeys.has(serviceKey(s))), ...created];
}

/** The namespace of the cluster's own components: publishing from it needs the stack's explicit consent. */
export const SYSTEM_NAMESPACE = "kube-system";

/** Resolves every selected entry against one view of the cluster; all problems at once. */
export function resolveExposures(
  entries: readonly Endpoint[],
  cluster: ClusterView,
  nodeAddress?: string,
  opts: { allowKubeSystem?: boolean } = {},
): { node: NodeChoice; plans: ExposurePlan[] } | { problems: string[] } {
  const problems = (opts.allowKubeSystem ? [] : entries.filter((e) => (e.service?.namespace ?? e.hostPort?.namespace) === SYSTEM_NAMESPACE)).map(
    (e) =>
      `entry '${e.name}': publishing from namespace ${SYSTEM_NAMESPACE} (the cluster's own components) is refused unless the stack sets ui-exposure:allowKubeSystem: true`,
  );
  const node = chooseNode(cluster.nodes, nodeAddress);
  if ("problem" in node) problems.push(node.problem);
  problems.push(...unusableNodes(cluster.nodes, nodeAddress));
  const services = indexServices(cluster.services);
  const nodesByName = new Map(cluster.nodes.map((n) => [n.metadata.name, n]));
  const podsByNamespace = groupBy(cluster.pods, (p) => p.metadata.namespace);
  const plans: ExposurePlan[] = [];
  for (const entry of entries) {
    const plan = isNodePortEntry(entry)
      ? planNodePort(entry, services)
      : isHostPortEntry(entry)
        ? planHostPort(entry, podsByNamespace.get(entry.hostPort.namespace) ?? [], nodesByName)
        : { problem: `entry '${entry.name}' is not exposed` };
    if ("problem" in plan) problems.push(plan.problem);
    else plans.push(plan);
  }
  if (problems.length > 0 || "problem" in node) return { problems };
  return { node, plans };
}

/** Placeholder shown for a port Kubernetes has not allocated yet (never an invented number). */
export const PENDING_NODE_PORT = "<nodePort allocated on apply>";

/** The URL of a published port; only an IP literal goes into it (IPv6 bracketed), anything else is an error. */
export function buildUrl(scheme: string, address: string, port: number | undefined): string {
  const host = urlHost(address);
  if (host === undefined) throw new UserError(`node address ${JSON.stringify(address).slice(0, 80)} is not an IP address: no URL is built from it`);
  return `${scheme}://${host}:${port ?? PENDING_NODE_PORT}`;
}

/** The nodePort the last up published, asked for again (a port moved by hand comes back); when another Service holds it now, a note: asking would fail up. */
export function portToKeep(
  plan: Pick<NodePortPlan, "entry" | "namespace" | "serviceName">,
  lastPort: number | undefined,
  services: readonly Service[],
): { keep: number } | { keep?: undefined; note?: string } {
  if (lastPort === undefined) return {};
  const holder = services.find(
    (s) => !(s.metadata.namespace === plan.namespace && s.metadata.name === plan.serviceName) && (s.spec?.ports ?? []).some((p) => p.nodePort === lastPort),
  );
  if (!holder) return { keep: lastPort };
  return {
    note: `entry '${plan.entry}': its nodePort ${lastPort} (published by the last up) is now held by Service ${holder.metadata.namespace}/${holder.metadata.name}, so Kubernetes allocates a new one: the URL changes (update bookmarks and .env files)`,
  };
}
