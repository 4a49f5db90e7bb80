import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";

/**
 * The Kubernetes provider a component was given (`opts.providers`, or `opts.provider`), for its
 * children to name explicitly. A component without one is a programming error: its resources
 * would go through the default provider, i.e. whatever kube context happens to be current.
 */
export function kubernetesProviderOf(opts: pulumi.ComponentResourceOptions | undefined, component: string): k8s.Provider {
  const given = [opts?.provider, ...(Array.isArray(opts?.providers) ? opts.providers : Object.values(opts?.providers ?? {}))];
  const provider = given.find((p): p is k8s.Provider => p instanceof k8s.Provider);
  if (!provider) throw new Error(`${component}: no Kubernetes provider given (opts.providers): it would deploy through the ambient kube context`);
  return provider;
}
