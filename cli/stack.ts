import * as path from "node:path";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { PulumiNotFoundError, pulumiNotFound, type ReadOutputs, readStackOutputs, sandboxEnvHint } from "../src/adapters/pulumi-cli";
import { type OpenStack, openStack } from "../src/adapters/stack-inputs";
import type { Endpoint } from "../src/core/contract/schema";
import { UserError } from "../src/core/errors";
import type { StatusDocument } from "../src/core/json-api";
import type { ClusterReader } from "../src/core/kube/cluster";
import { observeStack, type PublishedEndpoints } from "../src/core/observe";
import { publishedFromOutputs } from "../src/core/published";
import { stackKubeTarget } from "../src/core/settings";
import type { OperatorDeps } from "./operator";

/** The stack's live cluster, through its provider's kubeconfig/context (`KUBECONFIG` when the stack sets no kubernetes:kubeconfig). */
export async function connectCluster(opened: OpenStack, timeoutMs?: number): Promise<ClusterReader> {
  try {
    return await LiveClusterReader.connect({ ...stackKubeTarget(opened.stack, opened.config), ...(timeoutMs ? { timeoutMs } : {}) });
  } catch (err) {
    // The sandbox's kubeconfig is set by its env file: without it, say so (the usual first miss).
    const hint = sandboxEnvHint(opened.projectDir, "KUBECONFIG", (folder) => process.env.KUBECONFIG === path.join(folder, "kubeconfig"));
    if (err instanceof UserError && hint) throw new UserError(`${err.message}\n${hint.trim()}`, err.exitCode);
    throw err;
  }
}

export { type OpenStack, openStack, type ReadOutputs, readStackOutputs };

/** Where the "published at the last up" values came from, for the reader of the report. */
type PublishedSource = StatusDocument["publishedOutputs"];

/**
 * What the last `up` published (`outputsFile`, else the Pulumi CLI). Without the CLI or the backend it is "unavailable" (with why), not an error: the
 * commands only lose the checks that need it. `outputsFlag: false`: the command has no --outputs, so the message does not suggest it.
 */
export async function readPublished(
  ctx: { projectDir: string; env: NodeJS.ProcessEnv },
  stack: string,
  outputsFile: string | undefined,
  readOutputs: ReadOutputs,
  { outputsFlag }: { outputsFlag: boolean } = { outputsFlag: true },
): Promise<{ endpoints: PublishedEndpoints; source: PublishedSource }> {
  let outputs: Record<string, unknown>;
  try {
    outputs = await readOutputs(ctx, stack, outputsFile);
  } catch (err) {
    // A file named on the command line is an input the operator chose: failing to read it is an error.
    if (outputsFile) throw err;
    if (err instanceof PulumiNotFoundError && !outputsFlag) return { endpoints: {}, source: { from: "unavailable", reason: pulumiNotFound() } };
    // A stack the backend does not hold proves nothing was created, so nothing is ours: never "unavailable", which would fall
    // back to names and call another stack's Services MATCH. The reason says which backend to check.
    if (!(err instanceof UserError)) throw err;
    const reason = err.message.split("\n")[0] ?? err.message;
    return { endpoints: {}, source: { from: /\bno stack named '[^']*' found\b/.test(err.message) ? "no-stack" : "unavailable", reason } };
  }
  // Malformed outputs are an error naming the field, never "unavailable" (names alone would claim MATCH without proof).
  return { endpoints: publishedFromOutputs(outputs, "stack outputs"), source: outputsFile ? { from: "file", file: outputsFile } : { from: "pulumi" } };
}

/** When the last up's outputs could not be read: one stderr line saying so, and what the report loses. */
export function sayUnavailable(ctx: { stderr: (line: string) => void }, who: string, published: { source: PublishedSource }, loses: string): void {
  if (published.source.from === "unavailable") ctx.stderr(`${who}: published outputs unavailable (${published.source.reason}); ${loses}`);
  if (published.source.from === "no-stack") ctx.stderr(`${who}: no outputs of this stack (${published.source.reason}); no Service is proven this stack's`);
}

/** observeStack through the stack's kube context and its last up's outputs. `entries` (default the stack's) are read; `selected` are judged. */
export function observeOpened<X = undefined>(
  ctx: { projectDir: string; env: NodeJS.ProcessEnv },
  opened: OpenStack,
  o: Pick<OperatorDeps, "connect" | "readOutputs"> & { timeoutMs: number; entries?: Endpoint[]; selected?: string[]; outputs?: string; outputsFlag?: boolean },
  alsoRead?: (reader: ClusterReader) => Promise<X>,
) {
  const entries = o.entries ?? opened.selectedEntries;
  const published = async () => {
    const p = await readPublished(ctx, opened.stack, o.outputs, o.readOutputs, { outputsFlag: o.outputsFlag ?? true });
    return { ...p, ...(p.source.from === "unavailable" ? {} : { proven: p.endpoints }) };
  };
  const stack = { contract: opened.contract, selected: o.selected ?? entries.map((e) => e.name), nodeAddress: opened.settings.nodeAddress };
  return observeStack(stack, { connect: () => o.connect(opened, o.timeoutMs), published, entries, ...(alsoRead ? { alsoRead } : {}) });
}
