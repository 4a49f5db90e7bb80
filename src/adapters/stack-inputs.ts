import * as path from "node:path";
import type { Contract, Endpoint } from "../core/contract/schema";
import { userErrorFromProblems } from "../core/errors";
import { selectEntries } from "../core/plan";
import { PROJECT, parseSettings, type Settings } from "../core/settings";
import { defaultContractPath, loadContractFile } from "./contract-file";
import { loadStackConfig, refuseEncryptedSettings } from "./stack-config";

/** A stack's inputs that need no cluster: what every command, the sandbox and the program start from. */
export interface OpenStack {
  /** The project folder the stack file was read from. */
  projectDir: string;
  stack: string;
  /** Flat config, as `pulumi.runtime.allConfig()` gives it. */
  config: Record<string, string>;
  settings: Settings;
  contract: Contract;
  /** The contract file as shown in messages (relative to the working directory). */
  contractFile: string;
  /** Names of the exposed entries this stack publishes. */
  selected: string[];
  /** The same entries, as the contract declares them. */
  selectedEntries: Endpoint[];
}

/**
 * Opens a stack: its file read once (values and each key's position together), the settings
 * checked, the contract loaded, the entries selected; every problem a UserError. `config` is
 * what the engine hands the program (the file then gives positions only, best effort: the
 * engine already read it); `contract` replaces the stack's contract path (relative to the
 * working directory).
 */
export function openStack(opts: { projectDir: string; stack: string; contract?: string; config?: Readonly<Record<string, string>> }): OpenStack {
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
  const settings = parseSettings(config, `Pulumi.${opts.stack}.yaml`, positions);
  const contractPath = settings.contract ? path.resolve(opts.projectDir, settings.contract) : defaultContractPath(opts.projectDir);
  const contractFile = path.relative(process.cwd(), contractPath) || contractPath;
  const contract = loadContractFile(contractPath, contractFile);
  const selection = selectEntries(contract, settings.entries);
  if (selection.problems.length) throw userErrorFromProblems(`stack ${opts.stack}`, selection.problems);
  return {
    projectDir: opts.projectDir,
    stack: opts.stack,
    config,
    settings,
    contract,
    contractFile,
    selected: selection.entries.map((e) => e.name),
    selectedEntries: selection.entries,
  };
}
