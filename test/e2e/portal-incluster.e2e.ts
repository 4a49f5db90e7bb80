// The in-cluster portal, proven against the real API server (issue 13): `pulumi up` deploys
// it; the exact files of the ConfigMap `up` created then run as a process the way the pod
// runs them (plain `node /app/portal.js`, the Deployment's environment, a ServiceAccount
// token minted through the TokenRequest API and the API server's CA at the standard in-pod
// paths, KUBERNETES_SERVICE_HOST/PORT). Its page and JSON must match `exposure portal`,
// reachability included (stand-in UIs on <node IP>:<nodePort>, one of them failing), and its
// token must not read Secrets, ConfigMaps or (without a hostPort entry) Pods.
// (test/support/incluster-portal.ts runs it in a private mount namespace, as root.)
import type { ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { freeLoopbackPort } from "../../src/adapters/free-port";
import { killApiServer, restartApiServer } from "../support/api-server";
import {
  addNodes,
  addVendoredUi,
  type Cluster,
  EXAMPLE_UIS,
  projectDir,
  runbookBlock,
  type Sandbox,
  startCluster,
  stopPlatform,
  summary,
  toolchainBin,
  waitFor,
} from "../support/harness";
import { PORTAL_LABEL, PORTAL_NS, podIdentity, portalPodSpec, runInPod, startPortalPlatform, writeShippedFiles } from "../support/incluster-portal";

const NODE_IP = "127.0.0.41";
/** The stack's own section of the in-cluster portal (it shows another cluster too: a portal of several stacks). */
const OWN = "/api/stacks/sandbox/entries";

interface Entry {
  name: string;
  verdict: string;
  url?: string;
  reasons: string[];
  group?: string;
  readyEndpoints: number;
  reachability?: { ok: boolean; status: number | null; latencyMs: number | null; error: string | null; checkedAt: string; url: string };
}
interface View {
  source: string;
  observedAt: string;
  entries: Entry[];
}

let cluster: Cluster;
let sandbox: Sandbox;
/** The other cluster the portal shows through the Secret `cluster-second` (ui-exposure:portal.clusters). */
let second: Cluster;
const SECOND_NODE = { name: "e2e-second", ip: "127.0.0.42", ready: true };
const children: ChildProcess[] = [];
const servers: http.Server[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-e2e-portal-"));

/** A stand-in UI on <node IP>:<nodePort>, as kube-proxy replacement would serve it. */
function standIn(port: number, status: number): Promise<http.Server> {
  const server = http.createServer((_req, res) => {
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(status === 200 ? "ok\n" : "internal error\n");
  });
  servers.push(server);
  return new Promise((resolve) => server.listen(port, NODE_IP, () => resolve(server)));
}

/** GET (or `method`) on an API server (default the portal's own) with a token (and the CA the pod would trust). */
function asPortal(apiPath: string, token: string, ca: Buffer | string, on = cluster.server, method = "GET"): Promise<number> {
  const server = new URL(on);
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}`, accept: "application/json", "content-type": "application/json" };
    const req = https.request({ host: server.hostname, port: server.port, path: apiPath, method, ca, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end(method === "GET" ? undefined : "{}");
  });
}

interface Section {
  stack: string;
  source: string;
  view?: View;
  error?: string;
}

/** Puts the Secret `cluster-second` in the portal's namespace (string values), replacing what it held. */
async function secondSecret(data: Record<string, string>): Promise<void> {
  const body = { metadata: { name: "cluster-second", namespace: PORTAL_NS }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) };
  await cluster.core.deleteNamespacedSecret({ namespace: PORTAL_NS, name: "cluster-second" }).catch(() => undefined);
  await cluster.core.createNamespacedSecret({ namespace: PORTAL_NS, body });
}
const b64 = (text: string) => Buffer.from(text).toString("base64");

const comparable = (v: View) =>
  v.entries.map((e) => ({
    name: e.name,
    verdict: e.verdict,
    url: e.url,
    reasons: e.reasons,
    group: e.group,
    readyEndpoints: e.readyEndpoints,
    reachable: e.reachability?.ok,
    status: e.reachability?.status,
  }));

describe.sequential("e2e: the in-cluster portal with its own ServiceAccount", () => {
  let outputs: { urls: Record<string, string>; endpoints: Record<string, unknown> };
  let token: string;
  let ca: Buffer;
  let inCluster: { url: string; child: ChildProcess; stderr: () => string };

  beforeAll(async () => {
    ({ cluster, sandbox } = await startPortalPlatform({ name: "e2e-node", ip: NODE_IP }, "portal-e2e.yaml", {
      "ui-exposure:portal": { enabled: true, skipAwait: true, clusters: [{ name: "second", secret: "cluster-second" }] },
    }));
    second = await startCluster(toolchainBin());
    await addNodes(second, [SECOND_NODE]);
    await addVendoredUi(second, { ...EXAMPLE_UIS.argocd, node: SECOND_NODE.name });
  }, 600_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    second?.stop();
    stopPlatform({ cluster, sandbox });
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it("pulumi up deploys the portal and publishes every entry; stand-in UIs answer on the nodePorts, grafana failing", async () => {
    const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(up.code, summary(up)).toBe(0);
    const out = sandbox.pulumi(["stack", "output", "--json"]);
    expect(out.code, summary(out)).toBe(0);
    outputs = JSON.parse(out.stdout);
    expect(Object.keys(outputs.urls).sort()).toEqual(["argocd", "grafana", "portal"]);
    for (const url of Object.values(outputs.urls)) expect(new URL(url).hostname).toBe(NODE_IP);
    await standIn(Number(new URL(outputs.urls.argocd as string).port), 200);
    await standIn(Number(new URL(outputs.urls.grafana as string).port), 500);
  });

  it("runs the exact bundle from the ConfigMap with a minted ServiceAccount token, and serves the same verdicts, links and reachability as exposure portal", async () => {
    // The files `up` shipped, byte for byte: the code, and what this up published (the pod mounts it at PORTAL_PUBLISHED).
    const app = path.join(tmp, "app");
    const maps = await writeShippedFiles(cluster, app);
    expect(maps).toHaveLength(2);
    const publishedMap = maps.find((m) => m.metadata?.name === "ui-exposure-published");
    expect(JSON.parse(publishedMap?.data?.["endpoints.json"] ?? "{}")).toEqual(JSON.parse(JSON.stringify(outputs.endpoints)));
    expect(fs.readdirSync(app).sort()).toEqual(["contract.yaml", "portal.js", "server.js.gz"]);

    // The Deployment's own command and environment, a token of the portal's ServiceAccount, as the kubelet would mount it.
    const { container, account } = await portalPodSpec(cluster);
    expect(container?.command).toEqual(["node", "/app/portal.js"]);
    const identity = await podIdentity(cluster, account, container, tmp);
    ({ token, ca } = identity);
    expect(token).toBeTruthy();

    // Listens where the portal's own nodePort is published: probing its URL reaches it, as through the node.
    const portalUrl = new URL(outputs.urls.portal as string);
    const env = identity.env;
    expect(env.PORTAL_IN_CLUSTER).toBe("1");
    env.PORTAL_CONTRACT = path.join(app, "contract.yaml");
    env.PORTAL_LISTEN = `${NODE_IP}:${portalUrl.port}`;
    // The ConfigMap's file where the kubelet would mount it.
    expect(env.PORTAL_PUBLISHED).toBe("/published/endpoints.json");
    fs.mkdirSync(path.join(tmp, "published"));
    env.PORTAL_PUBLISHED = path.join(tmp, "published", "endpoints.json");
    fs.writeFileSync(env.PORTAL_PUBLISHED, publishedMap?.data?.["endpoints.json"] ?? "");
    const pod = runInPod(app, env);
    children.push(pod.child);
    inCluster = { url: `http://${NODE_IP}:${portalUrl.port}/`, ...pod };

    const port = await freeLoopbackPort();
    const operator = sandbox.exposureSpawn(["portal", "--stack", "sandbox", "--listen", `127.0.0.1:${port}`]);
    children.push(operator);
    const view = (base: string, entries = "/api/entries") =>
      waitFor(
        `${base}${entries}`,
        async () => {
          const res = await fetch(new URL(entries, base));
          return res.ok ? ((await res.json()) as View) : undefined;
        },
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; in-cluster stderr: ${inCluster.stderr()}`);
      });
    // In turn: the operator's portal checks the portal's own URL, which answers only once the
    // in-cluster one listens (together, a loaded machine let the operator's check run first).
    const pod_ = await view(inCluster.url, OWN);
    const op = await view(`http://127.0.0.1:${port}/`);

    expect(pod_.source).toBe(`in-cluster ServiceAccount (${cluster.server})`);
    expect(comparable(pod_)).toEqual(comparable(op));
    const byName = Object.fromEntries(pod_.entries.map((e) => [e.name, e]));
    expect(byName.argocd).toMatchObject({ verdict: "MATCH", url: outputs.urls.argocd, group: "Delivery" });
    expect(byName.argocd?.reachability).toMatchObject({ ok: true, status: 200, error: null, url: `${outputs.urls.argocd}/healthz` });
    expect(byName.grafana?.reachability).toMatchObject({ ok: false, status: 500, error: "expected 2xx/3xx, got 500" });
    expect(byName.portal?.url).toBe(outputs.urls.portal);
    expect(byName.portal?.reachability).toMatchObject({ ok: true, status: 200 });
    expect(byName.postgres?.verdict).toBe("NOT-EXPOSED");
    for (const e of [byName.argocd, byName.grafana]) {
      expect(Object.keys(e?.reachability ?? {})).toEqual(expect.arrayContaining(["ok", "status", "latencyMs", "error", "checkedAt"]));
    }

    const page = await (await fetch(inCluster.url)).text();
    expect(page).toContain(`<a href="${outputs.urls.argocd}">`);
    expect(/<tr id="entry-sandbox-grafana"[^>]*data-reachable="false"/.test(page)).toBe(true);
    expect(page).toContain('<span class="badge r-bad">NOT OK 500</span>');
    expect(page).toContain('<th colspan="6" scope="rowgroup">Observability</th>');
    const one = await fetch(new URL(`${OWN}/grafana`, inCluster.url));
    expect(((await one.json()) as { entry: Entry }).entry.reachability?.status).toBe(500);

    // A nodePort moved by hand: both portals say DRIFT, as `exposure status` does (issue 23 #8).
    const moved = await cluster.core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
    const was = moved.spec?.ports?.[0]?.nodePort as number;
    const to = was === 32767 ? 32766 : was + 1;
    if (moved.spec?.ports?.[0]) moved.spec.ports[0].nodePort = to;
    await cluster.core.replaceNamespacedService({ namespace: "argocd", name: "argocd-nodeport", body: moved });
    // The reason names the published URL (dead) and the live one (the same host, the moved port).
    const reasonFor = (live: string) =>
      `nodePort changed since the last up (${was} -> ${to}): the published URL ${live.replace(`:${to}`, `:${was}`)} no longer reaches this Service, which now listens on ${live}; pulumi up puts ${was} back`;
    let reason = "";
    for (const [base, entries] of [
      [inCluster.url, OWN],
      [`http://127.0.0.1:${port}/`, "/api/entries"],
    ] as const) {
      const drift = await waitFor(
        `argocd DRIFT at ${base}`,
        async () => {
          const res = await fetch(new URL(`${entries}/argocd`, base));
          const entry = res.ok ? ((await res.json()) as { entry: Entry }).entry : undefined;
          return entry?.verdict === "DRIFT" ? entry : undefined;
        },
        30_000,
      );
      reason = reasonFor(drift.url as string);
      expect(drift.reasons).toContain(reason);
    }
    const status = sandbox.exposure(["status", "--stack", "sandbox", "--entry", "argocd"]);
    expect(status.code).toBe(3);
    expect(status.stdout).toContain(reason);
    operator.kill("SIGTERM");
  });

  it("shows the second cluster through its Secret, made with the documented read-only recipe: a missing, malformed or wrong Secret is its banner alone; killed, its rows are stale with the cause; back, live; the token is on no surface", async () => {
    let stdout = "";
    inCluster.child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    const sections = async () => ((await (await fetch(new URL("/api/stacks", inCluster.url))).json()) as { stacks: Section[] }).stacks;
    const own: Section[] = [];
    const secondIs = (what: string, ok: (s: Section) => boolean) =>
      waitFor(
        `the second cluster's section: ${what}`,
        async () => {
          const all = await sections();
          own.push(all.find((x) => x.stack === "sandbox") as Section);
          const s = all.find((x) => x.stack === "second");
          return s && ok(s) ? s : undefined;
        },
        30_000,
        () => `${JSON.stringify(own.at(-1)?.error)}; ${inCluster.stderr().slice(-2000)}`,
      );
    const banner = (re: RegExp) => (s: Section) => re.test(s.error ?? "");

    // Named in the stack, not created yet: a banner, the stack's own section live.
    await secondIs("missing", banner(/^Secret platform-portal\/cluster-second does not exist: create it/));

    // The recipe, as printed in docs/portal.md, applied to the second API server; its token Secret filled by the token controller.
    const kc = new second.lib.KubeConfig();
    kc.loadFromFile(second.kubeconfig);
    const objects = second.lib.KubernetesObjectApi.makeApiClient(kc);
    const recipe = runbookBlock(fs.readFileSync(path.join(projectDir, "docs", "portal.md"), "utf8"), "reader-recipe", "yaml");
    for (const doc of parseAllDocuments(recipe)) await objects.create(doc.toJS());
    const minted = await waitFor(
      "the recipe's token",
      async () => {
        const secret = await second.core.readNamespacedSecret({ namespace: "ui-exposure-reader", name: "portal-reader-token" });
        return secret.data?.token && secret.data["ca.crt"] ? secret.data : undefined;
      },
      60_000,
    );
    const readerToken = Buffer.from(minted.token as string, "base64").toString();
    const readerCa = Buffer.from(minted["ca.crt"] as string, "base64").toString();
    const wrongToken = "wrong-e2e-token-0123456789";

    await secondSecret({ serverr: second.server });
    await secondIs("malformed", banner(/holds neither key kubeconfig nor keys server and token \(its keys: serverr\)/));
    await secondSecret({ server: second.server, token: wrongToken, "ca.crt": readerCa });
    await secondIs("401", banner(/refused the credentials of cluster second through Secret platform-portal\/cluster-second .*\(401\)/));
    await secondSecret({ server: second.server, token: readerToken, "ca.crt": fs.readFileSync(path.join(cluster.dir, "pki", "apiserver.crt"), "utf8") });
    const tls = await secondIs("TLS mismatch", banner(/CERT|certificate|SIGNATURE|self.signed/i));
    expect(tls.error).toContain("cluster second through Secret platform-portal/cluster-second");

    await secondSecret({ server: second.server, token: readerToken, "ca.crt": readerCa });
    const live = await secondIs("live", (s) => !s.error && s.view !== undefined);
    expect(live.view?.source).toBe(`cluster second through Secret platform-portal/cluster-second (${second.server})`);
    // The stack's contract judged there by name: its argocd Service exists, ours was never created on that cluster.
    expect(live.view?.entries.find((e) => e.name === "argocd")).toMatchObject({
      verdict: "ABSENT",
      reasons: ["Service argocd/argocd-nodeport does not exist (run pulumi up)"],
    });
    expect(own.every((o) => o.error === undefined && o.view !== undefined)).toBe(true);

    // The recipe reads and nothing more: lists what a read lists; a write, a Secret, a ConfigMap refused.
    const asReader = (apiPath: string, method = "GET") => asPortal(apiPath, readerToken, readerCa, second.server, method);
    expect({
      services: await asReader("/api/v1/services"),
      nodes: await asReader("/api/v1/nodes"),
      endpointslices: await asReader("/apis/discovery.k8s.io/v1/endpointslices"),
      secrets: await asReader("/api/v1/secrets"),
      configmaps: await asReader("/api/v1/configmaps"),
      createService: await asReader("/api/v1/namespaces/argocd/services", "POST"),
      deleteNode: await asReader(`/api/v1/nodes/${SECOND_NODE.name}`, "DELETE"),
    }).toEqual({ services: 200, nodes: 200, endpointslices: 200, secrets: 403, configmaps: 403, createService: 403, deleteNode: 403 });

    // The second API server killed: its rows stay, marked stale with the cause; the stack's own stay live. Back: live again.
    const argv = await killApiServer(second);
    const stale = await secondIs("stale", (s) => /unreachable/.test(s.error ?? "") && s.view !== undefined);
    expect(stale.view?.entries.map((e) => e.name)).toEqual(live.view?.entries.map((e) => e.name));
    const page = await (await fetch(inCluster.url)).text();
    expect(page).toContain('<section id="stack-second" data-stack="second" data-stale="true">');
    expect(page).toMatch(/<section id="stack-sandbox" data-stack="sandbox">/);
    await restartApiServer(second, argv);
    await secondIs("live again", (s) => !s.error && s.view !== undefined);

    // The credential on no surface: page, JSON, /metrics, the log, stdout, the stack's outputs and the Deployment.
    const surfaces = {
      page: await (await fetch(inCluster.url)).text(),
      stacks: await (await fetch(new URL("/api/stacks", inCluster.url))).text(),
      entries: await (await fetch(new URL("/api/stacks/second/entries", inCluster.url))).text(),
      metrics: await (await fetch(new URL("/metrics", inCluster.url))).text(),
      log: inCluster.stderr(),
      stdout,
      outputs: sandbox.pulumi(["stack", "output", "--json", "--show-secrets"]).stdout,
      deployment: JSON.stringify((await portalPodSpec(cluster)).container),
    };
    expect(surfaces.metrics).toMatch(/ui_exposure_entry_up\{[^}]*stack="second",cluster="second"/);
    expect(surfaces.log).toContain("stack second: ");
    for (const [where, text] of Object.entries(surfaces)) {
      for (const secret of [readerToken, wrongToken, b64(readerToken)]) expect(text.includes(secret), `${where} holds a token`).toBe(false);
    }
  });

  it("with the portal's token: Services, EndpointSlices and Nodes readable; Secrets, ConfigMaps and (no hostPort entry) Pods forbidden", async () => {
    const role = await (() => {
      const kc = new cluster.lib.KubeConfig();
      kc.loadFromFile(cluster.kubeconfig);
      return kc.makeApiClient(cluster.lib.RbacAuthorizationV1Api).listClusterRole({ labelSelector: PORTAL_LABEL });
    })();
    expect(role.items[0]?.rules?.map((r) => [r.apiGroups, r.resources, r.verbs])).toEqual([
      [[""], ["services", "nodes"], ["list"]],
      [["discovery.k8s.io"], ["endpointslices"], ["list"]],
    ]);
    const statuses = {
      services: await asPortal("/api/v1/services", token, ca),
      endpointslices: await asPortal("/apis/discovery.k8s.io/v1/endpointslices", token, ca),
      nodes: await asPortal("/api/v1/nodes", token, ca),
      secrets: await asPortal("/api/v1/secrets", token, ca),
      secretsInNamespace: await asPortal(`/api/v1/namespaces/${PORTAL_NS}/secrets`, token, ca),
      configmaps: await asPortal("/api/v1/configmaps", token, ca),
      configmapsInNamespace: await asPortal(`/api/v1/namespaces/${PORTAL_NS}/configmaps`, token, ca),
      pods: await asPortal("/api/v1/pods", token, ca),
      // The other cluster's Secret by name, and no other (a Role with resourceNames).
      namedSecret: await asPortal(`/api/v1/namespaces/${PORTAL_NS}/secrets/cluster-second`, token, ca),
      otherSecret: await asPortal(`/api/v1/namespaces/${PORTAL_NS}/secrets/ui-exposure-other`, token, ca),
    };
    expect(statuses).toEqual({
      services: 200,
      endpointslices: 200,
      nodes: 200,
      secrets: 403,
      secretsInNamespace: 403,
      configmaps: 403,
      configmapsInNamespace: 403,
      pods: 403,
      namedSecret: 200,
      otherSecret: 403,
    });
    // Stops like the pod on a rollout.
    inCluster.child.kill("SIGTERM");
    const code = await new Promise<number | null>((r) => inCluster.child.on("exit", (c) => r(c)));
    expect(code, inCluster.stderr()).toBe(0);
  });

  it("a later up that changes what is published (our Service deleted by hand, re-created on its port) replaces the published ConfigMap it created", async () => {
    const port = new URL(outputs.urls.argocd as string).port;
    await cluster.core.deleteNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
    const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(up.code, summary(up)).toBe(0);
    const out = sandbox.pulumi(["stack", "output", "--json"]);
    const now = JSON.parse(out.stdout) as typeof outputs;
    expect(new URL(now.urls.argocd as string).port).toBe(port);
    expect(now.endpoints).not.toEqual(outputs.endpoints);
    const published = await cluster.core.readNamespacedConfigMap({ namespace: PORTAL_NS, name: "ui-exposure-published" });
    expect(JSON.parse(published.data?.["endpoints.json"] ?? "{}")).toEqual(JSON.parse(JSON.stringify(now.endpoints)));
  });
});
