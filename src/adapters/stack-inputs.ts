import * as path from "node:path";
import type { Contract } from "../core/contract/schema";
import { parseSettings, type Settings } from "../core/settings";
import { defaultContractPath, loadContractFile } from "./contract-file";
import { stackKeyPositions } from "./stack-config";

export interface StackInputs {
  settings: Settings;
  contract: Contract;
  /** The contract file as shown in messages (relative to the working directory). */
  contractFile: string;
}

/** Reads the settings and the contract, the two inputs that need no cluster. */
export function loadInputs(inputs: { projectDir: string; stack: string; config: Readonly<Record<string, string>> }): StackInputs {
  const settings = parseSettings(inputs.config, `Pulumi.${inputs.stack}.yaml`, stackKeyPositions(inputs.projectDir, inputs.stack));
  const contractFile = settings.contract ? path.resolve(inputs.projectDir, settings.contract) : defaultContractPath(inputs.projectDir);
  const contractDisplay = path.relative(process.cwd(), contractFile) || contractFile;
  const contract = loadContractFile(contractFile, contractDisplay);
  return { settings, contract, contractFile: contractDisplay };
}
