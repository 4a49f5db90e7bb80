/**
 * The live Helm release of Cilium, as `helm get values` reads it: Helm keeps each revision in a Secret `sh.helm.release.v1.<release>.v<N>` of the release's
 * namespace, labelled owner=helm, name=<release>, status, version. Its `data.release` is base64 (the API's) of base64 of gzip of the release JSON, whose
 * `config` holds the user-supplied values, `chart.metadata.version` the chart version and `chart.values` the chart's defaults. The record comes from the
 * cluster: it is untrusted, decompressed within a bound, and anything malformed is one problem, never an exception.
 */
import { type Finding, failed, finding, ok, type Result } from "../findings";
import type { ClusterReader } from "../kube/cluster";
import type { Secret } from "../kube/types";

export type Values = Record<string, unknown>;

/** What the program reads of the live release. */
export interface LiveRelease {
  /** The Secret it was read from, for messages ("kube-system/sh.helm.release.v1.cilium.v3"). */
  record: string;
  revision: number;
  chartVersion: string;
  /** User-supplied values (`helm get values`). */
  config: Values;
  /** The live chart's defaults (`chart.values`). */
  defaults: Values;
}

/** Decompresses gzip within `maxBytes` of output; throws an Error saying why it could not (too large, not gzip). Given by an adapter (node:zlib). */
export type Inflate = (gzip: Uint8Array, maxBytes: number) => Uint8Array;

/** Most a release JSON may take once decompressed (Cilium's, chart templates included, is a few MiB). */
export const RELEASE_JSON_MAX_BYTES = 32 * 2 ** 20;

/** The labels Helm gives the record of a deployed revision (its storage driver queries the same). */
export const releaseLabels = (releaseName: string) => ({ owner: "helm", name: releaseName, status: "deployed" });

/** The command that puts the records into a `render` snapshot. */
export const releaseSnapshotCommand = (namespace: string, releaseName: string) =>
  `kubectl -n ${namespace} get secret -l owner=helm,name=${releaseName} -o yaml`;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const isMapping = (v: unknown): v is Values => v !== null && typeof v === "object" && !Array.isArray(v);
const GZIP_MAGIC = [0x1f, 0x8b, 0x08];

function fromBase64(text: string): Uint8Array | undefined {
  const compact = text.replace(/\s+/g, "");
  return BASE64.test(compact) ? Uint8Array.from(Buffer.from(compact, "base64")) : undefined;
}

/** One Secret's release record, decoded; `where` names it in the problem. */
export function decodeReleaseRecord(secret: Secret, inflate: Inflate): Result<LiveRelease> {
  const where = `${secret.metadata.namespace ?? ""}/${secret.metadata.name}`;
  const bad = (why: string): Result<LiveRelease> =>
    failed([finding("cilium-release-record", "error", where, `cilium (l4): the Helm release record Secret ${where} cannot be read: ${why}`)]);
  const data = secret.data?.release;
  if (typeof data !== "string") return bad("it has no data.release");
  const inner = fromBase64(data);
  if (!inner) return bad("data.release is not base64");
  const packed = fromBase64(Buffer.from(inner).toString("latin1"));
  if (!packed) return bad("data.release does not hold base64 text (a Helm release record is base64 of gzip)");
  let json: Uint8Array = packed;
  if (GZIP_MAGIC.every((b, i) => packed[i] === b)) {
    try {
      json = inflate(packed, RELEASE_JSON_MAX_BYTES);
    } catch (err) {
      return bad((err as Error).message);
    }
  } else if (packed.length > RELEASE_JSON_MAX_BYTES) return bad(`larger than ${RELEASE_JSON_MAX_BYTES / 2 ** 20} MiB`);
  let release: unknown;
  try {
    release = JSON.parse(Buffer.from(json).toString("utf8"));
  } catch {
    return bad("the release is not JSON");
  }
  if (!isMapping(release)) return bad("the release is not a JSON object");
  const chart = release.chart;
  const metadata = isMapping(chart) ? chart.metadata : undefined;
  const chartVersion = isMapping(metadata) ? metadata.version : undefined;
  if (typeof chartVersion !== "string" || chartVersion === "") return bad("the release has no chart.metadata.version");
  const config = release.config ?? {};
  if (!isMapping(config)) return bad("its config (the user-supplied values) is not a mapping");
  const defaults = (isMapping(chart) ? chart.values : undefined) ?? {};
  if (!isMapping(defaults)) return bad("its chart.values (the chart defaults) is not a mapping");
  const revision = Number(secret.metadata.labels?.version ?? release.version);
  return ok({ record: where, revision: Number.isSafeInteger(revision) ? revision : 0, chartVersion, config, defaults });
}

/** The deployed revision among the records listed (the highest `version` label whose status is deployed), decoded; undefined when there is none. */
export function liveReleaseOf(secrets: readonly Secret[], releaseName: string, inflate: Inflate): Result<LiveRelease | undefined> {
  const revision = (s: Secret) => Number(s.metadata.labels?.version);
  const deployed = secrets
    .filter((s) => {
      const l = s.metadata.labels ?? {};
      return l.owner === "helm" && l.name === releaseName && l.status === "deployed" && Number.isSafeInteger(revision(s));
    })
    .sort((a, b) => revision(b) - revision(a));
  const latest = deployed[0];
  if (!latest) return ok(undefined);
  return decodeReleaseRecord(latest, inflate);
}

/** Reads the deployed revision of a release from the cluster (one list call, only that release's deployed records). */
export async function readLiveRelease(
  cluster: Pick<ClusterReader, "listSecrets">,
  release: { namespace: string; releaseName: string },
  inflate: Inflate,
): Promise<Result<LiveRelease | undefined>> {
  const secrets = await cluster.listSecrets(release.namespace, { labels: releaseLabels(release.releaseName) });
  return liveReleaseOf(secrets, release.releaseName, inflate);
}

/** The messages of a failed result (the Cilium plan speaks in strings). */
export const messages = (problems: readonly Finding[]) => problems.map((p) => p.message);
