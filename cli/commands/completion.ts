// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell scripts, ${...} is shell syntax
import * as fs from "node:fs";
import { printableValue } from "../../src/core/text";
import type { Command } from "../context";
import { EXIT } from "../exit";
import { type CommandSpec, type Completion, HELP_FLAG, parseCommandLine, usageError } from "../flags";
import { COMMAND_NAMES, SPECS } from "../specs";

const SPEC = SPECS.completion;

/**
 * `exposure completion bash|zsh` prints a script generated from the flag tables (so it
 * completes exactly the flags the parser accepts); `--list stacks|entries` is what the
 * script runs to complete names that depend on the project.
 */
export const completion: Command = async (argv, ctx) => {
  const { values, positionals } = parseCommandLine(SPEC, argv);
  if (values.list !== undefined) {
    if (positionals.length) throw usageError(SPEC, "--list takes no shell");
    if (values.list === "stacks") for (const name of stackNames(ctx.projectDir)) ctx.stdout(name);
    else if (values.list === "entries") for (const name of await entryNames(ctx.projectDir)) ctx.stdout(name);
    else throw usageError(SPEC, `--list must be stacks or entries, not '${printableValue(String(values.list))}'`);
    return EXIT.OK;
  }
  const shell = positionals[0];
  if (positionals.length !== 1 || (shell !== "bash" && shell !== "zsh")) throw usageError(SPEC, "name the shell: bash or zsh");
  ctx.stdout(shell === "bash" ? bashScript() : zshScript());
  return EXIT.OK;
};

/** Stacks of the project: the `<name>` of every Pulumi.<name>.yaml. */
export function stackNames(projectDir: string): string[] {
  let files: string[];
  try {
    files = fs.readdirSync(projectDir);
  } catch {
    return [];
  }
  return files
    .map((f) => /^Pulumi\.(.+)\.ya?ml$/.exec(f)?.[1])
    .filter((s): s is string => s !== undefined)
    .sort();
}

/**
 * The exposed entries of the project's contract (only those can be published, so only those are
 * worth offering after --entry); none when it is missing or invalid (completion must stay quiet).
 */
export async function entryNames(projectDir: string): Promise<string[]> {
  // The contract reader (yaml, zod) loads only here: printing a script must stay instant.
  const { defaultContractPath, loadContractFile } = await import("../../src/adapters/contract-file.js");
  try {
    return loadContractFile(defaultContractPath(projectDir))
      .endpoints.filter((e) => e.exposed)
      .map((e) => e.name);
  } catch {
    return [];
  }
}

/** Every word a flag of this command may be written as. */
function flagWords(spec: CommandSpec): string[] {
  const words = Object.entries(spec.flags).flatMap(([name, f]) => [`--${name}`, ...(f.short ? [`-${f.short}`] : [])]);
  return [...words, "--help", `-${HELP_FLAG.short}`];
}

/** Flags that take a value, grouped by what completes it. */
function valueFlags(spec: CommandSpec): { words: string[]; complete: Completion | "none" }[] {
  return Object.entries(spec.flags)
    .filter(([, f]) => f.type === "string")
    .map(([name, f]) => ({ words: [`--${name}`, ...(f.short ? [`-${f.short}`] : [])], complete: f.complete ?? "none" }));
}

function bashReply(complete: Completion | "none"): string {
  if (complete === "none") return "COMPREPLY=()";
  if (complete === "file") return 'COMPREPLY=($(compgen -f -- "$cur"))';
  if (complete === "stack") return 'COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion --list stacks 2>/dev/null)" -- "$cur"))';
  if (complete === "entry") return 'COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" completion --list entries 2>/dev/null)" -- "$cur"))';
  return `COMPREPLY=($(compgen -W "${complete.join(" ")}" -- "$cur"))`;
}

export function bashScript(): string {
  const lines = [
    "# bash completion for exposure: source <(exposure completion bash)",
    "_exposure() {",
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="${COMP_WORDS[1]}"',
    '  if [ "$COMP_CWORD" -eq 1 ]; then',
    `    COMPREPLY=($(compgen -W "${[...COMMAND_NAMES, "help", "--help", "--version"].join(" ")}" -- "$cur"))`,
    "    return",
    "  fi",
    '  case "$cmd" in',
    `    help) [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "${COMMAND_NAMES.join(" ")}" -- "$cur")); return ;;`,
  ];
  for (const name of COMMAND_NAMES) {
    const spec: CommandSpec = SPECS[name];
    lines.push(`    ${name})`, '      case "$prev" in');
    for (const { words, complete } of valueFlags(spec)) lines.push(`        ${words.join("|")}) ${bashReply(complete)}; return ;;`);
    lines.push("      esac");
    const positional = spec.positional?.complete;
    if (positional) {
      lines.push(`      if [[ "$cur" != -* ]]; then ${bashReply(positional)}; return; fi`);
    }
    lines.push(`      COMPREPLY=($(compgen -W "${flagWords(spec).join(" ")}" -- "$cur"))`, "      ;;");
  }
  lines.push("  esac", "}", "complete -o default -F _exposure exposure");
  return lines.join("\n");
}

function zshReply(complete: Completion | "none"): string {
  if (complete === "none") return "_message 'value'";
  if (complete === "file") return "_files";
  if (complete === "stack") return 'compadd -- ${(f)"$(${words[1]} completion --list stacks 2>/dev/null)"}';
  if (complete === "entry") return 'compadd -- ${(f)"$(${words[1]} completion --list entries 2>/dev/null)"}';
  return `compadd -- ${complete.join(" ")}`;
}

export function zshScript(): string {
  const lines = [
    "#compdef exposure",
    "# zsh completion for exposure: source <(exposure completion zsh) after compinit, or save as _exposure on $fpath",
    "_exposure() {",
    "  local cmd=${words[2]} prev=${words[CURRENT-1]}",
    "  if (( CURRENT == 2 )); then",
    `    compadd -- ${[...COMMAND_NAMES, "help", "--help", "--version"].join(" ")}`,
    "    return",
    "  fi",
    '  case "$cmd" in',
    `    help) (( CURRENT == 3 )) && compadd -- ${COMMAND_NAMES.join(" ")}; return ;;`,
  ];
  for (const name of COMMAND_NAMES) {
    const spec: CommandSpec = SPECS[name];
    lines.push(`    ${name})`, '      case "$prev" in');
    for (const { words, complete } of valueFlags(spec)) lines.push(`        ${words.join("|")}) ${zshReply(complete)}; return ;;`);
    lines.push("      esac");
    const positional = spec.positional?.complete;
    if (positional) lines.push(`      if [[ $PREFIX != -* ]]; then ${zshReply(positional)}; return; fi`);
    lines.push(`      compadd -- ${flagWords(spec).join(" ")}`, "      ;;");
  }
  lines.push(
    "  esac",
    "}",
    // Autoloaded from $fpath, the file's body is the function; sourced, it registers itself.
    'if [[ "${zsh_eval_context[-1]}" == loadautofunc ]]; then _exposure "$@"; else compdef _exposure exposure; fi',
  );
  return lines.join("\n");
}
