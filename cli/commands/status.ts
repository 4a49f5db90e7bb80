import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { StatusDocument } from "../../src/core/json-api";
import type { Observation } from "../../src/core/observe";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { formatStatus, type OperatorDeps, publishedEntryFlag, timeoutFlag } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, observeOpened, openStack, readStackOutputs, sayUnavailable } from "../stack";

const SPEC = SPECS.status;

export type StatusDeps = OperatorDeps;

/**
 * `exposure status`: the live verdict of every entry the stack publishes (or of those named by
 * --entry), computed by the same `observe()` as the portal.
 */
export function createStatusCommand(deps: Partial<StatusDeps> = {}): Command<"status"> {
  const connect = deps.connect ?? connectCluster;
  const readOutputs = deps.readOutputs ?? readStackOutputs;
  return async ({ values }, ctx) => {
    if (!values.stack) throw usageError(SPEC, "--stack is required");
    const timeoutMs = timeoutFlag(values.timeout, SPEC);
    const opened = openStack({ projectDir: ctx.projectDir, stack: values.stack });
    // Checked before anything is read: a mistyped name must not cost a cluster round trip.
    const only = publishedEntryFlag(values.entry, opened, SPEC);
    const entries = only ? opened.selectedEntries.filter((e) => only.has(e.name)) : opened.selectedEntries;

    const {
      source,
      published,
      observation: observed,
    } = await observeOpened(ctx, opened, { connect, readOutputs, timeoutMs, entries, outputs: values.outputs });
    sayUnavailable(ctx, "exposure status", published, 'the "changed since the last up" checks are skipped');
    // observe() also lists the entries that are not exposed: with --entry, only the named ones are reported.
    const observation: Observation = only ? { ...observed, entries: observed.entries.filter((e) => only.has(e.name)) } : observed;
    const exposed = observation.entries.filter((e) => e.exposure !== "none");
    const healthy = observation.problems.length === 0 && exposed.every((e) => e.verdict === "MATCH");

    if (values.json)
      printJson(ctx, {
        apiVersion: JSON_API_VERSION,
        kind: "Status",
        stack: values.stack,
        source,
        publishedOutputs: published.source,
        ...(observation.node ? { node: observation.node } : {}),
        ok: healthy,
        entries: observation.entries,
        problems: observation.problems,
      } satisfies StatusDocument);
    else ctx.stdout(formatStatus(values.stack, source, observation));
    return healthy ? EXIT.OK : EXIT.DRIFT;
  };
}

export const command = createStatusCommand();
