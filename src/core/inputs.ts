// Values given on the command line, checked before anything uses them (pure: the commands call these whatever parses their flags).
import { UserError } from "./errors";
import { EXIT, type ExitCode } from "./findings";
import { printableValue } from "./text";

/** A stack name as Pulumi allows it, never `.`/`..`: it names `Pulumi.<stack>.yaml` and the SSH forwards' state folder, so a path would reach elsewhere. */
const STACK_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/** Whether `name` is a stack name (the rule --stack applies); completion lists only these. */
export const isStackName = (name: string): boolean => STACK_NAME.test(name) && !/^\.+$/.test(name);

export function checkStackName(name: string): string {
  if (!isStackName(name)) {
    throw new UserError(
      `--stack must be a stack name (letters, digits, '-', '_', '.', at most 100 characters, e.g. bench), not ${JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}...` : name)}`,
      EXIT.INVALID,
    );
  }
  return name;
}

/** A Lima instance name: it names `$LIMA_HOME/<instance>`, whose ssh.config goes to `ssh -F` (`../../x` would run any folder's ProxyCommand). */
const LIMA_INSTANCE = /^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$/;
export const LIMA_INSTANCE_MAX = 76;

export const isLimaInstanceName = (name: string): boolean => name.length <= LIMA_INSTANCE_MAX && LIMA_INSTANCE.test(name);

/** `name` if it is a Lima instance name, else a UserError naming where it came from (`from`). */
export function checkLimaInstanceName(name: string, from: string, exitCode: ExitCode = EXIT.INVALID): string {
  if (!isLimaInstanceName(name)) {
    const shown = printableValue(name.length > 60 ? `${name.slice(0, 60)}...` : name);
    throw new UserError(
      `${from} must be a Lima instance name (letters and digits, with '.', '_' or '-' between them, at most ${LIMA_INSTANCE_MAX} characters, as limactl accepts), not '${shown}'`,
      exitCode,
    );
  }
  return name;
}

/** Longest wait a command accepts per call or per URL, 10 minutes: a longer one is a mistake (milliseconds typed as seconds), not a wait. */
const MAX_TIMEOUT_SECONDS = 600;
/** Shortest: below it no API server nor UI can answer. */
const MIN_TIMEOUT_SECONDS = 0.1;

const DECIMAL = /^(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A number written in decimal (flags, environment settings); NaN otherwise: Number() would also read "0x10" as 16, "0b1" as 1 and " 5" as 5. */
export const decimalNumber = (value: string): number => (DECIMAL.test(value) ? Number(value) : Number.NaN);

/** A number of seconds from a flag, in milliseconds, within [MIN, MAX]; a UserError (exit 2) otherwise. */
export function parseTimeoutSeconds(value: string, flag: string): number {
  const seconds = decimalNumber(value);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UserError(`${flag} must be a positive number of seconds, not '${value}'`, EXIT.INVALID);
  if (seconds > MAX_TIMEOUT_SECONDS) throw new UserError(`${flag} must be at most ${MAX_TIMEOUT_SECONDS} seconds, not '${value}'`, EXIT.INVALID);
  if (seconds < MIN_TIMEOUT_SECONDS) throw new UserError(`${flag} must be at least ${MIN_TIMEOUT_SECONDS} seconds, not '${value}'`, EXIT.INVALID);
  return Math.round(seconds * 1000);
}
