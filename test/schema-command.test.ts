import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../cli/main";
import { loadContractFile } from "../src/adapters/contract-file";
import { contractJsonSchema } from "../src/core/contract/json-schema";
import { capture } from "./support/command-helpers";

/** Where the committed copy lives, relative to the project (the example contract points at it). */
const CONTRACT_SCHEMA_FILE = "contract/endpoints.schema.json";

const projectDir = path.resolve(__dirname, "..");

describe("exposure schema", () => {
  it("prints the JSON Schema generated from the contract's zod schema", async () => {
    const c = capture(projectDir);
    expect(await main(["schema"], c.ctx)).toBe(0);
    const printed = JSON.parse(c.out.join("\n")) as Record<string, unknown>;
    expect(printed).toEqual(contractJsonSchema());
    expect(printed.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    const endpoint = (printed as { properties: { endpoints: { items: { properties: Record<string, unknown>; additionalProperties: boolean } } } }).properties
      .endpoints.items;
    expect(Object.keys(endpoint.properties)).toEqual(["name", "description", "group", "exposed", "scheme", "service", "hostPort", "probe", "credentials"]);
    // Typos are errors in the editor too (z.strictObject).
    expect(endpoint.additionalProperties).toBe(false);
  });

  it(`${CONTRACT_SCHEMA_FILE} is up to date, byte for byte what the documented command writes (regenerate: npx exposure schema > ${CONTRACT_SCHEMA_FILE})`, async () => {
    const c = capture(projectDir);
    expect(await main(["schema"], c.ctx)).toBe(0);
    expect(fs.readFileSync(path.join(projectDir, CONTRACT_SCHEMA_FILE), "utf8")).toBe(`${c.out.join("\n")}\n`);
  });

  it("the example contract points editors at it on its first line, and still loads", () => {
    const example = path.join(projectDir, "contract/endpoints.example.yaml");
    expect(fs.readFileSync(example, "utf8").split("\n")[0]).toBe("# yaml-language-server: $schema=./endpoints.schema.json");
    expect(loadContractFile(example).endpoints.length).toBeGreaterThan(0);
  });
});
