/** Exit codes shared by every `exposure` command (documented in the README). */
export const EXIT = {
  OK: 0,
  /** Operational error: unreachable cluster, missing stack, bad flags... */
  ERROR: 1,
  /** The contract is invalid (also: bad usage of `check`). */
  INVALID: 2,
  /** The cluster differs from the contract/stack: DRIFT or ABSENT (status, drift). */
  DRIFT: 3,
  /** At least one URL did not answer as expected (probe). */
  UNREACHABLE: 4,
} as const;
