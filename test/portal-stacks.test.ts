// The portal over several stacks (issue 41): each stack its own observer, one page, one /metrics,
// one JSON API addressed by stack and entry; a stack whose cluster stops answering keeps its last
// rows, marked stale, while the other stays live.
import { afterEach, describe, expect, it } from "vitest";
import { UserError } from "../src/core/errors";
import { parseClustersEnv, secretCluster, secretKubeconfig } from "../src/portal/main";
import { type RunningPortal, startPortal } from "../src/portal/server";
import { MemoryCluster, portalContract, recordedCluster, unreachable } from "./support/portal-fixtures";

describe("one portal over two stacks that both publish argocd", () => {
  let portal: RunningPortal | undefined;
  afterEach(async () => {
    await portal?.close();
    portal = undefined;
  });
  const stackOf = (stack: string, cluster: MemoryCluster) => ({
    contract: portalContract(),
    cluster,
    stack,
    readIntervalMs: 0,
    reachability: { enabled: false },
  });

  it("addresses each stack's argocd apart (API, page, metrics); a dead cluster keeps its rows, stale with the cause, the other stays live; back when it answers", async () => {
    const bench = new MemoryCluster(recordedCluster({ argocd: 31358, grafana: 31088 }));
    const prod = new MemoryCluster(recordedCluster({ argocd: 30500, grafana: 30600 }), "dirqual");
    portal = await startPortal(stackOf("bench", bench), { host: "127.0.0.1", port: 0 }, [stackOf("prod", prod)]);
    const get = async (path: string) => fetch(new URL(path, portal?.url));

    const one = async (stack: string) => (await (await get(`/api/stacks/${stack}/entries/argocd`)).json()) as { stack: string; entry: { nodePort: number } };
    expect(await one("bench")).toMatchObject({ stack: "bench", entry: { nodePort: 31358 } });
    expect(await one("prod")).toMatchObject({ stack: "prod", entry: { nodePort: 30500 } });
    expect((await get("/api/stacks/nope/entries/argocd")).status).toBe(404);

    const metrics = await (await get("/metrics")).text();
    expect(metrics).toContain('ui_exposure_entry_node_port{entry="argocd",stack="bench",cluster="lima-bench"} 31358');
    expect(metrics).toContain('ui_exposure_entry_node_port{entry="argocd",stack="prod",cluster="dirqual"} 30500');

    let html = await (await get("/")).text();
    expect(html).toContain('id="entry-bench-argocd"');
    expect(html).toContain('id="entry-prod-argocd"');
    expect(html).toContain('href="api/stacks/prod/entries/argocd"');

    // prod's API server stops answering: its rows stay, marked stale with the cause; bench stays live.
    prod.failure = unreachable();
    const readsBefore = bench.total;
    html = await (await get("/")).text();
    expect(bench.total).toBeGreaterThan(readsBefore);
    const prodSection = html.slice(html.indexOf('<section id="stack-prod"'));
    expect(prodSection).toContain('data-stale="true"');
    expect(prodSection).toContain("ECONNREFUSED while reading services");
    expect(prodSection).toContain("the rows below are its last successful read");
    expect(prodSection).toContain('id="entry-prod-argocd"');
    expect(html.slice(html.indexOf('<section id="stack-bench"'), html.indexOf('<section id="stack-prod"'))).not.toContain("data-stale");
    const stacks = (await (await get("/api/stacks")).json()) as { stacks: { stack: string; error?: string; view?: object }[] };
    expect(stacks.stacks.map((s) => [s.stack, s.error !== undefined, s.view !== undefined])).toEqual([
      ["bench", false, true],
      ["prod", true, true],
    ]);
    expect((await get("/api/stacks/prod/entries")).status).toBe(503);
    // ?stack= shows one stack alone.
    expect(await (await get("/?stack=bench")).text()).not.toContain('<section id="stack-prod"');

    prod.failure = undefined;
    html = await (await get("/")).text();
    expect(html).not.toContain("data-stale");
  });

  it("a hung cluster costs the other stack nothing: the page answers within the stack's wait, the hung one stale", async () => {
    const bench = new MemoryCluster(recordedCluster());
    const hung = new MemoryCluster(recordedCluster());
    hung.listNodes = () => new Promise(() => undefined);
    portal = await startPortal(stackOf("bench", bench), { host: "127.0.0.1", port: 0 }, [{ ...stackOf("hung", hung), readWaitMs: 50 }]);
    const stacks = (await (await fetch(new URL("/api/stacks", portal.url))).json()) as { stacks: { stack: string; error?: string }[] };
    expect(stacks.stacks.map((s) => [s.stack, s.error])).toEqual([
      ["bench", undefined],
      ["hung", "no answer within 0.05 s"],
    ]);
  });
});

describe("the in-cluster portal's other clusters, each through a Secret (ui-exposure:portal.clusters)", () => {
  let portal: RunningPortal | undefined;
  afterEach(async () => {
    await portal?.close();
    portal = undefined;
  });
  const TOKEN = "s3cr3t-token-value-for-the-test";
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  /** The portal's own cluster as far as the Secret goes: get on one Secret, whatever it holds now. */
  const holding = (data: Record<string, string> | undefined) => ({
    secret: data && {
      metadata: { name: "cluster-prod", namespace: "platform-portal" },
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    },
    async getSecret(namespace: string, name: string) {
      expect([namespace, name]).toEqual(["platform-portal", "cluster-prod"]);
      return this.secret;
    },
  });
  const prod = { name: "prod", secret: "cluster-prod" };

  it("reads PORTAL_CLUSTERS as the component writes it, and refuses anything else with one message", () => {
    const value = { namespace: "platform-portal", clusters: [prod] };
    expect(parseClustersEnv(JSON.stringify(value))).toEqual(value);
    expect(parseClustersEnv(undefined)).toEqual({ namespace: "", clusters: [] });
    expect(() => parseClustersEnv('{"namespace": "platform-portal", "clusters": [{"name": "Prod", "secret": "x"}]}')).toThrow(
      'PORTAL_CLUSTERS must be {"namespace": ..., "clusters": [{"name": ..., "secret": ...}]} as up sets it (cluster name must be a DNS label',
    );
    expect(() => parseClustersEnv("prod")).toThrow("PORTAL_CLUSTERS must be");
  });

  it("takes a kubeconfig, or server, token and ca.crt; names the keys of a Secret with neither, never a value", () => {
    const kubeconfig = "apiVersion: v1\nkind: Config\n";
    expect(secretKubeconfig({ kubeconfig: b64(kubeconfig) }, "Secret p/c")).toBe(kubeconfig.trim());
    const built = JSON.parse(secretKubeconfig({ server: b64("https://10.0.0.1:6443"), token: b64(TOKEN), "ca.crt": b64("PEM") }, "Secret p/c"));
    expect(built.clusters[0].cluster).toEqual({ server: "https://10.0.0.1:6443", "certificate-authority-data": b64("PEM") });
    expect(built.users[0].user).toEqual({ token: TOKEN });
    expect(() => secretKubeconfig({ tokn: b64(TOKEN) }, "Secret p/c")).toThrow(
      "Secret p/c holds neither key kubeconfig nor keys server and token (its keys: tokn); see docs/portal.md",
    );
    // A credential plugin would run a command in the portal's pod: refused, named, never run.
    for (const user of ["exec:\n      command: /bin/sh", "auth-provider:\n      name: gcp"])
      expect(() => secretKubeconfig({ kubeconfig: b64(`apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    ${user}\n`) }, "Secret p/c")).toThrow(
        "Secret p/c: key kubeconfig gets its credential from a command or an auth provider (users[0].user.",
      );
    // One line would be read as a file of the pod.
    expect(() => secretKubeconfig({ kubeconfig: b64("/var/run/secrets/kubernetes.io/serviceaccount/token") }, "Secret p/c")).toThrow(
      "Secret p/c: key kubeconfig does not hold a kubeconfig (one line): put the whole file there",
    );
  });

  it("reads the Secret at each connect: missing, then broken (the token cut out of the error), then a reader named after the cluster", async () => {
    const own = holding(undefined);
    const remote = secretCluster(own, "platform-portal", prod);
    expect([remote.source, remote.name]).toEqual(["cluster prod (Secret platform-portal/cluster-prod)", "prod"]);
    await expect(remote.connect()).rejects.toThrow(
      "Secret platform-portal/cluster-prod does not exist: create it with the other cluster's kubeconfig, or its server, token and ca.crt (docs/portal.md)",
    );
    own.secret = holding({ server: "not a url", token: TOKEN }).secret;
    const err = await remote.connect().catch((e: Error) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).not.toContain(TOKEN);
    own.secret = holding({ kubeconfig: `apiVersion: v1\nusers: [{name: u, user: {token: ${TOKEN}}\nclusters: [` }).secret;
    const broken = await remote.connect().catch((e: Error) => e);
    expect(broken).toBeInstanceOf(UserError);
    expect((broken as Error).message).not.toContain(TOKEN);
    own.secret = holding({ server: "https://127.0.0.1:1", token: TOKEN }).secret;
    const reader = await remote.connect();
    expect([reader.source, reader.name]).toEqual(["cluster prod through Secret platform-portal/cluster-prod (https://127.0.0.1:1)", "prod"]);
  });

  it("a cluster whose Secret is missing is its section's banner; the stack's own section stays live", async () => {
    const own = new MemoryCluster(recordedCluster({ argocd: 31358, grafana: 31088 }));
    const base = { contract: portalContract(), readIntervalMs: 0, reachability: { enabled: false } };
    const remote = secretCluster(holding(undefined), "platform-portal", prod);
    portal = await startPortal({ ...base, cluster: own, stack: "bench" }, { host: "127.0.0.1", port: 0 }, [{ ...base, cluster: remote, stack: "prod" }]);
    const stacks = (await (await fetch(new URL("/api/stacks", portal.url))).json()) as {
      stacks: { stack: string; source: string; error?: string; view?: object }[];
    };
    expect(stacks.stacks.map((s) => [s.stack, s.source, s.error, s.view !== undefined])).toEqual([
      ["bench", own.source, undefined, true],
      ["prod", "cluster prod (Secret platform-portal/cluster-prod)", expect.stringContaining("Secret platform-portal/cluster-prod does not exist"), false],
    ]);
  });
});
