// Findings (a code scripts match on, a subject, a message for people) and EXIT, the one table of exit codes any command returns (an architecture test checks).

/** What a finding means for the exit code, from the most to the least severe. */
export type Severity = "error" | "invalid" | "drift" | "unreachable" | "warning" | "info";

export interface Finding {
  /** Stable, kebab-case, documented in docs/commands.md (e.g. `node-port-moved`). */
  code: string;
  severity: Severity;
  /** What it is about: an entry name, `namespace/name`, `file:line:col`, a setting. */
  subject: string;
  message: string;
}

/** A value, or the problems that prevented it. */
export type Result<T> = { ok: true; value: T } | { ok: false; problems: Finding[] };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const failed = <T = never>(problems: Finding[]): Result<T> => ({ ok: false, problems });

export const finding = (code: string, severity: Severity, subject: string, message: string): Finding => ({ code, severity, subject, message });

/** Exit codes shared by every `exposure` command (documented in README and docs/commands.md). */
export const EXIT = {
  OK: 0,
  /** Operational error: unreachable cluster, missing stack, bad input that is not the contract... */
  ERROR: 1,
  /** The contract is invalid, or the command line is. */
  INVALID: 2,
  /** The cluster differs from the contract/stack: DRIFT or ABSENT (status, drift). */
  DRIFT: 3,
  /** At least one URL did not answer as expected (probe). */
  UNREACHABLE: 4,
  /** Everything was shown, but at least one declared credential could not be read (access). */
  INCOMPLETE: 5,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** What each exit code means, in `exposure --help`. */
export const EXIT_MEANINGS: Readonly<Record<ExitCode, string>> = {
  0: "ok",
  1: "error",
  2: "invalid contract or usage",
  3: "drift/absent",
  4: "unreachable URL",
  5: "credential unreadable (access)",
};

/** Each severity's exit code, in precedence order: an error hides a drift, a drift an unreachable URL. */
const EXIT_OF: Record<Severity, ExitCode> = {
  error: EXIT.ERROR,
  invalid: EXIT.INVALID,
  drift: EXIT.DRIFT,
  unreachable: EXIT.UNREACHABLE,
  warning: EXIT.OK,
  info: EXIT.OK,
};

/** The exit code of a command that found these. */
export function exitCodeOf(findings: readonly Finding[]): ExitCode {
  for (const [severity, code] of Object.entries(EXIT_OF)) if (findings.some((f) => f.severity === severity)) return code;
  return EXIT.OK;
}

/** Version of every `--json` document (`apiVersion` field); bump on incompatible changes. */
export const JSON_API_VERSION = "ui-exposure.io/v1";
