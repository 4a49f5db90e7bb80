// The users' path for real: `pulumi up / preview / destroy` with the real engine and
// providers against a real kube-apiserver, then the `exposure` commands against it.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cohabitEraYaml } from "../support/cohabit-era";
import { adoptRetainedCilium, type Cluster, EXAMPLE_UIS, type Sandbox, setCiliumConfig, startPlatform, stopPlatform, THREE_NODES } from "../support/harness";

const MANAGED = "app.kubernetes.io/managed-by=ui-exposure";
const UIS = [EXAMPLE_UIS.argocd, EXAMPLE_UIS.gitea, EXAMPLE_UIS.grafana];

let cluster: Cluster;
let sandbox: Sandbox;
const timings: Record<string, number> = {};

function l4Stack(extra: Record<string, unknown> = {}) {
  return {
    "kubernetes:context": "e2e",
    "ui-exposure:entries": ["argocd", "gitea", "grafana"],
    "ui-exposure:cilium": {
      mode: "l4",
      chart: { name: path.join(__dirname, "charts/cilium"), version: "1.18.12" },
      k8sServiceHost: "127.0.0.1",
      k8sServicePort: 6443,
    },
    ...extra,
  };
}

async function managedServices() {
  const list = await cluster.core.listServiceForAllNamespaces({ labelSelector: MANAGED });
  return list.items.sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

describe.sequential("e2e: real engine, real API server", () => {
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({ nodes: THREE_NODES, uis: UIS, stack: l4Stack() }));
  }, 600_000);

  afterAll(() => {
    stopPlatform({ cluster, sandbox });
    fs.mkdirSync(path.resolve(__dirname, "../../test-output"), { recursive: true });
    fs.writeFileSync(path.resolve(__dirname, "../../test-output/e2e-timings.json"), JSON.stringify(timings, null, 2));
  });

  it("pulumi up creates one NodePort Service per entry with a real allocated nodePort, and outputs its URL", async () => {
    const up = sandbox.pulumi(["up", "--yes"]);
    timings.firstUpMs = up.ms;
    expect(up.code, summary(up)).toBe(0);
    const services = await managedServices();
    expect(services.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`)).toEqual([
      "argocd/argocd-nodeport",
      "gitea/gitea-nodeport",
      "monitoring/grafana-nodeport",
    ]);
    for (const s of services) {
      expect(s.spec?.type).toBe("NodePort");
      expect(s.spec?.externalTrafficPolicy).toBe("Cluster");
      expect(s.spec?.ports?.[0]?.nodePort).toBeGreaterThanOrEqual(30000);
      expect(s.spec?.ports?.[0]?.nodePort).toBeLessThanOrEqual(32767);
    }
    expect(services[2]?.spec?.selector).toEqual({ "app.kubernetes.io/name": "grafana" });
    expect(services[2]?.spec?.ports?.[0]?.targetPort).toBe(3000);

    const out = sandbox.pulumi(["stack", "output", "--json"]);
    expect(out.code, summary(out)).toBe(0);
    const outputs = JSON.parse(out.stdout);
    const port = (name: string) => services.find((s) => s.metadata?.name === name)?.spec?.ports?.[0]?.nodePort;
    expect(outputs.urls).toEqual({
      argocd: `http://127.0.0.11:${port("argocd-nodeport")}`,
      gitea: `http://127.0.0.11:${port("gitea-nodeport")}`,
      grafana: `http://127.0.0.11:${port("grafana-nodeport")}`,
    });
    expect(outputs.node).toEqual({ name: "e2e-node-b", address: "127.0.0.11", pinned: false });
    // The stand-in Cilium chart was installed as a Helm release with the l4 values.
    const values = await cluster.core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-standin-values" });
    expect(values.data?.["kube-proxy-replacement"]).toBe("true");
    expect(JSON.parse(values.data?.["values.json"] ?? "{}").gatewayAPI).toEqual({ enabled: false });
  });

  it("pulumi preview --expect-no-changes right after up succeeds", () => {
    const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
    timings.previewMs = preview.ms;
    expect(preview.code, summary(preview)).toBe(0);
  });

  it("exposure status says MATCH for every entry once endpoints are ready", async () => {
    const r = await waitFor("MATCH from exposure status", async () => {
      const s = sandbox.exposure(["status", "--stack", "sandbox", "--json"]);
      return s.code === 0 ? s : undefined;
    });
    const rows = JSON.parse(r.stdout).entries.filter((e: { exposed: boolean }) => e.exposed);
    expect(rows.map((e: { name: string; verdict: string }) => `${e.name}:${e.verdict}`)).toEqual(["argocd:MATCH", "grafana:MATCH", "gitea:MATCH"]);
  });

  it("exposure portal serves the observed URLs and verdicts read from the real API server", async () => {
    const outputs = JSON.parse(sandbox.pulumi(["stack", "output", "--json"]).stdout) as { urls: Record<string, string> };
    const port = await new Promise<number>((r) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => r(p));
      });
    });
    const portal = sandbox.exposureSpawn(["portal", "--stack", "sandbox", "--listen", `127.0.0.1:${port}`]);
    try {
      const view = await waitFor("the portal to answer", async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/entries`);
          return res.ok ? ((await res.json()) as { entries: { name: string; verdict: string; url?: string }[] }) : undefined;
        } catch {
          return undefined;
        }
      });
      const exposed = view.entries.filter((e) => e.url);
      expect(exposed.map((e) => [e.name, e.verdict, e.url])).toEqual([
        ["argocd", "MATCH", outputs.urls.argocd],
        ["grafana", "MATCH", outputs.urls.grafana],
        ["gitea", "MATCH", outputs.urls.gitea],
      ]);
      const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      expect(page).toContain(`href="${outputs.urls.argocd}"`);
    } finally {
      portal.kill("SIGTERM");
    }
  });

  it("exposure probe reaches every URL once the data path serves the nodePorts", async () => {
    // No Cilium here: stand-in servers listen on <node IP>:<nodePort>, as kube-proxy replacement would.
    const outputs = JSON.parse(sandbox.pulumi(["stack", "output", "--json"]).stdout) as { urls: Record<string, string> };
    const servers = await Promise.all(
      Object.values(outputs.urls).map((u) => {
        const url = new URL(u);
        const server = http.createServer((_, res) => res.writeHead(200).end("ok"));
        return new Promise<http.Server>((r) => server.listen(Number(url.port), url.hostname, () => r(server)));
      }),
    );
    try {
      const ok = await sandbox.exposureAsync(["probe", "--stack", "sandbox", "--json"]);
      expect(ok.code, summary(ok)).toBe(0);
      await new Promise((r) => servers[0]?.close(r));
      const down = await sandbox.exposureAsync(["probe", "--stack", "sandbox"]);
      expect(down.code, summary(down)).toBe(4);
    } finally {
      await Promise.all(servers.map((srv) => new Promise((r) => srv.close(r))));
    }
  });

  it("exposure access shows the credentials from the cluster and writes the .env 0600", async () => {
    await cluster.core.createNamespacedSecret({
      namespace: "argocd",
      body: { metadata: { name: "argocd-initial-admin-secret" }, stringData: { password: "e2e-argocd-password" } },
    });
    const envFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "atlas-")), ".env.cluster.local");
    const r = sandbox.exposure(["access", "--stack", "sandbox", "--dotenv", envFile, "--json"]);
    // Only the Argo CD Secret exists here: the other declared credentials cannot be read (exit 5,
    // documented), and everything readable is still shown and written.
    expect(r.code, summary(r)).toBe(5);
    expect(r.stderr).toContain("(monitoring/kube-prometheus-stack-grafana)");
    const doc = JSON.parse(r.stdout);
    expect(doc.credentials.find((c: { label: string }) => c.label === "Argo CD admin")?.password).toEqual({ secret: true, value: "e2e-argocd-password" });
    expect(r.stderr).not.toContain("e2e-argocd-password");
    expect(fs.statSync(envFile).mode & 0o777).toBe(0o600);
  });

  it("a hand edit of a managed Service and a planted NodePort are both caught", async () => {
    const argocd = (await managedServices()).find((s) => s.metadata?.name === "argocd-nodeport");
    if (!argocd?.spec) throw new Error("argocd-nodeport missing");
    // Someone points our Service at other pods by hand.
    argocd.spec.selector = { "app.kubernetes.io/name": "tampered" };
    await cluster.core.replaceNamespacedService({ namespace: "argocd", name: "argocd-nodeport", body: argocd });
    await cluster.core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "sneaky" }, spec: { type: "NodePort", selector: { app: "sneaky" }, ports: [{ name: "http", port: 80 }] } },
    });

    const status = sandbox.exposure(["status", "--stack", "sandbox"]);
    expect(status.code, summary(status)).toBe(3);
    expect(status.stdout).toMatch(/argocd.*DRIFT.*selector differs from the vendored Service argocd\/argocd-server/);

    const drift = sandbox.exposure(["drift", "--stack", "sandbox"]);
    timings.driftMs = 0;
    expect(drift.code, summary(drift)).toBe(3);
    expect(drift.stdout + drift.stderr).toContain("argocd-nodeport");
    expect(drift.stdout + drift.stderr).toContain("default/sneaky");

    // Repair: up takes the selector back (patchForce); the planted Service is removed by hand.
    await cluster.core.deleteNamespacedService({ namespace: "default", name: "sneaky" });
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    const repaired = (await managedServices()).find((s) => s.metadata?.name === "argocd-nodeport");
    expect(repaired?.spec?.selector).toEqual({ "app.kubernetes.io/name": "argocd-server" });
  });

  it("an invalid contract makes up fail with the contract message and create nothing", async () => {
    const before = (await managedServices()).map((s) => s.metadata?.resourceVersion);
    const contract = path.join(sandbox.dir, "contract/endpoints.yaml");
    fs.writeFileSync(
      contract,
      "version: 1\nendpoints:\n  - name: argocd\n    exposed: true\n    service: { namespace: argocd, name: argocd-server, port: http }\n    ui_nodeport: 30080\n",
    );
    try {
      const up = sandbox.pulumi(["up", "--yes"]);
      expect(up.code).not.toBe(0);
      expect(up.stdout + up.stderr).toContain(
        "contract/endpoints.yaml:6:5: endpoints[0].ui_nodeport: legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'",
      );
      expect(up.stdout + up.stderr).not.toMatch(/\n\s+at .*\.ts:\d+/);
      expect((await managedServices()).map((s) => s.metadata?.resourceVersion)).toEqual(before);
    } finally {
      fs.rmSync(contract);
    }
  });

  it("the cohabit guard fails the preview when kube-proxy replacement is off", async () => {
    await setCiliumConfig(cluster, "false");
    sandbox.writeStack(l4Stack({ "ui-exposure:cilium": { mode: "cohabit" } }));
    try {
      const preview = sandbox.pulumi(["preview"]);
      expect(preview.code).not.toBe(0);
      expect(preview.stdout + preview.stderr).toContain("cilium (cohabit): kube-proxy-replacement is 'false' in kube-system/cilium-config");
    } finally {
      sandbox.writeStack(l4Stack());
      await setCiliumConfig(cluster, "true");
    }
  });

  /**
   * The phase-2 order with the real CRDs served (Cilium's and Gateway API's, from the Go modules
   * github.com/cilium/cilium@v1.20.2 and the sigs.k8s.io/gateway-api it requires): l4 refuses
   * while a pool, an L2 policy, a Cilium Gateway or HTTPRoute is left, and the commands it
   * prints, run as printed, clear the way (the Gateway's Service, Endpoints and
   * CiliumEnvoyConfig, owned by it as cilium-operator makes them, go by the real garbage
   * collection).
   */
  it("l4 refuses the wrong order with the real CRDs served; its printed commands, run as printed, clear it", async () => {
    const download = spawnSync("go", ["mod", "download", "-json", "github.com/cilium/cilium@v1.20.2", "sigs.k8s.io/gateway-api@v1.6.1"], {
      encoding: "utf8",
      timeout: 600_000,
      cwd: os.tmpdir(),
    });
    const dirs = [...download.stdout.matchAll(/"Dir": "([^"]+)"/g)].map((m) => m[1] as string);
    expect(dirs, download.stderr).toHaveLength(2);
    const [ciliumMod, gatewayMod] = dirs as [string, string];
    const env = { ...process.env, KUBECONFIG: cluster.kubeconfig };
    const kubectl = (args: string, input?: string) => {
      const r = spawnSync("sh", ["-c", `kubectl ${args}`], { encoding: "utf8", env, input, timeout: 360_000 });
      if (r.status !== 0) throw new Error(`kubectl ${args}: ${r.stderr}`);
      return r.stdout;
    };
    const crds = [
      ...["v2/ciliumloadbalancerippools.yaml", "v2/ciliumenvoyconfigs.yaml", "v2alpha1/ciliuml2announcementpolicies.yaml"].map((f) =>
        path.join(ciliumMod, "pkg/k8s/apis/cilium.io/client/crds", f),
      ),
      ...["gatewayclasses", "gateways", "httproutes"].map((k) => path.join(gatewayMod, `config/crd/standard/gateway.networking.k8s.io_${k}.yaml`)),
    ];
    kubectl(`apply --server-side ${crds.map((f) => `-f ${f}`).join(" ")}`);
    kubectl("wait --for=condition=Established --timeout=60s crd --all");
    kubectl("apply -f -", cohabitEraYaml([{ name: "gitea", namespace: "gitea" }]));
    const uid = kubectl("-n gitea get gateway gitea -o jsonpath='{.metadata.uid}'").trim();
    const owner = `ownerReferences: [{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, name: gitea, uid: ${uid}, controller: true}]`;
    kubectl(
      "apply -f -",
      `apiVersion: v1
kind: Service
metadata: {name: cilium-gateway-gitea, namespace: gitea, ${owner}}
spec: {type: LoadBalancer, ports: [{name: port-80, port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: cilium-gateway-gitea, namespace: gitea, ${owner}}
subsets: [{addresses: [{ip: 192.192.192.192}], ports: [{name: port-80, port: 9999}]}]
---
apiVersion: cilium.io/v2
kind: CiliumEnvoyConfig
metadata: {name: cilium-gateway-gitea, namespace: gitea, ${owner}}
spec: {services: [{name: cilium-gateway-gitea, namespace: gitea}], resources: []}
`,
    );
    const refused = sandbox.pulumi(["preview"]);
    expect(refused.code).not.toBe(0);
    const printed = refused.stdout + refused.stderr;
    expect(printed).toContain(
      "cilium (l4): HTTPRoutes gitea/gitea; Gateways gitea/gitea; CiliumL2AnnouncementPolicies l2-policy; CiliumLoadBalancerIPPools default-pool are still in the cluster",
    );
    const commands = [
      ...new Set(
        printed
          .split("\n")
          .filter((l) => /^\s*(kubectl|until) /.test(l))
          .map((l) => l.trim()),
      ),
    ];
    expect(commands).toEqual([
      "kubectl -n gitea delete httproute gitea",
      "kubectl -n gitea delete gateway gitea && kubectl -n gitea wait --for=delete --timeout=5m service/cilium-gateway-gitea endpoints/cilium-gateway-gitea ciliumenvoyconfig/cilium-gateway-gitea",
      "kubectl delete ciliuml2announcementpolicy l2-policy",
      "kubectl delete ciliumloadbalancerippool default-pool",
      "kubectl -n kube-system get leases -o name | grep '/cilium-l2announce-' | xargs -r kubectl -n kube-system delete",
    ]);
    for (const c of commands) {
      const r = spawnSync("bash", ["-c", c], { encoding: "utf8", env, timeout: 360_000 });
      expect(r.status, `${c}\n${r.stdout}\n${r.stderr}`).toBe(0);
    }
    expect(kubectl("get services,endpoints,ciliumenvoyconfigs -A -o name")).not.toMatch(/cilium-gateway-gitea/);
    const passes = sandbox.pulumi(["preview"]);
    expect(passes.code, summary(passes)).toBe(0);
  }, 900_000);

  it("pulumi destroy removes our Services and leaves the vendored ones untouched", async () => {
    const vendoredBefore = await Promise.all(UIS.map((u) => cluster.core.readNamespacedService({ namespace: u.namespace, name: u.service })));
    const destroy = sandbox.pulumi(["destroy", "--yes"]);
    timings.destroyMs = destroy.ms;
    expect(destroy.code, summary(destroy)).toBe(0);
    expect(await managedServices()).toEqual([]);
    const vendoredAfter = await Promise.all(UIS.map((u) => cluster.core.readNamespacedService({ namespace: u.namespace, name: u.service })));
    expect(vendoredAfter.map((s) => [s.metadata?.uid, s.metadata?.resourceVersion])).toEqual(
      vendoredBefore.map((s) => [s.metadata?.uid, s.metadata?.resourceVersion]),
    );
    // The CNI is never uninstalled by a destroy (retainOnDelete): its Helm release is still there.
    const releases = await cluster.core.listNamespacedSecret({ namespace: "kube-system", labelSelector: "owner=helm,name=cilium" });
    expect(releases.items.length).toBeGreaterThan(0);
  });

  it("a second up after destroy works, adopting the retained Cilium release as the runbook says", async () => {
    const adopt = adoptRetainedCilium(sandbox);
    expect(adopt.code, summary(adopt)).toBe(0);
    const up = sandbox.pulumi(["up", "--yes"]);
    timings.secondUpMs = up.ms;
    expect(up.code, summary(up)).toBe(0);
    expect((await managedServices()).length).toBe(3);
    const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(preview.code, summary(preview)).toBe(0);
  });
});
