import * as path from "node:path";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { OpenStack } from "../src/adapters/stack-inputs";
import { type AdmissionManifests, admissionManifests, GUARD_PROBE_ANNOTATION, untilGuardAnswers, untilPolicyTypeChecked } from "../src/core/admission";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { ExposurePlan } from "../src/core/plan";
import { guardChecks } from "../src/core/stack-plan";
import { kubernetesProviderOf } from "./kubernetes-provider";

interface AdmissionGuardArgs {
  /** The policy and binding generated from the contract (src/core/admission.ts). */
  manifests: AdmissionManifests;
  /** Each called after every apply, never in a preview: undefined once the API server enforces (type-checked) the policy, else why the update must fail. */
  untilEffective?: () => Promise<string | undefined>;
  untilTypeChecked?: () => Promise<string | undefined>;
}

/** The exposure guard at admission: the policy generated from the contract and the allowlist, and its binding in the stack's mode. */
export class AdmissionGuard extends pulumi.ComponentResource {
  public readonly binding: k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
  /** This guard, once in effect: our NodePort Services depend on it, so `up` never creates them against the previous policy. */
  public readonly effective: pulumi.Output<pulumi.Resource>;
  /** Known once the guard is in effect: why the update must fail (the type check flagged the policy: its binding is [Warn] only), or undefined. */
  public readonly refusal: Promise<string | undefined>;

  constructor(name: string, args: AdmissionGuardArgs, opts?: pulumi.ComponentResourceOptions) {
    super("ui-exposure:admission:AdmissionGuard", name, { manifests: args.manifests }, opts);
    const provider = kubernetesProviderOf(opts, `AdmissionGuard ${name}`);
    const { policy, binding } = args.manifests;
    // Both are ui-exposure's alone: after a hand edit, `up` takes the fields back.
    const annotations = { "pulumi.com/patchForce": "true" };

    const policyResource = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
      `${name}-policy`,
      { metadata: { ...policy.metadata, annotations }, spec: policy.spec },
      // Cluster-scoped with a fixed name (drift reads it back): a replacement deletes first.
      { parent: this, provider, deleteBeforeReplace: true },
    );
    // The binding denies only once the API server's type check of the policy is clean, else it is applied with [Warn] and the update fails: never
    // lock the cluster on our own mistake. Keyed on outputs known in every update, even when `--target` skips the guard.
    let problem: string | undefined;
    const checked = pulumi.all([policyResource.metadata.name, policyResource.metadata.generation]).apply(async ([policyName]) => {
      problem = !pulumi.runtime.isDryRun() && args.untilTypeChecked ? await args.untilTypeChecked() : undefined;
      return { policyName, problem };
    });
    this.binding = new k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
      `${name}-binding`,
      {
        metadata: { ...binding.metadata, annotations },
        spec: {
          ...binding.spec,
          policyName: checked.policyName,
          validationActions: checked.problem.apply((problem) => (problem ? ["Warn"] : binding.spec.validationActions)),
        },
      },
      { parent: this, provider, deleteBeforeReplace: true, dependsOn: [policyResource] },
    );

    // URNs resolve once the engine has applied both (create or update).
    this.effective = pulumi.all([policyResource.urn, this.binding.urn]).apply(async (): Promise<pulumi.Resource> => {
      if (!problem && !pulumi.runtime.isDryRun() && args.untilEffective) problem = await args.untilEffective();
      return this;
    });
    this.refusal = new Promise((resolve) => this.effective.apply(() => resolve(problem)));

    this.registerOutputs({ policy: policyResource, binding: this.binding });
  }
}

/** The exposure guard at admission, when the stack's mode is not off (src/core/admission.ts). */
export function guardAdmission(
  /** `live`: the cluster is the one applied to (the engine's), where up reads back the policy just applied. */
  { settings, stack, projectDir, contract, contractFile, selected, live }: OpenStack & { live: boolean },
  cluster: ClusterReader,
  plans: readonly ExposurePlan[],
  existing: ReadonlyMap<string, unknown>,
  opts?: pulumi.ComponentResourceOptions,
): AdmissionGuard | undefined {
  const { mode, failurePolicy } = settings.admission;
  if (mode === "off") return undefined;
  // Named relative to the project, as `exposure drift` does, whatever the working directory.
  const contractInProject = path.relative(projectDir, path.resolve(contractFile));
  const manifests = admissionManifests({ stack, contract, selected, contractFile: contractInProject, allowlist: settings.allowlist, mode, failurePolicy });
  const policyName = manifests.policy.metadata.name;
  const probe = cluster.dryRunCreateService?.bind(cluster);
  const { checks, probeKey } = guardChecks(policyName, plans, existing);
  const untilEffective =
    mode === "deny" && probe
      ? async () => {
          const pending = await untilGuardAnswers(probe, checks, policyName, { timeoutMs: 30_000, intervalMs: 250 });
          const refused = pending.filter((p) => p !== probeKey);
          if (refused.length) pulumi.log.warn(`the exposure guard ${policyName} still refuses ${refused.join(", ")} after 30s`);
          return pending.includes(probeKey)
            ? `the exposure guard ${policyName} is applied, but deny is not in force: 30s later the API server still admits the server-side dry run that only this guard refuses (Service ${probeKey}, annotated ${GUARD_PROBE_ANNOTATION}); check that it enforces ValidatingAdmissionPolicy bindings, then run pulumi up again`
            : undefined;
        }
      : undefined;
  // Only on the cluster applied to: the policy just applied is read back from it (a snapshot has none).
  const untilTypeChecked = live
    ? async () => {
        const problem = await untilPolicyTypeChecked(cluster, policyName, { timeoutMs: 60_000, intervalMs: 500 });
        // Only `deny` refuses: warn and audit are applied anyway, and say it.
        if (problem && mode !== "deny") pulumi.log.warn(problem);
        return mode === "deny" ? problem : undefined;
      }
    : undefined;
  return new AdmissionGuard("admission", { manifests, ...(untilEffective ? { untilEffective } : {}), ...(untilTypeChecked ? { untilTypeChecked } : {}) }, opts);
}
