import type { Contract } from "./contract/schema";
import { isHostPortEntry } from "./contract/schema";
import {
  CHECK_LIMITS,
  field,
  HOST_NETWORK_RULE,
  HOST_PORT_RULE,
  healthCheckNodePort,
  honouredExternalIPs,
  isObject,
  list,
  matchesLabels,
  POD_CONTAINER_LISTS,
  POD_RULES,
  SERVICE_RULES,
  type ServiceRule,
  serviceOpens,
  serviceType,
} from "./exposure-rules";
import type { Pod, Service } from "./kube/types";
import { ourServiceName, ourServicesByName } from "./ownership";
import type { Allowlist } from "./settings";

// The model of exposure: what a stack declares, what a pod or a Service opens (exposure-rules.ts's rules, read in
// TypeScript), which rule declares it. Whether a Service is this stack's is src/core/ownership.ts's to say.

export { CHECK_LIMITS, field, matchesLabels, ourServiceExcess, type PodRule } from "./exposure-rules";
export { ourServiceName };
/** An exposed UI's scheme (http or https), also the name of our Service's one port (Kubernetes keeps an allocated nodePort by port name). */
export const webScheme = (scheme: string): "http" | "https" => (scheme === "https" ? "https" : "http");

export const matchesPattern = (p: Pick<Pattern, "prefix" | "text">, value: string) => (p.prefix ? value.startsWith(p.text) : value === p.text);

type Pattern = ReturnType<typeof parsePattern>;
/** One allowlist item as written (`source`), parsed once: the name or prefix matched against "namespace/name". */
function parsePattern(source: string, name: string, reasons: Allowlist["reasons"]) {
  const reason = reasons?.[source];
  return { source, ...namePattern(name), ...(reason ? { reason } : {}) };
}

/** "namespace/name" matches itself; "namespace/prefix*" every name starting with prefix ('*' is only a suffix). */
export const namePattern = (name: string) => ({ prefix: name.endsWith("*"), text: name.endsWith("*") ? name.slice(0, -1) : name });

export type ExposureRules = ReturnType<typeof exposureRules>;

/** The rules of a stack: the exposed entries it publishes (`selected`) and its allowlist, parsed once; `serviceRules`, `podRules`: the table's. */
export function exposureRules(contract: Contract, selected: readonly string[], allowlist: Allowlist, serviceRules = SERVICE_RULES, podRules = POD_RULES) {
  const chosen = new Set(selected);
  const entries = contract.endpoints.filter((e) => chosen.has(e.name));
  return {
    serviceRules,
    podRules,
    ourServices: ourServicesByName(entries),
    hostPortEntries: entries
      .filter(isHostPortEntry)
      .map((e) => ({ entry: e.name, namespace: e.hostPort.namespace, port: e.hostPort.port, podSelector: e.hostPort.podSelector ?? {} })),
    services: allowlist.services.map((p) => parsePattern(p, p, allowlist.reasons)),
    hostPorts: allowlist.hostPorts.map((p) => {
      const colon = p.lastIndexOf(":");
      // A pod rule's item (":hostNetwork": the pod may run on the host network), else a port.
      const port = podRules.some((r) => p.endsWith(`:${r.item}`)) ? p.slice(colon + 1) : Number(p.slice(colon + 1));
      return { ...parsePattern(p, p.slice(0, colon), allowlist.reasons), port };
    }),
  };
}

export type Declaration = { by: "contract"; entry: string } | { by: "allowlist"; pattern: Pattern };

const allowlisted = (pattern: Pattern | undefined): Declaration | undefined => pattern && { by: "allowlist", pattern };
export const describeDeclaration = (d: Declaration) => (d.by === "contract" ? `contract entry '${d.entry}'` : `allowlist '${d.pattern.source}'`);

/** A pod (template) spec's host ports; `serves`: one of `spec.containers` (an init container's is held, but nothing answers there once the pod runs). */
export function effectiveHostPorts(spec: unknown) {
  const hostNetwork = HOST_NETWORK_RULE.opens(spec);
  const byKey = new Map<string, { port: number; protocol: string; onHostNetwork: boolean; serves: boolean }>();
  for (const k of POD_CONTAINER_LISTS) {
    for (const c of list(field(spec, k))) {
      for (const p of list(field(c, "ports"))) {
        const port = HOST_PORT_RULE.opens(p, hostNetwork);
        const protocol = typeof field(p, "protocol") === "string" ? (field(p, "protocol") as string) : "TCP";
        if (!port) continue;
        const seen = byKey.get(`${port}/${protocol}`);
        if (seen) seen.serves ||= k === "containers";
        else byKey.set(`${port}/${protocol}`, { port, protocol, onHostNetwork: hostNetwork, serves: k === "containers" });
      }
    }
  }
  return [...byKey.values()];
}

/** Whether a pod spec holds no host port: not on the host network and no hostPort other than 0 (one cheap pass, as the policy does). */
export function holdsNoHostPort(spec: unknown): boolean {
  if (HOST_NETWORK_RULE.opens(spec)) return false;
  return POD_CONTAINER_LISTS.every((k) => list(field(spec, k)).every((c) => list(field(c, "ports")).every((p) => !field(p, "hostPort"))));
}

/** Whether a pod spec is past CHECK_LIMITS (counted as the policy counts: per container list, per container). */
export function podTooLargeToCheck(spec: unknown): boolean {
  const lists = POD_CONTAINER_LISTS.map((k) => list(field(spec, k)));
  if (lists.some((l) => l.length > CHECK_LIMITS.containers)) return true;
  const most = Math.max(0, ...lists.flat().map((c) => list(field(c, "ports")).length));
  if (most > CHECK_LIMITS.plainPortsPerContainer) return true;
  return most > CHECK_LIMITS.portsPerContainer && !holdsNoHostPort(spec);
}

/** A pod whose containers have stopped for good holds no port; it is never created again (its owner's next pod is). */
export const isFinishedPod = (pod: { status?: { phase?: string } }) => pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";

/** A pod, or a workload's pod template (pods "<workload>-..."); `generateName` in full; `owner`, as written, for the pre-deny advice only. */
export interface PodIdentity {
  namespace: string;
  name: string;
  isPod: boolean;
  labels: Readonly<Record<string, string>> | undefined;
  generateName?: string;
  owner?: { kind: string; name: string };
}

/** Which rule declares host port `port` of a pod: a contract hostPort entry, else an allowlist item (namesPod). */
export function hostPortDeclaration(rules: ExposureRules, pod: PodIdentity, port: number): Declaration | undefined {
  const entry = rules.hostPortEntries.find((e) => e.namespace === pod.namespace && e.port === port && matchesLabels(pod.labels, e.podSelector));
  if (entry) return { by: "contract", entry: entry.entry };
  return allowlisted(rules.hostPorts.find((p) => p.port === port && namesPod(p, pod)));
}

/**
 * An allowlist (or acknowledge) item names this pod, or every pod of this template: an exact item a pod's own name; a prefix item the name or the
 * generateName, so "ns/<workload>-*" admits every pod its controller creates, whatever the name's length and the revision. The keys matched:
 * "namespace/name" of a pod, "namespace/<workload>-" of a template, and a pod's "namespace/<generateName>".
 */
export const namesPod = (p: Pick<Pattern, "prefix" | "text">, pod: Pick<PodIdentity, "namespace" | "name" | "isPod" | "generateName">) => {
  const key = `${pod.namespace}/${pod.name}${pod.isPod ? "" : "-"}`;
  const generated = pod.isPod && pod.generateName ? `${pod.namespace}/${pod.generateName}` : undefined;
  return p.prefix ? key.startsWith(p.text) || (generated?.startsWith(p.text) ?? false) : pod.isPod && key === p.text;
};

/**
 * One thing a pod (or template) opens on its node: a host port, or a pod rule's (`kind`: its item); `what` as the pre-deny report names it; `item`
 * what follows ':' in the allowlist item that declares it; `declared` by a rule, else `undeclared` says why and what to do.
 */
export type PodOpening = { kind: string; ports: string; what: string; item: string } & (
  | { declared: Declaration; undeclared?: undefined }
  | { declared?: undefined; undeclared: string }
);

/** What a pod (or template) opens, judged: each host port by its own declaration or a covering pod rule's item; `tooLarge`: past CHECK_LIMITS. */
export function podOpenings(rules: ExposureRules, pod: PodIdentity, spec: unknown): { tooLarge: boolean; openings: PodOpening[] } {
  const byRule = rules.podRules
    .filter((r) => r.opens(spec))
    .map((rule) => ({ rule, declared: allowlisted(rules.hostPorts.find((p) => p.port === rule.item && namesPod(p, pod))) }));
  const covering = byRule.find((r) => r.rule.coversPorts && r.declared)?.declared;
  const openings = effectiveHostPorts(spec).map((h): PodOpening => {
    const declared = hostPortDeclaration(rules, pod, h.port) ?? covering;
    const opening = { kind: "hostPort", ports: `${h.port}/${h.protocol}`, what: `hostPort ${h.port}/${h.protocol}`, item: String(h.port) };
    if (declared) return { ...opening, declared };
    const note = h.onHostNetwork ? "hostNetwork pod (every containerPort is a hostPort); " : "";
    return { ...opening, undeclared: `${note}in neither a contract hostPort entry nor ui-exposure:allowlist.hostPorts: remove the hostPort or declare it` };
  });
  for (const { rule, declared } of byRule.filter((r) => !(r.rule.coversPorts && openings.length))) {
    const opening = { kind: rule.item, ports: rule.words.ports, what: rule.words.refused, item: rule.item };
    openings.push(declared ? { ...opening, declared } : { ...opening, undeclared: rule.words.undeclared });
  }
  return { tooLarge: podTooLargeToCheck(spec), openings };
}

/** The refused openings of a pod as the pre-deny report names them ("hostPort 9964/TCP, hostPort 9965/TCP", "the host network (no port listed)"). */
export const describeRefused = (openings: readonly PodOpening[]) => openings.map((o) => o.what).join(", ");

/** How a Service is reachable from outside the cluster, rule by rule of the table, with what the audit names. */
export function serviceOpenings(svc: Service, rules: readonly ServiceRule[] = SERVICE_RULES) {
  const health = healthCheckNodePort(svc);
  return { type: serviceType(svc), opens: serviceOpens(svc, rules), externalIPs: honouredExternalIPs(svc), ...(health ? { healthCheckNodePort: health } : {}) };
}

export const isExposingService = (svc: Service, rules: readonly ServiceRule[] = SERVICE_RULES) => serviceOpens(svc, rules).length > 0;

/** Our Service's spec as a NodePort entry declares it (one port named by the scheme): the component creates it, the guard dry-runs it. */
export function ourServiceSpec(plan: { selector: Record<string, string>; portName: string; port: number; targetPort: number | string; protocol: string }) {
  return {
    type: "NodePort",
    selector: plan.selector,
    externalTrafficPolicy: "Cluster",
    ports: [{ name: plan.portName, port: plan.port, targetPort: plan.targetPort, protocol: plan.protocol }],
  };
}

/** A Service that opens something: declared by a rule, or undeclared with why. Ours by its entry alone; any other by the allowlist. */
export function serviceVerdict(rules: ExposureRules, svc: Service): { declared: Declaration } | { undeclared: string; entry?: string } {
  const key = `${svc.metadata.namespace ?? "default"}/${svc.metadata.name}`;
  const ours = rules.ourServices.get(key);
  if (ours) {
    const extra = serviceOpens(svc, rules.serviceRules, true);
    return extra.length ? { undeclared: extra.filter(Boolean).join("; "), entry: ours.entry } : { declared: { by: "contract", entry: ours.entry } };
  }
  const declared = allowlisted(rules.services.find((p) => matchesPattern(p, key)));
  if (declared) return { declared };
  return { undeclared: serviceOpens(svc, rules.serviceRules).filter(Boolean).join("; ") };
}

/** A workload read back (apps/v1 Deployment, StatefulSet, DaemonSet, ReplicaSet; batch/v1 Job, CronJob): read field by field, never trusted. */
export type WorkloadObject = { kind?: string; metadata?: { name?: string; namespace?: string }; spec?: unknown };

const stringMap = (v: unknown) => (isObject(v) && Object.values(v).every((x) => typeof x === "string") ? (v as Record<string, string>) : undefined);
const text = (v: unknown, otherwise: string) => (typeof v === "string" && v ? v : otherwise);

/** An object's controller ({kind, name}); the API server checks neither's form and the advice prints both: a malformed one is no owner. */
function controllerOf(meta: unknown): PodIdentity["owner"] {
  const ref = list(field(meta, "ownerReferences")).find((r) => field(r, "controller") === true);
  const [kind, name] = [text(field(ref, "kind"), ""), text(field(ref, "name"), "")];
  return /^[A-Za-z][A-Za-z0-9]{0,62}$/.test(kind) && /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name) ? { kind, name } : undefined;
}

/** The one classification the audit and the pre-deny report render: Services that open something, pods, workload templates, judged. */
export function classifyCluster(rules: ExposureRules, cluster: { services: readonly Service[]; pods: readonly Pod[]; workloads?: readonly WorkloadObject[] }) {
  const services = cluster.services
    .filter((svc) => isExposingService(svc, rules.serviceRules))
    .map((svc) => ({ svc, openings: serviceOpenings(svc, rules.serviceRules), verdict: serviceVerdict(rules, svc) }));
  const judge = (kind: string, pod: PodIdentity, spec: unknown, node?: string) => ({ kind, ...pod, node, ...podOpenings(rules, pod, spec) });
  // A finished pod is not created again and holds nothing; its owner's next pod is (checked as the owner's template).
  const pods = cluster.pods
    .filter((p) => !isFinishedPod(p))
    .map((p) =>
      judge(
        "Pod",
        {
          namespace: p.metadata.namespace ?? "default",
          name: p.metadata.name,
          isPod: true,
          labels: p.metadata.labels,
          generateName: text(field(p.metadata, "generateName"), "") || undefined,
          owner: controllerOf(p.metadata),
        },
        p.spec,
        p.spec?.nodeName,
      ),
    );
  const workloads = (cluster.workloads ?? []).flatMap((w) => {
    const meta = field(w, "metadata");
    const name = text(field(meta, "name"), "");
    if (!name) return [];
    const kind = text(field(w, "kind"), "Workload");
    const spec = field(w, "spec");
    const template = kind === "CronJob" ? field(field(field(spec, "jobTemplate"), "spec"), "template") : field(spec, "template");
    const labels = stringMap(field(field(template, "metadata"), "labels"));
    const identity = { namespace: text(field(meta, "namespace"), "default"), name, isPod: false, labels, owner: controllerOf(meta) };
    return [judge(kind, identity, field(template, "spec"))];
  });
  return { services, pods, workloads };
}

/**
 * What a reader holds of a listed object, changed in place: the fields the model and the Cilium checks read, each list cut one past CHECK_LIMITS
 * (where the verdict no longer changes), so that a fat object costs what a small one does.
 */
export function heldObject<T>(item: T, templateAnnotations: readonly string[] = []): T {
  const spec = field(item, "spec");
  if (!isObject(spec)) return item;
  cut(spec, "ports", CHECK_LIMITS.servicePorts + 1);
  cut(spec, "externalIPs", CHECK_LIMITS.externalIPs + 1);
  // A pod's own spec, a workload's template, a CronJob's job template.
  if (Array.isArray(spec.containers)) heldPodSpec(spec);
  for (const template of [field(spec, "template"), field(field(field(spec, "jobTemplate"), "spec"), "template")]) {
    if (!isObject(template)) continue;
    const meta = field(template, "metadata");
    if (isObject(meta)) keepAnnotations(meta, templateAnnotations);
    const podSpec = field(template, "spec");
    if (isObject(podSpec)) heldPodSpec(podSpec);
  }
  return item;
}

/** Drops an object's annotations but `keys` (those with a string value). */
export function keepAnnotations(meta: Record<string, unknown>, keys: readonly string[]): void {
  const kept = keys.flatMap((k) => (typeof field(meta.annotations, k) === "string" ? [[k, field(meta.annotations, k)]] : []));
  delete meta.annotations;
  if (kept.length) meta.annotations = Object.fromEntries(kept);
}

const cut = (o: Record<string, unknown>, key: string, max: number) => {
  const v = o[key];
  if (Array.isArray(v) && v.length > max) o[key] = v.slice(0, max);
};

/** A pod spec as the model reads it: its node, the host network, and each container's name and ports, bounded. */
function heldPodSpec(spec: Record<string, unknown>): void {
  for (const key of Object.keys(spec)) if (!["nodeName", ...POD_RULES.map((r) => r.field), ...POD_CONTAINER_LISTS].includes(key)) delete spec[key];
  for (const list of POD_CONTAINER_LISTS) {
    cut(spec, list, CHECK_LIMITS.containers + 1);
    const containers = spec[list];
    if (!Array.isArray(containers)) continue;
    spec[list] = containers.map((c) => {
      if (!isObject(c)) return c;
      const ports = Array.isArray(c.ports) ? c.ports.slice(0, CHECK_LIMITS.plainPortsPerContainer + 1) : c.ports;
      return { name: c.name, ...(ports === undefined ? {} : { ports }) };
    });
  }
}
