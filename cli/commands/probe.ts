import * as fs from "node:fs";
import * as path from "node:path";
import { defaultContractPath, loadContractFile } from "../../src/adapters/contract-file";
import { type HttpGet, httpGet, type ProbeResult, probeAll, probeTargets } from "../../src/adapters/http-probe";
import type { Contract } from "../../src/core/contract/schema";
import { UserError } from "../../src/core/errors";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { ProbeDocument } from "../../src/core/json-api";
import { failureCause } from "../../src/core/observe";
import { printableValue, redactUrlPasswords } from "../../src/core/text";
import type { Command, CommandContext } from "../context";
import { usageError } from "../flags";
import { eachStack, entryFlag, formatTable, type OperatorDeps, publishedEntryFlag, stacksFlag, timeoutFlag, worstExit } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, type OpenStack, observeOpened, openStack, readStackOutputs } from "../stack";

const SPEC = SPECS.probe;

/** More requests in flight than a platform has UIs only opens sockets. */
const MAX_CONCURRENCY = 64;

/** The live cluster is read only to explain a refused connection (with --stack). */
export interface ProbeDeps extends OperatorDeps {
  get: HttpGet;
}

/** `exposure probe` (scenario "UI reachable"): every URL of the outputs, concurrently, with the contract's expectations. */
export function createProbeCommand({ connect = connectCluster, readOutputs = readStackOutputs, get = httpGet }: Partial<ProbeDeps> = {}): Command<"probe"> {
  return async ({ values }, ctx) => {
    const stacks = stacksFlag(values, ctx.projectDir, SPEC);
    if (!stacks.length && !values.outputs) throw usageError(SPEC, "give --stack NAME, or --outputs FILE (saved `pulumi stack output --json`)");
    if (stacks.length && values.contract) throw usageError(SPEC, "--contract is for --outputs without --stack (a stack names its own contract)");
    if (stacks.length > 1 && (values.entry.length || values.outputs))
      throw usageError(SPEC, "--entry and --outputs go with one --stack (they name one stack's)");
    const timeoutMs = timeoutFlag(values.timeout, SPEC);
    const concurrency = concurrencyFlag(values.concurrency);

    const probeOf = async (stack: string | undefined) => {
      const opened = stack ? openStack({ projectDir: ctx.projectDir, stack, needsCluster: false }) : undefined;
      const contract = opened ? opened.contract : loadOptionalContract(ctx, values.contract);
      // A stack's names are checked before its outputs are read: a typo must not wait for the Pulumi CLI.
      if (opened) publishedEntryFlag(values.entry, opened, SPEC);
      const from = values.outputs ?? `stack ${stack}`;
      const outputs = await readOutputs(ctx, stack ?? "", values.outputs);
      const urls = urlsOutput(outputs, from);
      const choice = { available: Object.keys(urls), declared: contract?.endpoints.map((e) => e.name), unavailable: `not in the 'urls' output of ${from}` };
      const only = entryFlag(values.entry, choice, SPEC);
      const probed = only ? Object.fromEntries(Object.entries(urls).filter(([name]) => only.has(name))) : urls;
      const results = await probeAll(probeTargets(probed, contract, timeoutMs), { concurrency, get });
      return { results: opened ? await explainFailures(results, ctx, opened, { connect, readOutputs: async () => outputs, timeoutMs }) : results };
    };
    const several = stacks.length > 1;
    const { reports, failed: unread } = several
      ? await eachStack(stacks, ctx.stderr, "exposure probe", probeOf)
      : { reports: [await probeOf(stacks[0])], failed: [] };
    // Several stacks: each result names its stack (two may publish the same entry name).
    const results = reports.flatMap((r) => r.results.map((x) => (several && "stack" in r ? { stack: String(r.stack), ...x } : x)));
    const code = worstExit([results.some((r) => !r.ok) ? EXIT.UNREACHABLE : EXIT.OK, ...unread.map((f) => f.exitCode)]);
    if (values.json) {
      const doc: ProbeDocument = {
        apiVersion: JSON_API_VERSION,
        kind: "Probe",
        ok: code === EXIT.OK,
        tlsVerified: false,
        results,
        ...(unread.length ? { unread: unread.map(({ stack, error }) => ({ stack, error })) } : {}),
      };
      // A URL may carry a password (`http://user:pass@...` in the outputs): never printed.
      ctx.stdout(redactUrlPasswords(JSON.stringify(doc, null, 2)));
    } else ctx.stdout(formatProbe(results, unread));
    return code;
  };
}

export const command = createProbeCommand();

/** Why each failed URL failed, read from the cluster as `status` reads it: kube-proxy refuses alike a port no Service holds and one without endpoint. */
async function explainFailures(results: ProbeResult[], ctx: CommandContext, opened: OpenStack, read: Parameters<typeof observeOpened>[2]) {
  const entries = opened.selectedEntries.filter((e) => results.some((r) => r.name === e.name && !r.ok && r.error));
  if (entries.length === 0) return results;
  const observed = await observeOpened(ctx, opened, { ...read, entries })
    .then((o) => o.observation.entries)
    .catch(() => []); // unreadable: the results stay as they were
  return results.map((r) => {
    const e = r.ok || !r.error ? undefined : observed.find((x) => x.name === r.name);
    const cause = e && failureCause(e, r.error as string);
    return cause ? { ...r, error: cause } : r;
  });
}

function concurrencyFlag(value: string): number {
  const shown = printableValue(value.length > 20 ? `${value.slice(0, 20)}...` : value);
  const n = /^\d{1,15}$/.test(value) ? Number(value) : 0;
  if (n < 1) throw usageError(SPEC, `--concurrency must be a positive integer, not '${shown}'`);
  if (n > MAX_CONCURRENCY) throw usageError(SPEC, `--concurrency must be at most ${MAX_CONCURRENCY}, not '${shown}'`);
  return n;
}

/** Without a stack: the contract named, else the project's, for probe paths and statuses; none: "/" expecting any 2xx/3xx. */
function loadOptionalContract(ctx: CommandContext, file: string | undefined): Contract | undefined {
  if (file) return loadContractFile(file);
  const fallback = defaultContractPath(ctx.projectDir);
  const shown = path.relative(process.cwd(), fallback) || fallback;
  if (fs.existsSync(fallback)) return loadContractFile(fallback, shown);
  ctx.stderr(`exposure probe: no contract at ${shown}: probing / and accepting any 2xx/3xx`);
  return undefined;
}

function urlsOutput(outputs: Record<string, unknown>, from: string): Record<string, string> {
  const urls = outputs.urls;
  if (urls === undefined || urls === null) throw new UserError(`${from} has no 'urls' output: has \`pulumi up\` run for it?`);
  if (typeof urls !== "object" || Array.isArray(urls) || !Object.values(urls).every((u) => typeof u === "string")) {
    throw new UserError(`${from}: the 'urls' output must map entry names to URLs`);
  }
  if (Object.keys(urls).length === 0) throw new UserError(`${from}: the 'urls' output is empty: the stack publishes no UI`);
  return urls as Record<string, string>;
}

function formatProbe(results: readonly (ProbeResult & { stack?: string })[], unread: readonly { stack: string; error: string }[]): string {
  const rows = results.map((r) => [
    ...(r.stack !== undefined ? [r.stack] : []),
    r.name,
    redactUrlPasswords(r.url),
    r.status !== undefined ? String(r.status) : "-",
    `${r.latencyMs} ms`,
    redactUrlPasswords(r.ok ? `ok${r.location ? ` (redirects to ${r.location}, not followed)` : ""}` : `FAIL: ${r.error}`),
  ]);
  const stackColumn = results.some((r) => r.stack !== undefined) || unread.length ? ["STACK"] : [];
  const lines = [formatTable([...stackColumn, "ENTRY", "URL", "STATUS", "LATENCY", "RESULT"], rows)];
  const failed = results.filter((r) => !r.ok).length;
  lines.push(
    "",
    `${results.length - failed} ok, ${failed} failed${unread.length ? `, ${unread.length} stack(s) not read: ${unread.map((u) => u.stack).join(", ")}` : ""}`,
  );
  if (results.some((r) => r.url.startsWith("https:"))) {
    lines.push("https: certificates are not verified (the dashboards use self-signed ones): this checks that the UI answers, not who answers");
  }
  return lines.join("\n");
}
