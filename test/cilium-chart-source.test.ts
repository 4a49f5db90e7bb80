// Air-gapped Cilium chart sources (issue 14): an internal Helm repository, an OCI registry or a
// local archive, each turned into the Release's chart/repositoryOpts as Helm expects them.
import { describe, expect, it } from "vitest";
import { releaseArgs } from "../components/cilium";
import { chartSource, planCilium } from "../src/core/cilium/plan";
import { ciliumSettingsSchema } from "../src/core/settings";

const l4 = (chart: Record<string, unknown>) =>
  ciliumSettingsSchema.safeParse({ mode: "l4", chart: { version: "1.18.12", ...chart }, k8sServiceHost: "192.168.104.2", k8sServicePort: 6443 });

function releaseOf(chart: Record<string, unknown>) {
  const parsed = l4(chart);
  if (!parsed.success) throw new Error(parsed.error.message);
  const plan = planCilium(
    parsed.data,
    { stack: "bench", production: false },
    { services: [], lbIpPools: [], gateways: [], gatewayClasses: [], httpRoutes: [], l2Policies: [] },
  );
  if ("problems" in plan || plan.mode !== "l4") throw new Error("expected an l4 plan");
  const args = releaseArgs(plan.release);
  return { chart: args.chart, repositoryOpts: args.repositoryOpts };
}

describe("Cilium chart source", () => {
  it("uses a Helm repository (public or an internal mirror serving index.yaml) as repositoryOpts", () => {
    expect(releaseOf({ repository: "https://helm.cilium.io", name: "cilium" })).toEqual({
      chart: "cilium",
      repositoryOpts: { repo: "https://helm.cilium.io" },
    });
    expect(releaseOf({ repository: "http://127.0.0.1:8879/charts" })).toEqual({ chart: "cilium", repositoryOpts: { repo: "http://127.0.0.1:8879/charts" } });
  });

  it("puts an OCI registry in the chart reference, with no repository", () => {
    expect(releaseOf({ repository: "oci://registry.internal/charts/", name: "cilium" })).toEqual({
      chart: "oci://registry.internal/charts/cilium",
      repositoryOpts: undefined,
    });
    expect(chartSource(undefined, "oci://registry.internal/charts/cilium")).toEqual({ chart: "oci://registry.internal/charts/cilium" });
  });

  it("takes a local archive or folder as the chart when no repository is given", () => {
    expect(releaseOf({ name: "./charts/cilium-1.18.12.tgz" })).toEqual({ chart: "./charts/cilium-1.18.12.tgz", repositoryOpts: undefined });
  });

  it("refuses a repository that is neither http(s):// nor oci://, saying what to give instead", () => {
    const parsed = l4({ repository: "helm.cilium.io" });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      [
        "chart.repository",
        "must be a Helm repository URL (https://... or http://...) or an OCI registry (oci://host/path); for a local chart omit it and give the .tgz or folder in name",
      ],
    ]);
    expect(l4({ repository: "file:///srv/charts" }).success).toBe(false);
  });
});
