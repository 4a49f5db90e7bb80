// The live Helm release, as `helm get values` reads it: each revision is a Secret `sh.helm.release.v1.<release>.v<N>` (labels owner=helm, name, status,
// version) whose `data.release` is base64 (the API's) of base64 of gzip of the release JSON: `config` = user-supplied values, `chart.metadata.version`,
// `chart.values` = the chart's defaults. Untrusted: decompressed within a bound, anything malformed is one problem, never an exception.
import { isObject as isMapping } from "../exposure-rules";
import { failed, finding, ok, type Result } from "../findings";
import type { ClusterReader } from "../kube/cluster";
import type { Secret } from "../kube/types";

type Values = Record<string, unknown>;
export interface LiveRelease {
  /** The Secret read, for messages (`kube-system/sh.helm.release.v1.cilium.v3`). */
  record: string;
  revision: number;
  chartVersion: string;
  config: Values;
  defaults: Values;
}
/** gzip decompression stopping at `maxBytes` of output, throwing an Error that says why (an adapter's: node:zlib). */
export type Inflate = (gzip: Uint8Array, maxBytes: number) => Uint8Array;
/** Most a release JSON may take decompressed (Cilium's, chart templates included, takes a few MiB). */
export const RELEASE_JSON_MAX_BYTES = 32 * 2 ** 20;
export const releaseSnapshotCommand = (namespace: string, name: string) => `kubectl -n ${namespace} get secret -l owner=helm,name=${name} -o yaml`;

export const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const base64 = (text: string) => (BASE64.test(text.replace(/\s+/g, "")) ? Buffer.from(text.replace(/\s+/g, ""), "base64") : undefined);

/** How deep a release record may nest (Cilium's values are under 10 levels; the record adds a few). */
const MAX_DEPTH = 64;

/** Whether `v` nests mappings or lists deeper than `limit` (walked without recursion: the input is untrusted). */
function deeperThan(v: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [node, depth] = next;
    if (node === null || typeof node !== "object") continue;
    if (depth >= limit) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

/** One record Secret, decoded. */
export function decodeReleaseRecord(secret: Secret, inflate: Inflate): Result<LiveRelease> {
  const record = `${secret.metadata.namespace ?? ""}/${secret.metadata.name}`;
  const bad = (why: string): Result<LiveRelease> =>
    failed([finding("cilium-release-record", "error", record, `cilium (l4): the Helm release record Secret ${record} cannot be read: ${why}`)]);
  const data = secret.data?.release;
  if (typeof data !== "string") return bad("it has no data.release");
  const inner = base64(data);
  if (!inner) return bad("data.release is not base64");
  const packed = base64(inner.toString("latin1"));
  if (!packed) return bad("data.release does not hold base64 text (a Helm release record is base64 of gzip)");
  let json: Uint8Array = packed;
  try {
    // Helm reads a record without the gzip magic as plain JSON (records of old versions).
    if (packed[0] === 0x1f && packed[1] === 0x8b && packed[2] === 0x08) json = inflate(packed, RELEASE_JSON_MAX_BYTES);
  } catch (err) {
    return bad((err as Error).message);
  }
  let release: unknown;
  try {
    release = JSON.parse(Buffer.from(json).toString("utf8"));
  } catch {
    return bad("the release is not JSON");
  }
  if (!isMapping(release)) return bad("the release is not a JSON object");
  // Values deeper than any chart's would overflow the stack of whatever walks them next (the engine's serialisation).
  if (deeperThan(release, MAX_DEPTH)) return bad(`it nests deeper than ${MAX_DEPTH} levels, which no chart's values do`);
  const chart = isMapping(release.chart) ? release.chart : {};
  const chartVersion = isMapping(chart.metadata) ? chart.metadata.version : undefined;
  if (typeof chartVersion !== "string" || chartVersion === "") return bad("the release has no chart.metadata.version");
  const [config, defaults] = [release.config ?? {}, chart.values ?? {}];
  if (!isMapping(config)) return bad("its config (the user-supplied values) is not a mapping");
  if (!isMapping(defaults)) return bad("its chart.values (the chart defaults) is not a mapping");
  return ok({ record, revision: Number(secret.metadata.labels?.version), chartVersion, config, defaults });
}

/** The statuses of a revision a Helm operation is still writing (`helm upgrade` refuses to start another meanwhile). */
const PENDING = ["pending-install", "pending-upgrade", "pending-rollback"];

/** The highest deployed revision (undefined: none); a pending one above it (running, or died midway) is refused now, not after the removal order ran. */
export function liveReleaseOf(secrets: readonly Secret[], name: string, inflate: Inflate): Result<LiveRelease | undefined> {
  const revision = (s: Secret) => Number(s.metadata.labels?.version);
  const ofRelease = secrets
    .filter((s) => s.metadata.labels?.owner === "helm" && s.metadata.labels.name === name && revision(s) >= 0)
    .sort((a, b) => revision(b) - revision(a));
  const latest = ofRelease.find((s) => s.metadata.labels?.status === "deployed");
  const pending = ofRelease.find((s) => PENDING.includes(s.metadata.labels?.status ?? "") && (!latest || revision(s) > revision(latest)));
  if (pending) {
    const record = `${pending.metadata.namespace ?? ""}/${pending.metadata.name}`;
    return failed([
      finding(
        "cilium-release-pending",
        "error",
        record,
        `cilium (l4): release ${name} has revision ${revision(pending)} ${pending.metadata.labels?.status} (${record}): a Helm operation is in progress, or died midway, and the upgrade would be refused; wait for it (helm -n ${pending.metadata.namespace} history ${name}), or roll back to the deployed revision (helm -n ${pending.metadata.namespace} rollback ${name}), then run up again`,
      ),
    ]);
  }
  return latest ? decodeReleaseRecord(latest, inflate) : ok(undefined);
}

/** The deployed revision of a release and any pending one, read in its namespace with its labels (one list call). */
export async function readLiveRelease(cluster: Pick<ClusterReader, "listSecrets">, release: { namespace: string; releaseName: string }, inflate: Inflate) {
  const labels = { owner: "helm", name: release.releaseName, status: ["deployed", ...PENDING] };
  return liveReleaseOf(await cluster.listSecrets(release.namespace, { labels }), release.releaseName, inflate);
}
