import * as fs from "node:fs";
import * as path from "node:path";
import { FILE_LIMITS, readBoundedText } from "../../src/adapters/bounded-file";
import { assertGitIgnores, assertReplaceable, defaultEnvFile, ENV_FILE_HEADER, writePrivateFile } from "../../src/adapters/env-file";
import { DEFAULT_FORWARD_BASE_PORT, ensureForwards, type ForwardOutcome, forwardStateDir, limaSshConfig, stopForwards } from "../../src/adapters/ssh-forward";
import {
  type AccessEndpoint,
  accessEndpoints,
  accessEntries,
  type CredentialView,
  credentialNamespaces,
  type NamespaceSecrets,
  type RenderedEnv,
  readCredentials,
  renderEnvTemplate,
  resolveReference,
} from "../../src/core/access";
import { UserError } from "../../src/core/errors";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import { checkLimaInstanceName } from "../../src/core/inputs";
import type { AccessDocument, AccessStopDocument, StoppedForwardJson as StoppedForward } from "../../src/core/json-api";
import type { ClusterReader } from "../../src/core/kube/cluster";
import type { Observation } from "../../src/core/observe";
import { printableValue } from "../../src/core/text";
import { type Command, type CommandContext, printJson } from "../context";
import { usageError, usageOf } from "../flags";
import { formatTable, type OperatorDeps, stackHeader, timeoutFlag } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, type OpenStack, observeOpened, openStack, readStackOutputs, sayUnavailable } from "../stack";

const SPEC = SPECS.access;

/** The versioned template of the data repository's .env (no secret in it). */
const ENV_TEMPLATE = path.join("contract", "atlas.env.cluster.example");

export interface AccessDeps extends OperatorDeps {
  /** Whether stdout is a terminal: passwords are shown only there (or with --show-secrets). */
  isTerminal: () => boolean;
  forwardBasePort: number;
  /** How long a new forward may take to open its port before it is reported as started. */
  forwardSettleMs: number;
}

/** `exposure access`: URLs and credentials on one screen, `.env.cluster.local`, and on the Lima bench SSH forwards (`--forward`, `--stop`). */
export function createAccessCommand({ connect = connectCluster, readOutputs = readStackOutputs, ...deps }: Partial<AccessDeps> = {}): Command<"access"> {
  return async ({ values }, ctx) => {
    if (!values.stack) throw usageError(SPEC, "--stack is required");
    if (values.forward && values.stop) throw usageError(SPEC, "--forward and --stop exclude each other");
    if (values.dotenv !== undefined && values["no-dotenv"]) throw usageError(SPEC, "--dotenv and --no-dotenv exclude each other");
    if (values.dotenv !== undefined && values.dotenv.trim() === "") throw usageError(SPEC, "--dotenv needs a file path");
    if (values["lima-instance"] !== undefined && !values.forward) throw usageError(SPEC, "--lima-instance goes with --forward");
    const stack = values.stack;
    const timeoutMs = timeoutFlag(values.timeout, SPEC);
    const opened = openStack({ projectDir: ctx.projectDir, stack: stack });
    const stateDir = forwardStateDir(stack, ctx.env);

    if (values.stop) {
      const stopped = await stopForwards(stateDir);
      if (values.json) printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "AccessStop", stack, stopped } satisfies AccessStopDocument);
      else ctx.stdout(formatStopped(stack, stopped));
      return EXIT.OK;
    }

    // Everything that can be refused without the cluster is checked first, before any forward starts.
    const envTarget = values["no-dotenv"] ? { skipped: "--no-dotenv" } : await checkEnvTarget(ctx, values.dotenv);
    const forwardSetup = values.forward ? forwardConfig(opened, values["lima-instance"], ctx) : undefined;

    // As in status: a URL (and its credentials in the .env) only for a Service proven this stack's by the last up's outputs.
    // Every entry's Services are read: those the stack does not publish are given by their in-cluster name.
    const read = { connect, readOutputs, timeoutMs, entries: opened.contract.endpoints, selected: opened.selected, outputsFlag: false };
    const { source, reader: cluster, cluster: observed, published, observation } = await observeOpened(ctx, opened, read);
    sayUnavailable(ctx, "exposure access", published, "Services are matched by name only");
    const entries = accessEntries(opened.contract, observation);
    const credentials = readCredentials(entries, await listSecretsByNamespace(cluster, credentialNamespaces(entries)));

    const { forwards, failures, retired } = forwardSetup
      ? await ensureForwards(forwardRequests(observation), {
          env: ctx.env,
          stateDir,
          ...forwardSetup,
          basePort: deps.forwardBasePort ?? DEFAULT_FORWARD_BASE_PORT,
          settleMs: deps.forwardSettleMs ?? 3000,
        })
      : { forwards: [], failures: [], retired: [] };
    const endpoints = accessEndpoints(opened.contract, observation, observed.services, new Map(forwards.map((f) => [f.entry, f.localUrl])));

    let env: Screen["env"];
    if ("file" in envTarget) {
      const template = readBoundedText(path.join(ctx.projectDir, ENV_TEMPLATE), "the .env template", FILE_LIMITS.envTemplate, EXIT.ERROR, ENV_TEMPLATE);
      const rendered = renderEnvTemplate(template, ENV_TEMPLATE, (ref) => resolveReference(ref, { contract: opened.contract, endpoints, credentials }), [
        ...ENV_FILE_HEADER.map((line) => (typeof line === "string" ? line : line(stack, ENV_TEMPLATE)).replace(/^# /, "")),
        ...(forwards.length ? ["URLs of exposed UIs point at the SSH forwards (127.0.0.1); rerun without --forward after --stop."] : []),
      ]);
      writePrivateFile(envTarget.file, rendered.text);
      env = { file: envTarget.file, rendered };
    } else env = envTarget;

    const view = new Set(observation.entries.map((o) => o.name));
    const screen = { stack, source, observation, endpoints: endpoints.filter((e) => view.has(e.name)), credentials, env, forwards, retired };
    if (values.json) printJson(ctx, accessJson(screen, failures));
    else ctx.stdout(formatAccess(screen, values["show-secrets"] || (deps.isTerminal?.() ?? process.stdout.isTTY === true)));
    for (const failure of failures) ctx.stderr(`exposure access: ${failure}`);
    if (failures.length) return EXIT.ERROR;
    // Everything readable is shown; a script still learns that a credential is missing.
    const unread = credentials.filter((c) => c.problem !== undefined);
    if (unread.length) {
      ctx.stderr(`exposure access: ${unread.length} credential(s) could not be read: ${unread.map((c) => `${c.label} (${c.secret})`).join(", ")}`);
      return EXIT.INCOMPLETE;
    }
    return EXIT.OK;
  };
}

export const command = createAccessCommand();

/** Where the .env goes, after checking it may be written there; or why it is skipped. */
async function checkEnvTarget(ctx: CommandContext, flag: string | undefined): Promise<{ file: string } | { skipped: string }> {
  const file = flag !== undefined ? path.resolve(flag) : defaultEnvFile(ctx.projectDir, ctx.env);
  const dir = path.dirname(file);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    // The default assumes the data repository sits next to this one; without it, say so and go on.
    if (flag === undefined && !ctx.env.EXPOSURE_ENV_FILE) return { skipped: `${dir} does not exist (pass --dotenv PATH)` };
    throw new UserError(`cannot write ${file}: folder ${dir} does not exist`);
  }
  // Git's own folder is not a work tree file git could ignore: credentials never go there.
  if (file.split(path.sep).includes(".git")) throw new UserError(`refusing to write ${file}: it is inside a .git folder; pass another --dotenv`);
  assertReplaceable(file);
  await assertGitIgnores(file, ctx.env);
  return { file };
}

/** The Lima instance behind the stack: --lima-instance, $LIMA_INSTANCE, or the `lima-<name>` kube context. */
function forwardConfig(opened: OpenStack, flag: string | undefined, ctx: CommandContext): { instance: string; sshConfig: string } {
  const context = opened.config["kubernetes:context"];
  const instance = flag ?? ctx.env.LIMA_INSTANCE ?? /^lima-(.+)$/s.exec(context ?? "")?.[1];
  if (!instance) {
    throw new UserError(
      `--forward needs the Lima instance of stack ${opened.stack}: pass --lima-instance NAME (its kube context '${printableValue(context ?? "(none)")}' is not lima-<name>)`,
    );
  }
  // Each source is named, so the message says what to change; the flag is a usage error.
  if (flag !== undefined) usageOf(SPEC, () => checkLimaInstanceName(flag, "--lima-instance"));
  else if (ctx.env.LIMA_INSTANCE !== undefined) checkLimaInstanceName(instance, "$LIMA_INSTANCE", EXIT.ERROR);
  else checkLimaInstanceName(instance, `the Lima instance of kube context 'lima-...' (stack ${opened.stack}; pass --lima-instance NAME)`, EXIT.ERROR);
  return { instance, sshConfig: limaSshConfig(instance, ctx.env) };
}

function forwardRequests(observation: Observation) {
  return observation.entries.flatMap((o) => {
    if (o.exposure === "none" || !o.url) return [];
    const target = new URL(o.url);
    return [{ entry: o.name, scheme: target.protocol.slice(0, -1), remoteHost: target.hostname.replace(/^\[|\]$/g, ""), remotePort: Number(target.port) }];
  });
}

/** One list per namespace holding a declared credential, never cluster-wide: a namespaced Role suffices, not a ClusterRole on all Secrets. */
async function listSecretsByNamespace(cluster: Pick<ClusterReader, "listSecrets">, namespaces: readonly string[]): Promise<Map<string, NamespaceSecrets>> {
  // A 403 in one namespace must not hide the other credentials; the message names no value.
  const failure = (err: unknown): NamespaceSecrets => {
    if (err instanceof UserError) return { error: err.message };
    throw err;
  };
  return new Map(await Promise.all(namespaces.map(async (ns) => [ns, await cluster.listSecrets(ns).catch(failure)] as const)));
}

/** What access found and did, for the screen and the --json document. */
interface Screen {
  stack: string;
  source: string;
  observation: Observation;
  endpoints: readonly AccessEndpoint[];
  credentials: readonly CredentialView[];
  env: { file: string; rendered: RenderedEnv } | { skipped: string };
  forwards: readonly ForwardOutcome[];
  /** Forwards ended because their entry has no URL any more. */
  retired: readonly StoppedForward[];
}

/** The one screen: UIs, in-cluster endpoints, credentials, what was written and started. */
function formatAccess(s: Screen, showSecrets: boolean): string {
  const lines = [stackHeader(s.stack, s.source, s.observation), ""];
  const uis = s.endpoints.filter((e) => e.exposed && e.reach !== "in-cluster");
  const note = (e: AccessEndpoint) => [e.forwardOf ? `SSH forward to ${e.forwardOf}` : "", e.problem ?? ""].filter(Boolean).join("; ");
  const row = (e: AccessEndpoint) => [e.name, e.url ?? "-", e.verdict ?? "-", note(e)];
  lines.push("UIS", formatTable(["ENTRY", "URL", "VERDICT", "NOTE"], uis.map(row)));
  const inCluster = s.endpoints.filter((e) => !uis.includes(e)).map((e) => [e.name, e.url ?? `- (${e.problem})`]);
  if (inCluster.length) lines.push("", "IN-CLUSTER (not exposed: addresses for code running in the cluster)", formatTable(["ENTRY", "ADDRESS"], inCluster));
  if (s.credentials.length) {
    const password = (c: CredentialView) => (c.password === undefined ? "-" : showSecrets ? c.password : "(hidden)");
    const rows = s.credentials.map((c) => [c.label, c.username ?? "-", password(c), c.problem ? `${c.secret}: ${c.problem}` : c.secret]);
    const header = `CREDENTIALS${showSecrets ? " (clear text, for this screen only: never paste it into a ticket or a log)" : ""}`;
    lines.push("", header, formatTable(["LABEL", "USERNAME", "PASSWORD", "SECRET"], rows));
    if (!showSecrets && s.credentials.some((c) => c.password !== undefined)) {
      lines.push("passwords hidden: stdout is not a terminal (pass --show-secrets to print them anyway)");
    }
  }
  lines.push("");
  if ("skipped" in s.env) lines.push(`.env: not written: ${s.env.skipped}`);
  else {
    const unresolved = s.env.rendered.unresolved;
    lines.push(
      `.env: wrote ${s.env.file} (0600) from ${ENV_TEMPLATE}${unresolved.length ? `; ${unresolved.length} left unset (commented out there, with the reason): ${unresolved.map((u) => u.variable).join(", ")}` : ""}`,
    );
  }
  if (s.forwards.length) {
    const counts = (["started", "running", "restarted"] as const).map((st) => `${s.forwards.filter((f) => f.state === st).length} ${st}`).join(", ");
    lines.push(`SSH forwards: ${counts}; end them with \`exposure access --stack ${s.stack} --stop\``);
  }
  if (s.retired.length) lines.push(`SSH forwards ended (no URL any more): ${s.retired.map((f) => f.entry).join(", ")}`);
  return lines.join("\n");
}

function formatStopped(stack: string, stopped: readonly StoppedForward[]): string {
  if (stopped.length === 0) return `stack ${stack}: no SSH forward to stop`;
  const result = (f: StoppedForward) => (f.state === "stopped" ? "stopped" : "was not running (stale pid file removed)");
  const rows = stopped.map((f) => [f.entry, String(f.pid), String(f.localPort), result(f)]);
  return `stack ${stack}: SSH forwards\n${formatTable(["ENTRY", "PID", "LOCAL PORT", "RESULT"], rows)}`;
}

/** The --json document. Passwords are wrapped as {secret: true, value} and the document says it holds secrets. */
function accessJson({ stack, source, observation, endpoints, credentials, env, forwards, retired }: Screen, failures: readonly string[]): AccessDocument {
  const containsSecrets = credentials.some((c) => c.password !== undefined);
  return {
    apiVersion: JSON_API_VERSION,
    kind: "Access",
    stack,
    source,
    ...(observation.node ? { node: observation.node } : {}),
    containsSecrets,
    ...(containsSecrets ? { warning: "credentials[].password.value are secrets in clear text: do not log, commit or paste this output" } : {}),
    endpoints,
    credentials: credentials.map(({ password, ...rest }) => ({ ...rest, ...(password !== undefined ? { password: { secret: true, value: password } } : {}) })),
    envFile: "skipped" in env ? { written: false, reason: env.skipped } : { written: true, path: env.file, mode: "0600", unresolved: env.rendered.unresolved },
    forwards: forwards.map(({ entry, pid, localPort, localUrl, remoteHost, remotePort, state }) => ({
      entry,
      pid,
      localUrl,
      localPort,
      target: `${remoteHost}:${remotePort}`,
      state,
    })),
    ...(retired.length ? { retiredForwards: retired } : {}),
    ...(failures.length ? { forwardFailures: failures } : {}),
    problems: observation.problems,
  };
}
