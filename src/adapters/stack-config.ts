import * as fs from "node:fs";
import * as path from "node:path";
import { parseDocument } from "yaml";
import { UserError } from "../core/errors";
import { checkStackName } from "../core/inputs";
import { PROJECT } from "../core/settings";

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
  const doc = parseDocument(fs.readFileSync(file, "utf8"));
  if (doc.errors.length) throw new UserError(`${file}: invalid YAML: ${doc.errors[0]?.message.split("\n")[0]}`);
  const config = (doc.toJS() as { config?: Record<string, unknown> } | null)?.config ?? {};
  const flat: Record<string, string> = {};
  for (const [rawKey, value] of Object.entries(config)) {
    const key = rawKey.includes(":") ? rawKey : `${PROJECT}:${rawKey}`;
    if (value !== null && typeof value === "object" && "secure" in (value as object)) continue;
    flat[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  return flat;
}
