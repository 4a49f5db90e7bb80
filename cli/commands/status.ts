import { UserError } from "../../src/core/errors";
import { JSON_API_VERSION } from "../../src/core/findings";
import type { StatusDocument } from "../../src/core/json-api";
import { type Observation, type ObservedEntry, observe, type PublishedEndpoints, readObservedCluster } from "../../src/core/observe";
import type { Command, CommandContext } from "../context";
import { EXIT } from "../exit";
import { parseCommandLine, usageError } from "../flags";
import { type ConnectCluster, connectLiveCluster, DEFAULT_CLUSTER_TIMEOUT_SECONDS, entryFlag, formatTable, secondsFlag } from "../operator";
import { SPECS } from "../specs";
import { openStack, publishedEndpoints, readStackOutputs } from "../stack";

const SPEC = SPECS.status;

export interface StatusDeps {
  connect: ConnectCluster;
  /** The outputs of the last `up` (Pulumi CLI, or a saved `pulumi stack output --json`). */
  readOutputs: (ctx: CommandContext, stack: string, outputsFile?: string) => Promise<Record<string, unknown>>;
}

/** Where the "published at the last up" values came from, for the reader of the report. */
export type PublishedSource = { from: "pulumi" | "file"; file?: string } | { from: "unavailable"; reason: string };

/**
 * `exposure status`: the live verdict of every entry the stack publishes (or of those named
 * by --entry, which alone decide the exit code), computed by the
 * same `observe()` as the portal. Exit 0 when every entry is MATCH, 3 when one is DRIFT or
 * ABSENT (or no node can serve the URLs), 1 on error.
 */
export function createStatusCommand(deps: Partial<StatusDeps> = {}): Command {
  const connect = deps.connect ?? connectLiveCluster;
  const readOutputs = deps.readOutputs ?? readStackOutputs;
  return async (argv, ctx) => {
    const { values } = parseCommandLine(SPEC, argv);
    if (!values.stack) throw usageError(SPEC, "--stack is required");
    const timeoutMs = secondsFlag(values.timeout, "--timeout", DEFAULT_CLUSTER_TIMEOUT_SECONDS, SPEC);
    const opened = openStack({ projectDir: ctx.projectDir, stack: values.stack });
    // Checked before anything is read: a mistyped name must not cost a cluster round trip.
    const only = entryFlag(
      values.entry,
      {
        available: opened.selected,
        declared: opened.contract.endpoints.map((e) => e.name),
        unavailable: `not published by stack ${values.stack} (not exposed, or not in its ui-exposure:entries)`,
      },
      SPEC,
    );
    const entries = only ? opened.selectedEntries.filter((e) => only.has(e.name)) : opened.selectedEntries;

    // Outputs and cluster are read concurrently: `pulumi stack output` alone takes a second or two.
    const [published, cluster] = await Promise.all([
      readPublished(ctx, values.stack, values.outputs, readOutputs),
      connect(opened, timeoutMs).then(async (reader) => ({
        source: reader.source,
        observed: await readObservedCluster(reader, entries),
      })),
    ]);
    if (published.source.from === "unavailable") {
      ctx.stderr(`exposure status: published outputs unavailable (${published.source.reason}); the "changed since the last up" checks are skipped`);
    }
    const observed = observe(opened.contract, cluster.observed, {
      selected: entries.map((e) => e.name),
      nodeAddress: opened.settings.nodeAddress,
      // Without the outputs nothing proves which Services this stack created: only names are checked.
      ...(published.source.from === "unavailable" ? {} : { published: published.endpoints }),
    });
    // observe() also lists the entries that are not exposed: with --entry, only the named ones are reported.
    const observation: Observation = only ? { ...observed, entries: observed.entries.filter((e) => only.has(e.name)) } : observed;
    const exposed = observation.entries.filter((e) => e.exposure !== "none");
    const healthy = observation.problems.length === 0 && exposed.every((e) => e.verdict === "MATCH");

    if (values.json) {
      const doc: StatusDocument = {
        apiVersion: JSON_API_VERSION,
        kind: "Status",
        stack: values.stack,
        source: cluster.source,
        publishedOutputs: published.source,
        ...(observation.node ? { node: observation.node } : {}),
        ok: healthy,
        entries: observation.entries,
        problems: observation.problems,
      };
      ctx.stdout(JSON.stringify(doc, null, 2));
    } else {
      ctx.stdout(formatStatus(values.stack, cluster.source, observation));
    }
    return healthy ? EXIT.OK : EXIT.DRIFT;
  };
}

export const status = createStatusCommand();

export async function readPublished(
  ctx: CommandContext,
  stack: string,
  outputsFile: string | undefined,
  readOutputs: StatusDeps["readOutputs"],
): Promise<{ endpoints: PublishedEndpoints; source: PublishedSource }> {
  if (outputsFile) {
    // A file named on the command line is an input the operator chose: failing to read it is an error.
    return { endpoints: publishedEndpoints(await readOutputs(ctx, stack, outputsFile)), source: { from: "file", file: outputsFile } };
  }
  try {
    return { endpoints: publishedEndpoints(await readOutputs(ctx, stack)), source: { from: "pulumi" } };
  } catch (err) {
    // Pulumi's own answer that the stack does not exist: it created nothing, so nothing is ours
    // (not "unknown", which would fall back to names and call another stack's Services MATCH).
    if (err instanceof UserError && /\bno stack named '[^']*' found\b/.test(err.message)) return { endpoints: {}, source: { from: "pulumi" } };
    // status must work without Pulumi (no CLI, no state backend, no passphrase): it only loses one check.
    if (err instanceof UserError) return { endpoints: {}, source: { from: "unavailable", reason: firstLine(err.message) } };
    throw err;
  }
}

const firstLine = (text: string) => text.split("\n")[0] ?? text;

function describePort(e: ObservedEntry): string {
  if (e.exposure === "hostPort") return `hostPort ${e.hostPort}`;
  return e.nodePort !== undefined ? String(e.nodePort) : "-";
}

/** The human report: one line per published entry, then the entries that are not exposed. */
export function formatStatus(stack: string, source: string, observation: Observation): string {
  const node = observation.node;
  const header = `stack ${stack}, ${source}, node ${node ? `${node.name} ${node.address}${node.pinned ? " (pinned)" : ""}` : "none"}`;
  const exposed = observation.entries.filter((e) => e.exposure !== "none");
  const rows = exposed.map((e) => [
    e.name,
    e.exposure,
    e.service ?? (e.exposure === "hostPort" ? `(pod in ${e.namespace})` : "-"),
    String(e.readyEndpoints),
    describePort(e),
    e.url ?? "-",
    e.verdict,
    e.reasons.join("; "),
  ]);
  const lines = [header, "", formatTable(["ENTRY", "EXPOSURE", "SERVICE", "READY", "PORT", "URL", "VERDICT", "REASONS"], rows)];
  const notExposed = observation.entries.filter((e) => e.exposure === "none").map((e) => e.name);
  if (notExposed.length) lines.push("", `not exposed (in-cluster only): ${notExposed.join(", ")}`);
  for (const problem of observation.problems) lines.push("", `problem: ${problem}`);
  const counts = (["MATCH", "DRIFT", "ABSENT"] as const).map((v) => `${exposed.filter((e) => e.verdict === v).length} ${v}`);
  lines.push("", counts.join(", "));
  return lines.join("\n");
}
