import { type Document, isMap, isPair, isScalar, isSeq, LineCounter, type Node, parseDocument, visit } from "yaml";
import type * as z from "zod/mini";
import { UserError } from "../errors";
import { EXIT } from "../findings";
import { type Contract, contractSchema, FORBIDDEN_KEYS } from "./schema";

/** Aliases a YAML document may expand (an alias bomb expands billions); beyond it the file is refused. */
export const YAML_MAX_ALIASES = 100;
/** Most entries a contract may declare (the platform has about ten; beyond this it is not a contract). */
export const MAX_CONTRACT_ENTRIES = 1000;
/** Problems listed in one message; the rest are counted ("... and N more"). */
export const MAX_PROBLEMS_SHOWN = 50;

export interface ContractProblem {
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
    const shown = problems.slice(0, MAX_PROBLEMS_SHOWN).map((p) => formatProblem(file, p));
    if (problems.length > MAX_PROBLEMS_SHOWN) shown.push(`... and ${problems.length - MAX_PROBLEMS_SHOWN} more problems (fix these first)`);
    super(`invalid contract ${file} (${problems.length} ${problems.length === 1 ? "problem" : "problems"}):\n${shown.join("\n")}`, EXIT.INVALID);
    this.name = "ContractError";
  }
}

export function formatProblem(file: string, p: ContractProblem): string {
  return `${file}:${p.line}:${p.col}: ${p.path || "(document)"}: ${p.message}`;
}

export function formatPath(segments: readonly PropertyKey[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else out += out ? `.${String(s)}` : String(s);
  }
  return out;
}

/**
 * Parses and validates contract text. Every problem is collected (YAML syntax, forbidden
 * keys, schema) and reported at once with its position; nothing partial is returned.
 */
export function parseContract(text: string, file: string): Contract {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const pos = (offset: number | undefined) => {
    const { line, col } = lineCounter.linePos(offset ?? 0);
    return { line, col };
  };

  if (doc.errors.length > 0) {
    throw new ContractError(
      file,
      doc.errors.map((e) => ({ ...pos(e.pos[0]), path: "(yaml)", message: e.message.split("\n")[0] ?? e.message })),
    );
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

  const problems: ContractProblem[] = [...findForbiddenKeys(doc, pos)];
  const forbiddenPaths = new Set(problems.map((p) => p.path));

  // reportInput: a wrong type is told apart from a missing field by the value found.
  const result = contractSchema.safeParse(raw, { reportInput: true });
  if (!result.success) {
    for (const issue of result.error.issues) {
      const p = formatPath(issue.path);
      // A forbidden key is already reported with a better message than "unrecognized key".
      if (issue.code === "unrecognized_keys") {
        const keys = issue.keys.filter((k) => !forbiddenPaths.has(formatPath([...issue.path, k])));
        for (const k of keys) {
          problems.push({ ...pos(keyOffset(doc, [...issue.path, k])), path: formatPath([...issue.path, k]), message: `unknown key '${k}'` });
        }
        continue;
      }
      problems.push({ ...pos(nodeOffset(doc, issue.path)), path: p, message: describeIssue(issue) });
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
  if (type === "string") {
    const text = JSON.stringify((value as string).length > 40 ? `${(value as string).slice(0, 40)}...` : value);
    return `a string (${text})`;
  }
  if (type === "number" || type === "boolean" || type === "bigint") return `a ${type} (${String(value)})`;
  if (type === "object") return "a map";
  return withArticle(type);
}

/**
 * One line per zod issue saying what was expected and what was found. Needs a parse with
 * `reportInput: true`: without it zod 4 leaves `input` empty and every wrong type would read
 * as a missing field.
 */
export function describeZodIssue(issue: z.core.$ZodIssue, missing = "required field is missing"): string {
  if (issue.code === "invalid_type") {
    if (!("input" in issue) || issue.input === undefined) return missing;
    return `expected ${withArticle(issue.expected)}, found ${describeValue(issue.input)}`;
  }
  if (issue.code === "invalid_value" && (!("input" in issue) || issue.input === undefined)) return missing;
  if (issue.code === "invalid_value" && !/found/.test(issue.message)) {
    return `${issue.message}, found ${describeValue(issue.input)}`;
  }
  return issue.message;
}

function* findForbiddenKeys(doc: Document, pos: (offset: number | undefined) => { line: number; col: number }): Generator<ContractProblem> {
  function* walk(node: unknown, at: PropertyKey[]): Generator<ContractProblem> {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        const key = isScalar(pair.key) ? pair.key.value : pair.key;
        if (typeof key === "string" && Object.hasOwn(FORBIDDEN_KEYS, key)) {
          yield {
            ...pos((pair.key as Node | null)?.range?.[0]),
            path: formatPath([...at, key]),
            message: FORBIDDEN_KEYS[key] as string,
          };
        }
        yield* walk(pair.value, [...at, typeof key === "string" || typeof key === "number" ? key : String(key)]);
      }
    } else if (isSeq(node)) {
      for (let i = 0; i < node.items.length; i++) yield* walk(node.items[i], [...at, i]);
    }
  }
  yield* walk(doc.contents, []);
}

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
  if (isMap(parent)) {
    for (const pair of parent.items) {
      if (isPair(pair) && isScalar(pair.key) && pair.key.value === key) return pair.key.range?.[0];
    }
  }
  return nodeOffset(doc, segments.slice(0, -1));
}
