import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { releaseResourceName } from "../src/core/cilium/adopt";
import { type CiliumPlan, type CiliumReleasePlan, type CiliumSummary, ciliumSummary } from "../src/core/cilium/plan";
import { AGENT_BATCH_MS, type CiliumWorkloads, type SwitchState, switchState, switchWait } from "../src/core/cilium/rollout";
import { kubernetesProviderOf } from "./kubernetes-provider";

/** Polls every 2 s until the configuration is in force or cannot be, at most `timeoutMs` (default: what the DaemonSet's roll-out needs, announced). */
export async function awaitSwitch(
  read: () => Promise<CiliumWorkloads>,
  timeoutMs?: number,
  announce: (message: string) => void = () => {},
): Promise<SwitchState> {
  let workloads = await read();
  const wait = switchWait(workloads.agents);
  const end = Date.now() + (timeoutMs ?? wait.ms);
  if (timeoutMs === undefined)
    announce(
      `cilium: waiting up to ${wait.ms / 1000} s for the agents of ${wait.nodes} node(s), restarted ${wait.atOnce} at a time (${wait.batches} batch(es) of at most ${AGENT_BATCH_MS / 1000} s), and the operator to run the new configuration`,
    );
  for (;;) {
    const state = switchState(workloads);
    if (state.inForce || state.settled || Date.now() >= end) return state;
    await new Promise((r) => setTimeout(r, 2_000));
    workloads = await read();
  }
}

/** Release arguments; `name` and `namespace` are always explicit (see src/core/cilium/adopt.ts). */
export function releaseArgs(r: CiliumReleasePlan): k8s.helm.v3.ReleaseArgs {
  return {
    // Without an explicit name the provider auto-names `<resource>-<hex>`: a second Cilium instead of the existing release.
    name: r.releaseName,
    namespace: r.namespace,
    chart: r.chart,
    version: r.version,
    ...(r.repository ? { repositoryOpts: { repo: r.repository } } : {}),
    // The live release's values may hold credentials: encrypted in the state, never shown by preview (up's logged diff is masked).
    values: pulumi.secret(r.values),
    skipAwait: r.skipAwait,
    // kube-system exists on every cluster; never let the CNI release create a namespace.
    createNamespace: false,
  };
}

/**
 * Options of the Release child: the alias matches the root-level URN `pulumi import` creates; `retainOnDelete`: dropping the release from the program
 * (`cohabit`, `pulumi destroy`) forgets it instead of uninstalling the cluster's CNI.
 */
export function releaseOptions(parent: pulumi.Resource, provider?: k8s.Provider): pulumi.CustomResourceOptions {
  return { parent, ...(provider ? { provider } : {}), aliases: [{ parent: pulumi.rootStackResource }], retainOnDelete: true };
}

/** Cilium for L4 exposure. `l4`: a Helm release with kube-proxy replacement. `cohabit`: creates nothing (the guard ran while planning). */
export class Cilium extends pulumi.ComponentResource {
  public readonly release?: k8s.helm.v3.Release;
  public readonly summary: pulumi.Output<CiliumSummary & { switch?: string }>;

  /** `readWorkloads`: `up` waits for the release's configuration to be in force (`cilium.switch`). `logChanges`: the values diff is logged, one line per key. */
  constructor(
    name: string,
    args: { plan: CiliumPlan; readWorkloads?: () => Promise<CiliumWorkloads>; logChanges?: boolean },
    opts?: pulumi.ComponentResourceOptions,
  ) {
    // Recorded inputs: the mode and the release only (what is observed would show as a diff in every drift check).
    super(
      "ui-exposure:cilium:Cilium",
      name,
      { mode: args.plan.mode, ...(args.plan.mode === "l4" ? { release: { ...args.plan.release, values: pulumi.secret(args.plan.release.values) } } : {}) },
      opts,
    );
    const { plan } = args;
    if (plan.mode === "l4") {
      if (args.logChanges) for (const line of plan.changes) void pulumi.log.info(line, this);
      const provider = kubernetesProviderOf(opts, `Cilium ${name}`);
      this.release = new k8s.helm.v3.Release(releaseResourceName(name), releaseArgs(plan.release), releaseOptions(this, provider));
    }
    const summary = ciliumSummary(plan, name);
    const read = args.readWorkloads;
    this.summary = pulumi.output(
      this.release && read && !pulumi.runtime.isDryRun()
        ? this.release.status.apply(async () => {
            const { inForce, detail } = await awaitSwitch(read, undefined, (message) => pulumi.log.info(message, this));
            if (!inForce)
              await pulumi.log.warn(`cilium: the switch is NOT in force yet (${detail}): agents or operator still run the previous configuration`, this);
            return { ...summary, switch: `${inForce ? "in force" : "NOT in force yet"}: ${detail}` };
          })
        : summary,
    );
    this.registerOutputs({ summary: this.summary });
  }
}
