import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

/** The Kubernetes provider a component was given, for its children to name: the default one follows whatever kube context is current. */
export function kubernetesProviderOf(opts: pulumi.ComponentResourceOptions | undefined, component: string): k8s.Provider {
  const given = [opts?.provider, ...(Array.isArray(opts?.providers) ? opts.providers : Object.values(opts?.providers ?? {}))];
  const provider = given.find((p): p is k8s.Provider => p instanceof k8s.Provider);
  if (!provider) throw new Error(`${component}: no Kubernetes provider given (opts.providers): it would deploy through the ambient kube context`);
  return provider;
}

/** A hook that fails with `refusal` (ownership.ts says why) only when the engine is about to create the resource; none under the mocks. */
export function refuseTakeover(name: string, refusal: string | undefined): Pick<pulumi.CustomResourceOptions, "hooks"> {
  if (refusal === undefined) return {};
  // Pulumi's mocks (`exposure render`, unit tests) register no resource hooks.
  const monitor = pulumi.runtime.getMonitor() as { registerResourceHook?: unknown } | undefined;
  if (typeof monitor?.registerResourceHook !== "function") return {};
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
 * Options of a fixed-name Service: a replacement deletes the old one first; creating it is refused with `refusal`. One adopted by `pulumi import` sits
 * at the stack's root (the alias moves it) with its live clusterIP as input, ignored: a change would replace it (new uid and port).
 */
export const fixedNameService = (name: string, refusal: string | undefined): pulumi.CustomResourceOptions => ({
  deleteBeforeReplace: true,
  aliases: [{ parent: pulumi.rootStackResource }],
  ignoreChanges: ["spec.clusterIP"],
  ...refuseTakeover(name, refusal),
});
