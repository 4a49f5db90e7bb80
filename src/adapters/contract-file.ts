import * as fs from "node:fs";
import * as path from "node:path";
import { parseContract } from "../core/contract/parse";
import type { Contract } from "../core/contract/schema";
import { UserError } from "../core/errors";
import { EXIT } from "../core/findings";

/** Contract file used when none is given: the real one if present, else the committed example. */
export function defaultContractPath(projectDir: string): string {
  const real = path.join(projectDir, "contract", "endpoints.yaml");
  return fs.existsSync(real) ? real : path.join(projectDir, "contract", "endpoints.example.yaml");
}

export function loadContractFile(file: string, displayName = file): Contract {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(
      code === "ENOENT"
        ? `contract file not found: ${displayName} (copy contract/endpoints.example.yaml to contract/endpoints.yaml, or set ui-exposure:contract)`
        : `cannot read contract ${displayName}: ${(err as Error).message}`,
      EXIT.INVALID,
    );
  }
  return parseContract(text, displayName);
}
