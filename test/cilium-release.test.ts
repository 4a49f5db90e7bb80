// The live Helm release record (src/core/cilium/release.ts): decoded from real gzip, the deployed revision chosen, every malformed record one problem.
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { gunzipBounded } from "../src/adapters/gunzip";
import { decodeReleaseRecord, liveReleaseOf, RELEASE_JSON_MAX_BYTES, readLiveRelease } from "../src/core/cilium/release";
import { SnapshotReader } from "../src/core/kube/cluster";
import { apiData, releaseJson, releaseSecret } from "./support/helm-release";

const where = "kube-system/sh.helm.release.v1.cilium.v1";
const refused = (why: string, at = where) => ({
  ok: false,
  problems: [
    { code: "cilium-release-record", severity: "error", subject: at, message: `cilium (l4): the Helm release record Secret ${at} cannot be read: ${why}` },
  ],
});
const b64 = (text: string) => Buffer.from(text, "latin1").toString("base64");

describe("decoding a Helm release record", () => {
  it("reads the user-supplied values, the chart version and the chart defaults", () => {
    const secret = releaseSecret({
      revision: 4,
      chartVersion: "1.18.11",
      config: { bgpControlPlane: { enabled: true } },
      defaults: { kubeProxyReplacement: "false" },
    });
    expect(decodeReleaseRecord(secret, gunzipBounded)).toEqual({
      ok: true,
      value: {
        record: "kube-system/sh.helm.release.v1.cilium.v4",
        revision: 4,
        chartVersion: "1.18.11",
        config: { bgpControlPlane: { enabled: true } },
        defaults: { kubeProxyReplacement: "false" },
      },
    });
  });

  it("a release without user-supplied values (config null) has none", () => {
    const json = { ...releaseJson({}), config: null };
    const secret = releaseSecret({}, apiData(gzipSync(JSON.stringify(json))));
    expect(decodeReleaseRecord(secret, gunzipBounded)).toMatchObject({ ok: true, value: { config: {} } });
  });

  it("takes the highest deployed revision, never a superseded or failed one", () => {
    const secrets = [
      releaseSecret({ revision: 2, status: "superseded", config: { a: 2 } }),
      releaseSecret({ revision: 10, status: "deployed", config: { a: 10 } }),
      releaseSecret({ revision: 9, status: "deployed", config: { a: 9 } }),
      releaseSecret({ revision: 11, status: "failed", config: { a: 11 } }),
      releaseSecret({ name: "other", revision: 12, config: { a: 12 } }),
    ];
    expect(liveReleaseOf(secrets, "cilium", gunzipBounded)).toMatchObject({ ok: true, value: { revision: 10, config: { a: 10 } } });
    expect(liveReleaseOf(secrets.slice(0, 1), "cilium", gunzipBounded)).toEqual({ ok: true, value: undefined });
  });

  it("a pending revision above the deployed one (an operation in progress, or one that died) is refused with what to do (outside tester)", () => {
    const deployed = releaseSecret({ revision: 1, status: "deployed", config: { a: 1 } });
    const pending = releaseSecret({ revision: 2, status: "pending-upgrade", config: { a: 2 } });
    expect(liveReleaseOf([deployed, pending], "cilium", gunzipBounded)).toEqual({
      ok: false,
      problems: [
        {
          code: "cilium-release-pending",
          severity: "error",
          subject: "kube-system/sh.helm.release.v1.cilium.v2",
          message:
            "cilium (l4): release cilium has revision 2 pending-upgrade (kube-system/sh.helm.release.v1.cilium.v2): a Helm operation is in progress, or died midway, and the upgrade would be refused; wait for it (helm -n kube-system history cilium), or roll back to the deployed revision (helm -n kube-system rollback cilium), then run up again",
        },
      ],
    });
    // A pending revision below the deployed one is history: the deployed one is read.
    const old = releaseSecret({ revision: 1, status: "pending-install", config: {} });
    const now = releaseSecret({ revision: 2, status: "deployed", config: { a: 2 } });
    expect(liveReleaseOf([old, now], "cilium", gunzipBounded)).toMatchObject({ ok: true, value: { revision: 2 } });
  });

  it("is read through the cluster reader with the release's labels, in its namespace only", async () => {
    const cluster = new SnapshotReader([
      releaseSecret({ revision: 3, config: { a: 1 } }),
      releaseSecret({ revision: 5, namespace: "elsewhere", config: { a: 2 } }),
    ]);
    expect(await readLiveRelease(cluster, { namespace: "kube-system", releaseName: "cilium" }, gunzipBounded)).toMatchObject({
      ok: true,
      value: { revision: 3, config: { a: 1 } },
    });
    expect(await readLiveRelease(cluster, { namespace: "kube-system", releaseName: "cilium2" }, gunzipBounded)).toEqual({ ok: true, value: undefined });
  });

  it("every malformed record is one problem naming the Secret, never an exception", () => {
    const gz = (text: string) => apiData(gzipSync(text));
    const cases: [string | undefined, string][] = [
      [undefined, "it has no data.release"],
      ["not base64!", "data.release is not base64"],
      [b64("%%%not base64 inside%%%"), "data.release does not hold base64 text (a Helm release record is base64 of gzip)"],
      [apiData(Buffer.from([0x1f, 0x8b, 0x08, 0, 1, 2, 3, 4])), "not valid gzip (Z_BUF_ERROR)"],
      [gz("{not json"), "the release is not JSON"],
      [gz("[1,2]"), "the release is not a JSON object"],
      [gz(JSON.stringify({ ...releaseJson({}), chart: { metadata: {} } })), "the release has no chart.metadata.version"],
      [gz(JSON.stringify({ ...releaseJson({}), config: [1] })), "its config (the user-supplied values) is not a mapping"],
      [
        gz(JSON.stringify({ ...releaseJson({}), chart: { metadata: { version: "1.18.12" }, values: "x" } })),
        "its chart.values (the chart defaults) is not a mapping",
      ],
      // 5,000 levels (an outside tester's record): the engine's serialisation overflowed its stack on it.
      [
        gz(JSON.stringify(releaseJson({ config: { a: "DEEP" } })).replace('"DEEP"', `${"[".repeat(5000)}${"]".repeat(5000)}`)),
        "it nests deeper than 64 levels, which no chart's values do",
      ],
    ];
    for (const [data, why] of cases) {
      const secret = releaseSecret({});
      if (data === undefined) delete (secret.data as Record<string, string>).release;
      else (secret.data as Record<string, string>).release = data;
      expect(decodeReleaseRecord(secret, gunzipBounded), why).toEqual(refused(why));
    }
  });

  it("decompression stops at the bound (a gzip bomb is refused, not inflated)", () => {
    const bomb = gzipSync(Buffer.alloc(RELEASE_JSON_MAX_BYTES + 1, 0x20));
    expect(decodeReleaseRecord(releaseSecret({}, apiData(bomb)), gunzipBounded)).toEqual(refused("larger than 32 MiB once decompressed: refused"));
  });

  it("a record stored without gzip (plain JSON, as old Helm versions wrote) is read too", () => {
    const secret = releaseSecret({}, apiData(Buffer.from(JSON.stringify(releaseJson({ config: { a: 1 } })))));
    expect(decodeReleaseRecord(secret, gunzipBounded)).toMatchObject({ ok: true, value: { config: { a: 1 } } });
  });
});
