import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { admissionManifests, admissionPolicyName, untilGuardAdmits, untilPolicyTypeChecked } from "../src/core/admission";
import type { Contract } from "../src/core/contract/schema";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { Service } from "../src/core/kube/types";
import type { ExposurePlan } from "../src/core/plan";
import type { Settings } from "../src/core/settings";
import { AdmissionGuard } from "./admission-guard";

/** The exposure guard at admission, when the stack's mode is not off (src/core/admission.ts). */
export function guardAdmission(
  settings: Settings,
  stack: { stack: string; projectDir: string; contract: Contract; contractFile: string; selected: string[] },
  cluster: ClusterReader,
  plans: readonly ExposurePlan[],
  existing: ReadonlySet<string>,
  opts?: pulumi.ComponentResourceOptions,
  /** Under the real engine: wait for the API server's type check before the binding (not under mocks). */
  typeCheck = false,
): AdmissionGuard | undefined {
  const { mode, failurePolicy } = settings.admission;
  if (mode === "off") return undefined;
  const { projectDir, contractFile, ...rest } = stack;
  // Named relative to the project, as `exposure drift` does, whatever the working directory.
  const contractInProject = path.relative(projectDir, path.resolve(contractFile));
  const manifests = admissionManifests({ ...rest, contractFile: contractInProject, allowlist: settings.allowlist, mode, failurePolicy });
  const probe = cluster.dryRunCreateService?.bind(cluster);
  // Only `deny` can refuse our own Services, and only those still to be created can meet the old policy.
  const toCreate = plans.flatMap((p) =>
    p.kind === "nodePort" && !existing.has(`${p.namespace}/${p.serviceName}`)
      ? [
          {
            metadata: { name: p.serviceName, namespace: p.namespace },
            spec: { type: "NodePort", selector: p.selector, ports: [{ name: p.portName, port: p.port, targetPort: p.targetPort, protocol: p.protocol }] },
          } as Service,
        ]
      : [],
  );
  const untilEffective =
    mode === "deny" && probe && toCreate.length
      ? async () => {
          const refused = await untilGuardAdmits(probe, toCreate, manifests.policy.metadata.name, { timeoutMs: 30_000, intervalMs: 250 });
          if (refused.length) pulumi.log.warn(`the exposure guard ${admissionPolicyName(stack.stack)} still refuses ${refused.join(", ")} after 30s`);
        }
      : undefined;
  const policyName = manifests.policy.metadata.name;
  const untilTypeChecked = typeCheck
    ? async () => {
        const problem = await untilPolicyTypeChecked(cluster, policyName, { timeoutMs: 60_000, intervalMs: 500 });
        // Only `deny` refuses: warn and audit are applied anyway, and say it.
        if (problem && mode !== "deny") {
          pulumi.log.warn(problem);
          return undefined;
        }
        return problem;
      }
    : undefined;
  return new AdmissionGuard("admission", { manifests, ...(untilEffective ? { untilEffective } : {}), ...(untilTypeChecked ? { untilTypeChecked } : {}) }, opts);
}
