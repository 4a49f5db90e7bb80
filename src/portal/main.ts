// Entry point of the portal in the cluster: bundled by src/adapters/portal-bundle.ts into one plain JS
// file that a stock Node.js image runs (`node /app/portal.js`). Configuration comes from the
// environment set by components/portal.ts (names in PORTAL_ENV).
import * as fs from "node:fs";
import { FILE_LIMITS, readBoundedText } from "../adapters/bounded-file";
import { loadContractFile } from "../adapters/contract-file";
import { LiveClusterReader } from "../adapters/kube-live";
import { entryName } from "../core/contract/schema";
import { UserError } from "../core/errors";
import { EXIT } from "../core/findings";
import type { PublishedEndpoints } from "../core/observe";
import { PORTAL_APP_DIR, PORTAL_CONTAINER_PORT, PORTAL_ENV, PORTAL_FILES } from "../core/portal/spec";
import { parsePublishedEndpoints } from "../core/published";
import { parseAllowlist } from "../core/settings";
import { parseListen, startPortal } from "./server";

function parseJson(text: string, message: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UserError(message);
  }
}

export function parseEntries(raw: string | undefined): "all" | string[] {
  if (!raw || raw === "all" || raw === '"all"') return "all";
  const message = `${PORTAL_ENV.entries} must be "all" or a JSON list of entry names, not '${raw}'`;
  const value = parseJson(raw, message);
  if (!Array.isArray(value) || !value.every((v) => entryName.safeParse(v).success)) throw new UserError(message);
  return value as string[];
}

/**
 * What the last `up` published, from the file of the ConfigMap it writes (PORTAL_PUBLISHED);
 * undefined while it does not exist (before the first `up` finishes): only names are checked.
 */
export function readPublishedFile(file: string): PublishedEndpoints | undefined {
  if (!fs.existsSync(file)) return undefined;
  const text = readBoundedText(file, "published outputs", FILE_LIMITS.outputs);
  return parsePublishedEndpoints(parseJson(text, `published outputs ${file}: not JSON`), `published outputs ${file}`);
}

/** PORTAL_ALLOWLIST: the stack's allowlist as JSON (monitoring on: the portal audits for /metrics); unset: no audit. */
export function parseAllowlistEnv(raw: string | undefined) {
  if (!raw) return undefined;
  const value = parseJson(raw, `${PORTAL_ENV.allowlist} must be the stack's allowlist as JSON ({"services": [...], "hostPorts": [...]})`);
  return { allowlist: parseAllowlist(value, PORTAL_ENV.allowlist) };
}

export async function runInCluster(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const contractFile = env[PORTAL_ENV.contract] ?? `${PORTAL_APP_DIR}/${PORTAL_FILES.contract}`;
  const contract = loadContractFile(contractFile);
  const cluster = await LiveClusterReader.connect(env[PORTAL_ENV.inCluster] === "1" ? { inCluster: true, name: env[PORTAL_ENV.cluster] } : {});
  const publishedFile = env[PORTAL_ENV.published];
  const portal = await startPortal(
    {
      contract,
      cluster,
      selected: parseEntries(env[PORTAL_ENV.entries]),
      nodeAddress: env[PORTAL_ENV.nodeAddress] || undefined,
      stack: env[PORTAL_ENV.stack] || undefined,
      readPublished: publishedFile ? async () => readPublishedFile(publishedFile) : undefined,
      contractLabel: contractFile,
      audit: parseAllowlistEnv(env[PORTAL_ENV.allowlist]),
      version: env[PORTAL_ENV.version] || undefined,
      log: (line) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
    },
    parseListen(env[PORTAL_ENV.listen] ?? `0.0.0.0:${PORTAL_CONTAINER_PORT}`),
  );
  process.stdout.write(`portal listening on ${portal.url} (cluster: ${cluster.source})\n`);
  // Kubernetes sends SIGTERM on rollout: finish in-flight loads, then exit 0.
  const stop = () => {
    portal.close().then(() => process.exit(EXIT.OK));
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

// Run when executed (the bundle, or `tsx src/portal/main.ts`), not when imported by a test.
if (require.main === module) {
  runInCluster().catch((err: unknown) => {
    process.stderr.write(`portal: ${err instanceof UserError ? err.message : ((err as Error).stack ?? String(err))}\n`);
    process.exit(EXIT.ERROR);
  });
}
