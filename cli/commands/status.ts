import { auditExposure, readExposureObjects } from "../../src/core/audit";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { StatusDocument, StatusListDocument } from "../../src/core/json-api";
import type { ClusterReader } from "../../src/core/kube/cluster";
import type { Observation } from "../../src/core/observe";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { eachStack, formatStatus, formatStatuses, type OperatorDeps, publishedEntryFlag, stacksFlag, timeoutFlag, worstExit } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, observeOpened, openStack, readStackOutputs, sayUnavailable } from "../stack";

const SPEC = SPECS.status;

/** `exposure status`: the live verdict of every published entry (or those named by --entry), as the portal's; several stacks, one table. */
export function createStatusCommand({ connect = connectCluster, readOutputs = readStackOutputs }: Partial<OperatorDeps> = {}): Command<"status"> {
  return async ({ values }, ctx) => {
    const stacks = stacksFlag(values, ctx.projectDir, SPEC);
    if (stacks.length === 0) throw usageError(SPEC, "--stack is required");
    if (stacks.length > 1 && (values.entry.length || values.outputs))
      throw usageError(SPEC, "--entry and --outputs go with one --stack (they name one stack's)");
    const timeoutMs = timeoutFlag(values.timeout, SPEC);
    const statusOf = async (stack: string) => {
      const opened = openStack({ projectDir: ctx.projectDir, stack });
      // Checked before anything is read: a mistyped name must not cost a cluster round trip.
      const only = publishedEntryFlag(values.entry, opened, SPEC);
      const entries = only ? opened.selectedEntries.filter((e) => only.has(e.name)) : opened.selectedEntries;
      // Without --entry, drift's audit of undeclared exposure too; a list that fails says so instead of failing the verdicts.
      const auditRead = (reader: ClusterReader) =>
        readExposureObjects(reader).catch((err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 300));
      const read = { connect, readOutputs, timeoutMs, entries, outputs: values.outputs };
      const { source, published, observation: observed, also: exposing } = await observeOpened(ctx, opened, read, only ? undefined : auditRead);
      const who = stacks.length > 1 ? `exposure status: stack ${stack}` : "exposure status";
      sayUnavailable(ctx, who, published, 'the "changed since the last up" checks are skipped');
      // observe() also lists the entries that are not exposed: with --entry, only the named ones are reported.
      const observation: Observation = only ? { ...observed, entries: observed.entries.filter((e) => only.has(e.name)) } : observed;
      const audit = { contract: opened.contract, selected: entries.map((e) => e.name), allowlist: opened.settings.allowlist };
      const proven = published.proven ? { published: published.proven } : {};
      const undeclared = typeof exposing === "object" ? auditExposure({ ...audit, ...exposing, ...proven }).undeclared : undefined;
      const document: Omit<StatusDocument, "apiVersion" | "kind"> = {
        stack,
        source,
        publishedOutputs: published.source,
        ...(observation.node ? { node: observation.node } : {}),
        ok: observation.problems.length === 0 && observation.entries.every((e) => e.exposure === "none" || e.verdict === "MATCH"),
        entries: observation.entries,
        problems: observation.problems,
        ...(undeclared ? { undeclared } : typeof exposing === "string" ? { undeclaredUnread: exposing } : {}),
      };
      return { document, observation };
    };
    if (stacks.length === 1) {
      const { document, observation } = await statusOf(stacks[0] as string);
      if (values.json) printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "Status", ...document } satisfies StatusDocument);
      else ctx.stdout(formatStatus(document.stack, document.source, observation, document));
      return document.ok ? EXIT.OK : EXIT.DRIFT;
    }
    const { reports, failed } = await eachStack(stacks, ctx.stderr, "exposure status", statusOf);
    const code = worstExit([...reports.map((r) => (r.document.ok ? EXIT.OK : EXIT.DRIFT)), ...failed.map((f) => f.exitCode)]);
    if (values.json) {
      const stacksJson = [...reports.map((r) => r.document), ...failed.map(({ stack, error }) => ({ stack, ok: false as const, error }))];
      printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "StatusList", ok: code === EXIT.OK, stacks: stacksJson } satisfies StatusListDocument);
    } else ctx.stdout(formatStatuses(reports, failed));
    return code;
  };
}

export const command = createStatusCommand();
