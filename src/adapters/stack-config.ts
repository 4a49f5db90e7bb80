import * as fs from "node:fs";
import * as path from "node:path";
import { parseDocument } from "yaml";
import { describeValue, YAML_MAX_ALIASES } from "../core/contract/parse";
import { UserError } from "../core/errors";
import { checkStackName } from "../core/inputs";
import { PROJECT } from "../core/settings";
import { FILE_LIMITS, readBoundedText } from "./bounded-file";

/**
 * Reads a stack file's `config:` into the flat map the engine gives the program
 * (objects and arrays as JSON text). Encrypted (`secure:`) values cannot be read offline
 * and are left out; the program uses none of them.
 */
export function readStackConfig(projectDir: string, stack: string): Record<string, string> {
  checkStackName(stack);
  const file = path.join(projectDir, `Pulumi.${stack}.yaml`);
  if (!fs.existsSync(file)) {
    const known = fs.readdirSync(projectDir).flatMap((f) => (/^Pulumi\.(.+)\.yaml$/.exec(f)?.[1] ? [/^Pulumi\.(.+)\.yaml$/.exec(f)?.[1]] : []));
    throw new UserError(`unknown stack '${stack}': no ${path.relative(process.cwd(), file) || file} (stacks: ${known.join(", ") || "none"})`);
  }
  const doc = parseDocument(readBoundedText(file, "stack file", FILE_LIMITS.stackFile));
  if (doc.errors.length) throw new UserError(`${file}: invalid YAML: ${doc.errors[0]?.message.split("\n")[0]}`);
  let parsed: unknown;
  try {
    parsed = doc.toJS({ maxAliasCount: YAML_MAX_ALIASES });
  } catch (err) {
    throw new UserError(`${file}: invalid YAML: ${(err as Error).message}`);
  }
  const config = (parsed as { config?: unknown } | null)?.config ?? {};
  if (config === null || typeof config !== "object" || Array.isArray(config))
    throw new UserError(`${file}: config: expected a map, found ${describeValue(config)}`);
  const flat: Record<string, string> = {};
  for (const [rawKey, value] of Object.entries(config)) {
    const key = rawKey.includes(":") ? rawKey : `${PROJECT}:${rawKey}`;
    if (value !== null && typeof value === "object" && "secure" in (value as object)) continue;
    flat[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  return flat;
}
