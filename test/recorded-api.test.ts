// The recorded API server (test/support/recorded-api.ts) against the product's current reads:
// `exposure status` and `exposure drift --skip-preview` as the start-up bench runs them (the real
// commands, the real live reader, over HTTP), and every read LiveClusterReader has. A read the
// fake does not answer is recorded, and these tests fail on it: the bench's figures cannot
// silently stop being measured because the product reads something new.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDriftCommand } from "../cli/commands/drift";
import { createStatusCommand } from "../cli/commands/status";
import type { CommandContext } from "../cli/context";
import { main } from "../cli/main";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { GUARDED_WORKLOADS } from "../src/core/admission-preview";
import { EXIT } from "../src/core/findings";
import { CILIUM_ERA_KINDS } from "../src/core/kube/cluster";
import { recordedCluster } from "./support/portal-fixtures";
import { answerRead, listenRecordedApi, writeRecordedProject } from "./support/recorded-api";

let api: Awaited<ReturnType<typeof listenRecordedApi>>;
let dir: string;
beforeAll(async () => {
  api = await listenRecordedApi();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "recorded-api-"));
  writeRecordedProject(dir, api.port);
});
afterAll(async () => {
  await api.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function run(argv: string[], command: Parameters<typeof main>[2]) {
  const out: string[] = [];
  const err: string[] = [];
  const ctx: CommandContext = { projectDir: dir, stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: process.env };
  const previous = process.cwd();
  process.chdir(dir);
  try {
    api.unanswered.length = 0;
    const code = await main(argv, ctx, command);
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    process.chdir(previous);
  }
}

describe("the recorded API server answers the product's reads", () => {
  it("exposure status (the start-up bench's command): every read answered, argocd MATCH, grafana DRIFT, gitea ABSENT", async () => {
    const r = await run(["status", "--stack", "bench", "--outputs", "outputs.json", "--json"], { status: createStatusCommand() });
    expect(api.unanswered).toEqual([]);
    expect(r.err).toBe("");
    expect(r.code).toBe(EXIT.DRIFT);
    const verdicts = (JSON.parse(r.out) as { entries: { name: string; verdict: string }[] }).entries.map((e) => [e.name, e.verdict]);
    expect(verdicts).toEqual([
      ["argocd", "MATCH"],
      ["grafana", "DRIFT"],
      ["gitea", "ABSENT"],
      ["postgres", "NOT-EXPOSED"],
    ]);
  });

  it("exposure drift --skip-preview (the start-up bench's other command): every read answered, the drift found", async () => {
    const r = await run(["drift", "--stack", "bench", "--skip-preview", "--json"], { drift: createDriftCommand() });
    expect(api.unanswered).toEqual([]);
    expect(r.code).toBe(EXIT.DRIFT);
    expect(JSON.parse(r.out)).toMatchObject({ kind: "Drift", drift: true, stack: "bench", admission: [] });
  });

  it("answers every read LiveClusterReader makes: lists in each scope, paged, the ConfigMap, Secrets, custom kinds, discovery, the dry run", async () => {
    api.unanswered.length = 0;
    const reader = await LiveClusterReader.connect({ kubeconfig: path.join(dir, "kubeconfig"), context: "fake" });
    const data = recordedCluster();
    expect((await reader.listServices()).length).toBe(data.services.length);
    expect((await reader.listServices({ namespace: "argocd" })).map((s) => s.metadata.name)).toEqual(["argocd-server", "argocd-nodeport"]);
    expect(
      (await reader.listServices({ labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": ["argocd", "gitea"] } })).map(
        (s) => s.metadata.name,
      ),
    ).toEqual(["argocd-nodeport"]);
    expect((await reader.listNodes()).map((n) => n.metadata.name)).toEqual(["bench"]);
    expect(await reader.listPods({ namespace: "argocd" })).toEqual([]);
    expect((await reader.listEndpointSlices({ namespace: "monitoring", labels: { "kubernetes.io/service-name": "grafana-nodeport" } })).length).toBe(1);
    expect(await reader.getConfigMap("kube-system", "cilium-config")).toBeUndefined();
    expect(await reader.listSecrets("argocd")).toEqual([]);
    for (const kind of [...Object.values(CILIUM_ERA_KINDS), ...GUARDED_WORKLOADS]) expect(await reader.listCustom(kind)).toEqual([]);
    expect(await reader.servedResources("v1")).toContain("services");
    expect(await reader.servedResources("cilium.io/v2")).toEqual([]);
    expect(await reader.dryRunCreateService(data.services[1] as never)).toEqual({ admitted: true });
    expect(api.unanswered).toEqual([]);
  });

  it("pages as the API server does: `limit` items a page and a `continue` token to the next", () => {
    const data = recordedCluster();
    const page = (query: string) => answerRead(data, "GET", new URL(`http://x/api/v1/services?${query}`)) as { body: { items: unknown[]; metadata: object } };
    expect(page("limit=4").body.items.length).toBe(4);
    expect(page("limit=4").body.metadata).toEqual({ resourceVersion: "1", continue: "4" });
    expect(page("limit=4&continue=4").body.items.length).toBe(2);
    expect(page("limit=4&continue=4").body.metadata).toEqual({ resourceVersion: "1" });
    expect(page("fieldSelector=metadata.namespace%3Dgitea").body.items.length).toBe(1);
  });

  it("records, and answers 400 to, what it does not model: a new read cannot pass for an empty one", () => {
    const data = recordedCluster();
    const ask = (method: string, url: string) => answerRead(data, method, new URL(url, "http://x"));
    expect(ask("GET", "/api/v1/services?watch=1")).toEqual({ unanswered: "query parameter 'watch'" });
    expect(ask("GET", "/api/v1/services?labelSelector=a%21%3Db")).toEqual({ unanswered: "label selector term 'a!=b'" });
    expect(ask("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dx")).toEqual({ unanswered: "field selector term 'spec.nodeName=x'" });
    expect(ask("GET", "/api/v1/namespaces/a/events")).toEqual({ unanswered: "path" });
    expect(ask("GET", "/apis/policy/v1/poddisruptionbudgets")).toEqual({ unanswered: "path" });
    expect(ask("DELETE", "/api/v1/namespaces/a/services/b")).toEqual({ unanswered: "method DELETE" });
    expect(ask("POST", "/api/v1/namespaces/a/services")).toEqual({ unanswered: "a write" });
  });
});
