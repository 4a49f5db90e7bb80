import { isUserError, UserError } from "../src/core/errors";
import { EXIT, EXIT_MEANINGS } from "../src/core/findings";
import { printable, printableValue } from "../src/core/text";
import { type Command, type CommandContext, findProjectDir, packageVersion } from "./context";
import { asksForHelp, closest, commandHelp, parseCommandLine } from "./flags";
import { COMMAND_NAMES, type CommandName, SPECS } from "./specs";

export type Commands = { [N in CommandName]: Command<N> };

function helpText(): string {
  const width = Math.max(...COMMAND_NAMES.map((c) => c.length));
  return [
    "usage: exposure <command> [flags]",
    "",
    "commands:",
    ...COMMAND_NAMES.map((name) => `  ${name.padEnd(width)}  ${SPECS[name].summary}`),
    "",
    "`exposure <command> --help` (or `exposure help <command>`) describes every flag of a command.",
    "`exposure version` (or --version) prints the version. Every reporting command takes --json.",
    "",
    `exit codes: ${Object.entries(EXIT_MEANINGS)
      .map(([code, meaning]) => `${code} ${meaning}`)
      .join(", ")}`,
  ].join("\n");
}

const isCommand = (name: string): name is CommandName => Object.hasOwn(SPECS, name);

function unknownCommand(name: string): string {
  const guess = name.startsWith("-") ? undefined : closest(name, COMMAND_NAMES);
  return `exposure: unknown ${name.startsWith("-") ? "flag" : "command"} '${printableValue(name)}'${guess ? `: did you mean '${guess}'?` : ""}\n(\`exposure --help\` lists the commands)`;
}

/** The `exposure` command line; tests run commands built with a fake cluster (`commands`) through it. */
export async function main(argv: string[], ctx: Partial<CommandContext> = {}, commands: Partial<Commands> = {}): Promise<number> {
  const out = ctx.stdout ?? ((t: string) => process.stdout.write(`${t}\n`));
  const err = ctx.stderr ?? ((t: string) => process.stderr.write(`${t}\n`));
  const context: CommandContext = {
    projectDir: ctx.projectDir ?? findProjectDir(),
    // Text from the cluster may hold terminal escapes (OSC 52 clipboard writes): shown escaped, never acted on.
    stdout: (t) => out(printable(t)),
    stderr: (t) => err(printable(t)),
    env: ctx.env ?? process.env,
  };
  const [name, ...rest] = argv;
  if (name === undefined) {
    context.stderr(helpText());
    return EXIT.INVALID;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    if (rest.length) {
      context.stderr(`exposure version: takes nothing, not '${printableValue(rest.join(" "))}'\n(\`exposure --help\` lists the commands)`);
      return EXIT.INVALID;
    }
    context.stdout(`exposure ${packageVersion()}`);
    return EXIT.OK;
  }
  const command = name === "help" ? rest[0] : name;
  if (command === undefined || name === "--help" || name === "-h") {
    context.stdout(helpText());
    return EXIT.OK;
  }
  if (!isCommand(command)) {
    context.stderr(unknownCommand(command));
    return EXIT.INVALID;
  }
  if (name === "help" || asksForHelp(rest)) {
    context.stdout(commandHelp(SPECS[command]));
    return EXIT.OK;
  }
  try {
    // Flag mistakes are answered from the table, before the command's module is loaded.
    const args = parseCommandLine(SPECS[command], rest);
    // cli/commands/<name>.ts, loaded only when it runs: `--help` and `--version` load none, only `render` reaches the Pulumi SDK.
    const run: unknown = commands[command] ?? (await import(/* @vite-ignore */ `./commands/${command}.js`)).command;
    // A module that exports no command (an emptied file of dist/) is said, not run.
    if (typeof run !== "function") throw new UserError(`the ${command} command's module exports no command: run \`npm run build\``);
    return await (run as (a: typeof args, c: CommandContext) => Promise<number>)(args, context);
  } catch (err) {
    if (isUserError(err)) {
      context.stderr(`exposure ${command}: ${err.message}`);
      return err.exitCode;
    }
    // A bug, not a user error: keep the stack trace.
    context.stderr(`exposure ${command}: internal error: ${(err as Error).stack ?? String(err)}`);
    return EXIT.ERROR;
  }
}
