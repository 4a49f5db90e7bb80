// Values given on the command line, checked before anything uses them (pure: the commands
// call these whatever parses their flags).
import { UserError } from "./errors";
import { EXIT } from "./findings";

/**
 * A stack name as Pulumi allows it (letters, digits, `-`, `_`, `.`; at most 100 characters),
 * and never `.`/`..`: it names `Pulumi.<stack>.yaml` and the SSH forwards' state folder, so a
 * path (`/../../x`) would read or write elsewhere.
 */
const STACK_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/** Whether `name` is a stack name (the rule --stack applies); completion lists only these. */
export function isStackName(name: string): boolean {
  return STACK_NAME.test(name) && !/^\.+$/.test(name);
}

export function checkStackName(name: string): string {
  if (!isStackName(name)) {
    throw new UserError(
      `--stack must be a stack name (letters, digits, '-', '_', '.', at most 100 characters, e.g. bench), not ${JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}...` : name)}`,
      EXIT.INVALID,
    );
  }
  return name;
}

/** Longest wait a command accepts per call or per URL: beyond it a timer would overflow (2^31 ms) long before anyone waits. */
const MAX_TIMEOUT_SECONDS = 600;
/** Shortest: below it no API server nor UI can answer. */
const MIN_TIMEOUT_SECONDS = 0.1;

const DECIMAL = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A number of seconds from a flag, in milliseconds, within [MIN, MAX]; a UserError (exit 2) otherwise. */
export function parseTimeoutSeconds(value: string, flag: string): number {
  // Decimal only: Number() would also read "0x10" as 16 and "0b1" as 1.
  const seconds = DECIMAL.test(value) ? Number(value) : Number.NaN;
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UserError(`${flag} must be a positive number of seconds, not '${value}'`, EXIT.INVALID);
  }
  if (seconds > MAX_TIMEOUT_SECONDS) throw new UserError(`${flag} must be at most ${MAX_TIMEOUT_SECONDS} seconds, not '${value}'`, EXIT.INVALID);
  if (seconds < MIN_TIMEOUT_SECONDS) throw new UserError(`${flag} must be at least ${MIN_TIMEOUT_SECONDS} seconds, not '${value}'`, EXIT.INVALID);
  return Math.round(seconds * 1000);
}
