import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

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

/**
 * Whether the real engine runs the program (not Pulumi's unit-test mocks, which can neither
 * read a stack reference nor register resource hooks; `exposure render` runs under them).
 */
export function underEngine(): boolean {
  const monitor = pulumi.runtime.getMonitor() as { registerResourceHook?: unknown } | undefined;
  return typeof monitor?.registerResourceHook === "function";
}

/**
 * The one takeover guard: a hook that runs only when the engine is about to create the resource,
 * i.e. when it is not in this stack's state, and fails with `refusal` (an object of that name
 * exists and the state does not hold it). Ownership is the state's, never labels anyone can copy.
 * Nothing to add when nothing exists there, or under Pulumi's unit-test mocks (no hooks).
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
 * Options of a fixed-name Service of this stack: a replacement deletes the old one first, and
 * creating it over one that exists and the state does not hold is refused (`refusal`). `pulumi
 * import` may adopt one on purpose: the import puts it at the stack's root, and the next `up`
 * moves it under its component (alias); an import records every live field as an input,
 * clusterIP included, which the program never sets: without ignoring it the provider would
 * replace the Service (delete and re-create: new uid, new port).
 */
export const fixedNameService = (name: string, refusal: string | undefined): pulumi.CustomResourceOptions => ({
  deleteBeforeReplace: true,
  aliases: [{ parent: pulumi.rootStackResource }],
  ignoreChanges: ["spec.clusterIP"],
  ...refuseTakeover(name, refusal),
});
