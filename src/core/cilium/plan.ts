import { field, list } from "../exposure-rules";
import type { Result } from "../findings";
import type { ConfigMap, GenericObject, Service } from "../kube/types";
import { groupBy } from "../plan";
import type { CiliumSettings, CohabitCiliumSettings, L4CiliumSettings } from "../settings";
import { releaseImportCommand } from "./adopt";
import { type LiveRelease, releaseSnapshotCommand } from "./release";
import { l4Values, releaseValuesDiff } from "./values";

/** What the Cilium concern reads from the cluster (one call per kind; an optional list left out reads as none). */
export type CiliumObservation = Record<"lbIpPools" | "l2Policies" | "gateways" | "gatewayClasses" | "httpRoutes", readonly GenericObject[]> &
  Partial<Record<"ingresses" | "ingressClasses" | "bgpAdvertisements" | "bgpPeeringPolicies", readonly GenericObject[]>> & {
    services: readonly Service[];
    ciliumConfig?: ConfigMap;
    /** The Helm release's deployed revision (l4): none found, or why its record is unreadable. */
    helmRelease?: Result<LiveRelease | undefined>;
  };

export type CiliumReleasePlan = Pick<L4CiliumSettings["chart"], "releaseName" | "namespace" | "version"> &
  Pick<L4CiliumSettings, "skipAwait"> &
  ReturnType<typeof chartSource> & { values: Record<string, unknown> };

export type CiliumPlan =
  /** `changes`: the values diff against the live release, one line per key. */
  | { mode: "l4"; release: CiliumReleasePlan; changes: string[] }
  /** `phase2`: what the removal order will ask for (nothing left: none), for the operator to see ahead. */
  | { mode: "cohabit"; observed: Record<string, string>; phase2?: string[] };

/** The `cilium` stack output: the mode, what was installed (and its adoption command, docs/cilium.md) or observed. */
export type CiliumSummary = { mode: "l4"; chartVersion: string; release: string; adopt: string } | Extract<CiliumPlan, { mode: "cohabit" }>;

export type CiliumContext = { stack: string; production: boolean };

/** What planCilium reads besides the lists: cilium-config (cohabit: the guard; l4: whether Cilium runs) and, in l4, the Helm release. */
export function ciliumReads(s: CiliumSettings): { configMap: { namespace: string; name: string }; release?: { namespace: string; releaseName: string } } {
  return s.mode === "cohabit"
    ? { configMap: { namespace: s.namespace, name: s.configMap } }
    : { configMap: { ...s.chart, name: "cilium-config" }, release: s.chart };
}

const ref = (o: { metadata: { namespace?: string; name: string } }) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);
const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** Whether LB-IPAM gave this Service its address (not another controller's class, nor Node IPAM's `io.cilium/node`: lb-ipam.rst). */
function servedByLbIpam(s: Service): boolean {
  const cls = s.spec?.loadBalancerClass;
  return (
    s.spec?.type === "LoadBalancer" &&
    (s.status?.loadBalancer?.ingress ?? []).length > 0 &&
    (!cls || (cls.startsWith("io.cilium/") && cls !== "io.cilium/node"))
  );
}

/** Cilium's Gateways (class with io.cilium/gateway-controller, or a gone class named "cilium") and their HTTPRoutes; odd items skipped. */
export function ciliumGatewayObjects(observed: CiliumObservation): { gateways: GenericObject[]; httpRoutes: GenericObject[] } {
  const classes = new Map(observed.gatewayClasses.map((c) => [c.metadata.name, text(field(c.spec, "controllerName"))]));
  const ours = (name = "") => (classes.has(name) ? classes.get(name) === "io.cilium/gateway-controller" : name === "cilium");
  const gateways = observed.gateways.filter((g) => ours(text(g.spec?.gatewayClassName)));
  const names = new Set(gateways.map(ref));
  const parent = (r: GenericObject, p: unknown) =>
    (text(field(p, "kind")) ?? "Gateway") === "Gateway" &&
    (text(field(p, "group")) ?? "gateway.networking.k8s.io") === "gateway.networking.k8s.io" &&
    names.has(`${text(field(p, "namespace")) ?? r.metadata.namespace}/${text(field(p, "name"))}`);
  return { gateways, httpRoutes: observed.httpRoutes.filter((r) => list(r.spec?.parentRefs).some((p) => parent(r, p))) };
}

/** The annotation that makes an IngressClass the cluster's default (Ingresses without a class go to it). */
export const DEFAULT_INGRESS_CLASS = "ingressclass.kubernetes.io/is-default-class";
/** An Ingress's class before ingressClassName: Cilium's controller still takes `kubernetes.io/ingress.class: cilium`. */
export const LEGACY_INGRESS_CLASS = "kubernetes.io/ingress.class";

/** What l4 would orphan: Cilium's Ingresses, node IPAM's Services, BGP advertisements of LoadBalancer IPs (each with its JSON patch, highest index first). */
export function loadBalancerPathObjects(observed: CiliumObservation) {
  const classes = new Map((observed.ingressClasses ?? []).map((c) => [c.metadata.name, c]));
  const byCilium = (name = "") => (classes.has(name) ? field(classes.get(name)?.spec, "controller") === "cilium.io/ingress-controller" : name === "cilium");
  // With several default classes (the API server allows it), a classless Ingress may be any of them: Cilium's counts.
  const defaults = [...classes.values()].filter((c) => c.metadata.annotations?.[DEFAULT_INGRESS_CLASS] === "true").map((c) => c.metadata.name);
  const byDefault = defaults.find((name) => byCilium(name)) ?? defaults[0];
  // The class by field, else by the legacy annotation (which Cilium's controller still honours), else the default.
  const classOf = (i: GenericObject) => text(i.spec?.ingressClassName) ?? text(i.metadata.annotations?.[LEGACY_INGRESS_CLASS]) ?? byDefault;
  const patches = (objects: readonly GenericObject[] | undefined, key: string, op: (entry: unknown, at: string) => object | undefined) =>
    (objects ?? []).flatMap((object) => {
      const ops = list(field(object.spec, key)).flatMap((e, i) => op(e, `/spec/${key}/${i}`) ?? []);
      return ops.length ? [{ object, ops: ops.reverse() }] : [];
    });
  return {
    ingresses: (observed.ingresses ?? []).filter((i) => byCilium(classOf(i))),
    nodeIpam: observed.services.filter((s) => s.spec?.type === "LoadBalancer" && s.spec.loadBalancerClass === "io.cilium/node"),
    bgp: [
      ...patches(observed.bgpAdvertisements, "advertisements", (a, at) => {
        const addresses = list(field(field(a, "service"), "addresses"));
        const rest = addresses.filter((x) => x !== "LoadBalancerIP");
        if (field(a, "advertisementType") !== "Service" || rest.length === addresses.length) return undefined;
        return rest.length ? { op: "replace", path: `${at}/service/addresses`, value: rest } : { op: "remove", path: at };
      }),
      // A virtual router advertises its Services' serviceAdvertisements (CRD default: [LoadBalancerIP]): that one goes; the selector, if nothing else stays.
      ...patches(observed.bgpPeeringPolicies, "virtualRouters", (r, at) => {
        if (field(r, "serviceSelector") === undefined) return undefined;
        const ads = Array.isArray(field(r, "serviceAdvertisements")) ? list(field(r, "serviceAdvertisements")) : ["LoadBalancerIP"];
        const rest = ads.filter((x) => x !== "LoadBalancerIP");
        if (rest.length === ads.length) return undefined;
        return rest.length ? { op: "replace", path: `${at}/serviceAdvertisements`, value: rest } : { op: "remove", path: `${at}/serviceSelector` };
      }),
    ],
  };
}

/** One command per namespace, for objects sorted by namespace then name. */
function perNamespace(objects: readonly { metadata: { namespace?: string; name: string } }[], line: (ns: string, names: string[]) => string): string[] {
  const byNs = [...groupBy(objects, (o) => o.metadata.namespace ?? "")].sort(([a], [b]) => a.localeCompare(b));
  return byNs.map(([ns, group]) => line(ns ? ` -n ${ns}` : "", group.map((o) => o.metadata.name).sort()));
}

/** Why l4 refuses while the Gateway API / LB-IPAM era is left, with the order that works; the program never deletes them: it cannot prove it created them. */
export function removalOrderProblem(observed: CiliumObservation): string | undefined {
  const order = removalOrder(observed);
  const why = `are still in the cluster, and once mode 'l4' turns Gateway API, LB-IPAM and L2 announcements off nothing cleans up after them (stale Services, addresses, leases and BGP routes stay; the BGP control plane itself stays on): remove them first, in this order, then run up again (GatewayClass and CRDs stay, or go last; runbook: docs/cilium.md):`;
  return order && [`cilium (l4): ${order.found} ${why}`, ...order.steps].join("\n");
}

/** What is left of the Gateway API / LB-IPAM era (`found`), and the steps that remove it, in order. */
export function removalOrder(observed: CiliumObservation): { found: string; steps: string[] } | undefined {
  const { gateways, httpRoutes } = ciliumGatewayObjects(observed);
  const { lbIpPools: pools, l2Policies } = observed;
  const { ingresses, nodeIpam, bgp } = loadBalancerPathObjects(observed);
  const kinds: [string, readonly { metadata: { namespace?: string; name: string } }[]][] = [
    ["HTTPRoutes", httpRoutes],
    ["Gateways", gateways],
    ["Cilium Ingresses", ingresses],
    ["Services of class io.cilium/node (node IPAM)", nodeIpam],
    ["BGP advertisements of LoadBalancer IPs", bgp.map((b) => ({ metadata: { name: `${b.object.kind} ${b.object.metadata.name}` } }))],
    ["CiliumL2AnnouncementPolicies", l2Policies],
    ["CiliumLoadBalancerIPPools", pools],
  ];
  const found = kinds.filter(([, list]) => list.length).map(([kind, list]) => `${kind} ${list.map(ref).sort().join(", ")}`);
  if (!found.length) return undefined;
  // The Services LB-IPAM addressed, but the Gateways' (gone with them before the pools go).
  const owned = new Set(gateways.map((g) => `${g.metadata.namespace}/cilium-gateway-${g.metadata.name}`));
  const addressed = observed.services.filter((s) => !owned.has(ref(s)) && servedByLbIpam(s));
  const steps: [string, string[]][] = [
    ["delete the HTTPRoutes", perNamespace(httpRoutes, (ns, n) => `kubectl${ns} delete httproute ${n.join(" ")}`)],
    [
      "delete the Gateways and wait until their Services, Endpoints and CiliumEnvoyConfigs are gone (garbage collection of what the Gateway owns)",
      perNamespace(gateways, (ns, n) => {
        const children = n.flatMap((g) => ["service", "endpoints", "ciliumenvoyconfig"].map((k) => `${k}/cilium-gateway-${g}`));
        return `kubectl${ns} delete gateway ${n.join(" ")} && kubectl${ns} wait --for=delete --timeout=5m ${children.join(" ")}`;
      }),
    ],
    [
      "delete the Cilium Ingresses (or move them to another IngressClass) and wait until they are gone",
      perNamespace(
        ingresses,
        (ns, n) => `kubectl${ns} delete ingress ${n.join(" ")} && kubectl${ns} wait --for=delete --timeout=5m ${n.map((i) => `ingress/${i}`).join(" ")}`,
      ),
    ],
    [
      "turn the node IPAM Services into NodePort Services (their nodePorts stay; publish them as contract entries if they serve a UI)",
      nodeIpam.map(
        (s) => `kubectl -n ${s.metadata.namespace} patch service ${s.metadata.name} --type merge -p '{"spec":{"type":"NodePort","loadBalancerClass":null}}'`,
      ),
    ],
    [
      "stop advertising LoadBalancer IPs over BGP (the BGP control plane stays on: pod CIDRs and every other advertisement keep running)",
      bgp.map(({ object, ops }) => `kubectl patch ${object.kind.toLowerCase()} ${object.metadata.name} --type json -p '${JSON.stringify(ops)}'`),
    ],
    ["delete the L2 announcement policies", perNamespace(l2Policies, (_, n) => `kubectl delete ciliuml2announcementpolicy ${n.join(" ")}`)],
    [
      `delete the pools, while LB-IPAM still runs${addressed.length ? ", and wait until its Services have no ingress address left (LB-IPAM strips them)" : ""}`,
      pools.length
        ? [
            ...perNamespace(pools, (_, n) => `kubectl delete ciliumloadbalancerippool ${n.join(" ")}`),
            ...perNamespace(addressed, (ns, n) => `until [ -z "$(kubectl${ns} get service ${n.join(" ")} -o jsonpath='{..ingress}')" ]; do sleep 2; done`),
          ]
        : [],
    ],
    [
      "delete the L2 announcement leases left (once nothing is announced the agents release them, and delete released ones only every minute)",
      pools.length || l2Policies.length ? [L2_LEASES_DELETE] : [],
    ],
  ];
  return {
    found: found.join("; "),
    steps: steps
      .filter(([, commands]) => commands.length)
      .flatMap(([what, commands], i) => [`    ${i + 1}. ${what}:`, ...commands.map((c) => `         ${c}`)]),
  };
}

/** Deletes the L2 announcement leases (kube-system/cilium-l2announce-<ns>-<svc>, one per announced Service). */
export const L2_LEASES_DELETE = "kubectl -n kube-system get leases -o name | grep '/cilium-l2announce-' | xargs -r kubectl -n kube-system delete";

/** cilium-config keys worth reporting in cohabitation (present ones only). */
const OBSERVED_KEYS = ["kube-proxy-replacement", "enable-node-port", "enable-host-port", "enable-lb-ipam", "default-lb-service-ipam"].concat([
  "enable-gateway-api",
  "enable-l2-announcements",
  "enable-l7-proxy",
]);

/** `kube-proxy-replacement` meaning full replacement: "true", or "strict" up to 1.15 ("partial" does not serve hostPorts). */
const KPR_ON = new Set(["true", "strict"]);

function planCohabit(settings: CohabitCiliumSettings, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  const where = `${settings.namespace}/${settings.configMap}`;
  const data = observed.ciliumConfig?.data;
  const refuse = (problem: string) => ({ problems: [`cilium (cohabit): ${problem}`] });
  if (!data) return refuse(`ConfigMap ${where} not found; is Cilium installed in this cluster? (mode 'cohabit' reads it to check kube-proxy replacement)`);
  const kpr = data["kube-proxy-replacement"];
  if (kpr === undefined || !KPR_ON.has(kpr)) {
    return refuse(
      `kube-proxy-replacement is '${kpr ?? "unset"}' in ${where}; without kube-proxy replacement Cilium does not serve NodePorts and hostPorts in eBPF, so the URLs would not answer (mode 'cohabit' never changes Cilium: turn it on through the cluster's own Cilium procedure first)`,
    );
  }
  const reported = Object.fromEntries(OBSERVED_KEYS.flatMap((k) => (data[k] !== undefined ? [[k, data[k]]] : [])));
  const order = removalOrder(observed);
  return { mode: "cohabit", observed: reported, ...(order ? { phase2: [order.found, ...order.steps.map((l) => l.trim())] } : {}) };
}

function planL4(settings: L4CiliumSettings, ctx: CiliumContext, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  const stackFile = `Pulumi.${ctx.stack}.yaml`;
  const { namespace, releaseName } = settings.chart;
  const record = observed.helmRelease ?? { ok: true, value: undefined };
  const live = record.ok ? record.value : undefined;
  const values = l4Values(settings, stackFile, live);
  const shared = observed.services.find((s) => s.metadata.namespace === namespace && s.metadata.name === "cilium-ingress" && s.spec?.type === "LoadBalancer");
  const problems = [
    ctx.production && !settings.phase2Decided
      ? `cilium (l4): stack '${ctx.stack}' is production (ui-exposure:production) and refuses mode 'l4' until phase 2 is decided: set ui-exposure:cilium.phase2Decided: true in ${stackFile} (runbook: docs/cilium.md)`
      : undefined,
    ...(record.ok ? [] : record.problems.map((p) => p.message)),
    record.ok && !live && observed.ciliumConfig
      ? `cilium (l4): Cilium runs (ConfigMap ${namespace}/cilium-config) but no deployed Helm release ${namespace}/${releaseName} was found (Secrets sh.helm.release.v1.${releaseName}.v<N> labelled owner=helm,name=${releaseName}); mode 'l4' starts from the live release's values so that the upgrade changes only the keys it owns. Check the release's name and namespace (helm list -A) against ui-exposure:cilium.chart.releaseName and .namespace in ${stackFile}; for render, add the records to the snapshot (${releaseSnapshotCommand(namespace, releaseName)}); a Cilium not installed by Helm cannot be managed by mode 'l4' (keep mode 'cohabit')`
      : undefined,
    ...("problems" in values ? values.problems : []),
    shared && "values" in values && field(values.values.ingressController, "enabled") !== false
      ? `cilium (l4): Service ${namespace}/cilium-ingress (Cilium Ingress's shared LoadBalancer Service) gets its address from LB-IPAM, which mode 'l4' turns off, and Cilium's ingress controller stays as it runs: once no Cilium Ingress is left, turn it off (the chart then removes that Service): pulumi config set --path 'ui-exposure:cilium.values.ingressController.enabled' false`
      : undefined,
    // No pool is left past this point: that is also what keeps LB-IPAM dormant on 1.16 (no switch).
    removalOrderProblem(observed),
  ].filter((p): p is string => p !== undefined);
  if (problems.length || "problems" in values) return { problems };
  return {
    mode: "l4",
    release: {
      releaseName: settings.chart.releaseName,
      namespace: settings.chart.namespace,
      ...chartSource(settings.chart.repository, settings.chart.name),
      version: settings.chart.version,
      values: values.values,
      skipAwait: settings.skipAwait,
    },
    changes: releaseValuesDiff(settings, values.values, live),
  };
}

/** Where Helm fetches the chart: a Helm repository as the repository; an OCI registry in the chart reference (Helm has no repository for it). */
export function chartSource(repository: string | undefined, name: string): { chart: string; repository?: string } {
  if (repository === undefined) return { chart: name };
  if (repository.startsWith("oci://")) return { chart: `${repository.replace(/\/+$/, "")}/${name}` };
  return { chart: name, repository };
}

/** The Cilium part of the stack, decided before any resource is declared: the release (`l4`) or what was observed (`cohabit`), or every problem. */
export function planCilium(settings: CiliumSettings, ctx: CiliumContext, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  return settings.mode === "cohabit" ? planCohabit(settings, observed) : planL4(settings, ctx, observed);
}

/** The stack output of a plan; `component` is the Cilium component's name (for the import command). */
export function ciliumSummary(plan: CiliumPlan, component: string): CiliumSummary {
  if (plan.mode === "cohabit") return plan;
  const r = plan.release;
  return {
    mode: "l4",
    chartVersion: r.version,
    release: `${r.namespace}/${r.releaseName}`,
    adopt: releaseImportCommand(component, r),
  };
}
