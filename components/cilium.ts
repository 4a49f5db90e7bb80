import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { CiliumPlan, CiliumSummary } from "../src/cilium/plan";

export interface CiliumArgs {
  plan: CiliumPlan;
}

/**
 * Cilium for L4 exposure. `l4`: a Helm release with kube-proxy replacement and no
 * Gateway API / LB-IPAM / L2 announcements. `cohabit`: creates nothing; the guard already
 * ran while planning, and what still coexists is reported as an output.
 */
export class Cilium extends pulumi.ComponentResource {
  public readonly release?: k8s.helm.v3.Release;
  public readonly summary: pulumi.Output<CiliumSummary>;

  constructor(name: string, args: CiliumArgs, opts?: pulumi.ComponentResourceOptions) {
    super("ui-exposure:cilium:Cilium", name, args, opts);
    const { plan } = args;
    if (plan.mode === "l4") {
      const r = plan.release;
      this.release = new k8s.helm.v3.Release(
        `${name}-release`,
        {
          name: r.releaseName,
          namespace: r.namespace,
          chart: r.chart,
          version: r.version,
          ...(r.repository ? { repositoryOpts: { repo: r.repository } } : {}),
          values: r.values,
          skipAwait: r.skipAwait,
        },
        { parent: this },
      );
      this.summary = pulumi.output<CiliumSummary>({
        mode: "l4",
        chartVersion: r.version,
        release: `${r.namespace}/${r.releaseName}`,
        coexisting: plan.coexisting,
      });
    } else {
      this.summary = pulumi.output<CiliumSummary>({ mode: "cohabit", observed: plan.observed, coexisting: plan.coexisting });
    }
    this.registerOutputs({ summary: this.summary });
  }
}
