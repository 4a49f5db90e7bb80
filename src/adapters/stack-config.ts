import * as fs from "node:fs";
import * as path from "node:path";
import { type Document, isMap, isScalar, isSeq, type Node, type Pair } from "yaml";
import { yamlErrorMessage } from "../core/contract/parse";
import { UserError, userErrorFromProblems } from "../core/errors";
import { checkStackName } from "../core/inputs";
import { PROJECT } from "../core/settings";
import { parseYamlBounded, placeIn, SMALL_YAML_VALUES } from "../core/yaml";
import { FILE_LIMITS, readBoundedText } from "./bounded-file";

// A stack's configuration as the engine hands it to the program, read from Pulumi.<stack>.yaml's `config:` by Pulumi 3.248's rules for keys and values
// (Pulumi.yaml's is refused: its defaults would reach the program and not these commands): `values` by namespaced key, as configText writes them; the
// encrypted keys (`secure:`: never decrypted or shown here, absent from `values`) and where each is set; `at`, where each key and each value inside one is
// set (`file:line:col`), for messages about it. Throws a UserError with file:line:col for a bad file.
export function loadStackConfig(projectDir: string, stack: string) {
  checkStackName(stack);
  const stackPath = path.join(projectDir, `Pulumi.${stack}.yaml`);
  const stackFile = display(stackPath);
  if (!fs.existsSync(stackPath)) {
    const known = fs.readdirSync(projectDir).flatMap((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.slice(1, 2) ?? []);
    throw new UserError(`unknown stack '${stack}': no ${stackFile} (stacks: ${known.join(", ") || "none"})`);
  }
  const parsed = readYaml(stackPath);
  const project = projectName(projectDir);
  const values: Record<string, string> = {};
  const secretAt: Record<string, string> = {};
  const at: Record<string, string> = {};
  for (const pair of configMap(parsed)?.items ?? []) {
    const key = configKey(parsed, pair, project);
    at[key] = parsed.at(pair);
    const node = pair.value as Node | null;
    const raw: unknown = node && "toJSON" in node ? node.toJSON() : null;
    if (raw === null || raw === undefined) throw new UserError(`${at[key]}: ${key} has no value (remove the key or give it one)`);
    if (containsSecure(raw)) {
      secretAt[key] = at[key];
    } else {
      values[key] = configText(raw);
      innerPositions(parsed, node, key, at);
    }
  }
  return { values, secretKeys: Object.keys(secretAt).sort(), secretAt, at };
}

/** The `exposure` commands never decrypt: an encrypted ui-exposure setting would read as unset (`entries` as "all"); refused, as it holds nothing secret. */
export function refuseEncryptedSettings(config: ReturnType<typeof loadStackConfig>, stack: string): void {
  // kubernetes:context too: encrypted, it would read as unset and be refused as missing.
  const encrypted = config.secretKeys.filter((key) => key.startsWith(`${PROJECT}:`) || key === "kubernetes:context");
  if (encrypted.length) {
    throw userErrorFromProblems(
      `invalid stack configuration for stack '${stack}'`,
      encrypted.map(
        (key) =>
          `${config.secretAt[key]}: ${key} is encrypted (secure:), and the exposure commands never decrypt; ${key === "kubernetes:context" ? "a context name holds" : "ui-exposure settings hold"} nothing secret: set it in clear text (pulumi config set ${key} VALUE --stack ${stack}, without --secret)`,
      ),
    );
  }
}

const display = (file: string) => path.relative(process.cwd(), file) || file;

type ParsedFile = ReturnType<typeof readYaml>;

function readYaml(file: string) {
  const shown = display(file);
  const parsed = parseYamlBounded(readBoundedText(file, "stack file", FILE_LIMITS.stackFile), { maxValues: SMALL_YAML_VALUES }, { single: true });
  const at = (offset: number | undefined) => placeIn(parsed.lineCounter, shown, offset);
  if (parsed.refused) throw new UserError(`${at(parsed.refused.offset)}: stack file refused: ${parsed.refused.message}`);
  const doc = parsed.docs[0] as Document.Parsed;
  const first = doc.errors[0];
  if (first) throw new UserError(`${at(first.pos[0])}: invalid YAML: ${yamlErrorMessage(doc, first)}`);
  return {
    file: shown,
    contents: doc.contents,
    at: (node: Node | Pair | null | undefined) => {
      const n = node && "range" in node ? node : (node as Pair | null | undefined)?.key;
      return at((n as Node | undefined)?.range?.[0]);
    },
  };
}

/** The `config:` mapping of a file, or undefined when there is none; a wrong shape is an error. */
function configMap(parsed: ParsedFile) {
  const root = parsed.contents;
  if (root === null || (isScalar(root) && root.value === null)) return undefined;
  if (!isMap(root)) throw new UserError(`${parsed.at(root)}: expected a mapping at the top of ${parsed.file}`);
  const config = root.get("config", true);
  if (config === undefined || (isScalar(config) && config.value === null)) return undefined;
  if (!isMap(config)) throw new UserError(`${parsed.at(config as Node)}: 'config' must be a mapping of keys to values`);
  return config;
}

/** A key namespaced: `name` -> `<project>:name`; `ns:name` stays; `ns:config:name` (the old form) -> `ns:name`. */
function configKey(parsed: ParsedFile, pair: Pair, project: string): string {
  if (!isScalar(pair.key) || typeof pair.key.value !== "string" || pair.key.value === "") {
    throw new UserError(`${parsed.at(pair)}: configuration keys must be non-empty strings`);
  }
  const raw = pair.key.value;
  const parts = raw.split(":");
  if (parts.length === 1) return `${project}:${raw}`;
  if (parts.length === 2 && parts[0] && parts[1]) return raw;
  if (parts.length === 3 && parts[0] && parts[1] === "config" && parts[2]) return `${parts[0]}:${parts[2]}`;
  throw new UserError(`${parsed.at(pair)}: configuration key '${raw}' must be 'name' or 'namespace:name'`);
}

/** Sets in `out` the place of every map value and list item under `node`, named as settings messages name one item (`ui-exposure:allowlist.hostPorts[2]`). */
function innerPositions(parsed: ParsedFile, node: unknown, prefix: string, out: Record<string, string>, depth = 0): void {
  // The stack file is bounded in size; the depth bound keeps a hostile nesting from recursing far.
  if (depth > 16) return;
  if (isMap(node)) {
    for (const item of node.items) {
      if (!isScalar(item.key)) continue;
      const where = `${prefix}.${String(item.key.value)}`;
      out[where] = parsed.at(item);
      innerPositions(parsed, item.value, where, out, depth + 1);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      out[`${prefix}[${i}]`] = parsed.at(item as Node);
      innerPositions(parsed, item, `${prefix}[${i}]`, out, depth + 1);
    });
  }
}

const isSecure = (v: unknown): boolean => {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length === 1 && keys[0] === "secure" && typeof (v as { secure: unknown }).secure === "string";
};
const containsSecure = (v: unknown): boolean =>
  v !== null && typeof v === "object" && (isSecure(v) || Object.values(v as Record<string, unknown>).some(containsSecure));

/** How the engine passes a value: strings as they are, everything else as JSON (object keys sorted, as Go's encoder does). */
function configText(value: unknown): string {
  if (typeof value === "string") return value;
  // The replacer sees every object before it is written, nested ones included.
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
}

/** The project's name (Pulumi.yaml `name:`), which namespaces a bare key; a `config:` block there is refused. */
function projectName(projectDir: string): string {
  const projectPath = path.join(projectDir, "Pulumi.yaml");
  if (!fs.existsSync(projectPath)) return PROJECT;
  const parsed = readYaml(projectPath);
  const config = configMap(parsed);
  if (config?.items.length) {
    throw new UserError(
      `${parsed.at(config)}: Pulumi.yaml declares configuration, which the exposure commands do not read: set each key in the stack files instead (pulumi config set KEY VALUE --stack NAME)`,
    );
  }
  const root = parsed.contents;
  const name = isMap(root) ? root.get("name", true) : undefined;
  return isScalar(name) && typeof name.value === "string" ? name.value : PROJECT;
}
