import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { releaseResourceName } from "../src/core/cilium/adopt";
import { type CiliumPlan, type CiliumReleasePlan, type CiliumSummary, ciliumSummary } from "../src/core/cilium/plan";
import { kubernetesProviderOf } from "./kubernetes-provider";

/** Release arguments; `name` and `namespace` are always explicit (see src/core/cilium/adopt.ts). */
export function releaseArgs(r: CiliumReleasePlan): k8s.helm.v3.ReleaseArgs {
  return {
    // An explicit name: without it the provider auto-names `<resource>-<hex>`, which would
    // install a second Cilium instead of upgrading (or adopting) the existing release.
    name: r.releaseName,
    namespace: r.namespace,
    chart: r.chart,
    version: r.version,
    ...(r.repository ? { repositoryOpts: { repo: r.repository } } : {}),
    values: r.values,
    skipAwait: r.skipAwait,
    // kube-system exists on every cluster; never let the CNI release create a namespace.
    createNamespace: false,
  };
}

/**
 * Options of the Release child. The alias matches the root-level URN that
 * `pulumi import kubernetes:helm.sh/v3:Release <component>-release <ns>/<name>` creates, so
 * the first `up` after an import moves the release under this component and upgrades it in
 * place. `retainOnDelete`: removing the release from the program (switching the stack to
 * `cohabit`, `pulumi destroy`) forgets it instead of uninstalling the cluster's CNI.
 */
export function releaseOptions(parent: pulumi.Resource, provider?: k8s.Provider): pulumi.CustomResourceOptions {
  return { parent, ...(provider ? { provider } : {}), aliases: [{ parent: pulumi.rootStackResource }], retainOnDelete: true };
}

/**
 * Cilium for L4 exposure. `l4`: a Helm release with kube-proxy replacement and no
 * Gateway API / LB-IPAM / L2 announcements. `cohabit`: creates nothing; the guard already
 * ran while planning, and what still coexists is reported as an output.
 */
export class Cilium extends pulumi.ComponentResource {
  public readonly release?: k8s.helm.v3.Release;
  public readonly summary: pulumi.Output<CiliumSummary>;

  constructor(name: string, args: { plan: CiliumPlan }, opts?: pulumi.ComponentResourceOptions) {
    // Recorded inputs: the mode and the release only. The observed coexisting objects change
    // with the cluster and would otherwise show as a component diff in every drift check.
    super("ui-exposure:cilium:Cilium", name, { mode: args.plan.mode, ...(args.plan.mode === "l4" ? { release: args.plan.release } : {}) }, opts);
    const { plan } = args;
    if (plan.mode === "l4") {
      const provider = kubernetesProviderOf(opts, `Cilium ${name}`);
      this.release = new k8s.helm.v3.Release(releaseResourceName(name), releaseArgs(plan.release), releaseOptions(this, provider));
    }
    this.summary = pulumi.output(ciliumSummary(plan, name));
    this.registerOutputs({ summary: this.summary });
  }
}
