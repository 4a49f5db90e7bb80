import * as path from "node:path";
import type { Contract } from "../core/contract/schema";
import { selectEntries } from "../core/plan";
import { checkSettings, PROJECT, stackConfigError } from "../core/settings";
import { defaultContractPath, loadContractFile } from "./contract-file";
import { loadStackConfig, refuseEncryptedSettings } from "./stack-config";

/** A stack's inputs that need no cluster: what every command, the sandbox and the program start from. */
export type OpenStack = ReturnType<typeof openStack>;

// Opens a stack, every problem a UserError. `config`: what the engine hands the program; `contract` replaces the stack's contract path. The stack opened
// holds its config flat (as `pulumi.runtime.allConfig()` gives it), its contract file as messages show it (relative to the working directory) and the
// exposed entries it publishes (`selected`: their names; `selectedEntries`: as the contract declares them).
export function openStack(opts: {
  projectDir: string;
  stack: string;
  contract?: string;
  config?: Readonly<Record<string, string>>;
  /** false: the caller never reads the cluster (probe), so kubernetes:context may be unset. */
  needsCluster?: boolean;
}) {
  let config: Record<string, string>;
  let positions: Record<string, string> = {};
  if (opts.config) {
    config = { ...opts.config };
    try {
      positions = loadStackConfig(opts.projectDir, opts.stack).at;
    } catch {}
  } else {
    const file = loadStackConfig(opts.projectDir, opts.stack);
    refuseEncryptedSettings(file, opts.stack);
    config = { ...file.values };
    positions = file.at;
  }
  if (opts.contract) config[`${PROJECT}:contract`] = path.resolve(opts.contract);
  // Every problem of a new stack in one message (settings, kube context, entries), with the lines to add: not one per run.
  const stackFile = `Pulumi.${opts.stack}.yaml`;
  const checked = checkSettings(config, positions);
  const problems = [...checked.problems];
  const missing = [...checked.missing];
  // The stack's own section of the in-cluster portal is named after the stack: another cluster of that name would take its place.
  if (checked.settings?.portal.clusters.some((c) => c.name === opts.stack)) {
    const where = positions[`${PROJECT}:portal`];
    problems.push(`${where ? `${where}: ` : ""}${PROJECT}:portal.clusters: '${opts.stack}' is this stack's own name; give the other cluster another name`);
  }
  if (opts.needsCluster !== false && !config["kubernetes:context"]) {
    problems.push(
      `kubernetes:context is not set; set it (pulumi config set kubernetes:context <context> --stack ${opts.stack}) so the stack never deploys to (or reads) whatever context is current`,
    );
    missing.unshift("kubernetes:context");
  }
  let contract: Contract | undefined;
  let contractFile = "";
  let selection: ReturnType<typeof selectEntries> | undefined;
  if (checked.selection) {
    const contractPath = checked.selection.contract ? path.resolve(opts.projectDir, checked.selection.contract) : defaultContractPath(opts.projectDir);
    contractFile = path.relative(process.cwd(), contractPath) || contractPath;
    try {
      contract = loadContractFile(contractPath, contractFile);
    } catch (err) {
      // The contract's own problems are its file's: said alone when the stack file is right.
      if (problems.length === 0) throw err;
      const why = ((err as Error).message ?? String(err)).split("\n")[0] ?? "";
      problems.push(`the contract ${contractFile} cannot be used either (${why}): run exposure check ${contractFile}`);
    }
    if (contract) {
      selection = selectEntries(contract, checked.selection.entries);
      problems.push(...selection.problems);
    }
  }
  if (problems.length || !checked.settings || !contract || !selection) throw stackConfigError(stackFile, problems, missing);
  return {
    projectDir: opts.projectDir,
    stack: opts.stack,
    config,
    settings: checked.settings,
    contract,
    contractFile,
    selected: selection.entries.map((e) => e.name),
    selectedEntries: selection.entries,
  };
}
