// The objects of the cohabit era (phase 1: LB-IPAM and Cilium's Gateway API), as YAML for
// `kubectl apply -f -`: an LB-IPAM pool, an L2 announcement policy, the `cilium` GatewayClass,
// then a Gateway and its HTTPRoute per UI. The e2e files that play that era apply it.

export interface EraGateway {
  /** The Gateway's (and its HTTPRoute's) name. */
  name: string;
  namespace: string;
  /** The listener's hostname, when the Gateway has one. */
  hostname?: string;
  /** The route's backend, when it has a rule. */
  backend?: { service: string; port: number | string };
}

/** The era's objects; `l2Interfaces`: the interfaces the L2 policy announces on (all when absent). */
export function cohabitEraYaml(gateways: readonly EraGateway[], opts: { l2Interfaces?: readonly string[] } = {}): string {
  const l2 = opts.l2Interfaces ? `, interfaces: [${opts.l2Interfaces.join(", ")}]` : "";
  const perGateway = gateways.map((g) => {
    const listener = `{name: http, protocol: HTTP, port: 80${g.hostname ? `, hostname: ${g.hostname}` : ""}}`;
    const rules = g.backend ? `, rules: [{backendRefs: [{name: ${g.backend.service}, port: ${g.backend.port}}]}]` : "";
    return `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${g.name}, namespace: ${g.namespace}}
spec: {gatewayClassName: cilium, listeners: [${listener}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${g.name}, namespace: ${g.namespace}}
spec: {parentRefs: [{name: ${g.name}}]${rules}}
`;
  });
  return `apiVersion: cilium.io/v2
kind: CiliumLoadBalancerIPPool
metadata: {name: default-pool}
spec: {blocks: [{cidr: 198.18.1.0/24}]}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumL2AnnouncementPolicy
metadata: {name: l2-policy}
spec: {loadBalancerIPs: true${l2}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: cilium}
spec: {controllerName: io.cilium/gateway-controller}
${perGateway.join("")}`;
}
