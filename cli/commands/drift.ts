import * as path from "node:path";
import { type PulumiRunner, pulumiFailure, pulumiNotFound, runPulumi as runPulumiCli } from "../../src/adapters/pulumi-cli";
import { readAdmissionDrift } from "../../src/core/admission";
import { type Refusal, readWorkloads, wouldRefuse } from "../../src/core/admission-preview";
import { type AuditResult, auditExposure, readExposureObjects } from "../../src/core/audit";
import { EXIT, type Finding, JSON_API_VERSION } from "../../src/core/findings";
import type { DriftDocument } from "../../src/core/json-api";
import type { Observation } from "../../src/core/observe";
import { printableValue } from "../../src/core/text";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { formatStatus, formatTable, type OperatorDeps, timeoutFlag } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, observeOpened, openStack, readStackOutputs, sayUnavailable } from "../stack";

const SPEC = SPECS.drift;

/** `pulumi preview --expect-no-changes` exits 7 when the preview proposes changes (CLI >= 3.227). */
export const PULUMI_EXIT_CHANGES = 7;
type PreviewSummary = DriftDocument["preview"];

/** Steps that change nothing: reads of `.get()` resources, refresh steps, unchanged resources. */
const NO_CHANGE_OPS = new Set(["same", "read", "refresh", "discard", "read-discard", "read-replacement", "remove-pending-replace"]);

interface PreviewDigest {
  steps?: { op?: string; urn?: string; detailedDiff?: Record<string, { kind?: string }> | null; diffReasons?: string[] }[];
  diagnostics?: { severity?: string; message?: string }[];
}

/** Which resources `pulumi preview --json` (its digest and exit code) would change, and which fields (detailedDiff, else diffReasons). */
export function summarisePreview(run: { exitCode: number; stdout: string; stderr: string }): PreviewSummary {
  let digest: PreviewDigest | undefined;
  try {
    digest = JSON.parse(run.stdout) as PreviewDigest;
  } catch {}
  if (run.exitCode === 0) return { state: "no-changes" };
  if (run.exitCode === PULUMI_EXIT_CHANGES) {
    const changes = (digest?.steps ?? [])
      .filter((s) => s.op && !NO_CHANGE_OPS.has(s.op))
      .map((s) => {
        const urn = s.urn ?? "";
        // urn:pulumi:stack::project::parent$type::name
        const [name = urn, parentType = ""] = urn.split("::").reverse();
        const detailed = Object.entries(s.detailedDiff ?? {}).map(([field, d]) => `${field} (${d.kind ?? "update"})`);
        return { op: s.op as string, type: parentType.split("$").pop() ?? "", name, urn, fields: detailed.length ? detailed : (s.diffReasons ?? []) };
      });
    return { state: "changes", changes };
  }
  // Any other code is an error of the preview itself; its JSON diagnostics say best what went wrong.
  const diagnostic = digest?.diagnostics?.find((d) => d.severity === "error")?.message;
  return { state: "failed", message: `pulumi preview exited with ${run.exitCode}: ${pulumiFailure(run, diagnostic)}` };
}

/** `exposure drift`: the Pulumi preview (what the program manages), the cluster-wide audit (what it does not) and status's live verdicts. */
export function createDriftCommand({
  connect = connectCluster,
  readOutputs = readStackOutputs,
  runPulumi = runPulumiCli,
}: Partial<OperatorDeps & { runPulumi: PulumiRunner }> = {}): Command<"drift"> {
  return async ({ values }, ctx) => {
    if (!values.stack) throw usageError(SPEC, "--stack is required");
    const stack = values.stack;
    const timeoutMs = timeoutFlag(values.timeout, SPEC);
    const opened = openStack({ projectDir: ctx.projectDir, stack });
    const { contract, selected, settings } = opened;

    const previewArgs = ["preview", "--refresh", "--expect-no-changes", "--json", "--non-interactive", "--stack", stack];
    const stopPreview = new AbortController();
    const previewing: Promise<PreviewSummary> = values["skip-preview"]
      ? Promise.resolve({ state: "skipped" })
      : runPulumi(previewArgs, { cwd: ctx.projectDir, env: ctx.env, signal: stopPreview.signal }).then((run) =>
          "notFound" in run ? { state: "failed", message: pulumiNotFound("pass --skip-preview to run the cluster audit alone") } : summarisePreview(run),
        );
    // The audit, the live verdicts and the admission guard read the cluster while the preview runs (a refresh takes a while).
    const read = observeOpened(ctx, opened, { connect, readOutputs, timeoutMs, outputsFlag: false }, (cluster) =>
      Promise.all([
        readExposureObjects(cluster),
        // What `deny` would refuse is asked of the workloads too: their templates are checked on create.
        readWorkloads(cluster),
        // The exposure guard at admission must be the one the contract generates now.
        readAdmissionDrift(cluster, {
          stack,
          contract,
          selected,
          allowlist: settings.allowlist,
          admission: settings.admission,
          contractFile: path.relative(ctx.projectDir, path.resolve(opened.contractFile)),
        }),
      ]),
    );
    // Unreachable cluster...: report it now, and leave no pulumi process running behind us.
    read.catch(() => stopPreview.abort());
    const { source, published, observation: status, also } = await read;
    const [exposing, workloads, admission] = also;
    const exposure = { contract, selected, allowlist: settings.allowlist, ...exposing };
    const audit = auditExposure({ ...exposure, ...(published.proven ? { published: published.proven } : {}) });
    const denyPreview = { refusals: wouldRefuse({ ...exposure, workloads: workloads.workloads }), unread: workloads.unread };
    const preview = await previewing;

    const liveDrift = status.problems.length > 0 || status.entries.some((e) => e.exposure !== "none" && e.verdict !== "MATCH");
    const drift = preview.state === "changes" || audit.undeclared.length > 0 || liveDrift || admission.length > 0;
    if (values.json) {
      printJson(ctx, {
        apiVersion: JSON_API_VERSION,
        kind: "Drift",
        stack,
        source,
        drift,
        preview,
        audit,
        admission,
        denyPreview,
        status: { publishedOutputs: published.source, ...(status.node ? { node: status.node } : {}), entries: status.entries, problems: status.problems },
      } satisfies DriftDocument);
    } else {
      ctx.stdout(formatDrift(stack, source, preview, audit, status));
      ctx.stdout(formatAdmission(settings.admission.mode, admission));
      ctx.stdout(formatDenyPreview(settings.admission.mode, denyPreview));
      sayUnavailable(ctx, "exposure drift", published, 'the "changed since the last up" and ownership checks are skipped');
    }
    if (drift) return EXIT.DRIFT;
    if (preview.state === "failed") {
      if (!values.json) ctx.stderr(`exposure drift: ${preview.message}`);
      return EXIT.ERROR;
    }
    return EXIT.OK;
  };
}

export const command = createDriftCommand();

function formatPreview(preview: PreviewSummary): string[] {
  const title = "pulumi preview --refresh --expect-no-changes:";
  if (preview.state === "skipped") return [`${title} skipped (--skip-preview)`];
  if (preview.state === "no-changes") return [`${title} no changes`];
  if (preview.state === "failed") return [`${title} FAILED: ${preview.message}`];
  if (preview.changes.length === 0) return [`${title} CHANGES (exit ${PULUMI_EXIT_CHANGES}; the JSON output listed no step)`];
  const rows = preview.changes.map((c) => [c.op, c.type, c.name, c.fields.join(", ") || "-"]);
  return [`${title} ${preview.changes.length} CHANGE${preview.changes.length > 1 ? "S" : ""}`, formatTable(["OP", "TYPE", "NAME", "FIELDS"], rows)];
}

/** The human report: preview first, then every exposure found, undeclared first, then each one's fix (status's and the portal's words). */
function formatDrift(stack: string, source: string, preview: PreviewSummary, audit: AuditResult, status: Observation): string {
  const lines = [`stack ${stack}, ${source}`, "", ...formatPreview(preview), ""];
  const total = audit.declared.length + audit.undeclared.length;
  lines.push(`exposure audit (NodePort/LoadBalancer Services, externalIPs and hostPorts, cluster-wide): ${total} found, ${audit.undeclared.length} UNDECLARED`);
  if (total > 0) {
    const where = (e: { namespace: string; name: string; node?: string }) => `${e.namespace}/${e.name}${e.node ? ` on ${e.node}` : ""}`;
    const ports = (e: { ports: string; addresses?: string[] }) => `${e.ports}${e.addresses ? ` at ${e.addresses.join(", ")}` : ""}`;
    const undeclared = audit.undeclared.map((e) => [e.kind, where(e), ports(e), `UNDECLARED: ${e.reason}`]);
    const declared = audit.declared.map((e) => [e.kind, where(e), ports(e), `declared by ${e.declaredBy}${e.reason ? `: ${e.reason}` : ""}`]);
    lines.push(formatTable(["KIND", "WHERE", "PORTS", "VERDICT"], [...undeclared, ...declared]));
    for (const e of audit.undeclared) lines.push(printableValue(`  ${where(e)}: fix: ${e.fix}`));
  }
  if (audit.unusedAllowlist.length) lines.push("", `allowlist entries that matched nothing (stale?): ${audit.unusedAllowlist.join(", ")}`);
  lines.push("", "live verdicts (as exposure status):", formatStatus(stack, source, status));
  return lines.join("\n");
}

/** The exposure guard's line(s): its mode, and whether the live policy is the contract's. */
function formatAdmission(mode: string, findings: readonly Finding[]): string {
  const title = `exposure guard at admission (ui-exposure:admission.mode ${mode}):`;
  if (findings.length === 0) return `\n${title} ${mode === "off" ? "none in the cluster" : "matches the contract"}`;
  return [`\n${title} ${findings.length} DRIFT`, ...findings.map((f) => `  ${f.subject}: ${f.message} [${f.code}]`)].join("\n");
}

/** What `deny` mode would refuse today, whatever the mode: the list to empty (or declare) before switching to `deny`, so no platform pod is refused. */
function formatDenyPreview(mode: string, preview: { refusals: readonly Refusal[]; unread: readonly string[] }): string {
  const title = "exposure guard in deny mode would refuse, of what exists now (each object created again):";
  const partial = preview.unread.length ? [`  (not read, so not checked: ${preview.unread.join("; ")})`] : [];
  if (preview.refusals.length === 0) {
    const verdict = preview.unread.length ? "nothing among what could be read" : mode === "deny" ? "nothing" : "nothing: deny is safe to switch on";
    return [`\n${title} ${verdict}`, ...partial].join("\n");
  }
  const rows = preview.refusals.map((r) => [r.kind, `${r.namespace}/${r.name}`, r.what]);
  return [`\n${title} ${preview.refusals.length}`, formatTable(["KIND", "WHERE", "REFUSED"], rows), ...partial].join("\n");
}
