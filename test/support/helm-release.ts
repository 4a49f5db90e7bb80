// Helm release records as Helm's Secret driver writes them (helm/helm pkg/storage/driver/util.go: JSON, gzip, base64; the API base64s Secret data again),
// built with real gzip, for the tests of src/core/cilium/release.ts and the example snapshots.
import { gzipSync } from "node:zlib";
import type { Secret } from "../../src/core/kube/types";

export interface ReleaseFixture {
  name?: string;
  namespace?: string;
  revision?: number;
  status?: string;
  chartVersion?: string;
  config?: Record<string, unknown>;
  defaults?: Record<string, unknown>;
}

/** The release JSON of a record (only the fields the program reads, plus name/namespace/version/info). */
export function releaseJson(f: ReleaseFixture): Record<string, unknown> {
  const name = f.name ?? "cilium";
  return {
    name,
    namespace: f.namespace ?? "kube-system",
    version: f.revision ?? 1,
    info: { status: f.status ?? "deployed" },
    chart: { metadata: { name: "cilium", version: f.chartVersion ?? "1.18.12" }, values: f.defaults ?? { kubeProxyReplacement: "false" } },
    config: f.config ?? {},
  };
}

/** `data.release` as the API returns it, from the bytes Helm stores (normally base64 of gzip of the JSON). */
export const apiData = (helmBytes: Buffer) => Buffer.from(helmBytes.toString("base64"), "latin1").toString("base64");

/** A record Secret `sh.helm.release.v1.<name>.v<revision>`; `data` replaces the encoded release (for malformed records). */
export function releaseSecret(f: ReleaseFixture, data?: string): Secret {
  const name = f.name ?? "cilium";
  const revision = f.revision ?? 1;
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "helm.sh/release.v1",
    metadata: {
      name: `sh.helm.release.v1.${name}.v${revision}`,
      namespace: f.namespace ?? "kube-system",
      labels: { owner: "helm", name, status: f.status ?? "deployed", version: String(revision) },
    },
    data: { release: data ?? apiData(gzipSync(JSON.stringify(releaseJson(f)))) },
  } as Secret;
}
