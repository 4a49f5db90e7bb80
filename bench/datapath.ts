// From `pulumi up` returning to the first answer through the real data path (test/support/datapath-platform.ts:
// nodes and pods as network namespaces, kube-proxy, the real controller). Needs root; says why when it cannot.
import { dataPathSupport } from "../src/adapters/datapath/datapath";
import { expectedAnswers, LINEAGE, startDataPathPlatform, summary, uiOf } from "../test/support/datapath-platform";
import { toolchainBin } from "../test/support/harness";
import { median, ms, table } from "./stats";

/** `rounds` times: destroy (but the first), up, then poll every URL every 50 ms until it answers. */
export async function measureDataPath(opts: { rounds: number; log: (m: string) => void }) {
  const bin = toolchainBin();
  const support = dataPathSupport(bin);
  if (!support.ok) throw new Error(support.problems.map((p) => p.message).join("; "));
  const p = await startDataPathPlatform(bin, support.value);
  // `pulumi up --skip-preview` of the whole stack (8 entries: 7 NodePort Services, 1 hostPort); from its
  // return to the first published URL answering from its pod (operator namespace), and to every one.
  const rounds: { upMs: number; firstAnswerMs: number; allAnswersMs: number }[] = [];
  try {
    const expected = expectedAnswers();
    for (let i = 0; i < opts.rounds; i++) {
      if (i > 0) {
        const d = p.sandbox.pulumi(["destroy", "--yes", "--skip-preview"]);
        if (d.code !== 0) throw new Error(`pulumi destroy failed: ${summary(d)}`);
      }
      opts.log(`datapath: round ${i + 1}/${opts.rounds}: pulumi up`);
      const up = p.sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      const returned = Date.now();
      if (up.code !== 0) throw new Error(`pulumi up failed: ${summary(up)}`);
      // The URLs as the API server has them right now (nodePorts of our Services, the first
      // node's address): reading the stack outputs takes the Pulumi CLI a second or two, which
      // is no part of the data path. They are checked against the outputs below.
      const node = p.dp.nodes[0]?.ip;
      const ours = await p.cluster.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });
      const urls: Record<string, string> = { [LINEAGE.entry]: `http://${node}:${LINEAGE.port}` };
      for (const svc of ours.items) {
        const entry = svc.metadata?.labels?.["ui-exposure.io/entry"] ?? "";
        urls[entry] = `${uiOf(entry).scheme}://${node}:${svc.spec?.ports?.[0]?.nodePort}`;
      }
      const times = await Promise.all(
        Object.entries(urls).map(async ([entry, url]) => {
          const want = expected[entry];
          for (;;) {
            if ((await p.who(url)) === want) return Date.now() - returned;
            if (Date.now() - returned > 60_000) throw new Error(`${entry}: ${url} did not answer from ${want} within 60 s`);
            await new Promise((r) => setTimeout(r, 50));
          }
        }),
      );
      const published = p.outputs().urls;
      const same = (a: Record<string, string>) => JSON.stringify(Object.entries(a).sort());
      if (same(published) !== same(urls)) throw new Error(`the stack outputs ${same(published)} are not the URLs requested ${same(urls)}`);
      rounds.push({ upMs: up.ms, firstAnswerMs: Math.min(...times), allAnswersMs: Math.max(...times) });
    }
  } finally {
    await p.stop();
  }
  return {
    rounds,
    medianFirstAnswerMs: median(rounds.map((r) => r.firstAnswerMs)),
    medianAllAnswersMs: median(rounds.map((r) => r.allAnswersMs)),
    platformReadyMs: p.timings.platformReadyMs ?? 0,
  };
}

export function dataPathMarkdown(d: Awaited<ReturnType<typeof measureDataPath>>): string[] {
  return [
    "The e2e's data path: two nodes and their pods as network namespaces, kube-proxy in nftables mode, EndpointSlices from the real controller, 8 entries (7 NodePort Services, 1 hostPort). After `pulumi up --skip-preview` returns, each URL is requested from the operator's namespace every 50 ms until it answers from its pod; `pulumi destroy` between rounds.",
    table(
      ["round", "`pulumi up` (ms)", "up returned → first answer (ms)", "up returned → every URL answers (ms)"],
      d.rounds.map((r, i) => [String(i + 1), ms(r.upMs), ms(r.firstAnswerMs), ms(r.allAnswersMs)]),
    ),
    `Median: ${ms(d.medianFirstAnswerMs)} ms to the first answer, ${ms(d.medianAllAnswersMs)} ms to every URL. Platform set-up before the first up: ${ms(d.platformReadyMs)} ms.`,
  ];
}
