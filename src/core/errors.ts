import { EXIT, type ExitCode } from "./findings";

/**
 * A problem the operator can fix (bad contract, missing Service, wrong stack config,
 * unreachable cluster). The CLI prints `message` alone and exits non-zero; the Pulumi
 * program turns it into a RunError so the engine shows it without a stack trace.
 */
export class UserError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.ERROR,
  ) {
    super(message);
    this.name = "UserError";
  }
}

/** Several independent problems, reported together so one run shows them all. */
export function userErrorFromProblems(header: string, problems: readonly string[], exitCode: ExitCode = EXIT.ERROR): UserError {
  if (problems.length === 1) return new UserError(`${header}: ${problems[0]}`, exitCode);
  return new UserError(`${header} (${problems.length} problems):\n${problems.map((p) => `  - ${p}`).join("\n")}`, exitCode);
}
