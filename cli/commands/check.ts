import * as path from "node:path";
import { defaultContractPath, loadContractFile } from "../../src/adapters/contract-file";
import { ContractError } from "../../src/core/contract/parse";
import { type Contract, isHostPortEntry, isNodePortEntry } from "../../src/core/contract/schema";
import { UserError } from "../../src/core/errors";
import { EXIT, exitCodeOf, type Finding, finding, JSON_API_VERSION } from "../../src/core/findings";
import type { CheckDocument } from "../../src/core/json-api";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { SPECS } from "../specs";

export const command: Command<"check"> = async ({ values, positionals }, ctx) => {
  if (positionals.length > 1) throw usageError(SPECS.check, "check takes at most one contract file");
  const file = positionals[0] ?? defaultContractPath(ctx.projectDir);
  // The path as typed (an absolute path stays absolute); the default relative to where we are.
  const shown = positionals[0] ?? (path.relative(process.cwd(), file) || file);
  let contract: Contract;
  try {
    contract = loadContractFile(file, shown);
  } catch (err) {
    // Without --json the message (every problem at file:line:col) is the report; with it, the findings are.
    if (!values.json || !(err instanceof UserError)) throw err;
    const findings = contractFindings(err, shown);
    printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "ContractCheck", file: shown, valid: false, findings } satisfies CheckDocument);
    return exitCodeOf(findings);
  }
  const exposed = contract.endpoints.filter((e) => e.exposed);
  const count = contract.endpoints.length;
  if (values.json) {
    const summary = { valid: true, endpoints: count, exposed: exposed.map((e) => e.name), findings: [] } as const;
    printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "ContractCheck", file: shown, ...summary } satisfies CheckDocument);
  } else {
    const kinds = `${exposed.filter(isNodePortEntry).length} NodePort, ${exposed.filter(isHostPortEntry).length} hostPort`;
    const names = exposed.length > 0 ? `: ${exposed.map((e) => e.name).join(", ")}` : "";
    ctx.stdout(`${shown}: valid: ${count} ${count === 1 ? "endpoint" : "endpoints"}, ${exposed.length} exposed (${kinds})${names}`);
  }
  return EXIT.OK;
};

/** Why the contract could not be used, as findings: one per problem, at file:line:col. */
function contractFindings(err: UserError, file: string): Finding[] {
  if (!(err instanceof ContractError)) return [finding("contract-unreadable", "invalid", file, err.message)];
  return err.problems.map((p) =>
    p.path === "(yaml)"
      ? finding("contract-yaml-syntax", "invalid", `${err.file}:${p.line}:${p.col}`, p.message)
      : finding("contract-invalid", "invalid", `${err.file}:${p.line}:${p.col}`, `${p.path || "(document)"}: ${p.message}`),
  );
}
