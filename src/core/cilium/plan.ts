import { field, matchesPattern, namePattern } from "../exposure-model";
import type { ConfigMap, GenericObject, Service } from "../kube/types";
import type { CiliumSettings, CohabitCiliumSettings, L4CiliumSettings } from "../settings";
import { releaseImportCommand } from "./adopt";
import { l4Values } from "./values";
import { chartKeysFor } from "./versions";

/** What the Cilium concern reads from the cluster (one call per kind). */
export interface CiliumObservation {
  services: readonly Service[];
  ciliumConfig?: ConfigMap;
  lbIpPools: readonly GenericObject[];
  gateways: readonly GenericObject[];
}

export interface CiliumReleasePlan {
  releaseName: string;
  namespace: string;
  chart: string;
  repository?: string;
  version: string;
  values: Record<string, unknown>;
  skipAwait: boolean;
}

/** A LoadBalancer Service and its addresses, as phase 2 will find it. */
export interface LoadBalancerService {
  service: string;
  addresses: string[];
  loadBalancerClass?: string;
}

export interface LbIpPool {
  name: string;
  blocks: string[];
  disabled?: boolean;
}

export interface GatewayRef {
  gateway: string;
  addresses: string[];
  hostnames: string[];
}

/** What still belongs to the Gateway / LB-IPAM era, reported so the operator sees what phase 2 removes. */
export interface Coexisting {
  lbIpPools: LbIpPool[];
  gateways: GatewayRef[];
  loadBalancerServices: LoadBalancerService[];
}

export type CiliumPlan =
  | { mode: "l4"; release: CiliumReleasePlan; lbIpam: string; acknowledgedLoss: string[]; coexisting: Coexisting }
  | { mode: "cohabit"; observed: Record<string, string>; coexisting: Coexisting };

/** The `cilium` stack output: the mode, what was installed or observed, what still coexists. */
export type CiliumSummary =
  | {
      mode: "l4";
      chartVersion: string;
      release: string;
      lbIpam: string;
      /** The command that adopts a release installed earlier by a script (docs/cilium.md). */
      adopt: string;
      acknowledgedLoss: string[];
      coexisting: Coexisting;
    }
  | Extract<CiliumPlan, { mode: "cohabit" }>;

export interface CiliumContext {
  stack: string;
  production: boolean;
}

/** The ConfigMap planCilium reads (mode cohabit), so the program gets only what it needs. */
export function ciliumReads(settings: CiliumSettings): { configMap?: { namespace: string; name: string } } {
  return settings.mode === "cohabit" ? { configMap: { namespace: settings.namespace, name: settings.configMap } } : {};
}

const ref = (o: { metadata: { namespace?: string; name: string } }) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string" && x !== "") : []);

export function loadBalancerServices(services: readonly Service[]): LoadBalancerService[] {
  return services
    .filter((s) => s.spec?.type === "LoadBalancer")
    .map((s) => ({
      service: ref(s),
      addresses: (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? i.hostname ?? "").filter(Boolean),
      ...(s.spec?.loadBalancerClass ? { loadBalancerClass: s.spec.loadBalancerClass } : {}),
    }))
    .sort((a, b) => a.service.localeCompare(b.service));
}

/** The items of a list the cluster gave (untrusted: anything but an array is none). */
const items = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

function lbIpPool(o: GenericObject): LbIpPool {
  const block = (b: unknown) => {
    const start = text(field(b, "start"));
    return text(field(b, "cidr")) ?? (start ? `${start}-${text(field(b, "stop")) ?? start}` : undefined);
  };
  return {
    name: o.metadata.name,
    blocks: strings(items(o.spec?.blocks).map(block)),
    ...(o.spec?.disabled === true ? { disabled: true } : {}),
  };
}

function gatewayRef(o: GenericObject): GatewayRef {
  return {
    gateway: ref(o),
    addresses: strings(items(o.status?.addresses).map((a) => field(a, "value"))),
    hostnames: [...new Set(strings(items(o.spec?.listeners).map((l) => field(l, "hostname"))))],
  };
}

export function coexisting(observed: CiliumObservation): Coexisting {
  return {
    lbIpPools: observed.lbIpPools.map(lbIpPool).sort((a, b) => a.name.localeCompare(b.name)),
    gateways: observed.gateways.map(gatewayRef).sort((a, b) => a.gateway.localeCompare(b.gateway)),
    loadBalancerServices: loadBalancerServices(observed.services),
  };
}

/**
 * Whether LB-IPAM gave this Service its address, so that turning LB-IPAM off strips it.
 * LB-IPAM ignores a Service whose loadBalancerClass belongs to another controller
 * (lb-ipam.rst), and Node IPAM (`io.cilium/node`) hands out node addresses, not pool ones.
 */
function servedByLbIpam(s: LoadBalancerService): boolean {
  const cls = s.loadBalancerClass;
  return cls === undefined || (cls.startsWith("io.cilium/") && cls !== "io.cilium/node");
}

/**
 * LoadBalancer Services that would lose their address when Cilium goes L4 (LB-IPAM and L2
 * announcements off): those with an address, served by LB-IPAM, not acknowledged.
 */
export function unacknowledgedLoss(services: readonly LoadBalancerService[], acknowledged: readonly string[]): LoadBalancerService[] {
  return services.filter((s) => s.addresses.length > 0 && servedByLbIpam(s) && !acknowledged.some((p) => matchesPattern(namePattern(p), s.service)));
}

/** cilium-config keys worth reporting in cohabitation (present ones only). */
const OBSERVED_KEYS = [
  "kube-proxy-replacement",
  "enable-node-port",
  "enable-host-port",
  "enable-lb-ipam",
  "default-lb-service-ipam",
  "enable-gateway-api",
  "enable-l2-announcements",
  "enable-l7-proxy",
];

/**
 * Values of `kube-proxy-replacement` that mean "full replacement": "true" (1.14+), and
 * "strict", its spelling up to 1.15 (an agent of 1.16+ refuses "strict" and would not run).
 * "partial" does not serve hostPorts unless configured piecemeal, so it is not accepted.
 */
const KPR_ON = new Set(["true", "strict"]);

function planCohabit(settings: CohabitCiliumSettings, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  const where = `${settings.namespace}/${settings.configMap}`;
  const data = observed.ciliumConfig?.data;
  if (!data) {
    return {
      problems: [
        `cilium (cohabit): ConfigMap ${where} not found; is Cilium installed in this cluster? (mode 'cohabit' reads it to check kube-proxy replacement)`,
      ],
    };
  }
  const kpr = data["kube-proxy-replacement"];
  if (kpr === undefined || !KPR_ON.has(kpr)) {
    return {
      problems: [
        `cilium (cohabit): kube-proxy-replacement is '${kpr ?? "unset"}' in ${where}; without kube-proxy replacement Cilium does not serve NodePorts and hostPorts in eBPF, so the URLs would not answer (mode 'cohabit' never changes Cilium: turn it on through the cluster's own Cilium procedure first)`,
      ],
    };
  }
  const reported = Object.fromEntries(OBSERVED_KEYS.flatMap((k) => (data[k] !== undefined ? [[k, data[k]]] : [])));
  return { mode: "cohabit", observed: reported, coexisting: coexisting(observed) };
}

function planL4(settings: L4CiliumSettings, ctx: CiliumContext, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  const stackFile = `Pulumi.${ctx.stack}.yaml`;
  const problems: string[] = [];
  if (ctx.production && !settings.phase2Decided) {
    problems.push(
      `cilium (l4): stack '${ctx.stack}' is production (ui-exposure:production) and refuses mode 'l4' until phase 2 is decided: set ui-exposure:cilium.phase2Decided: true in ${stackFile} (runbook: docs/cilium.md)`,
    );
  }
  const values = l4Values(settings, stackFile);
  if ("problems" in values) problems.push(...values.problems);

  const found = coexisting(observed);
  const lost = unacknowledgedLoss(found.loadBalancerServices, settings.acknowledgeLoadBalancerLoss);
  if (lost.length) {
    const list = lost.map((s) => `${s.service} (${s.addresses.join(", ")})`).join(", ");
    problems.push(
      `cilium (l4): mode 'l4' turns LB-IPAM, L2 announcements and Gateway API off, so ${lost.length} LoadBalancer Service${lost.length > 1 ? "s" : ""} would lose ${lost.length > 1 ? "their addresses" : "its address"} (left <pending>, or no longer announced): ${list}; once nothing depends on ${lost.length > 1 ? "them" : "it"}, acknowledge each in ui-exposure:cilium.acknowledgeLoadBalancerLoss in ${stackFile} ("namespace/name" or "namespace/prefix*")`,
    );
  }
  if (problems.length || "problems" in values) return { problems };

  const version = settings.chart.version;
  const pools = found.lbIpPools.map((p) => p.name);
  const lbIpam = chartKeysFor(version)?.enableLBIPAM
    ? "off (enableLBIPAM: false)"
    : `no switch in chart ${version}: dormant only while no CiliumLoadBalancerIPPool exists${pools.length ? ` (still present: ${pools.join(", ")})` : ""}`;
  const acknowledgedLoss = found.loadBalancerServices
    .filter((s) => s.addresses.length > 0 && servedByLbIpam(s) && settings.acknowledgeLoadBalancerLoss.some((p) => matchesPattern(namePattern(p), s.service)))
    .map((s) => s.service);
  return {
    mode: "l4",
    release: {
      releaseName: settings.chart.releaseName,
      namespace: settings.chart.namespace,
      ...chartSource(settings.chart.repository, settings.chart.name),
      version,
      values: values.values,
      skipAwait: settings.skipAwait,
    },
    lbIpam,
    acknowledgedLoss,
    coexisting: found,
  };
}

/**
 * Where Helm fetches the chart: a Helm repository (index.yaml) is passed as the repository; an
 * OCI registry is part of the chart reference itself (Helm has no repository for it); a local
 * `.tgz` or folder, or a full `oci://` reference, is the chart name as given.
 */
export function chartSource(repository: string | undefined, name: string): { chart: string; repository?: string } {
  if (repository === undefined) return { chart: name };
  if (repository.startsWith("oci://")) return { chart: `${repository.replace(/\/+$/, "")}/${name}` };
  return { chart: name, repository };
}

/**
 * The Cilium part of the stack, decided before any resource is declared: the release to
 * manage (`l4`) or what was observed (`cohabit`), or every problem found, together.
 */
export function planCilium(settings: CiliumSettings, ctx: CiliumContext, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  return settings.mode === "cohabit" ? planCohabit(settings, observed) : planL4(settings, ctx, observed);
}

/** The stack output of a plan; `component` is the Cilium component's name (for the import command). */
export function ciliumSummary(plan: CiliumPlan, component: string): CiliumSummary {
  if (plan.mode === "cohabit") return { mode: "cohabit", observed: plan.observed, coexisting: plan.coexisting };
  const r = plan.release;
  return {
    mode: "l4",
    chartVersion: r.version,
    release: `${r.namespace}/${r.releaseName}`,
    lbIpam: plan.lbIpam,
    adopt: releaseImportCommand(component, r),
    acknowledgedLoss: plan.acknowledgedLoss,
    coexisting: plan.coexisting,
  };
}
