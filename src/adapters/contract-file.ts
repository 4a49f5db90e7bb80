import * as fs from "node:fs";
import * as path from "node:path";
import { parseContract } from "../core/contract/parse";
import type { Contract } from "../core/contract/schema";
import { UserError } from "../core/errors";
import { EXIT } from "../core/findings";
import { FILE_LIMITS, readBoundedText } from "./bounded-file";

/** Contract file used when none is given: the real one if present, else the committed example. */
export function defaultContractPath(projectDir: string): string {
  const real = path.join(projectDir, "contract", "endpoints.yaml");
  return fs.existsSync(real) ? real : path.join(projectDir, "contract", "endpoints.example.yaml");
}

export function loadContractFile(file: string, displayName = file): Contract {
  if (!fs.existsSync(file)) {
    throw new UserError(
      `contract file not found: ${displayName} (copy contract/endpoints.example.yaml to contract/endpoints.yaml, or set ui-exposure:contract)`,
      EXIT.INVALID,
    );
  }
  return parseContract(readBoundedText(file, "contract", FILE_LIMITS.contract, EXIT.INVALID, displayName), displayName);
}
