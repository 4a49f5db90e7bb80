import { UserError } from "../src/core/errors";
import { access } from "./commands/access";
import { check } from "./commands/check";
import { drift } from "./commands/drift";
import { portalCommand } from "./commands/portal";
import { probe } from "./commands/probe";
import { renderCommand } from "./commands/render";
import { status } from "./commands/status";
import { type Command, type CommandContext, findProjectDir } from "./context";
import { EXIT } from "./exit";

/** Every subcommand; each module documents its own flags. */
export const COMMANDS: Record<string, { run: Command; summary: string }> = {
  access: { run: access, summary: "developer access: URLs, credentials on one screen, .env.cluster.local, SSH forwards (--forward/--stop)" },
  check: { run: check, summary: "validate a contract offline (exit 0, or 2 with every problem)" },
  drift: { run: drift, summary: "pulumi preview --expect-no-changes + cluster-wide audit of NodePort/LoadBalancer/hostPort exposure (exit 3 on drift)" },
  portal: { run: portalCommand, summary: "serve the live portal page (URLs + MATCH/DRIFT) on this machine, until Ctrl-C" },
  probe: { run: probe, summary: "HTTP(S) GET every published URL with the contract's expectations (exit 4 if one fails)" },
  render: { run: renderCommand, summary: "show what a stack would create, offline, from a cluster snapshot" },
  status: { run: status, summary: "live verdict per entry: MATCH, DRIFT (with the reason) or ABSENT (exit 3 unless all MATCH)" },
};

export function helpText(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  return [
    "usage: exposure <command> [options]",
    "",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    "",
    "exit codes: 0 ok, 1 error, 2 invalid contract or usage, 3 drift/absent, 4 unreachable URL",
  ].join("\n");
}

export async function main(argv: string[], ctx: Partial<CommandContext> = {}): Promise<number> {
  const context: CommandContext = {
    projectDir: ctx.projectDir ?? findProjectDir(),
    stdout: ctx.stdout ?? ((t) => process.stdout.write(`${t}\n`)),
    stderr: ctx.stderr ?? ((t) => process.stderr.write(`${t}\n`)),
    env: ctx.env ?? process.env,
  };
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help" || name === "-h") {
    context.stdout(helpText());
    return name ? EXIT.OK : EXIT.INVALID;
  }
  const command = COMMANDS[name];
  if (!command) {
    context.stderr(`exposure: unknown command '${name}'\n${helpText()}`);
    return EXIT.INVALID;
  }
  try {
    return await command.run(rest, context);
  } catch (err) {
    if (err instanceof UserError) {
      context.stderr(`exposure ${name}: ${err.message}`);
      return err.exitCode;
    }
    // A bug, not a user error: keep the stack trace.
    context.stderr(`exposure ${name}: internal error: ${(err as Error).stack ?? String(err)}`);
    return EXIT.ERROR;
  }
}
