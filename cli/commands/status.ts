import { auditExposure, readExposureObjects } from "../../src/core/audit";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { StatusDocument } from "../../src/core/json-api";
import { type Observation, observe, readObservedCluster } from "../../src/core/observe";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { formatStatus, formatUndeclared, type OperatorDeps, publishedEntryFlag, timeoutFlag } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, openStack, provenOwnership, readPublished, readStackOutputs, sayUnavailable } from "../stack";

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

    // Outputs and cluster are read concurrently: `pulumi stack output` alone takes a second or two.
    const [published, cluster] = await Promise.all([
      readPublished(ctx, values.stack, values.outputs, readOutputs),
      connect(opened, timeoutMs).then(async (reader) => {
        // Without --entry, the cluster's undeclared exposure too (drift's audit: every Service and Pod that opens something); a
        // refused or failed list says so instead of failing the verdicts.
        const [observed, exposing] = await Promise.all([
          readObservedCluster(reader, entries),
          only ? undefined : readExposureObjects(reader).catch((err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 300)),
        ]);
        return { source: reader.source, observed, exposing };
      }),
    ]);
    sayUnavailable(ctx, "exposure status", published, 'the "changed since the last up" checks are skipped');
    const selected = entries.map((e) => e.name);
    const observed = observe(opened.contract, cluster.observed, { selected, nodeAddress: opened.settings.nodeAddress, ...provenOwnership(published) });
    // observe() also lists the entries that are not exposed: with --entry, only the named ones are reported.
    const observation: Observation = only ? { ...observed, entries: observed.entries.filter((e) => only.has(e.name)) } : observed;
    const exposed = observation.entries.filter((e) => e.exposure !== "none");
    const healthy = observation.problems.length === 0 && exposed.every((e) => e.verdict === "MATCH");
    const { exposing } = cluster;
    const undeclared =
      typeof exposing === "object"
        ? auditExposure({ contract: opened.contract, selected, allowlist: opened.settings.allowlist, ...exposing, ...provenOwnership(published) }).undeclared
        : undefined;

    if (values.json)
      printJson(ctx, {
        apiVersion: JSON_API_VERSION,
        kind: "Status",
        stack: values.stack,
        source: cluster.source,
        publishedOutputs: published.source,
        ...(observation.node ? { node: observation.node } : {}),
        ok: healthy,
        entries: observation.entries,
        problems: observation.problems,
        ...(undeclared ? { undeclared } : typeof exposing === "string" ? { undeclaredUnread: exposing } : {}),
      } satisfies StatusDocument);
    else
      ctx.stdout(
        [
          formatStatus(values.stack, cluster.source, observation),
          ...(undeclared || typeof exposing === "string" ? [formatUndeclared(undeclared ?? String(exposing))] : []),
        ].join("\n"),
      );
    return healthy ? EXIT.OK : EXIT.DRIFT;
  };
}

export const command = createStatusCommand();
