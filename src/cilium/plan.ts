import type { ConfigMap, GenericObject, Service } from "../kube/types";
import type { CiliumSettings } from "../settings";

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

/** LoadBalancer Services and their addresses, as phase 2 will find them. */
export interface LoadBalancerService {
  service: string;
  addresses: string[];
}

export interface Coexisting {
  lbIpPools: string[];
  gateways: string[];
  loadBalancerServices: LoadBalancerService[];
}

export type CiliumPlan =
  | { mode: "l4"; release: CiliumReleasePlan; coexisting: Coexisting }
  | { mode: "cohabit"; observed: Record<string, string>; coexisting: Coexisting };

/** The `cilium` stack output: the mode, what was installed or observed, what still coexists. */
export type CiliumSummary =
  | { mode: "l4"; chartVersion: string; release: string; coexisting: Coexisting }
  | { mode: "cohabit"; observed: Record<string, string>; coexisting: Coexisting };

export interface CiliumContext {
  stack: string;
  production: boolean;
}

/** Which objects planCilium needs, so the program lists only those. */
export function ciliumReads(settings: CiliumSettings): { configMap?: { namespace: string; name: string }; customObjects: boolean } {
  return settings.mode === "cohabit"
    ? { configMap: { namespace: settings.namespace, name: settings.configMap }, customObjects: true }
    : { customObjects: true };
}

export function loadBalancerServices(services: readonly Service[]): LoadBalancerService[] {
  return services
    .filter((s) => s.spec?.type === "LoadBalancer")
    .map((s) => ({
      service: `${s.metadata.namespace}/${s.metadata.name}`,
      addresses: (s.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? i.hostname ?? "").filter(Boolean),
    }))
    .sort((a, b) => a.service.localeCompare(b.service));
}

export function coexisting(observed: CiliumObservation): Coexisting {
  const ref = (o: GenericObject) => (o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);
  return {
    lbIpPools: observed.lbIpPools.map(ref).sort(),
    gateways: observed.gateways.map(ref).sort(),
    loadBalancerServices: loadBalancerServices(observed.services),
  };
}

/** Values for an L4-only Cilium: kube-proxy replacement on, Gateway API, L2 announcements, LB-IPAM off. */
export function l4Values(settings: Extract<CiliumSettings, { mode: "l4" }>): Record<string, unknown> {
  return {
    kubeProxyReplacement: true,
    ...(settings.k8sServiceHost ? { k8sServiceHost: settings.k8sServiceHost } : {}),
    ...(settings.k8sServicePort ? { k8sServicePort: settings.k8sServicePort } : {}),
    gatewayAPI: { enabled: false },
    l2announcements: { enabled: false },
    enableLBIPAM: false,
    ...settings.values,
  };
}

export function planCilium(settings: CiliumSettings, ctx: CiliumContext, observed: CiliumObservation): CiliumPlan | { problems: string[] } {
  const problems: string[] = [];
  if (settings.mode === "cohabit") {
    const data = observed.ciliumConfig?.data;
    if (!data) {
      return { problems: [`cilium (cohabit): ConfigMap ${settings.namespace}/${settings.configMap} not found; is Cilium installed in this cluster?`] };
    }
    const kpr = data["kube-proxy-replacement"];
    if (kpr !== "true") {
      problems.push(
        `cilium (cohabit): kube-proxy-replacement is '${kpr ?? "unset"}' in ${settings.namespace}/${settings.configMap}; without it Cilium does not serve NodePorts in eBPF, so the URLs would not answer`,
      );
    }
    if (problems.length) return { problems };
    return { mode: "cohabit", observed: { "kube-proxy-replacement": kpr as string }, coexisting: coexisting(observed) };
  }
  if (ctx.production && !settings.phase2Decided) {
    problems.push(`cilium: stack '${ctx.stack}' is production and refuses mode 'l4' unless ui-exposure:cilium.phase2Decided is true`);
  }
  if (problems.length) return { problems };
  return {
    mode: "l4",
    release: {
      releaseName: settings.chart.releaseName,
      namespace: settings.chart.namespace,
      chart: settings.chart.name,
      ...(settings.chart.repository ? { repository: settings.chart.repository } : {}),
      version: settings.chart.version,
      values: l4Values(settings),
      skipAwait: settings.skipAwait,
    },
    coexisting: coexisting(observed),
  };
}
