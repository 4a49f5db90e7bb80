// What only the real engine gives the program, chosen by its entry point (index.ts): the live cluster of the stack's kube
// context, and this stack's own record. `exposure render` and the unit tests pass a snapshot and their own record instead.
import * as pulumi from "@pulumi/pulumi";
import { LiveClusterReader } from "../src/adapters/kube-live";
import type { PublishedEndpoints } from "../src/core/observe";
import { type StateUids, stateUids } from "../src/core/ownership";
import type { ProgramInputs } from "./program";

/** Each cluster read of `preview`/`up` waits at most this long: a stack whose cluster does not answer fails within about 10 s, with one message. */
export const PROGRAM_READ_TIMEOUT_MS = 5_000;

export const engineInputs = (): Pick<ProgramInputs, "cluster" | "lastEndpoints" | "stateUids" | "live"> => ({
  cluster: (target) => LiveClusterReader.connect({ ...target, timeoutMs: PROGRAM_READ_TIMEOUT_MS }),
  lastEndpoints: readLastEndpoints,
  stateUids: readStateUids,
  live: true,
});

/** This stack's fully qualified name; the file backend's organization is "organization". */
function thisStack(): string {
  let organization = "organization";
  try {
    organization = pulumi.getOrganization();
  } catch {}
  return `${organization}/${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** The uid of each Service and ConfigMap in this stack's latest checkpoint (refreshed, if this up refreshes). */
async function readStateUids(): Promise<StateUids> {
  // The outputs hold resource references, which the SDK would resolve against this deployment (which has none yet): asked for as plain URNs instead.
  const sdk = require("@pulumi/pulumi/utils") as { disableResourceReferences: boolean };
  const before = sdk.disableResourceReferences;
  sdk.disableResourceReferences = true;
  try {
    const result = await pulumi.runtime.invoke("pulumi:pulumi:readStackResourceOutputs", { stackName: thisStack() });
    return stateUids((result as { outputs?: unknown } | undefined)?.outputs);
  } finally {
    sdk.disableResourceReferences = before;
  }
}

/** The `endpoints` output of this stack's last `up`, through a StackReference to itself: every backend has one, and a preview counts it as a read. */
async function readLastEndpoints(): Promise<PublishedEndpoints> {
  const details = await new pulumi.StackReference("last-up", { name: thisStack() }).getOutputDetails("endpoints");
  const value = details.value ?? details.secretValue;
  return value && typeof value === "object" ? (value as PublishedEndpoints) : {};
}
