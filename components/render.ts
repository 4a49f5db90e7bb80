import * as pulumi from "@pulumi/pulumi";
import { RELEASE_TYPE } from "../src/core/cilium/adopt";
import { maskedValues } from "../src/core/cilium/values";
import type { RenderDocument } from "../src/core/json-api";
import type { ClusterReader } from "../src/core/kube/cluster";
import { indexServices } from "../src/core/plan";
import { manifestTypeOf, resolved, useProgramMocks } from "./mocks";
import { declareStack } from "./program";

type Rendered = Omit<RenderDocument, "apiVersion" | "kind">;
type RenderedRelease = Rendered["releases"][number];

/** Runs the real program under Pulumi's mocks against a cluster snapshot: what the stack would create. */
export async function render(opts: { projectDir: string; stack: string; cluster: ClusterReader; contract?: string }): Promise<Rendered> {
  const existing = indexServices(await opts.cluster.listServices());
  // A Service already in the snapshot keeps its real nodePort; a new one shows it pending, never invented.
  const recording = await useProgramMocks({ stack: opts.stack, existing, nodePorts: "pending" });
  const outputs = await declareStack({ projectDir: opts.projectDir, stack: opts.stack, cluster: opts.cluster, contract: opts.contract });
  const values = await resolved(pulumi.output(outputs));
  await pulumi.runtime.disconnect();
  const releases: RenderedRelease[] = [];
  const objects: Record<string, unknown>[] = [];
  for (const r of recording.resources) {
    if (r.type === RELEASE_TYPE) releases.push(releaseOf(r.inputs));
    else {
      const type = manifestTypeOf(r.type);
      // A ServicePatch (the nodePort hold) patches our own Service: no object of its own.
      if (type && !r.type.endsWith("Patch")) objects.push({ ...type, ...r.inputs });
    }
  }
  return { objects, releases, outputs: values as Record<string, unknown> };
}

function releaseOf(inputs: Record<string, unknown>): RenderedRelease {
  const repo = (inputs.repositoryOpts as { repo?: string } | undefined)?.repo;
  return {
    chart: String(inputs.chart),
    version: String(inputs.version),
    namespace: String(inputs.namespace),
    name: String(inputs.name),
    ...(repo ? { repository: repo } : {}),
    // The live release's values may hold credentials: printed masked (under mocks a secret input arrives wrapped: unwrapped first).
    values: maskedValues((pulumi.runtime.isRpcSecret(inputs.values) ? pulumi.runtime.unwrapRpcSecret(inputs.values) : inputs.values) ?? {}),
  };
}
