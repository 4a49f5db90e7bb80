// What one portal read needs, and no more: the Services of the namespaces the contract's
// selected entries live in, our managed Services wherever they are, the EndpointSlices of
// those Services only (label selector), the Nodes, and the Pods of hostPort namespaces. On a
// cluster of 5,000 Services the API server then sends kilobytes instead of 10 MB, and the
// verdicts are those a full read gives (observe() only looks at these objects).
import type { Endpoint } from "../contract/schema";
import { ourServiceName } from "../exposure-model";
import type { ClusterReader } from "../kube/cluster";
import { ENTRY_LABEL, type EndpointSlice, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Pod, type Service } from "../kube/types";
import { type ObservedCluster, readObservedCluster } from "../observe";

/** A reader that lets the API server filter (LiveClusterReader implements it). */
export interface ScopedClusterReader extends ClusterReader {
  listServicesIn(namespace: string): Promise<Service[]>;
  listServicesLabelled(labelSelector: string): Promise<Service[]>;
  listEndpointSlicesLabelled(labelSelector: string): Promise<EndpointSlice[]>;
  listPodsIn(namespace: string): Promise<Pod[]>;
}

export const isScoped = (r: ClusterReader): r is ScopedClusterReader =>
  typeof (r as Partial<ScopedClusterReader>).listServicesIn === "function" &&
  typeof (r as Partial<ScopedClusterReader>).listEndpointSlicesLabelled === "function";

const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/** Label values are at most 63 characters of [A-Za-z0-9_.-]: anything else cannot be in a selector. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Reads what the portal needs for these (exposed, selected) entries; a plain reader reads everything. */
export async function readPortalCluster(cluster: ClusterReader, entries: readonly Endpoint[]): Promise<ObservedCluster> {
  if (!isScoped(cluster)) return readObservedCluster(cluster, entries);
  const serviceNamespaces = [...new Set(entries.flatMap((e) => (e.service ? [e.service.namespace] : [])))].sort();
  const podNamespaces = [...new Set(entries.flatMap((e) => (e.exposed && e.hostPort ? [e.hostPort.namespace] : [])))].sort();
  const [perNamespace, managed, nodes, pods] = await Promise.all([
    Promise.all(serviceNamespaces.map((ns) => cluster.listServicesIn(ns))),
    cluster.listServicesLabelled(`${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`),
    cluster.listNodes(),
    Promise.all(podNamespaces.map((ns) => cluster.listPodsIn(ns))),
  ]);
  const services = new Map<string, Service>();
  for (const s of [...perNamespace.flat(), ...managed]) services.set(`${s.metadata.namespace}/${s.metadata.name}`, s);
  // Slices of our Services: by the expected name, and of any managed Service claiming an entry.
  const names = new Set(entries.filter((e) => e.service).map((e) => ourServiceName(e.name)));
  for (const s of managed) if (s.metadata.labels?.[ENTRY_LABEL]) names.add(s.metadata.name);
  const valid = [...names].filter((n) => LABEL_VALUE.test(n) && n.length <= 63).sort();
  const endpointSlices = valid.length ? await cluster.listEndpointSlicesLabelled(`${SERVICE_NAME_LABEL} in (${valid.join(",")})`) : [];
  return { services: [...services.values()], endpointSlices, nodes, pods: pods.flat() };
}
