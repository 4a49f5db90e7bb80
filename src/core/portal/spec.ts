// What the in-cluster portal is made of, as plain data: components/portal.ts builds its resources from these, and the planner (src/core/plan.ts) reads the same
// Service spec, so the contract's `portal` entry is planned from exactly what the component will create.
import { type Contract, isHostPortEntry, isNodePortEntry } from "../contract/schema";
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Service } from "../kube/types";
import { wantedEntries } from "./view";

/** The Service the contract's `portal` entry mirrors: a stable name, since the contract names it. */
export const PORTAL_SERVICE_NAME = "portal";
/** Port name the contract's entry references (`port: http`). */
export const PORTAL_PORT_NAME = "http";
/** Above 1024: the container runs as a non-root user, which cannot bind low ports. */
export const PORTAL_CONTAINER_PORT = 8080;
/** The stock image's unprivileged `node` user. */
export const PORTAL_UID = 1000;

/** Not `app.kubernetes.io/name: portal`: the platform's previous portal may still run in the same namespace and must not be selected. */
export const PORTAL_SELECTOR: Readonly<Record<string, string>> = { "app.kubernetes.io/name": "ui-exposure-portal" };
export const PORTAL_LABELS: Readonly<Record<string, string>> = {
  ...PORTAL_SELECTOR,
  "app.kubernetes.io/part-of": "ui-exposure",
  [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
};

/** Where the ConfigMap is mounted and what the container runs. */
export const PORTAL_APP_DIR = "/app";
export const PORTAL_FILES = {
  /** Small plain-JS loader run by `node /app/portal.js`. */
  loader: "portal.js",
  /** The gzipped server bundle (binaryData): raw it exceeds the 1 MiB ConfigMap limit. */
  bundle: "server.js.gz",
  contract: "contract.yaml",
} as const;

/** Environment the server reads in the pod (src/portal/main.ts, which says each one's format); the component sets it. */
export const PORTAL_ENV = {
  listen: "PORTAL_LISTEN",
  contract: "PORTAL_CONTRACT",
  /** JSON: "all" or the list of entry names the stack publishes. */
  entries: "PORTAL_ENTRIES",
  nodeAddress: "PORTAL_NODE_ADDRESS",
  stack: "PORTAL_STACK",
  /** The stack's kubernetes:context: the cluster's name on /metrics (the context the operator's own portal reads through names it the same). */
  cluster: "PORTAL_CLUSTER",
  /** "1": use the pod's ServiceAccount; otherwise a kubeconfig ($KUBECONFIG), for running the bundle by hand. */
  inCluster: "PORTAL_IN_CLUSTER",
  published: "PORTAL_PUBLISHED",
  allowlist: "PORTAL_ALLOWLIST",
  version: "PORTAL_VERSION",
  clusters: "PORTAL_CLUSTERS",
} as const;

// What the last `up` published, for verdicts as `exposure status`'s (docs/portal.md): mounted optional, since it is absent until the first `up` ends. A
// fixed name: the Deployment names it before it exists.
export const PORTAL_PUBLISHED = { configMap: "ui-exposure-published", dir: "/published", file: "endpoints.json" } as const;

// Exactly what one page load reads, read-only; Pods only for a selected hostPort entry or the audit (every Pod's hostPorts). No Secrets, no ConfigMaps: the
// portal shows URLs and verdicts, never credentials.
export function portalRbacRules(opts: { hostPort: boolean; audit?: boolean }) {
  return [
    { apiGroups: [""], resources: ["services", "nodes", ...(opts.hostPort || opts.audit ? ["pods"] : [])], verbs: ["list"] },
    { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list"] },
  ];
}

/** The other clusters' Secrets (`ui-exposure:portal.clusters`): `get` on exactly those names in the portal's namespace, never a list of Secrets. */
export function portalSecretRules(secrets: readonly string[]) {
  return [{ apiGroups: [""], resources: ["secrets"], resourceNames: [...new Set(secrets)].sort(), verbs: ["get"] }];
}

/** Whether the stack's selection holds a hostPort entry (then the portal lists Pods). */
export function selectsHostPort(contract: Contract, selected: readonly string[] | "all"): boolean {
  return wantedEntries({ contract, selected }).some(isHostPortEntry);
}

/** Whether a Service `namespace/name` is the in-cluster portal's, for a portal in `portalNamespace`. */
export function isPortalService(service: { namespace: string; name: string }, portalNamespace: string): boolean {
  return service.namespace === portalNamespace && service.name === PORTAL_SERVICE_NAME;
}

/** The exposed entries a stack without the in-cluster portal can publish: not those mirroring the portal's Service (only a stand-in would answer them). */
export function entriesWithoutPortal(contract: Contract, portalNamespace: string): string[] {
  return contract.endpoints.filter((e) => e.exposed && !(isNodePortEntry(e) && isPortalService(e.service, portalNamespace))).map((e) => e.name);
}

/** The portal's ClusterIP Service as the component creates it (and as the planner reads it). */
export function portalService(namespace: string): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: PORTAL_SERVICE_NAME, namespace, labels: { ...PORTAL_LABELS } },
    spec: {
      type: "ClusterIP",
      selector: { ...PORTAL_SELECTOR },
      ports: [{ name: PORTAL_PORT_NAME, port: 80, targetPort: PORTAL_PORT_NAME, protocol: "TCP" }],
    },
  };
}
