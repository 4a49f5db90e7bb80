// A command's flag table becomes both its parser and its help: `--help` never lists a flag the parser refuses, or misses one.
import { parseArgs } from "node:util";
import { UserError } from "../src/core/errors";
import { EXIT } from "../src/core/findings";
import { checkStackName } from "../src/core/inputs";
import { printableValue } from "../src/core/text";

/** What the shell completes after a flag: a stack name, a contract entry, a file, or fixed words. */
export type Completion = "stack" | "entry" | "file" | readonly string[];

export interface FlagSpec {
  type: "string" | "boolean";
  short?: string;
  /** Placeholder shown in help for a string flag (NAME, FILE, SECONDS). */
  value?: string;
  description: string;
  /** Shown in help; also the parsed value when the flag is absent (string flags). */
  default?: string;
  complete?: Completion;
  /** A string flag that may be given several times; its value is the list, in order (empty when absent). */
  multiple?: boolean;
}

export interface CommandSpec {
  name: string;
  /** Bundled with what it loads (scripts/build.cjs), for start-up; not where modules find files next to them or load the Pulumi SDK. */
  bundle?: boolean;
  /** Ends within about a second: bin/exposure.cjs turns V8's optimising compiler off, which would cost more CPU than it saves. */
  brief?: boolean;
  /** One line, in the command list of `exposure --help`. */
  summary: string;
  /** The usage line after `exposure <name> `: must mention every flag (a test checks it). */
  synopsis: string;
  /** Paragraphs of `exposure <name> --help`. */
  description: readonly string[];
  positional?: { name: string; description: string; complete?: Completion };
  flags: Readonly<Record<string, FlagSpec>>;
  /** The exit codes of this command, one line. */
  exits: string;
}

/** Every command accepts these; they are answered before the command's module is loaded. */
export const HELP_FLAG: FlagSpec = { type: "boolean", short: "h", description: "show this help and exit" };

type FlagValues<F extends Readonly<Record<string, FlagSpec>>> = {
  -readonly [K in keyof F]: F[K]["type"] extends "boolean"
    ? boolean
    : F[K] extends { multiple: true }
      ? string[]
      : F[K] extends { default: string }
        ? string
        : string | undefined;
};

export type Usage = Pick<CommandSpec, "name" | "synopsis">;

/** `usage: exposure <command> <synopsis>`, without a trailing space for a command that takes nothing. */
const usageLine = (spec: Usage) => `usage: exposure ${spec.name} ${spec.synopsis}`.trimEnd();

/** The usage error every command gives: the problem, the usage line, where the full help is. */
export function usageError(spec: Usage, message: string): UserError {
  return new UserError(`${message}\n${usageLine(spec)}\n(\`exposure ${spec.name} --help\` describes every flag)`, EXIT.INVALID);
}

/** What `read` returns; what it throws becomes a usage error of the command. */
export function usageOf<T>(spec: Usage, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw usageError(spec, (err as Error).message);
  }
}

export type CommandArgs<S extends CommandSpec> = { values: FlagValues<S["flags"]>; positionals: string[] };

/** Parses `argv` against the command's flag table; unknown or malformed flags are usage errors (exit 2). */
export function parseCommandLine<S extends CommandSpec>(spec: S, argv: readonly string[]): CommandArgs<S> {
  for (const arg of flagArgs(argv)) {
    const unknown = unknownFlag(spec, arg);
    if (unknown) throw usageError(spec, unknown);
  }
  const options = Object.fromEntries(
    Object.entries(spec.flags).map(([name, { type, short, multiple, default: fallback }]) => {
      // What parseArgs gives for an absent flag: false, an empty list, or the table's default.
      const absent = type === "boolean" ? false : multiple ? [] : fallback;
      return [name, { type, ...(short ? { short } : {}), ...(multiple ? { multiple } : {}), ...(absent !== undefined ? { default: absent } : {}) }];
    }),
  );
  const parsed = usageOf(spec, () => parseArgs({ args: [...argv], options, allowPositionals: true, strict: true, tokens: true }));
  // parseArgs keeps the last of a repeated single-value flag: `--stack a --stack b` would silently mean b.
  const seen = new Map<string, string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || spec.flags[token.name]?.type !== "string" || spec.flags[token.name]?.multiple) continue;
    const earlier = seen.get(token.name);
    if (earlier !== undefined) {
      throw usageError(spec, `--${token.name} given twice ('${printableValue(earlier)}', then '${printableValue(token.value ?? "")}'): give it once`);
    }
    seen.set(token.name, token.value ?? "");
  }
  if (spec.positional === undefined && parsed.positionals.length)
    throw usageError(spec, `unexpected argument '${printableValue(parsed.positionals[0] ?? "")}'`);
  // A flag that names a stack (`--stack`) takes only a stack name: a path is a usage error.
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (flag.complete === "stack") for (const v of [parsed.values[name]].flat()) if (typeof v === "string") usageOf(spec, () => checkStackName(v));
  }
  return { values: parsed.values as FlagValues<S["flags"]>, positionals: parsed.positionals };
}

/** Why `arg` is not a flag of this command (with the closest one), or undefined. */
function unknownFlag(spec: CommandSpec, arg: string): string | undefined {
  // kubectl's `-o json` / `--output json`: this project spells it --json.
  const jsonHint = Object.hasOwn(spec.flags, "json") ? ": for JSON output, use --json" : "";
  if (arg.startsWith("--")) {
    const name = arg.slice(2).split("=")[0] ?? "";
    if (name === "" || Object.hasOwn(spec.flags, name)) return undefined;
    if (name === "output" && jsonHint) return `unknown flag '--output'${jsonHint}`;
    const guess = closest(name, Object.keys(spec.flags));
    return `unknown flag '--${printableValue(name)}'${guess ? `: did you mean '--${guess}'?` : ""}`;
  }
  if (/^-[^-]/.test(arg)) {
    // A group of short flags (-sx) or one with its value attached (-sbench): check the first letter.
    const letter = arg[1];
    if (Object.values(spec.flags).some((f) => f.short === letter)) return undefined;
    return `unknown flag '-${letter}'${letter === "o" ? jsonHint : ""}`;
  }
  return undefined;
}

/** The candidate nearest to `word` (edit distance, or a prefix), if it is near enough to be a typo. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    // The same letters in another case (ARGOCD, Grafana) is the closest guess there is.
    if (candidate.toLowerCase() === word.toLowerCase()) return candidate;
    const distance = candidate.startsWith(word) && word.length >= 2 ? 1 : editDistance(word, candidate);
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best && best.distance <= Math.max(1, Math.floor(Math.min(word.length, best.candidate.length) / 3)) ? best.candidate : undefined;
}

/** Levenshtein distance with adjacent transpositions counted as one edit. */
export function editDistance(a: string, b: string): number {
  // d[i][j]: the distance between the first i letters of a and the first j of b.
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number) => d[i]?.[j] ?? 0;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const swapped = i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1] ? at(i - 2, j - 2) + 1 : Number.POSITIVE_INFINITY;
      (d[i] as number[])[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1), swapped);
    }
  }
  return at(a.length, b.length);
}

/** The text of `exposure <name> --help`, from the same table the parser uses. */
export function commandHelp(spec: CommandSpec): string {
  const rows = [...Object.entries(spec.flags), ["help", HELP_FLAG] as const].map(([name, flag]): [string, string] => {
    const notes = [...(flag.multiple ? ["repeatable"] : []), ...(flag.default !== undefined ? [`default ${flag.default}`] : [])];
    const long = `--${name}${flag.type === "string" ? ` ${flag.value ?? "VALUE"}` : ""}`;
    return [flag.short ? `-${flag.short}, ${long}` : `    ${long}`, `${flag.description}${notes.length ? ` (${notes.join("; ")})` : ""}`];
  });
  if (spec.positional) rows.unshift([`    ${spec.positional.name}`, spec.positional.description]);
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    usageLine(spec),
    "",
    ...spec.description.flatMap((p) => [p, ""]),
    spec.positional ? "arguments and flags:" : "flags:",
    ...rows.map(([label, text]) => `  ${label.padEnd(width)}  ${text}`),
    "",
    `exit codes: ${spec.exits}`,
  ].join("\n");
}

/** The arguments that may be flags: those before any `--`. */
const flagArgs = (argv: readonly string[]) => (argv.includes("--") ? argv.slice(0, argv.indexOf("--")) : argv);

export const asksForHelp = (argv: readonly string[]): boolean => flagArgs(argv).some((arg) => arg === "--help" || arg === "-h");
