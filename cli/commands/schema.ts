import { contractJsonSchema } from "../../src/core/contract/json-schema";
import { EXIT } from "../../src/core/findings";
import { type Command, printJson } from "../context";
import { parseCommandLine } from "../flags";
import { SPECS } from "../specs";

/** Prints the contract's JSON Schema (a JSON Schema document: no apiVersion envelope). */
export const schema: Command = async (argv, ctx) => {
  parseCommandLine(SPECS.schema, argv);
  printJson(ctx, contractJsonSchema());
  return EXIT.OK;
};
