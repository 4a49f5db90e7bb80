import * as fs from "node:fs";
import * as path from "node:path";
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
import { type Settings, stackKubeTarget } from "../src/core/settings";
import type { CommandContext } from "./context";

export interface OpenStack {
  /** The project folder the stack file was read from. */
  projectDir: string;
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
  return {
    projectDir: ctx.projectDir,
    stack,
    config,
    settings,
    contract,
    contractFile,
    selected: selection.entries.map((e) => e.name),
    selectedEntries: selection.entries,
  };
}

/**
 * The live cluster of a stack, through the same kubeconfig/context as its provider.
 * `KUBECONFIG` still applies when the stack does not set kubernetes:kubeconfig.
 */
export async function connectCluster(opened: OpenStack, timeoutMs?: number, env: NodeJS.ProcessEnv = process.env): Promise<ClusterReader> {
  try {
    return await LiveClusterReader.connect({ ...stackKubeTarget(opened.stack, opened.config), ...(timeoutMs ? { timeoutMs } : {}) });
  } catch (err) {
    // The sandbox's kubeconfig is set by its env file: without it, say so (the usual first miss).
    const sandbox = path.join(opened.projectDir, ".sandbox");
    if (err instanceof UserError && fs.existsSync(path.join(sandbox, "env")) && env.KUBECONFIG !== path.join(sandbox, "kubeconfig")) {
      const rel = path.relative(process.cwd(), path.join(sandbox, "env")) || ".sandbox/env";
      throw new UserError(
        `${err.message}\n(a sandbox runs in this folder: run \`. ${rel}\` in this shell first; it sets KUBECONFIG to the sandbox's)`,
        err.exitCode,
      );
    }
    throw err;
  }
}

export function publishedEndpoints(outputs: Record<string, unknown>): PublishedEndpoints {
  const endpoints = outputs.endpoints;
  return endpoints && typeof endpoints === "object" ? (endpoints as PublishedEndpoints) : {};
}

export { readStackOutputs };
