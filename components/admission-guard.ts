import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import type { AdmissionManifests } from "../src/core/admission";
import { kubernetesProviderOf } from "./kubernetes-provider";

interface AdmissionGuardArgs {
  /** The policy and binding generated from the contract (src/core/admission.ts). */
  manifests: AdmissionManifests;
  /**
   * Resolves once the API server enforces the policy just applied (it picks changes up a
   * moment after storing them). Called after every apply, never in a preview.
   */
  untilEffective?: () => Promise<void>;
  /**
   * Resolves once the API server has type-checked the policy just applied: undefined when clean,
   * else why the binding must not be applied (it then fails the update before the binding).
   * Called after every apply of the policy, never in a preview.
   */
  untilTypeChecked?: () => Promise<string | undefined>;
}

/**
 * The exposure guard at admission: a ValidatingAdmissionPolicy generated from the contract and
 * the allowlist, and the binding that enforces it with the stack's mode. Regenerated on every
 * `up`, removed by `destroy` (or by setting the mode to off).
 */
export class AdmissionGuard extends pulumi.ComponentResource {
  public readonly policy: k8s.admissionregistration.v1.ValidatingAdmissionPolicy;
  public readonly binding: k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding;
  /**
   * This guard, once in effect: resources that must be admitted by the new policy (our NodePort
   * Services) depend on it, so `up` never creates them against the previous policy.
   */
  public readonly effective: pulumi.Output<pulumi.Resource>;

  constructor(name: string, args: AdmissionGuardArgs, opts?: pulumi.ComponentResourceOptions) {
    super("ui-exposure:admission:AdmissionGuard", name, { manifests: args.manifests }, opts);
    const provider = kubernetesProviderOf(opts, `AdmissionGuard ${name}`);
    const { policy, binding } = args.manifests;
    // Both are ui-exposure's alone: after a hand edit, `up` takes the fields back.
    const annotations = { "pulumi.com/patchForce": "true" };

    this.policy = new k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
      `${name}-policy`,
      { metadata: { ...policy.metadata, annotations }, spec: policy.spec },
      // Cluster-scoped with a fixed name (drift reads it back): a replacement deletes first.
      { parent: this, provider, deleteBeforeReplace: true },
    );
    // The binding is applied only once the API server has type-checked the policy just applied, and
    // denies only when that check is clean: when it is not, the binding is applied with [Warn] (an
    // existing Deny binding is taken down to Warn, never kept) and the update fails (effective,
    // below). Invariant: never lock the cluster on our own mistake.
    const checked = pulumi.all([this.policy.metadata.name, this.policy.metadata.generation]).apply(async ([policyName]) => {
      const problem = !pulumi.runtime.isDryRun() && args.untilTypeChecked ? await args.untilTypeChecked() : undefined;
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
      { parent: this, provider, deleteBeforeReplace: true, dependsOn: [this.policy] },
    );

    // URNs resolve once the engine has applied both (create or update).
    // Once the binding is applied (with [Warn] after a failed type check), the update fails with the
    // one message: our Services, which depend on this, are not created. The SDK fails an update only
    // on an unhandled error (pulumi.log.error does not: pulumi/pulumi#6090), and an after-hook's error
    // is a warning; a ResourceError is printed without a stack trace.
    this.effective = pulumi.all([this.policy.urn, this.binding.urn, checked.problem]).apply(async ([, , problem]): Promise<pulumi.Resource> => {
      if (problem) throw new pulumi.ResourceError(problem, this);
      if (!pulumi.runtime.isDryRun() && args.untilEffective) await args.untilEffective();
      return this;
    });

    this.registerOutputs({ policy: this.policy, binding: this.binding });
  }
}
