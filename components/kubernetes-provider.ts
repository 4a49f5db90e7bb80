import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

/**
 * The Kubernetes provider a component was given, for its children to name explicitly: without one, its resources would go
 * through the default provider, i.e. whatever kube context happens to be current.
 */
export function kubernetesProviderOf(opts: pulumi.ComponentResourceOptions | undefined, component: string): k8s.Provider {
  const given = [opts?.provider, ...(Array.isArray(opts?.providers) ? opts.providers : Object.values(opts?.providers ?? {}))];
  const provider = given.find((p): p is k8s.Provider => p instanceof k8s.Provider);
  if (!provider) throw new Error(`${component}: no Kubernetes provider given (opts.providers): it would deploy through the ambient kube context`);
  return provider;
}

/**
 * Whether the real engine runs the program (not Pulumi's unit-test mocks, which can neither
 * read a stack reference nor register resource hooks; `exposure render` runs under them).
 */
export function underEngine(): boolean {
  const monitor = pulumi.runtime.getMonitor() as { registerResourceHook?: unknown } | undefined;
  return typeof monitor?.registerResourceHook === "function";
}

/**
 * A hook that runs only when the engine is about to create the resource and fails with `refusal`
 * (src/core/ownership.ts says why); none without a refusal, or under the unit-test mocks (no hooks).
 */
export function refuseTakeover(name: string, refusal: string | undefined): Pick<pulumi.CustomResourceOptions, "hooks"> {
  if (refusal === undefined || !underEngine()) return {};
  const hook = new pulumi.ResourceHook(
    `${name}-refuse-takeover`,
    () => {
      throw new Error(refusal);
    },
    { onDryRun: true },
  );
  return { hooks: { beforeCreate: [hook] } };
}

/**
 * Options of a fixed-name Service: a replacement deletes the old one first; creating it is refused
 * with `refusal`. One adopted by `pulumi import` is at the stack's root (the alias moves it under its
 * component) with its live clusterIP as input, ignored: a change would replace it (new uid and port).
 */
export const fixedNameService = (name: string, refusal: string | undefined): pulumi.CustomResourceOptions => ({
  deleteBeforeReplace: true,
  aliases: [{ parent: pulumi.rootStackResource }],
  ignoreChanges: ["spec.clusterIP"],
  ...refuseTakeover(name, refusal),
});
