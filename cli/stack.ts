import { LiveClusterReader } from "../src/adapters/kube-live";
import { readStackOutputs } from "../src/adapters/pulumi-cli";
import { readStackConfig } from "../src/adapters/stack-config";
import { loadInputs } from "../src/adapters/stack-inputs";
import type { Contract, Endpoint } from "../src/core/contract/schema";
import { UserError } from "../src/core/errors";
import { checkStackName } from "../src/core/inputs";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { PublishedEndpoints } from "../src/core/observe";
import { selectEntries } from "../src/core/plan";
import { publishedFromOutputs } from "../src/core/published";
import { type Settings, stackKubeTarget } from "../src/core/settings";
import type { CommandContext } from "./context";

export interface OpenStack {
  stack: string;
  config: Record<string, string>;
  settings: Settings;
  contract: Contract;
  contractFile: string;
  /** Names of the exposed entries this stack publishes. */
  selected: string[];
  /** The same entries, as the contract declares them. */
  selectedEntries: Endpoint[];
}

/** Loads a stack's settings and contract (no cluster access): the commands' common start. */
export function openStack(ctx: CommandContext, stack: string, contractOverride?: string): OpenStack {
  checkStackName(stack);
  const config = readStackConfig(ctx.projectDir, stack);
  if (contractOverride) config["ui-exposure:contract"] = contractOverride;
  const { settings, contract, contractFile } = loadInputs({ projectDir: ctx.projectDir, stack, config });
  const selection = selectEntries(contract, settings.entries);
  if (selection.problems.length) throw new UserError(selection.problems.join("; "));
  return { stack, config, settings, contract, contractFile, selected: selection.entries.map((e) => e.name), selectedEntries: selection.entries };
}

/**
 * The live cluster of a stack, through the same kubeconfig/context as its provider.
 * `KUBECONFIG` still applies when the stack does not set kubernetes:kubeconfig.
 */
export function connectCluster(opened: OpenStack, timeoutMs?: number): Promise<ClusterReader> {
  return LiveClusterReader.connect({ ...stackKubeTarget(opened.stack, opened.config), ...(timeoutMs ? { timeoutMs } : {}) });
}

/** The `endpoints` output, checked (src/core/published.ts): a malformed one is an error naming the field. */
export function publishedEndpoints(outputs: Record<string, unknown>, source = "stack outputs"): PublishedEndpoints {
  return publishedFromOutputs(outputs, source);
}

export { readStackOutputs };
