// The portal over several stacks (issue 41): each stack its own observer, one page, one /metrics,
// one JSON API addressed by stack and entry; a stack whose cluster stops answering keeps its last
// rows, marked stale, while the other stays live.
import { afterEach, describe, expect, it } from "vitest";
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
