import { YAML_MAX_ALIASES } from "../contract/parse";
import { UserError } from "../errors";
import { parseYamlBounded, placeIn, SNAPSHOT_YAML_VALUES } from "../yaml";
import type { ConfigMap, EndpointSlice, GenericObject, Node, Pod, Secret, Service } from "./types";
import { checkSnapshotDocument, formatObjectProblem, problemList } from "./validate";

/** A custom resource kind, listed cluster-wide; the first served version wins. */
export interface CustomKind {
  group: string;
  versions: readonly string[];
  plural: string;
  kind: string;
}

const gatewayApi = (plural: string, kind: string): CustomKind => ({ group: "gateway.networking.k8s.io", versions: ["v1", "v1beta1"], plural, kind });
/** The kinds of the Gateway API / LB-IPAM era the Cilium plan reads (src/core/cilium/plan.ts), each listed cluster-wide. */
export const CILIUM_ERA_KINDS = {
  lbIpPools: { group: "cilium.io", versions: ["v2", "v2alpha1"], plural: "ciliumloadbalancerippools", kind: "CiliumLoadBalancerIPPool" },
  l2Policies: { group: "cilium.io", versions: ["v2alpha1"], plural: "ciliuml2announcementpolicies", kind: "CiliumL2AnnouncementPolicy" },
  gateways: gatewayApi("gateways", "Gateway"),
  gatewayClasses: gatewayApi("gatewayclasses", "GatewayClass"),
  httpRoutes: gatewayApi("httproutes", "HTTPRoute"),
  ingresses: { group: "networking.k8s.io", versions: ["v1"], plural: "ingresses", kind: "Ingress" },
  ingressClasses: { group: "networking.k8s.io", versions: ["v1"], plural: "ingressclasses", kind: "IngressClass" },
  bgpAdvertisements: { group: "cilium.io", versions: ["v2", "v2alpha1"], plural: "ciliumbgpadvertisements", kind: "CiliumBGPAdvertisement" },
  bgpPeeringPolicies: { group: "cilium.io", versions: ["v2alpha1"], plural: "ciliumbgppeeringpolicies", kind: "CiliumBGPPeeringPolicy" },
} satisfies Record<string, CustomKind>;

export async function listCiliumEra(cluster: ClusterReader): Promise<Record<keyof typeof CILIUM_ERA_KINDS, GenericObject[]>> {
  const lists = await Promise.all(Object.entries(CILIUM_ERA_KINDS).map(async ([key, kind]) => [key, await cluster.listCustom(kind)]));
  return Object.fromEntries(lists) as Record<keyof typeof CILIUM_ERA_KINDS, GenericObject[]>;
}

/** Where a list looks (filtered by the API server) and what it holds: only what `keep` accepts of each item as it is read. */
export interface ListScope<T> {
  /** One namespace; the whole cluster when absent. */
  namespace?: string;
  /** Label equality: key -> value, or key -> one of these values (`key in (a,b)`). */
  labels?: Readonly<Record<string, string | readonly string[]>>;
  keep?: (item: T) => boolean;
}

type Listed = { metadata: { namespace?: string; labels?: Record<string, string> } };

/** Whether `item` is in `scope` (namespace, labels, keep): what the API server and `keep` select together. */
export function inScope<T extends Listed>(scope: ListScope<T>, item: T): boolean {
  if (scope.namespace !== undefined && item.metadata.namespace !== scope.namespace) return false;
  for (const [k, v] of Object.entries(scope.labels ?? {})) {
    const value = item.metadata.labels?.[k];
    if (value === undefined || (typeof v === "string" ? value !== v : !v.includes(value))) return false;
  }
  return scope.keep?.(item) ?? true;
}

/** A label selector as the API server reads it: `k=v`, `k in (a,b)`, joined by commas. */
export const labelSelector = (labels: ListScope<never>["labels"]) =>
  Object.entries(labels ?? {})
    .map(([k, v]) => (typeof v === "string" ? `${k}=${v}` : `${k} in (${v.join(",")})`))
    .join(",");

/** Read access to the cluster: list calls scoped to what the caller needs (the live API client, or a snapshot file). */
export interface ClusterReader {
  /** Where the data comes from, for messages ("context bench (https://127.0.0.1:6443)"). */
  readonly source: string;
  /** /metrics' `cluster` label: the kube context read through (in a pod, the stack's, given by `up`); never the server's URL (it may hold a password). */
  readonly name?: string;
  listServices(scope?: ListScope<Service>): Promise<Service[]>;
  listNodes(): Promise<Node[]>;
  listPods(scope?: ListScope<Pod>): Promise<Pod[]>;
  listEndpointSlices(scope?: ListScope<EndpointSlice>): Promise<EndpointSlice[]>;
  getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  /** The Secrets of one namespace: namespaced on purpose, a Role there suffices, not a ClusterRole reading every Secret of the cluster. */
  listSecrets(namespace: string, scope?: Omit<ListScope<Secret>, "namespace">): Promise<Secret[]>;
  /** Lists a custom kind; an absent CRD gives an empty list, not an error. */
  listCustom(kind: CustomKind, scope?: ListScope<GenericObject>): Promise<GenericObject[]>;
  /** The resources the API serves under a group version (empty when not served; undefined when the source cannot tell). */
  servedResources?(groupVersion: string): Promise<string[] | undefined>;
  /** Server-side dry run of creating this Service: runs admission and stores nothing (the live API only). */
  dryRunCreateService?(service: Service): Promise<{ admitted: true } | { admitted: false; message: string }>;
}

type AnyObject = { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };

/** A cluster read from a snapshot: a `List` (or YAML documents) as `kubectl get svc,nodes,pods,cm,endpointslices -A -o yaml` prints it, plus custom objects. */
export class SnapshotReader implements ClusterReader {
  private readonly objects: AnyObject[];
  /** Number of list/get calls served, so tests and benchmarks can count round trips. */
  requests = 0;

  constructor(
    objects: readonly unknown[],
    readonly source = "snapshot",
  ) {
    this.objects = flattenLists(objects);
  }

  /** A snapshot from its YAML text (`file` only names it in messages). */
  static parse(text: string, file: string): SnapshotReader {
    const parsed = parseYamlBounded(text, { maxValues: SNAPSHOT_YAML_VALUES });
    const where = (offset: number | undefined) => placeIn(parsed.lineCounter, file, offset);
    if (parsed.refused) throw new UserError(`${where(parsed.refused.offset)}: cluster snapshot refused: ${parsed.refused.message}`);
    const objects: unknown[] = [];
    const problems: string[] = [];
    for (const doc of parsed.docs) {
      const yamlError = doc.errors[0];
      if (yamlError) throw new UserError(`${where(yamlError.pos[0])}: cluster snapshot is not valid YAML: ${yamlError.message.split("\n")[0]}`);
      let value: unknown;
      try {
        value = doc.toJS({ maxAliasCount: YAML_MAX_ALIASES });
      } catch (err) {
        throw new UserError(
          `${where(doc.contents?.range?.[0])}: cluster snapshot refused: ${(err as Error).message} (limit ${YAML_MAX_ALIASES} alias expansions)`,
        );
      }
      if (value == null) continue;
      for (const p of checkSnapshotDocument(value)) {
        const enclosingOffsets = p.path.map((_, i) => (doc.getIn(p.path.slice(0, p.path.length - i), true) as { range?: number[] } | undefined)?.range?.[0]);
        problems.push(`${where(enclosingOffsets.find((o) => o !== undefined) ?? doc.contents?.range?.[0])}: ${formatObjectProblem(p)}`);
      }
      objects.push(value);
    }
    if (problems.length) {
      throw new UserError(`cluster snapshot ${file} holds malformed objects (${problems.length}):\n${problemList(problems)}`);
    }
    return new SnapshotReader(objects, `snapshot ${file}`);
  }

  private ofKind<T extends Listed>(kind: string, scope: ListScope<T> = {}, group?: string): T[] {
    this.requests++;
    const inGroup = (o: AnyObject) => group === undefined || (typeof o.apiVersion === "string" && o.apiVersion.startsWith(`${group}/`));
    return (this.objects.filter((o) => o.kind === kind && inGroup(o)) as T[]).filter((o) => inScope(scope, o));
  }

  async listServices(scope?: ListScope<Service>) {
    return this.ofKind("Service", scope);
  }
  async listNodes() {
    return this.ofKind<Node>("Node");
  }
  async listPods(scope?: ListScope<Pod>) {
    return this.ofKind("Pod", scope);
  }
  async listEndpointSlices(scope?: ListScope<EndpointSlice>) {
    return this.ofKind("EndpointSlice", scope);
  }
  async getConfigMap(namespace: string, name: string) {
    return this.ofKind<ConfigMap>("ConfigMap").find((c) => c.metadata.namespace === namespace && c.metadata.name === name);
  }
  async listSecrets(namespace: string, scope: Omit<ListScope<Secret>, "namespace"> = {}) {
    return this.ofKind<Secret>("Secret", { ...scope, namespace });
  }
  async servedResources(groupVersion: string) {
    this.requests++;
    const list = this.objects.find((o) => o.kind === "APIResourceList" && (o as { groupVersion?: string }).groupVersion === groupVersion) as
      | { resources?: { name?: string }[] }
      | undefined;
    return list ? (list.resources ?? []).flatMap((r) => (typeof r.name === "string" ? [r.name] : [])) : undefined;
  }
  async listCustom(kind: CustomKind, scope?: ListScope<GenericObject>) {
    return this.ofKind(kind.kind, scope, kind.group);
  }
}

function flattenLists(objects: readonly unknown[]): AnyObject[] {
  const out: AnyObject[] = [];
  for (const o of objects) {
    if (o === null || typeof o !== "object") continue;
    const obj = o as AnyObject & { items?: unknown[] };
    if (Array.isArray(obj.items) && (obj.kind === "List" || obj.kind?.endsWith("List"))) {
      const itemKind = obj.kind !== "List" ? obj.kind?.slice(0, -"List".length) : undefined;
      for (const item of flattenLists(obj.items)) out.push(itemKind && !item.kind ? { ...item, kind: itemKind } : item);
    } else out.push(obj);
  }
  return out;
}
