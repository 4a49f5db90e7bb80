import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { promisify } from "node:util";
import type { Contract, Endpoint } from "../src/contract/schema";
import { UserError } from "../src/errors";
import type { ClusterReader } from "../src/kube/cluster";
import { LiveClusterReader } from "../src/kube/live";
import type { PublishedEndpoints } from "../src/observe";
import { selectEntries } from "../src/plan";
import { kubeTarget, loadInputs } from "../src/program";
import { readStackConfig } from "../src/render";
import type { Settings } from "../src/settings";
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
  return LiveClusterReader.connect({ ...kubeTarget(opened.config), ...(timeoutMs ? { timeoutMs } : {}) });
}

const run = promisify(execFile);

/**
 * The stack outputs of the last `up`: from a file (`pulumi stack output --json` saved by a
 * pipeline) or from the Pulumi CLI. Secrets stay masked: no command needs them here.
 */
export async function readStackOutputs(ctx: CommandContext, stack: string, outputsFile?: string): Promise<Record<string, unknown>> {
  let text: string;
  if (outputsFile) {
    try {
      text = fs.readFileSync(outputsFile, "utf8");
    } catch (err) {
      throw new UserError(`cannot read outputs file ${outputsFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  } else {
    try {
      ({ stdout: text } = await run("pulumi", ["stack", "output", "--json", "--stack", stack], {
        cwd: ctx.projectDir,
        env: { ...ctx.env, PULUMI_SKIP_UPDATE_CHECK: "true" },
        timeout: 60_000,
        maxBuffer: 64 * 1024 * 1024,
      }));
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === "ENOENT") throw new UserError("the pulumi CLI is not on PATH; install it or pass --outputs FILE (saved `pulumi stack output --json`)");
      throw new UserError(`pulumi stack output --stack ${stack} failed: ${(e.stderr ?? e.message).trim().split("\n").pop()}`);
    }
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new UserError(`${outputsFile ?? "pulumi stack output"}: not JSON`);
  }
}

export function publishedEndpoints(outputs: Record<string, unknown>): PublishedEndpoints {
  const endpoints = outputs.endpoints;
  return endpoints && typeof endpoints === "object" ? (endpoints as PublishedEndpoints) : {};
}
