// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell scripts, ${...} is shell syntax
import * as fs from "node:fs";
import { EXIT } from "../../src/core/findings";
import { isStackName } from "../../src/core/inputs";
import { printableValue } from "../../src/core/text";
import type { Command } from "../context";
import { type CommandSpec, type Completion, HELP_FLAG, usageError } from "../flags";
import { COMMAND_NAMES, SPECS } from "../specs";

const SPEC = SPECS.completion;

/** `exposure completion bash|zsh`: a script generated from the flag tables; `--list stacks|entries`: what it runs for the project's names. */
export const command: Command<"completion"> = async ({ values, positionals }, ctx) => {
  if (values.list !== undefined) {
    if (positionals.length) throw usageError(SPEC, "--list takes no shell");
    if (values.list === "stacks") for (const name of stackNames(ctx.projectDir)) ctx.stdout(name);
    else if (values.list === "entries") for (const name of await entryNames(ctx.projectDir)) ctx.stdout(name);
    else throw usageError(SPEC, `--list must be stacks or entries, not '${printableValue(String(values.list))}'`);
    return EXIT.OK;
  }
  const shell = positionals[0];
  if (positionals.length > 1) throw usageError(SPEC, `one shell only, not '${printableValue(positionals.join(" "))}'`);
  if (shell === undefined) throw usageError(SPEC, "name the shell: bash or zsh");
  if (shell !== "bash" && shell !== "zsh") throw usageError(SPEC, `no completion for '${printableValue(shell)}': bash or zsh`);
  ctx.stdout(shell === "bash" ? bashScript() : zshScript());
  return EXIT.OK;
};

/** Each Pulumi.<name>.yaml whose name --stack accepts: no shell ever sees `Pulumi.$(touch X).yaml` as a word. */
export function stackNames(projectDir: string): string[] {
  try {
    return fs
      .readdirSync(projectDir)
      .map((f) => /^Pulumi\.(.+)\.ya?ml$/.exec(f)?.[1])
      .filter((s): s is string => s !== undefined && isStackName(s))
      .sort();
  } catch {
    return [];
  }
}

/** The exposed entries of the project's contract (the only ones --entry takes); none when it is unusable. */
export async function entryNames(projectDir: string): Promise<string[]> {
  // The contract reader (yaml, zod) loads only here: printing a script must stay instant.
  const { defaultContractPath, loadContractFile } = await import("../../src/adapters/contract-file.js");
  try {
    return loadContractFile(defaultContractPath(projectDir))
      .endpoints.filter((e) => e.exposed && SAFE_WORD.test(e.name))
      .map((e) => e.name);
  } catch {
    return [];
  }
}

/** What a completion word may hold: nothing a shell would expand, quote or split. */
const SAFE_WORD = /^[A-Za-z0-9_.|-]+$/;

/** Words written into a script: ours, checked anyway (compgen -W expands its list again). */
function literal(words: readonly string[]): string {
  for (const w of words) if (!SAFE_WORD.test(w)) throw new Error(`completion word ${JSON.stringify(w)} is not a plain word`);
  return words.join(" ");
}

/** One `case` branch per command: the value after a flag that takes one, the positional, else its flags. */
function commandCases(shell: typeof BASH): string[] {
  const reply = (complete: Completion | "none") => (typeof complete === "string" ? shell[complete] : shell.offer(complete));
  return COMMAND_NAMES.flatMap((name) => {
    const spec: CommandSpec = SPECS[name];
    const flags = Object.entries(spec.flags).map(([flag, f]) => ({ f, words: [`--${flag}`, ...(f.short ? [`-${f.short}`] : [])] }));
    const positional = spec.positional?.complete;
    return [
      `    ${name})`,
      '      case "$prev" in',
      ...flags.filter(({ f }) => f.type === "string").map(({ f, words }) => `        ${words.join("|")}) ${reply(f.complete ?? "none")}; return ;;`),
      "      esac",
      ...(positional ? [`      if ${shell.notFlag}; then ${reply(positional)}; return; fi`] : []),
      `      ${shell.offer([...flags.flatMap(({ words }) => words), "--help", `-${HELP_FLAG.short}`])}`,
      "      ;;",
    ];
  });
}

const FIRST_WORDS = [...COMMAND_NAMES, "help", "version", "--help", "--version"];

/** How a shell offers words, what it runs to complete each kind of value, and its test that a word is no flag. */
const BASH = {
  offer: (words: readonly string[]) => `COMPREPLY=($(compgen -W "${literal(words)}" -- "$cur"))`,
  none: "COMPREPLY=()",
  file: '_exposure_lines < <(compgen -f -- "$cur")',
  stack: "_exposure_words < <(_exposure_run completion --list stacks)",
  entry: "_exposure_words < <(_exposure_run completion --list entries)",
  notFlag: '[[ "$cur" != -* ]]',
};

/** For `exposure` and `npx exposure`. Project names never reach `compgen -W`, which expands its words again (a `$(...)` would run). */
export function bashScript(): string {
  return [
    "# bash completion for exposure: source <(exposure completion bash) (or npx exposure completion bash)",
    "_exposure_words() {",
    "  local w",
    "  COMPREPLY=()",
    '  while IFS= read -r w; do [[ $w =~ ^[A-Za-z0-9_.-]+$ && $w == "$cur"* ]] && COMPREPLY+=("$w"); done',
    "}",
    "_exposure_lines() {",
    "  local w",
    "  COMPREPLY=()",
    '  while IFS= read -r w; do COMPREPLY+=("$w"); done',
    "}",
    '_exposure_run() { "${_exposure_cmd[@]}" "$@" 2>/dev/null; }',
    "_exposure_complete() {",
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="${COMP_WORDS[1]}"',
    '  if [ "$COMP_CWORD" -eq 1 ]; then',
    `    ${BASH.offer(FIRST_WORDS)}`,
    "    return",
    "  fi",
    '  case "$cmd" in',
    `    help) [ "$COMP_CWORD" -eq 2 ] && ${BASH.offer(COMMAND_NAMES)}; return ;;`,
    ...commandCases(BASH),
    "  esac",
    "}",
    // `exposure` itself when it is a program (PATH, a path); an alias of `npx exposure` is not one.
    '_exposure() { local -a _exposure_cmd=("${COMP_WORDS[0]}"); type -P "${COMP_WORDS[0]}" >/dev/null || _exposure_cmd=(npx --no-install exposure); _exposure_complete; }',
    // `npx exposure ...`: the same, one word later; other npx commands complete file names.
    "_exposure_npx() {",
    "  COMPREPLY=()",
    '  if [ "$COMP_CWORD" -eq 1 ]; then [[ exposure == "${COMP_WORDS[1]}"* ]] && COMPREPLY=(exposure); return; fi',
    '  [ "${COMP_WORDS[1]}" = exposure ] || return 0',
    "  local -a _exposure_cmd=(npx --no-install exposure)",
    '  COMP_WORDS=("${COMP_WORDS[@]:1}")',
    "  COMP_CWORD=$((COMP_CWORD - 1))",
    "  _exposure_complete",
    "}",
    "complete -o default -F _exposure exposure",
    "complete -o default -F _exposure_npx npx",
  ].join("\n");
}

const ZSH: typeof BASH = {
  offer: (words) => `compadd -- ${literal(words)}`,
  none: "_message 'value'",
  file: "_files",
  // zsh does not expand the words of ${(f)...} again, and compadd quotes what it inserts.
  stack: 'compadd -- ${(f)"$(_exposure_run completion --list stacks)"}',
  entry: 'compadd -- ${(f)"$(_exposure_run completion --list entries)"}',
  notFlag: "[[ $PREFIX != -* ]]",
};

export function zshScript(): string {
  return [
    "#compdef exposure npx",
    "# zsh completion for exposure: source <(exposure completion zsh) after compinit, or save as _exposure on $fpath",
    // `exposure` when it is a program; through npx (or an alias of `npx exposure`) otherwise.
    "_exposure_run() {",
    '  if [[ -z $_exposure_via_npx ]] && whence -p ${words[1]} >/dev/null; then ${words[1]} "$@" 2>/dev/null',
    '  else npx --no-install exposure "$@" 2>/dev/null; fi',
    "}",
    "_exposure_npx() {",
    "  if (( CURRENT == 2 )); then compadd exposure; return; fi",
    "  [[ ${words[2]} == exposure ]] || { _files; return; }",
    "  local _exposure_via_npx=1",
    "  shift words; (( CURRENT-- ))",
    "  _exposure",
    "}",
    "_exposure() {",
    "  local cmd=${words[2]} prev=${words[CURRENT-1]}",
    "  if (( CURRENT == 2 )); then",
    `    ${ZSH.offer(FIRST_WORDS)}`,
    "    return",
    "  fi",
    '  case "$cmd" in',
    `    help) (( CURRENT == 3 )) && ${ZSH.offer(COMMAND_NAMES)}; return ;;`,
    ...commandCases(ZSH),
    "  esac",
    "}",
    // Autoloaded from $fpath, the file's body is the function; sourced, it registers itself.
    'if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then if [[ $service == npx ]]; then _exposure_npx; else _exposure "$@"; fi',
    "else compdef _exposure exposure; compdef _exposure_npx npx; fi",
  ].join("\n");
}
