import { contractJsonSchema } from "../../src/core/contract/json-schema";
import { EXIT } from "../../src/core/findings";
import { type Command, printJson } from "../context";

/** Prints the contract's JSON Schema (a JSON Schema document: no apiVersion envelope). */
export const command: Command<"schema"> = async (_args, ctx) => {
  printJson(ctx, contractJsonSchema());
  return EXIT.OK;
};
