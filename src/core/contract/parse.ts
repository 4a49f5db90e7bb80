import { type Document, isMap, isScalar, isSeq, type Node, visit, type YAMLError } from "yaml";
import type * as z from "zod/mini";
import { UserError } from "../errors";
import { EXIT } from "../findings";
import { printableValue } from "../text";
import { parseYamlBounded, SMALL_YAML_VALUES } from "../yaml";
import { type Contract, contractSchema, FORBIDDEN_KEYS } from "./schema";

/** Aliases a YAML document may expand (an alias bomb expands billions); beyond it the file is refused. */
export const YAML_MAX_ALIASES = 100;
/** Most entries a contract may declare (the platform has about ten; beyond this it is not a contract). */
export const MAX_CONTRACT_ENTRIES = 1000;
/** Problems listed in one message; the rest are counted ("... and N more"). */
export const MAX_PROBLEMS_SHOWN = 50;

interface ContractProblem {
  line: number;
  col: number;
  /** e.g. `endpoints[2].service.port` */
  path: string;
  message: string;
}

export class ContractError extends UserError {
  constructor(
    readonly file: string,
    readonly problems: readonly ContractProblem[],
  ) {
    // The file name is the user's, possibly with a line break: one problem stays one line.
    const shown = problems.slice(0, MAX_PROBLEMS_SHOWN).map((p) => `${printableValue(file)}:${p.line}:${p.col}: ${p.path || "(document)"}: ${p.message}`);
    if (problems.length > MAX_PROBLEMS_SHOWN) shown.push(`... and ${problems.length - MAX_PROBLEMS_SHOWN} more problems (fix these first)`);
    super(
      `invalid contract ${printableValue(file)} (${problems.length} ${problems.length === 1 ? "problem" : "problems"}):\n${shown.join("\n")}`,
      EXIT.INVALID,
    );
    this.name = "ContractError";
  }
}

/** `endpoints[2].service.port` */
export const formatPath = (segments: readonly PropertyKey[]): string =>
  segments.reduce<string>((out, s) => (typeof s === "number" ? `${out}[${s}]` : out ? `${out}.${String(s)}` : String(s)), "");

/** Parses and validates contract text: every problem (YAML syntax, forbidden keys, schema) reported at once with its position; nothing partial returned. */
export function parseContract(text: string, file: string): Contract {
  const parsed = parseYamlBounded(text, { maxValues: SMALL_YAML_VALUES }, { single: true });
  const pos = (offset: number | undefined) => parsed.lineCounter.linePos(offset ?? 0);
  // Too deep or too large to build: one problem, before anything is built from it.
  if (parsed.refused) throw new ContractError(file, [{ ...pos(parsed.refused.offset), path: "(yaml)", message: parsed.refused.message }]);
  const doc = parsed.docs[0] as Document.Parsed;

  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => ({ ...pos(e.pos[0]), path: "(yaml)", message: yamlErrorMessage(doc, e) }));
    throw new ContractError(file, [...new Map(problems.map((p) => [`${p.line}:${p.col}:${p.message}`, p])).values()]);
  }

  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: YAML_MAX_ALIASES });
  } catch (err) {
    // yaml throws on an alias bomb ("Excessive alias count"): a position, not a trace.
    throw new ContractError(file, [
      { ...pos(firstAliasOffset(doc)), path: "(yaml)", message: `${(err as Error).message}: too many alias expansions (limit ${YAML_MAX_ALIASES})` },
    ]);
  }
  const entries = (raw as { endpoints?: unknown } | null)?.endpoints;
  if (Array.isArray(entries) && entries.length > MAX_CONTRACT_ENTRIES) {
    throw new ContractError(file, [
      { ...pos(nodeOffset(doc, ["endpoints"])), path: "endpoints", message: `${entries.length} entries: a contract declares at most ${MAX_CONTRACT_ENTRIES}` },
    ]);
  }

  const problems = forbiddenKeys(doc.contents, [], pos);
  const forbiddenPaths = new Set(problems.map((p) => p.path));

  // reportInput: a wrong type is told apart from a missing field by the value found.
  const result = contractSchema.safeParse(raw, { reportInput: true });
  if (!result.success) {
    for (const issue of distinctIssues(result.error.issues)) {
      if (issue.code !== "unrecognized_keys") {
        problems.push({ ...pos(nodeOffset(doc, issue.path)), path: formatPath(issue.path), message: describeIssue(issue) });
        continue;
      }
      for (const k of issue.keys) {
        const path = formatPath([...issue.path, k]);
        // A forbidden key is already reported with a better message than "unrecognized key".
        if (!forbiddenPaths.has(path)) problems.push({ ...pos(keyOffset(doc, [...issue.path, k])), path, message: `unknown key '${k}'` });
      }
    }
  }

  if (problems.length > 0) {
    problems.sort((a, b) => a.line - b.line || a.col - b.col);
    throw new ContractError(file, problems);
  }
  // biome-ignore lint/style/noNonNullAssertion: success checked above (problems would be non-empty otherwise)
  return result.data!;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  // A whole document that is one string is some other file (a setting may name any path): it may be a passphrase or a token, so only its size is said.
  if (issue.path.length === 0 && issue.code === "invalid_type" && typeof issue.input === "string") {
    return `expected a map (version, endpoints), found a string of ${issue.input.length} characters (not shown: is this the contract file?)`;
  }
  if (issue.code === "invalid_union") return `must be a port name (string) or a port number (1-65535), found ${describeValue(issue.input)}`;
  return describeZodIssue(issue);
}

const ARTICLE: Readonly<Record<string, string>> = { array: "an array", object: "a map", record: "a map", int: "an integer", undefined: "nothing" };
const withArticle = (type: string) => ARTICLE[type] ?? `a ${type}`;

/** `a string ("true")`, `a number (123)`, `a map`, `null`: what a field holds, for messages (bounded, one line). */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  const type = typeof value;
  if (type === "string") return `a string (${JSON.stringify((value as string).length > 40 ? `${(value as string).slice(0, 40)}...` : value)})`;
  if (type === "number" && Number.isNaN(value)) return "not a number (NaN)";
  if (type === "number" && !Number.isFinite(value)) return `a number out of range (${String(value)})`;
  if (type === "number" || type === "boolean" || type === "bigint") return `a ${type} (${String(value)})`;
  return withArticle(type);
}

/** zod's own English wording ("Too big: ...", "Invalid input"...), never shown as is: our schemas' messages never start so. */
const ZOD_WORDING = /^(Too big|Too small|Invalid (input|option|string|discriminator|value|key|element)|Expected)\b/;

/** `'http', 'https' or 'tcp'`: the values a field accepts, as messages list them. */
function listValues(values: readonly unknown[]): string {
  const quoted = values.map((v) => (typeof v === "string" ? `'${v}'` : String(v)));
  return quoted.length > 1 ? `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}` : (quoted[0] ?? "nothing");
}

/** Whether the issue is zod's check that an integer is a safe one (|n| <= 2^53 - 1): the field's own range says more. */
function isSafeIntegerBound(issue: z.core.$ZodIssue): boolean {
  return (
    (issue.code === "too_big" && Number(issue.maximum) === Number.MAX_SAFE_INTEGER) ||
    (issue.code === "too_small" && Number(issue.minimum) === Number.MIN_SAFE_INTEGER)
  );
}

/** A union whose value has exactly one branch's type (a list where `'all'` or a list is accepted) reports that branch's problems, not "expected A or B". */
export function expandUnions(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== "invalid_union") return [issue];
    const deeper = issue.errors.filter((branch) => branch.length > 0 && branch.every((i) => i.path.length > 0));
    const only = deeper.length === 1 ? deeper[0] : undefined;
    if (only === undefined) return [issue];
    return expandUnions(only.map((i) => ({ ...i, path: [...issue.path, ...i.path] }) as z.core.$ZodIssue));
  });
}

/** Drops zod's safe-integer bound where the field's own range is also reported at that path: `port: 99999999999999999999` is one problem, not two. */
export function distinctIssues<T extends z.core.$ZodIssue>(issues: readonly T[]): T[] {
  const key = (i: z.core.$ZodIssue) => JSON.stringify(i.path.map(String));
  const counts = new Map<string, number>();
  for (const i of issues) counts.set(key(i), (counts.get(key(i)) ?? 0) + 1);
  return issues.filter((i) => !(isSafeIntegerBound(i) && (counts.get(key(i)) ?? 0) > 1));
}

/** An empty string or list where one is required: nothing more to say of what was found. */
const EMPTY = "must not be empty";

/** Our wording for a bound zod reports as "Too big: expected number to be <=599". */
function describeBound(issue: z.core.$ZodIssueTooBig | z.core.$ZodIssueTooSmall): string | undefined {
  const big = issue.code === "too_big";
  const bound = Number(issue.code === "too_big" ? issue.maximum : issue.minimum);
  const inclusive = issue.inclusive !== false;
  const relation = big ? (inclusive ? "at most" : "below") : inclusive ? "at least" : "above";
  if (issue.origin === "string" || issue.origin === "array") {
    return !big && bound === 1 ? EMPTY : `expected ${relation} ${bound} ${issue.origin === "string" ? "characters" : "items"}`;
  }
  if (issue.origin !== "number" && issue.origin !== "int") return undefined;
  return isSafeIntegerBound(issue) ? "expected an integer" : `expected ${withArticle(issue.origin)} ${relation} ${bound}`;
}

/** What a found value adds to a message: for a string or list out of bounds, its size (nothing for a list: its items are shown elsewhere). */
function foundSuffix(issue: z.core.$ZodIssue, input: unknown): string {
  if (input === undefined) return "";
  if (issue.code === "too_big" || issue.code === "too_small") {
    if (input !== null && typeof input === "object") return "";
    if (typeof input === "string") return `, found ${input.length} characters`;
  }
  return `, found ${describeValue(input)}`;
}

/** One line per zod issue: what was expected, what was found, never zod's wording. Needs `reportInput: true`: else every wrong type reads as missing. */
export function describeZodIssue(issue: z.core.$ZodIssue, missing = "required field is missing"): string {
  let input = "input" in issue ? issue.input : undefined;
  // A discriminated union reports the whole object at the discriminator's path: the value found is the discriminator's.
  if (issue.code === "invalid_union" && issue.discriminator && input !== null && typeof input === "object") {
    input = (input as Record<string, unknown>)[issue.discriminator];
  }
  if (issue.code === "invalid_type") {
    if (input === undefined) return missing;
    if (typeof input === "number" && !Number.isFinite(input) && (issue.expected === "number" || issue.expected === "int")) {
      return `expected a finite number, found ${describeValue(input)}`;
    }
    return `expected ${withArticle(issue.expected)}, found ${describeValue(input)}`;
  }
  if (issue.code === "invalid_value" && input === undefined) return missing;
  let message = ZOD_WORDING.test(issue.message) ? undefined : issue.message;
  if (!message) {
    if (issue.code === "too_big" || issue.code === "too_small") message = describeBound(issue);
    else if (issue.code === "invalid_value") message = `expected ${listValues(issue.values)}`;
    else if (issue.code === "invalid_union") message = describeUnion(issue);
  }
  if (!message) return `invalid value${foundSuffix(issue, input)}`;
  if (message === EMPTY || /\bfound\b/.test(message)) return message;
  return SAYS_FOUND.has(issue.code) ? `${message}${foundSuffix(issue, input)}` : message;
}

/** Issues whose message gets the value found appended. */
const SAYS_FOUND: ReadonlySet<string> = new Set(["too_big", "too_small", "invalid_format", "invalid_value", "invalid_union"]);

/** `expected 'all' or an array`: what each branch of a union accepts, when each says so at its root. */
function describeUnion(issue: z.core.$ZodIssueInvalidUnion): string | undefined {
  const accepted: string[] = [];
  for (const branch of issue.errors) {
    const first = branch.find((i) => i.path.length === 0);
    if (first?.code === "invalid_type") accepted.push(withArticle(first.expected));
    else if (first?.code === "invalid_value") accepted.push(listValues(first.values));
    else return undefined;
  }
  return accepted.length > 0 ? `expected ${accepted.join(" or ")}` : undefined;
}

/** The keys of FORBIDDEN_KEYS at any depth under `node` (at path `at`), each at its position. */
function forbiddenKeys(node: unknown, at: PropertyKey[], pos: (offset: number | undefined) => { line: number; col: number }): ContractProblem[] {
  if (isSeq(node)) return node.items.flatMap((item, i) => forbiddenKeys(item, [...at, i], pos));
  if (!isMap(node)) return [];
  return node.items.flatMap((pair) => {
    const key = isScalar(pair.key) ? pair.key.value : pair.key;
    const inner = forbiddenKeys(pair.value, [...at, typeof key === "string" || typeof key === "number" ? key : String(key)], pos);
    if (typeof key !== "string" || !Object.hasOwn(FORBIDDEN_KEYS, key)) return inner;
    return [{ ...pos((pair.key as Node | null)?.range?.[0]), path: formatPath([...at, key]), message: FORBIDDEN_KEYS[key] as string }, ...inner];
  });
}

/** The first line of a YAML error; a duplicate key is named (yaml says only "Map keys must be unique", at the offset of the repeated key). */
export function yamlErrorMessage(doc: Document, error: YAMLError): string {
  const message = error.message.split("\n")[0] ?? error.message;
  if (error.code !== "DUPLICATE_KEY") return message;
  let key: unknown;
  visit(doc, {
    Pair(_key, pair) {
      if (isScalar(pair.key) && pair.key.range?.[0] === error.pos[0]) {
        key = pair.key.value;
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return key === undefined ? message : `duplicate key ${describeKey(key)}: map keys must be unique`;
}

/** `'version'`, or the bounded description of a key that is not a plain string. */
const describeKey = (key: unknown): string =>
  typeof key === "string" && key.length <= 40 && /^[\x20-\x7e]*$/.test(key) && !key.includes("'") ? `'${key}'` : describeValue(key);

/** Offset of the first alias (`*name`) of a document, where an alias bomb starts expanding. */
function firstAliasOffset(doc: Document): number | undefined {
  let offset: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      offset = node.range?.[0];
      return visit.BREAK;
    },
  });
  return offset;
}

/** Offset of the value at `segments`, or of its closest existing ancestor. */
function nodeOffset(doc: Document, segments: readonly PropertyKey[]): number | undefined {
  for (let n = segments.length; n >= 0; n--) {
    const node = doc.getIn(segments.slice(0, n) as unknown[], true) as Node | undefined;
    if (node?.range) return node.range[0];
  }
  return undefined;
}

/** Offset of the key `segments[last]` in its map (for unknown keys). */
function keyOffset(doc: Document, segments: readonly PropertyKey[]): number | undefined {
  const parent = doc.getIn(segments.slice(0, -1) as unknown[], true);
  const key = segments[segments.length - 1];
  const pair = isMap(parent) ? parent.items.find((p) => isScalar(p.key) && p.key.value === key) : undefined;
  return pair ? (pair.key as Node).range?.[0] : nodeOffset(doc, segments.slice(0, -1));
}
