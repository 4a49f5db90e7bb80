import { EXIT, type ExitCode } from "./findings";

const USER_ERROR = Symbol.for("ui-exposure.UserError");

/** A problem the operator can fix: the CLI prints `message` alone; the program shows it without a stack trace (asRunError). */
export class UserError extends Error {
  /** The same mark on every copy of this class: each command's bundle has its own (scripts/build.cjs). */
  readonly [USER_ERROR] = true;

  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.ERROR,
  ) {
    super(message);
    this.name = "UserError";
  }
}

/** Whether `err` is a UserError from any bundle (what reaches cli/main.ts from a command's bundle is not of main's class). */
export function isUserError(err: unknown): err is UserError {
  return typeof err === "object" && err !== null && (err as { [USER_ERROR]?: unknown })[USER_ERROR] === true;
}

/** Several independent problems, reported together so one run shows them all. */
export function userErrorFromProblems(header: string, problems: readonly string[]): UserError {
  if (problems.length === 1) return new UserError(`${header}: ${problems[0]}`);
  return new UserError(`${header} (${problems.length} problems):\n${problems.map((p) => `  - ${p}`).join("\n")}`);
}

/** `text` parsed as JSON, or a UserError saying `message` (never the text: it may hold secrets). */
export function parseJson(text: string, message: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UserError(message);
  }
}
