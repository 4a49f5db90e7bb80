import * as path from "node:path";
import { parseArgs } from "node:util";
import { defaultContractPath, loadContractFile } from "../../src/adapters/contract-file";
import { LiveClusterReader } from "../../src/adapters/kube-live";
import type { Contract } from "../../src/core/contract/schema";
import type { ClusterReader } from "../../src/core/kube/cluster";
import { type ListenAddress, type PortalOptions, parseListen, startPortal } from "../../src/portal/server";
import type { Command } from "../context";
import { usageError } from "../context";
import { EXIT } from "../exit";
import { connectCluster, openStack } from "../stack";

const USAGE = "exposure portal [--stack NAME] [--listen 127.0.0.1:PORT] [--contract FILE]";
export const DEFAULT_LISTEN = "127.0.0.1:8080";

/**
 * Serves the portal on the operator's machine: the page the cluster serves, read through the
 * stack's kube context (or the current context without --stack). Runs until SIGINT/SIGTERM.
 */
export const portalCommand: Command = async (argv, ctx) => {
  let values: { stack?: string; listen?: string; contract?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        stack: { type: "string", short: "s" },
        listen: { type: "string", default: DEFAULT_LISTEN },
        contract: { type: "string" },
      },
    }));
  } catch (err) {
    throw usageError((err as Error).message, USAGE);
  }
  let listen: ListenAddress;
  try {
    listen = parseListen(values.listen ?? DEFAULT_LISTEN);
  } catch (err) {
    throw usageError((err as Error).message, USAGE);
  }

  let source: Pick<PortalOptions, "contract" | "contractLabel" | "selected" | "pinnedAddress" | "stack">;
  let cluster: ClusterReader;
  if (values.stack) {
    const opened = openStack(ctx, values.stack, values.contract ? path.resolve(values.contract) : undefined);
    source = {
      contract: opened.contract,
      contractLabel: opened.contractFile,
      selected: opened.selected,
      stack: opened.stack,
      ...(opened.settings.nodeAddress ? { pinnedAddress: opened.settings.nodeAddress } : {}),
    };
    cluster = await connectCluster(opened);
  } else {
    // No stack: every exposed entry of the contract, through the current kube context.
    const file = values.contract ? path.resolve(values.contract) : defaultContractPath(ctx.projectDir);
    const label = path.relative(process.cwd(), file) || file;
    const contract: Contract = loadContractFile(file, label);
    source = { contract, contractLabel: label, selected: "all" };
    cluster = await LiveClusterReader.connect({});
  }

  const portal = await startPortal({ ...source, cluster, log: (line) => ctx.stderr(`portal: ${line}`) }, listen);
  ctx.stdout(`portal: ${portal.url} (cluster: ${cluster.source}${source.stack ? `, stack ${source.stack}` : ""}); Ctrl-C to stop`);
  if (!isLoopback(listen.host)) {
    ctx.stderr(`portal: listening on ${listen.host}: anyone who reaches this machine can read the cluster's URLs and verdicts through your credentials`);
  }

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (s: NodeJS.Signals) => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve(s);
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  await portal.close();
  ctx.stdout(`portal: stopped (${signal})`);
  return EXIT.OK;
};

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}
