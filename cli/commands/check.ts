import * as path from "node:path";
import { parseArgs } from "node:util";
import { defaultContractPath, loadContractFile } from "../../src/adapters/contract-file";
import { isHostPortEntry, isNodePortEntry } from "../../src/core/contract/schema";
import type { Command } from "../context";
import { usageError } from "../context";
import { EXIT } from "../exit";

const USAGE = "exposure check [CONTRACT] [--json]";

/** Validates a contract offline: exit 0 when valid, 2 with every problem listed otherwise. */
export const check: Command = async (argv, ctx) => {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    throw usageError((err as Error).message, USAGE);
  }
  if (parsed.positionals.length > 1) throw usageError("check takes at most one contract file", USAGE);
  const file = parsed.positionals[0] ?? defaultContractPath(ctx.projectDir);
  const shown = path.relative(process.cwd(), file) || file;
  const contract = loadContractFile(file, shown);
  const exposed = contract.endpoints.filter((e) => e.exposed);
  if (parsed.values.json) {
    ctx.stdout(JSON.stringify({ file: shown, valid: true, endpoints: contract.endpoints.length, exposed: exposed.map((e) => e.name) }, null, 2));
  } else {
    const nodePorts = exposed.filter(isNodePortEntry).length;
    const hostPorts = exposed.filter(isHostPortEntry).length;
    ctx.stdout(
      `${shown}: valid: ${contract.endpoints.length} endpoints, ${exposed.length} exposed (${nodePorts} NodePort, ${hostPorts} hostPort): ${exposed.map((e) => e.name).join(", ")}`,
    );
  }
  return EXIT.OK;
};

function parse(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: { json: { type: "boolean", default: false } } });
}
