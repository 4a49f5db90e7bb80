import * as fs from "node:fs";
import * as path from "node:path";
import { defaultContractPath, loadContractFile } from "../../src/adapters/contract-file";
import { LiveClusterReader } from "../../src/adapters/kube-live";
import { UserError } from "../../src/core/errors";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { PortalDocument } from "../../src/core/json-api";
import type { PublishedEndpoints } from "../../src/core/observe";
import { publishedFromOutputs } from "../../src/core/published";
import { type PortalOptions, parseListen, startPortal } from "../../src/portal/server";
import { type Command, type CommandContext, packageVersion } from "../context";
import { usageError, usageOf } from "../flags";
import { eachStack, stacksFlag, worstExit } from "../operator";
import { SPECS } from "../specs";
import { connectCluster, openStack, readPublished, readStackOutputs, sayUnavailable } from "../stack";

const SPEC = SPECS.portal;
/** Serves the cluster's portal page on the operator's machine, through the stack's kube context (or the current one), until SIGINT/SIGTERM. */
export const command: Command<"portal"> = async ({ values }, ctx) => {
  const listen = usageOf(SPEC, () => parseListen(values.listen));

  const stacks = stacksFlag(values, ctx.projectDir, SPEC);
  if (values.outputs && stacks.length !== 1)
    throw usageError(SPEC, `--outputs ${stacks.length ? "goes with one --stack" : "needs --stack"} (the outputs are a stack's)`);
  const sourceOf = async (stack: string): Promise<PortalOptions> => {
    const opened = openStack({ projectDir: ctx.projectDir, stack, contract: values.contract });
    return {
      contract: opened.contract,
      contractLabel: opened.contractFile,
      selected: opened.selected,
      stack: opened.stack,
      nodeAddress: opened.settings.nodeAddress,
      readPublished: await publishedReader(ctx, opened.stack, values.outputs),
      audit: { allowlist: opened.settings.allowlist },
      cluster: await connectCluster(opened),
    };
  };
  // status's rule (eachStack): one stack alone fails fast; of several, one that cannot be opened is told on its own line, and its section and
  // /metrics show why as for a cluster that is down (every read of it fails with that cause); the others are served. None readable: nothing to serve.
  let sources: PortalOptions[];
  if (stacks.length > 1) {
    const { reports, failed } = await eachStack(stacks, ctx.stderr, "exposure portal", sourceOf);
    if (reports.length === 0) throw new UserError("no stack could be read (each one's cause is above)", worstExit(failed.map((f) => f.exitCode)));
    // The stacks not read come last: their sections after the served ones.
    sources = [
      ...reports,
      ...failed.map(({ stack, error }) => ({
        contract: { version: 1 as const, endpoints: [] },
        selected: [],
        stack,
        cluster: { source: `Pulumi.${stack}.yaml (not opened)`, connect: () => Promise.reject(new UserError(error)) },
      })),
    ];
  } else sources = await Promise.all(stacks.map(sourceOf));
  if (sources.length === 0) {
    // No stack: every exposed entry of the contract, through the current kube context.
    const file = values.contract ? path.resolve(values.contract) : defaultContractPath(ctx.projectDir);
    const label = path.relative(process.cwd(), file) || file;
    sources.push({ contract: loadContractFile(file, label), contractLabel: label, selected: "all", cluster: await LiveClusterReader.connect({}) });
  }
  const log = (line: string) => ctx.stderr(`portal: ${line}`);
  const [source, ...more] = sources.map((s) => ({ ...s, version: packageVersion(), log })) as [PortalOptions, ...PortalOptions[]];
  const portal = await startPortal(source, listen, more);
  const cluster = source.cluster;
  if (values.json) {
    // One line: a script reads the address as soon as it is printed.
    const stacks = sources.map((s) => ({ stack: s.stack ?? "", source: s.cluster.source }));
    const stack = more.length ? { stacks } : source.stack ? { stack: source.stack } : {};
    ctx.stdout(JSON.stringify({ apiVersion: JSON_API_VERSION, kind: "Portal", url: portal.url, source: cluster.source, ...stack } satisfies PortalDocument));
  } else if (more.length) ctx.stdout(`portal: ${portal.url} (${sources.map((s) => `stack ${s.stack}: ${s.cluster.source}`).join("; ")}); Ctrl-C to stop`);
  else ctx.stdout(`portal: ${portal.url} (cluster: ${cluster.source}${source.stack ? `, stack ${source.stack}` : ""}); Ctrl-C to stop`);
  if (!isLoopback(listen.host))
    ctx.stderr(`portal: listening on ${listen.host}: anyone who reaches this machine can read the cluster's URLs and verdicts through your credentials`);

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (s: NodeJS.Signals) => {
      for (const name of ["SIGINT", "SIGTERM"]) process.off(name, onSignal);
      resolve(s);
    };
    for (const name of ["SIGINT", "SIGTERM"]) process.on(name, onSignal);
  });
  await portal.close();
  // A script reading --json gets exactly one document; people get the goodbye.
  (values.json ? ctx.stderr : ctx.stdout)(`portal: stopped (${signal})`);
  return EXIT.OK;
};

const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\./.test(host);

/** What the last `up` published, for verdicts as `status`'s: --outputs read with every cluster read; the Pulumi CLI at most every 30 s, a failure said once. */
export async function publishedReader(ctx: CommandContext, stack: string, outputsFile: string | undefined, readOutputs = readStackOutputs) {
  if (outputsFile) {
    // Parsed again only when the file changed (inode, size or times): a cluster read costs a stat.
    let parsed: { stamp: string; value: Promise<PublishedEndpoints> } | undefined;
    const read = () => {
      const s = fs.statSync(outputsFile, { throwIfNoEntry: false });
      const stamp = s ? `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}` : "";
      if (!stamp || parsed?.stamp !== stamp) parsed = { stamp, value: readOutputs(ctx, stack, outputsFile).then((o) => publishedFromOutputs(o, outputsFile)) };
      return parsed.value;
    };
    await read();
    return read;
  }
  let last: { at: number; value: Promise<PublishedEndpoints | undefined> } | undefined;
  let said = false;
  return (opts: { fresh?: boolean } = {}) => {
    const now = Date.now();
    // The Pulumi CLI takes a second or two: asked again at most every 30 s.
    if (last && now - last.at < 30_000 && !opts.fresh) return last.value;
    const value = readPublished(ctx, stack, undefined, readOutputs).then((published) => {
      if (published.source.from === "pulumi" || published.source.from === "file") return published.endpoints;
      if (!said) sayUnavailable(ctx, "portal", published, 'the "changed since the last up" checks are skipped');
      said = true;
      // No stack in the backend asked proves nothing was created (nothing is ours); without the outputs, only names are checked.
      return published.source.from === "no-stack" ? {} : undefined;
    });
    last = { at: now, value };
    return value;
  };
}
