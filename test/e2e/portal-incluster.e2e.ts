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
import { freeLoopbackPort } from "../../src/adapters/free-port";
import { type Cluster, type Sandbox, stopPlatform, summary, waitFor } from "../support/harness";
import { PORTAL_LABEL, PORTAL_NS, podIdentity, portalPodSpec, runInPod, startPortalPlatform, writeShippedFiles } from "../support/incluster-portal";

const NODE_IP = "127.0.0.41";

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

/** GET on the API server with the portal's token (and the CA the pod would trust). */
function asPortal(apiPath: string, token: string, ca: Buffer): Promise<number> {
  const server = new URL(cluster.server);
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: server.hostname, port: server.port, path: apiPath, ca, headers: { authorization: `Bearer ${token}`, accept: "application/json" } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on("error", reject);
  });
}

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
    ({ cluster, sandbox } = await startPortalPlatform({ name: "e2e-node", ip: NODE_IP }, "portal-e2e.yaml"));
  }, 600_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
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
    const view = (base: string) =>
      waitFor(
        `${base}/api/entries`,
        async () => {
          const res = await fetch(new URL("/api/entries", base));
          return res.ok ? ((await res.json()) as View) : undefined;
        },
        60_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}; in-cluster stderr: ${inCluster.stderr()}`);
      });
    // In turn: the operator's portal checks the portal's own URL, which answers only once the
    // in-cluster one listens (together, a loaded machine let the operator's check run first).
    const pod_ = await view(inCluster.url);
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
    expect(/<tr id="entry-grafana"[^>]*data-reachable="false"/.test(page)).toBe(true);
    expect(page).toContain('<span class="badge r-bad">NOT OK 500</span>');
    expect(page).toContain('<th colspan="6" scope="rowgroup">Observability</th>');
    const one = await fetch(new URL("/api/entries/grafana", inCluster.url));
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
    for (const base of [inCluster.url, `http://127.0.0.1:${port}/`]) {
      const drift = await waitFor(
        `argocd DRIFT at ${base}`,
        async () => {
          const res = await fetch(new URL("/api/entries/argocd", base));
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
