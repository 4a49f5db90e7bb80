// What the operator commands share: flag values (--timeout, --entry, --stack), tables and the status report.
import type { UndeclaredExposure } from "../src/core/audit";
import { ENTRY_NAME_MAX } from "../src/core/contract/schema";
import { isUserError } from "../src/core/errors";
import { EXIT, type ExitCode } from "../src/core/findings";
import { parseTimeoutSeconds } from "../src/core/inputs";
import type { StatusDocument } from "../src/core/json-api";
import type { ClusterReader } from "../src/core/kube/cluster";
import type { Observation } from "../src/core/observe";
import { printableValue, shownValue } from "../src/core/text";
import { stackNames } from "./commands/completion";
import { closest, type Usage, usageError, usageOf } from "./flags";
import type { OpenStack, ReadOutputs } from "./stack";

/** What the operator commands read the world through; tests replace them with fakes. */
export interface OperatorDeps {
  connect: (opened: OpenStack, timeoutMs: number) => Promise<ClusterReader>;
  /** The outputs of the last `up` (Pulumi CLI, or a saved `pulumi stack output --json`): which Services this stack created, their ports and URLs. */
  readOutputs: ReadOutputs;
}

/** --timeout SECONDS (its default is in the flag table), in milliseconds. */
export const timeoutFlag = (value: string, spec: Usage): number => usageOf(spec, () => parseTimeoutSeconds(value, "--timeout"));

/** The entries a command can restrict its report to, and how to explain a name it cannot. */
interface EntryChoice {
  /** The entries the command reports on (published by the stack, in the `urls` output...). */
  available: readonly string[];
  /** Every entry the contract declares, to tell a typo from an entry that is merely not available; no contract: every name is just unavailable. */
  declared: readonly string[] | undefined;
  /** Why a declared entry is not available: "not published by stack bench". */
  unavailable: string;
}

/** The longest part of a refused value shown back: an argument can be megabytes long. */
const SHOWN_VALUE_MAX = 2 * ENTRY_NAME_MAX;

/** The entries named by `--entry`, undefined for none (every entry); one not available is a usage error, with the nearest name. */
export function entryFlag(names: readonly string[], choice: EntryChoice, spec: Usage): ReadonlySet<string> | undefined {
  const name = names.find((n) => !choice.available.includes(n));
  if (name === undefined) return names.length ? new Set(names) : undefined;
  const shown = shownValue(name, SHOWN_VALUE_MAX);
  if (name !== "" && choice.declared?.includes(name)) throw usageError(spec, `--entry '${shown}': ${choice.unavailable}`);
  // A name longer than any entry cannot be a typo of one (and the edit distance would cost length x length).
  const guess = name !== "" && name.length <= SHOWN_VALUE_MAX ? closest(name, choice.available) : undefined;
  const what = name === "" ? "an entry name cannot be empty" : choice.declared ? "no such entry in the contract" : choice.unavailable;
  throw usageError(spec, `--entry '${shown}': ${what}${guess ? `; did you mean '${guess}'?` : ""}`);
}

/** --entry names checked against the entries the stack publishes. */
export function publishedEntryFlag(names: readonly string[], opened: OpenStack, spec: Usage): ReadonlySet<string> | undefined {
  const unavailable = `not published by stack ${opened.stack} (not exposed, or not in its ui-exposure:entries)`;
  return entryFlag(names, { available: opened.selected, declared: opened.contract.endpoints.map((e) => e.name), unavailable }, spec);
}

/** Left-aligned columns separated by two spaces; the last column is not padded. */
export function formatTable(headers: readonly string[], rawRows: readonly (readonly string[])[]): string {
  // A cell may hold a value read back from outside (a published URL): a line break in it starts no row.
  const rows = rawRows.map((r) => r.map(printableValue));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** The first line of status, drift and access: the stack, where the cluster was read, the node serving the URLs. */
export function stackHeader(stack: string, source: string, { node }: Pick<Observation, "node">): string {
  return `stack ${stack}, ${source}, node ${node ? `${node.name} ${node.address}${node.pinned ? " (pinned)" : ""}` : "none"}`;
}

const STATUS_COLUMNS = ["ENTRY", "EXPOSURE", "SERVICE", "READY", "PORT", "URL", "VERDICT", "REASONS"];

const statusRows = (observation: Observation) =>
  observation.entries
    .filter((e) => e.exposure !== "none")
    .map((e) => [
      e.name,
      e.exposure,
      e.service ?? (e.exposure === "hostPort" ? `(pod in ${e.namespace})` : "-"),
      String(e.readyEndpoints),
      e.exposure === "hostPort" ? `hostPort ${e.hostPort}` : e.nodePort !== undefined ? String(e.nodePort) : "-",
      e.url ?? "-",
      e.verdict,
      e.reasons.join("; "),
    ]);

function statusCounts(observation: Observation): string {
  const exposed = observation.entries.filter((e) => e.exposure !== "none");
  return (["MATCH", "DRIFT", "ABSENT"] as const).map((v) => `${exposed.filter((e) => e.verdict === v).length} ${v}`).join(", ");
}

/** The cluster's undeclared exposure (without --entry): each one, why and its fix; or why the cluster could not be audited. */
function undeclaredLines({ undeclared, undeclaredUnread }: { undeclared?: readonly UndeclaredExposure[]; undeclaredUnread?: string }): string[] {
  const unread = `\nundeclared exposure: not checked (the cluster's Services and Pods could not be listed: ${undeclaredUnread})`;
  if (!undeclared) return undeclaredUnread === undefined ? [] : [unread];
  if (undeclared.length === 0) return ["\nundeclared exposure: none"];
  // Read back from the cluster: a line break in a value starts no line of its own.
  const what = (e: UndeclaredExposure) =>
    `${e.kind} ${e.namespace}/${e.name}${e.node ? ` on ${e.node}` : ""} (${e.ports}${e.addresses ? ` at ${e.addresses.join(", ")}` : ""})`;
  const lines = undeclared.map((e) => `  ${printableValue(`${what(e)}: ${e.reason}`)}\n    fix: ${printableValue(e.fix)}`);
  return [[`\nundeclared exposure: ${undeclared.length} UNDECLARED (neither the contract nor the allowlist declares it)`, ...lines].join("\n")];
}

/** The human report: one line per published entry, the entries that are not exposed, then the cluster's undeclared exposure if audited. */
export function formatStatus(stack: string, source: string, observation: Observation, audit: Parameters<typeof undeclaredLines>[0] = {}): string {
  const lines = [stackHeader(stack, source, observation), "", formatTable(STATUS_COLUMNS, statusRows(observation))];
  const notExposed = observation.entries.filter((e) => e.exposure === "none").map((e) => e.name);
  if (notExposed.length) lines.push("", `not exposed (in-cluster only): ${notExposed.join(", ")}`);
  for (const problem of observation.problems) lines.push("", `problem: ${problem}`);
  lines.push("", statusCounts(observation), ...undeclaredLines(audit));
  return lines.join("\n");
}

/** Several stacks: each one's header line, then one table with a STACK column; a stack not read says so in place of its rows. */
export function formatStatuses(
  reports: readonly { stack: string; document: Pick<StatusDocument, "source"> & Parameters<typeof undeclaredLines>[0]; observation: Observation }[],
  failed: readonly { stack: string; error: string }[],
) {
  const lines = reports.map((r) => stackHeader(r.stack, r.document.source, r.observation));
  lines.push(...failed.map((f) => `stack ${f.stack}: NOT READ: ${f.error.split("\n")[0]}`), "");
  const rows = reports.flatMap((r) => statusRows(r.observation).map((row) => [r.stack, ...row]));
  lines.push(formatTable(["STACK", ...STATUS_COLUMNS], rows));
  for (const r of reports) for (const problem of r.observation.problems) lines.push("", `stack ${r.stack}: problem: ${problem}`);
  lines.push("", ...reports.map((r) => `stack ${r.stack}: ${statusCounts(r.observation)}`));
  for (const r of reports) lines.push(...undeclaredLines(r.document).map((t) => t.replace("\nundeclared", `\nstack ${r.stack}: undeclared`)));
  return lines.join("\n");
}

/** --stack (repeatable) or --all-stacks (each Pulumi.<NAME>.yaml of the project): the stacks to report on, each once. */
export function stacksFlag(values: { stack: string[]; "all-stacks": boolean }, projectDir: string, spec: Usage): string[] {
  if (values["all-stacks"] && values.stack.length) throw usageError(spec, "--stack and --all-stacks exclude each other");
  const stacks = values["all-stacks"] ? stackNames(projectDir) : [...new Set(values.stack)];
  if (values["all-stacks"] && stacks.length === 0) throw usageError(spec, `--all-stacks: no Pulumi.<NAME>.yaml in ${projectDir}`);
  return stacks;
}

/** From the least to the most severe: a stack that could not be read weighs more than any verdict. */
const EXIT_RANK: readonly ExitCode[] = [EXIT.OK, EXIT.DRIFT, EXIT.UNREACHABLE, EXIT.INCOMPLETE, EXIT.ERROR, EXIT.INVALID];
export const worstExit = (codes: readonly ExitCode[]): ExitCode => codes.reduce((a, b) => (EXIT_RANK.indexOf(b) > EXIT_RANK.indexOf(a) ? b : a), EXIT.OK);

/** Each stack's report, read at once: one that cannot be read (a dead API server) is told on its own line with its exit code; the others stay. */
export async function eachStack<T>(stacks: readonly string[], stderr: (line: string) => void, who: string, read: (stack: string) => Promise<T>) {
  const reports: (T & { stack: string })[] = [];
  const failed: { stack: string; error: string; exitCode: ExitCode }[] = [];
  (await Promise.allSettled(stacks.map(read))).forEach((r, i) => {
    const stack = stacks[i] as string;
    if (r.status === "fulfilled") reports.push({ ...r.value, stack });
    else if (!isUserError(r.reason)) throw r.reason;
    else {
      failed.push({ stack, error: r.reason.message, exitCode: r.reason.exitCode });
      // A message that already names its stack (probe's `stack X has no 'urls' output`) is not prefixed with it again.
      const message = r.reason.message.split("\n").join(" ");
      stderr(`${who}: ${message.startsWith(`stack ${stack}:`) || message.startsWith(`stack ${stack} `) ? "" : `stack ${stack}: `}${message}`);
    }
  });
  return { reports, failed };
}
