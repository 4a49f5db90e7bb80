// Reads no tenant can inflate (issue 34 #2, #3; DESIGN.md invariant 8): every list is paged
// (`limit`, `continue`), each page is bounded in bytes, and only what the caller keeps is held.
import { afterEach, describe, expect, it } from "vitest";
import { LiveClusterReader, PAGE_BYTES } from "../src/adapters/kube-live";
import { CONFIG_CHECKSUM } from "../src/core/cilium/rollout";
import { UserError } from "../src/core/errors";
import type { Service } from "../src/core/kube/types";
import { startPagingApi } from "./support/fake-api";

const FAT = "x".repeat(250_000);
const service = (
  namespace: string,
  name: string,
  extra: Partial<Service> & { annotations?: Record<string, string>; labels?: Record<string, string> } = {},
) => ({
  metadata: { namespace, name, uid: `uid-${name}`, labels: extra.labels ?? {}, annotations: extra.annotations ?? {}, managedFields: [{ manager: "kubectl" }] },
  spec: extra.spec ?? { type: "ClusterIP", ports: [{ port: 80 }] },
});
/** 150 ClusterIP Services with a 250 KB annotation in a tenant's namespace, labelled as ours: 37 MB of answer. */
const tenantServices = Array.from({ length: 150 }, (_, i) =>
  service("tenant", `fat-${String(i).padStart(3, "0")}`, {
    annotations: { blob: FAT },
    labels: { "app.kubernetes.io/managed-by": "ui-exposure", "kubernetes.io/service-name": "argocd-nodeport" },
  }),
);

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function serve(items: ReturnType<typeof service>[]) {
  const api = await startPagingApi({ "/api/v1/services": { kind: "ServiceList", items } });
  close = api.close;
  return { api, reader: await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 10_000 }) };
}

describe("kube-live: paged, bounded lists", () => {
  it("answers a cluster-wide list past the old 32 MiB budget (150 Services of 250 KB), page by page, each page bounded", async () => {
    const argocd = service("argocd", "argocd-nodeport", { spec: { type: "NodePort", ports: [{ port: 80, nodePort: 31000 }] } });
    const { api, reader } = await serve([argocd, ...tenantServices]);
    expect(api.stats.sent).toBe(0);
    const services = await reader.listServices();
    expect(services.map((s) => s.metadata.name)).toEqual(["argocd-nodeport", ...tenantServices.map((s) => s.metadata.name)]);
    expect(api.queries.every((q) => /[?&]limit=\d+/.test(q))).toBe(true);
    expect(api.queries.some((q) => /[?&]continue=/.test(q))).toBe(true);
    // Pages are cut to fit: none read whole was larger than the bound.
    expect(api.stats.sent).toBeGreaterThan(32 * 2 ** 20);
    console.log(`150 fat Services: ${api.queries.length} requests, ${(api.stats.sent / 2 ** 20).toFixed(1)} MiB sent`);
  });

  it("returns to full pages once past a tenant's fat objects (5,000 small Services after them)", async () => {
    const small = Array.from({ length: 5000 }, (_, i) => service("tenant", `svc-${String(i).padStart(4, "0")}`));
    const { api, reader } = await serve([...tenantServices, ...small]);
    expect(await reader.listServices()).toHaveLength(5150);
    // 3 tries to fit the fat page, about 19 pages of them, then pages growing back to 500 items.
    expect(api.queries.length).toBeLessThan(40);
    expect(api.queries.at(-1)).toMatch(/[?&]limit=500&/);
  });

  it("holds only what `keep` accepts, without annotations or managedFields (never read)", async () => {
    const exposed = service("tenant", "open", { annotations: { blob: FAT }, spec: { type: "NodePort", ports: [{ port: 80, nodePort: 30001 }] } });
    const { reader } = await serve([...tenantServices, exposed]);
    const kept = await reader.listServices({ keep: (s) => s.spec?.type === "NodePort" });
    expect(kept).toEqual([{ metadata: { namespace: "tenant", name: "open", uid: "uid-open", labels: {} }, spec: exposed.spec }]);
  });

  it("keeps, of a listed object's annotations, the Cilium config checksum (up's switch check reads it per agent pod)", async () => {
    const pod = { metadata: { namespace: "kube-system", name: "cilium-x", uid: "u", annotations: { [CONFIG_CHECKSUM]: "abc", blob: FAT } }, spec: {} };
    const api = await startPagingApi({ "/api/v1/pods": { kind: "PodList", items: [pod] } });
    close = api.close;
    const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 10_000 });
    expect((await reader.listPods()).map((p) => p.metadata.annotations)).toEqual([{ [CONFIG_CHECKSUM]: "abc" }]);
  });

  it("asks the API server for one namespace and the labels wanted (`k in (a,b)`), not the whole cluster", async () => {
    const argocd = service("argocd", "argocd-server");
    const { api, reader } = await serve([argocd, ...tenantServices]);
    expect((await reader.listServices({ namespace: "argocd" })).map((s) => s.metadata.name)).toEqual(["argocd-server"]);
    const labelled = await reader.listServices({ namespace: "tenant", labels: { "kubernetes.io/service-name": ["argocd-nodeport", "grafana-nodeport"] } });
    expect(labelled).toHaveLength(150);
    expect(api.queries[0]).toMatch(/^\/api\/v1\/namespaces\/argocd\/services\?limit=\d+$/);
    expect(decodeURIComponent(api.queries.at(-1) ?? "").replaceAll("+", " ")).toContain(
      "labelSelector=kubernetes.io/service-name in (argocd-nodeport,grafana-nodeport)",
    );
  });

  it("refuses in one line an object larger than a page (a page of one item still past the bound)", async () => {
    const huge = service("tenant", "huge", { annotations: { a: "y".repeat(PAGE_BYTES + 1) } });
    const { reader } = await serve([huge]);
    const err = await reader.listServices().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(UserError);
    expect(err?.message).toBe(`${reader.source} answered services with one object larger than ${PAGE_BYTES / 2 ** 20} MiB: refused`);
  });
});

describe("kube-live: reads waiting their turn", () => {
  it("many reads at once wait without piling listeners up (no MaxListenersExceededWarning)", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      const { reader } = await serve(Array.from({ length: 20 }, (_, i) => service("tenant", `svc-${i}`)));
      const lists = await Promise.all(Array.from({ length: 40 }, () => reader.listServices()));
      expect(lists.every((l) => l.length === 20)).toBe(true);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain("MaxListenersExceededWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });
});
