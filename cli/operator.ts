// Helpers shared by the operator commands (status, drift, probe, access): flag values,
// the cluster connection with a short timeout, and plain-text tables.
import { parseTimeoutSeconds } from "../src/core/inputs";
import type { ClusterReader } from "../src/core/kube/cluster";
import { type CommandSpec, usageError } from "./flags";
import { connectCluster, type OpenStack } from "./stack";

/**
 * Seconds an operator command waits for each API call. Short on purpose: these commands
 * are run by people at a terminal, and an unreachable cluster must say so in seconds.
 */
export const DEFAULT_CLUSTER_TIMEOUT_SECONDS = 5;

/** Opens the stack's cluster; tests replace it with an in-memory or snapshot reader. */
export type ConnectCluster = (opened: OpenStack, timeoutMs: number) => Promise<ClusterReader>;
export const connectLiveCluster: ConnectCluster = (opened, timeoutMs) => connectCluster(opened, timeoutMs);

/** A positive number of seconds from a flag, in milliseconds. */
export function secondsFlag(value: string | undefined, flag: string, fallbackSeconds: number, spec: Pick<CommandSpec, "name" | "synopsis">): number {
  if (value === undefined) return fallbackSeconds * 1000;
  try {
    return parseTimeoutSeconds(value, flag);
  } catch (err) {
    throw usageError(spec, (err as Error).message);
  }
}

/** A positive integer from a flag. */
export function countFlag(value: string | undefined, flag: string, fallback: number, spec: Pick<CommandSpec, "name" | "synopsis">): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw usageError(spec, `${flag} must be a positive integer, not '${value}'`);
  return n;
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}
