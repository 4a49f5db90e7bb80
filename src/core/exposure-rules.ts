import type { Service } from "./kube/types";

// The exposure rules, one table: what opens a port on a node or an address outside the cluster, each rule in TypeScript (exposure-model.ts) and in
// CEL (admission.ts) side by side. Adding a rule is one SERVICE_RULES (or POD_RULES) entry and its tests (docs/commands.md says which).

// Objects are read back unvalidated (a list call, a snapshot): what is not a list, a map or a port number is no port.
export const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
export const field = (v: unknown, key: string): unknown => (isObject(v) ? v[key] : undefined);
export const portNumber = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 65535 ? v : 0);

/** Every key of `selector` has its value in `labels`. */
export const matchesLabels = (labels: Readonly<Record<string, string>> | undefined, selector: Readonly<Record<string, string>> | undefined) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

/**
 * Bounds on checking one object, so that the policy stays far below the API server's cost limit (an error would admit under Ignore): a pod past
 * `containers` or `portsPerContainer` is too large unless it holds no host port (one cheap pass, up to `plainPortsPerContainer`); a Service past
 * `servicePorts` or `externalIPs` is refused unread. The allowlist's bounds keep an expression below CEL's 100,000 code points (about 55,000 here).
 */
export const CHECK_LIMITS = {
  containers: 32,
  portsPerContainer: 32,
  plainPortsPerContainer: 256,
  servicePorts: 128,
  externalIPs: 32,
  allowlistItems: 500,
  allowlistCharacters: 40_000,
} as const;

/** A Service's type as the API server defaults it. */
export const serviceType = (svc: Service) => svc.spec?.type ?? "ClusterIP";

/** A Service's externalIPs as Kubernetes honours them: none on an ExternalName or headless Service (kube-proxy programs nothing for them). */
export const honouredExternalIPs = (svc: Service) =>
  serviceType(svc) === "ExternalName" || svc.spec?.clusterIP === "None" ? [] : (svc.spec?.externalIPs ?? []);

/** A LoadBalancer's health check node port (externalTrafficPolicy Local), 0 when none. */
export const healthCheckNodePort = (svc: Service) => (serviceType(svc) === "LoadBalancer" ? portNumber(svc.spec?.healthCheckNodePort) : 0);

/** What our Service (a NodePort entry's: one port, type NodePort) opens beyond that: another type, ports besides its own (named `portName`, else the first), externalIPs. */
export function ourServiceExcess(svc: Service, portName?: string) {
  const type = serviceType(svc);
  const ports = svc.spec?.ports ?? [];
  const own = Math.max(
    0,
    ports.findIndex((p) => p.name === portName),
  );
  return { ...(type !== "NodePort" ? { type } : {}), extraPorts: ports.filter((_, i) => i !== own), externalIPs: honouredExternalIPs(svc) };
}

/** serviceType, ports and honouredExternalIPs in CEL: variables.serviceType... of `object`, variables.oldServiceType... of `oldObject` (on an UPDATE). */
export const serviceCelVariables = (obj: "object" | "oldObject", when: string) => {
  const [o, T, P, E] = obj === "object" ? ["", "serviceType", "servicePorts", "externalIPs"] : ["old", "ServiceType", "ServicePorts", "ExternalIPs"];
  const ignored = `(has(${obj}.spec.type) && ${obj}.spec.type == 'ExternalName') && !(has(${obj}.spec.clusterIP) && ${obj}.spec.clusterIP == 'None')`;
  return [
    { name: o + T, expression: `${when} && has(${obj}.spec.type) ? ${obj}.spec.type : ${o ? "''" : "'ClusterIP'"}` },
    { name: o + P, expression: `${when} && has(${obj}.spec.ports) ? ${obj}.spec.ports : []` },
    { name: o + E, expression: `${when} && has(${obj}.spec.externalIPs) && !${ignored} ? ${obj}.spec.externalIPs : []` },
  ];
};

/**
 * One way a Service is reachable from outside the cluster. Any rule's opening is declared by an allowlist.services line
 * ('namespace/name-or-prefix*'); our `<entry>-nodeport` by its contract entry: one port, type NodePort, nothing else.
 * `opens`: what it opens, in the verdicts' words ("type NodePort"; "": said by another rule; undefined: nothing);
 * `beyondEntry`: what our Service opens by it beyond its entry (absent: all `opens` says). `cel`, over the variables of
 * serviceCelVariables and `object`: `opens`; `withinEntry` (absent: !opens); `describe`, the refusal's words after the
 * type (", ..." or ''); `newOnUpdate`, an UPDATE opens more than before (`oldObject` set).
 */
export interface ServiceRule {
  field: string;
  opens(svc: Service): string | undefined;
  beyondEntry?(svc: Service): string | undefined;
  cel: { opens: string; withinEntry?: string; describe?: string; newOnUpdate: string };
}

const EXPOSING_TYPES = "['NodePort', 'LoadBalancer']";
const protocol = (p: string) => `(has(${p}.protocol) ? ${p}.protocol : 'TCP')`;
const allocatesNodePorts = (obj: string) => `!(has(${obj}.spec.allocateLoadBalancerNodePorts) && !${obj}.spec.allocateLoadBalancerNodePorts)`;
const healthCheckPort = (obj: string) => `(has(${obj}.spec.healthCheckNodePort) ? ${obj}.spec.healthCheckNodePort : 0)`;
const localTraffic = (obj: string) => `(has(${obj}.spec.externalTrafficPolicy) && ${obj}.spec.externalTrafficPolicy == 'Local')`;
const isLoadBalancer = "variables.serviceType == 'LoadBalancer'";

/**
 * The rules, field by field of the Service API. `ExternalName`, `ClusterIP` without externalIPs, headless: a name or an
 * in-cluster address only. `loadBalancerSourceRanges`, `sessionAffinity`, `internalTrafficPolicy`, `ipFamilies` narrow
 * or route what is open; they open nothing.
 */
export const SERVICE_RULES: readonly ServiceRule[] = [
  {
    // Every port on every node; a LoadBalancer also its addresses (even with allocateLoadBalancerNodePorts false: no node
    // ports) and, with externalTrafficPolicy Local, healthCheckNodePort on every node.
    field: "spec.type: NodePort, LoadBalancer",
    opens: (svc) => (serviceType(svc) === "NodePort" || serviceType(svc) === "LoadBalancer" ? `type ${serviceType(svc)}` : undefined),
    beyondEntry: (svc) => {
      const excess = ourServiceExcess(svc);
      const extra = [
        ...(excess.type ? [`type ${excess.type} (the contract declares NodePort)`] : []),
        ...(excess.extraPorts.length ? [`${excess.extraPorts.length + 1} ports (the contract declares one)`] : []),
      ];
      return extra.length ? extra.join("; ") : undefined;
    },
    cel: {
      opens: `variables.serviceType in ${EXPOSING_TYPES}`,
      withinEntry: "variables.serviceType == 'NodePort' && size(variables.servicePorts) <= 1",
      // New: a load balancer, a port (by port and protocol), a nodePort (moved, or allocated: allocateLoadBalancerNodePorts
      // false -> true), a health check node port.
      newOnUpdate: [
        `(${isLoadBalancer} && variables.oldServiceType != 'LoadBalancer')`,
        `(variables.serviceType in ${EXPOSING_TYPES} && (!(variables.oldServiceType in ${EXPOSING_TYPES}) || variables.servicePorts.exists(p, !variables.oldServicePorts.exists(o, o.port == p.port && ${protocol("o")} == ${protocol("p")})) || variables.servicePorts.exists(p, has(p.nodePort) && p.nodePort != 0 && !variables.oldServicePorts.exists(o, has(o.nodePort) && o.nodePort == p.nodePort && ${protocol("o")} == ${protocol("p")}))))`,
        `(${isLoadBalancer} && ${allocatesNodePorts("object")} && !${allocatesNodePorts("oldObject")})`,
        `(${isLoadBalancer} && ${healthCheckPort("object")} != 0 && ${healthCheckPort("object")} != ${healthCheckPort("oldObject")})`,
        `(${isLoadBalancer} && ${localTraffic("object")} && !${localTraffic("oldObject")})`,
      ].join(" || "),
    },
  },
  {
    // Every port on each listed address, whatever the type (honouredExternalIPs: not where Kubernetes ignores them).
    field: "spec.externalIPs",
    opens: (svc) => (honouredExternalIPs(svc).length ? `externalIPs ${honouredExternalIPs(svc).join(", ")}` : undefined),
    cel: {
      opens: "size(variables.externalIPs) > 0",
      withinEntry: "size(variables.externalIPs) == 0",
      describe: `(size(variables.externalIPs) == 0 ? '' : size(variables.externalIPs) <= ${CHECK_LIMITS.externalIPs} ? ', externalIPs ' + variables.externalIPs.join(', ') : ', ' + string(size(variables.externalIPs)) + ' externalIPs')`,
      newOnUpdate: "variables.externalIPs.exists(ip, !(ip in variables.oldExternalIPs))",
    },
  },
];

/** What a Service opens, rule by rule (`ours`: what our Service opens beyond its entry; empty: it opens nothing more). */
export const serviceOpens = (svc: Service, rules: readonly ServiceRule[] = SERVICE_RULES, ours = false) =>
  rules.flatMap((r) => (ours && r.beyondEntry ? r.beyondEntry(svc) : r.opens(svc)) ?? []);

/** The containers whose ports a pod spec lists (ephemeral ones may not hold ports; counted if a snapshot says so). */
export const POD_CONTAINER_LISTS = ["initContainers", "containers", "ephemeralContainers"] as const;

/** A pod's host port (allowlist item: the port): a container port's hostPort (0 is none), on the host network its containerPort. */
export const HOST_PORT_RULE = {
  opens: (port: unknown, onHostNetwork: boolean) => portNumber(field(port, "hostPort")) || (onHostNetwork ? portNumber(field(port, "containerPort")) : 0),
  cel: (p: string, onHostNetwork: string) =>
    `has(${p}.hostPort) && ${p}.hostPort != 0 ? ${p}.hostPort : (${onHostNetwork} && has(${p}.containerPort) ? ${p}.containerPort : 0)`,
} as const;

/**
 * A pod rule (here the host network): a spec `field` by which a pod opens more of its node than its host ports, declared by
 * an item 'ns/pod-prefix*:<item>' (a word: it names the guard's variables). `opens`, `cel` (of a pod or template `t`): if it
 * does; `coversPorts`: its item declares the pod's host ports too, and it is an opening only when the pod lists no port.
 * `words`: the opening's `ports`, the pre-deny report's `refused`, the audit's `undeclared`, the guard's `says`.
 */
export const HOST_NETWORK_RULE = {
  item: "hostNetwork",
  field: "hostNetwork",
  opens: (spec: unknown) => field(spec, "hostNetwork") === true,
  cel: (t: string) => `(has(${t}.spec.hostNetwork) && ${t}.spec.hostNetwork)`,
  coversPorts: true,
  words: {
    ports: "every port of the node",
    refused: "the host network (no port listed)",
    undeclared: `on the host network with no port listed: it may serve on every port of its node; declare it in ui-exposure:allowlist.hostPorts as 'namespace/pod-prefix*:hostNetwork', or take it off the host network`,
    says: "is on the host network (it may serve on every port of the node)",
  },
};
export type PodRule = typeof HOST_NETWORK_RULE;
export const POD_RULES: readonly PodRule[] = [HOST_NETWORK_RULE];

/** The grammar of an allowlist.hostPorts item, and its forms as the messages name them. */
const forms = ["port", ...POD_RULES.map((r) => r.item)].map((i) => `'namespace/pod-name-or-prefix*:${i}'`).join(" or ");
export const HOST_PORT_ITEM = { syntax: new RegExp(`^[a-z0-9-]+\\/[a-z0-9.*-]+:(\\d+|${POD_RULES.map((r) => r.item).join("|")})$`), forms };
