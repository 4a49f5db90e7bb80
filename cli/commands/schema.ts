import { contractJsonSchema } from "../../src/core/contract/json-schema";
import { EXIT } from "../../src/core/findings";
import type { Command } from "../context";
import { parseCommandLine } from "../flags";
import { SPECS } from "../specs";

/** Prints the contract's JSON Schema (a JSON Schema document: no apiVersion envelope). */
export const schema: Command = async (argv, ctx) => {
  parseCommandLine(SPECS.schema, argv);
  ctx.stdout(JSON.stringify(contractJsonSchema(), null, 2));
  return EXIT.OK;
};
