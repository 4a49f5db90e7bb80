// Entry point of the portal in the cluster: bundled by src/adapters/portal-bundle.ts into one plain JS file that a stock Node.js image runs. Configuration
// comes from the environment set by components/portal.ts (names in PORTAL_ENV).
import * as fs from "node:fs";
import * as z from "zod/mini";
import { FILE_LIMITS, readBoundedText } from "../adapters/bounded-file";
import { loadContractFile } from "../adapters/contract-file";
import { LiveClusterReader } from "../adapters/kube-live";
import { dnsLabel, entryName } from "../core/contract/schema";
import { parseJson, UserError } from "../core/errors";
import { field } from "../core/exposure-model";
import { EXIT } from "../core/findings";
import type { PublishedEndpoints } from "../core/observe";
import { PORTAL_APP_DIR, PORTAL_CONTAINER_PORT, PORTAL_ENV, PORTAL_FILES } from "../core/portal/spec";
import type { RemoteCluster } from "../core/portal/view";
import { parsePublishedEndpoints } from "../core/published";
import { type PortalCluster, parseAllowlist, portalClusterSchema } from "../core/settings";
import { parseYamlBounded, SMALL_YAML_VALUES } from "../core/yaml";
import { parseListen, startPortal } from "./server";

export function parseEntries(raw: string | undefined): "all" | string[] {
  if (!raw || raw === "all" || raw === '"all"') return "all";
  const message = `${PORTAL_ENV.entries} must be "all" or a JSON list of entry names, not '${raw}'`;
  const value = parseJson(raw, message);
  if (!Array.isArray(value) || !value.every((v) => entryName.safeParse(v).success)) throw new UserError(message);
  return value as string[];
}

/** What the last `up` published (PORTAL_PUBLISHED); undefined before the first `up` finishes: only names are checked. */
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

const clustersEnv = z.strictObject({ namespace: dnsLabel("namespace"), clusters: z.array(portalClusterSchema) });
const decoded = (base64: string) => Buffer.from(base64, "base64").toString("utf8").trim();

/** PORTAL_CLUSTERS: the other clusters (`ui-exposure:portal.clusters`) and the namespace of their Secrets, as JSON; unset: none. */
export function parseClustersEnv(raw: string | undefined): z.infer<typeof clustersEnv> {
  const message = `${PORTAL_ENV.clusters} must be {"namespace": ..., "clusters": [{"name": ..., "secret": ...}]} as up sets it`;
  const parsed = raw ? clustersEnv.safeParse(parseJson(raw, message)) : { success: true as const, data: { namespace: "", clusters: [] } };
  if (!parsed.success) throw new UserError(`${message} (${parsed.error.issues[0]?.message ?? "invalid"})`);
  return parsed.data;
}

/** A cluster Secret's credential as a kubeconfig: key `kubeconfig` (not one line: that would be a file of the pod), or `server`, `token` and `ca.crt`. */
export function secretKubeconfig(data: Readonly<Record<string, string>> = {}, where: string): string {
  const { kubeconfig, server, token, "ca.crt": ca } = data;
  if (kubeconfig !== undefined && (decoded(kubeconfig).includes("\n") || decoded(kubeconfig).startsWith("{"))) {
    // A credential plugin would run a command in the portal's pod: refused (client-node would run it).
    const parsed = parseYamlBounded(decoded(kubeconfig), { maxValues: SMALL_YAML_VALUES }, { single: true });
    const users: unknown = "docs" in parsed ? parsed.docs[0]?.toJS()?.users : undefined;
    const plugin = Array.isArray(users) ? users.findIndex((u) => ["exec", "auth-provider"].some((k) => field(field(u, "user"), k) !== undefined)) : -1;
    if (plugin >= 0)
      throw new UserError(
        `${where}: key kubeconfig gets its credential from a command or an auth provider (users[${plugin}].user.exec or auth-provider): give a token`,
      );
    return decoded(kubeconfig);
  }
  if (kubeconfig !== undefined) throw new UserError(`${where}: key kubeconfig does not hold a kubeconfig (one line): put the whole file there`);
  // Key names only, never a value.
  if (!server || !token)
    throw new UserError(
      `${where} holds neither key kubeconfig nor keys server and token (its keys: ${Object.keys(data).sort().join(", ") || "none"}); see docs/portal.md`,
    );
  const cluster = { server: decoded(server), ...(ca ? { "certificate-authority-data": ca } : {}) };
  const c = "c";
  return JSON.stringify({
    clusters: [{ name: c, cluster }],
    users: [{ name: c, user: { token: decoded(token) } }],
    contexts: [{ name: c, context: { cluster: c, user: c } }],
    "current-context": c,
  });
}

/** Another cluster, through its Secret read again at each round (a rotated credential needs no restart); a failure names the Secret, its values cut out. */
export function secretCluster(own: Pick<LiveClusterReader, "getSecret">, namespace: string, cluster: PortalCluster): RemoteCluster {
  const where = `Secret ${namespace}/${cluster.secret}`;
  const connect = async () => {
    const secret = await own.getSecret(namespace, cluster.secret);
    if (!secret)
      throw new UserError(`${where} does not exist: create it with the other cluster's kubeconfig, or its server, token and ca.crt (docs/portal.md)`);
    const values = Object.values(secret.data ?? {}).flatMap((v) => [v, ...decoded(v).split("\n")].map((l) => l.trim()).filter((l) => l.length >= 4));
    try {
      return await LiveClusterReader.connect({
        kubeconfig: secretKubeconfig(secret.data, where),
        name: cluster.name,
        via: `cluster ${cluster.name} through ${where}`,
      });
    } catch (err) {
      const message = err instanceof UserError ? err.message : `${where}: ${(err as Error).message}`;
      throw new UserError(values.reduce((m, v) => m.replaceAll(v, "<from the Secret>"), message));
    }
  };
  return { source: `cluster ${cluster.name} (${where})`, name: cluster.name, connect };
}

export async function runInCluster(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const contractFile = env[PORTAL_ENV.contract] ?? `${PORTAL_APP_DIR}/${PORTAL_FILES.contract}`;
  const contract = loadContractFile(contractFile);
  const cluster = await LiveClusterReader.connect(env[PORTAL_ENV.inCluster] === "1" ? { inCluster: true, name: env[PORTAL_ENV.cluster] } : {});
  const publishedFile = env[PORTAL_ENV.published];
  const others = parseClustersEnv(env[PORTAL_ENV.clusters]);
  const common = {
    contract,
    selected: parseEntries(env[PORTAL_ENV.entries]),
    contractLabel: contractFile,
    version: env[PORTAL_ENV.version] || undefined,
    log: (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`),
  };
  // Another cluster's section judges this stack's contract and selection there, by names (what its own up published is not readable from here).
  const portal = await startPortal(
    {
      ...common,
      cluster,
      nodeAddress: env[PORTAL_ENV.nodeAddress] || undefined,
      stack: env[PORTAL_ENV.stack] || undefined,
      readPublished: publishedFile ? async () => readPublishedFile(publishedFile) : undefined,
      audit: parseAllowlistEnv(env[PORTAL_ENV.allowlist]),
    },
    parseListen(env[PORTAL_ENV.listen] ?? `0.0.0.0:${PORTAL_CONTAINER_PORT}`),
    others.clusters.map((c) => ({ ...common, cluster: secretCluster(cluster, others.namespace, c), stack: c.name })),
  );
  process.stdout.write(`portal listening on ${portal.url} (cluster: ${cluster.source})\n`);
  // Kubernetes sends SIGTERM on rollout: finish in-flight loads, then exit 0.
  const stop = () => portal.close().then(() => process.exit(EXIT.OK));
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
