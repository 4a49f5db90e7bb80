import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addNodes, type Cluster, EXAMPLE_UIS, type Sandbox, startPlatform, stopPlatform, THREE_NODES } from "../support/harness";

const UIS = [EXAMPLE_UIS.argocd, EXAMPLE_UIS.gitea, EXAMPLE_UIS.grafana];
const OUR_LABELS = { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "" };

let cluster: Cluster;
let sandbox: Sandbox;

function stack(extra: Record<string, unknown> = {}) {
  return {
    "kubernetes:context": "e2e",
    "ui-exposure:entries": ["argocd", "gitea", "grafana"],
    "ui-exposure:cilium": { mode: "cohabit" },
    ...extra,
  };
}

const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-3000)}`;

async function svc(namespace: string, name: string) {
  try {
    return await cluster.core.readNamespacedService({ namespace, name });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** Edits a Service as `kubectl edit` would (a full update by another field manager). */
async function edit(namespace: string, name: string, change: (s: NonNullable<Awaited<ReturnType<typeof svc>>>) => void) {
  const live = await svc(namespace, name);
  if (!live) throw new Error(`${namespace}/${name} missing`);
  change(live);
  await cluster.core.replaceNamespacedService({ namespace, name, body: live, fieldManager: "kubectl-edit" });
}

async function nodePortOf(namespace: string, name: string) {
  return (await svc(namespace, name))?.spec?.ports?.[0]?.nodePort;
}

/** A nodePort no Service holds, for moving one by hand. */
async function freePort(): Promise<number> {
  const used = new Set((await cluster.core.listServiceForAllNamespaces()).items.flatMap((s) => (s.spec?.ports ?? []).map((p) => p.nodePort)));
  for (let p = 32700; p > 30000; p--) if (!used.has(p)) return p;
  throw new Error("no free nodePort");
}

function outputs(): { urls: Record<string, string>; endpoints: Record<string, { nodePort?: number; uid?: string }> } {
  const out = sandbox.pulumi(["stack", "output", "--json"]);
  if (out.code !== 0) throw new Error(summary(out));
  return JSON.parse(out.stdout);
}

function upThenCleanPreview(what: string) {
  const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
  expect(up.code, `${what}: up\n${summary(up)}`).toBe(0);
  const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
  expect(preview.code, `${what}: the preview right after up must be clean\n${summary(preview)}`).toBe(0);
}

interface DriftJson {
  drift: boolean;
  preview: { state: string; changes?: { name: string; fields: string[] }[] };
  audit: { undeclared: { namespace: string; name: string; reason: string; fix: string }[] };
  status: { entries: { name: string; verdict: string; reasons: string[]; url?: string }[] };
}
function drift(): { code: number | null; json: DriftJson; raw: string } {
  const r = sandbox.exposure(["drift", "--stack", "sandbox", "--json"]);
  try {
    return { code: r.code, json: JSON.parse(r.stdout) as DriftJson, raw: summary(r) };
  } catch {
    throw new Error(`exposure drift printed no JSON\n${summary(r)}`);
  }
}
const verdict = (d: DriftJson, entry: string) => d.status.entries.find((e) => e.name === entry);

describe.sequential("e2e: drift, stable ports and ownership (real engine, real API server)", () => {
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({ nodes: THREE_NODES, uis: UIS, stack: stack() }));
  }, 600_000);

  afterAll(() => stopPlatform({ cluster, sandbox }));

  it("up refuses an entry whose Service is labelled as another ui-exposure stack's, naming that stack instead of suggesting a delete", async () => {
    await cluster.core.createNamespacedService({
      namespace: "monitoring",
      body: {
        metadata: { name: "grafana-nodeport", labels: { ...OUR_LABELS, "ui-exposure.io/entry": "grafana", "ui-exposure.io/stack": "team-b" } },
        spec: { type: "NodePort", selector: { "app.kubernetes.io/name": "grafana" }, ports: [{ name: "http", port: 80, targetPort: 3000 }] },
      },
    });
    try {
      const refused = sandbox.pulumi(["up", "--yes"]);
      expect(refused.code, summary(refused)).not.toBe(0);
      const text = refused.stdout + refused.stderr;
      expect(text).toContain(
        "entry 'grafana': Service monitoring/grafana-nodeport is labelled as published by ui-exposure stack 'team-b', and stack 'sandbox' did not create it",
      );
      expect(text).not.toContain("delete service grafana-nodeport");
      expect(await svc("argocd", "argocd-nodeport")).toBeUndefined();
    } finally {
      await cluster.core.deleteNamespacedService({ namespace: "monitoring", name: "grafana-nodeport" });
    }
  });

  it("up refuses to take over a pre-existing <entry>-nodeport (even labelled as ours), changes nothing, and prints the exact adoption command, which works", async () => {
    // Someone made monitoring/grafana-nodeport by hand, copying our labels.
    await cluster.core.createNamespacedService({
      namespace: "monitoring",
      body: {
        metadata: { name: "grafana-nodeport", labels: { ...OUR_LABELS, "ui-exposure.io/entry": "grafana" } },
        spec: { type: "NodePort", selector: { "app.kubernetes.io/name": "grafana" }, ports: [{ name: "http", port: 80, targetPort: 3000 }] },
      },
    });
    const foreign = await svc("monitoring", "grafana-nodeport");
    const refused = sandbox.pulumi(["up", "--yes"]);
    expect(refused.code, summary(refused)).not.toBe(0);
    const text = refused.stdout + refused.stderr;
    expect(text).toContain("entry 'grafana': Service monitoring/grafana-nodeport already exists and this stack did not create it");
    const adopt =
      "pulumi import kubernetes:core/v1:Service grafana-svc monitoring/grafana-nodeport --stack sandbox --generate-code=false --protect=false --yes";
    expect(text).toContain(adopt);
    // Refused in the preview: nothing was created.
    expect(await svc("argocd", "argocd-nodeport")).toBeUndefined();

    // Adopting on purpose, with the command as printed.
    const args = adopt
      .split(" ")
      .slice(1)
      .filter((a) => a !== "--stack" && a !== "sandbox");
    const imported = sandbox.pulumi(args);
    expect(imported.code, summary(imported)).toBe(0);
    upThenCleanPreview("first up after the adoption");
    expect((await svc("monitoring", "grafana-nodeport"))?.metadata?.uid).toBe(foreign?.metadata?.uid);
    const out = outputs();
    for (const [entry, ns] of [
      ["argocd", "argocd"],
      ["gitea", "gitea"],
      ["grafana", "monitoring"],
    ] as const) {
      expect(out.urls[entry]).toBe(`http://127.0.0.11:${await nodePortOf(ns, `${entry}-nodeport`)}`);
      expect(out.endpoints[entry]?.uid).toBe((await svc(ns, `${entry}-nodeport`))?.metadata?.uid);
    }
  });

  it("a look-alike in another namespace is never taken for the entry: the audit reports it as impersonation", async () => {
    await cluster.core.createNamespace({ body: { metadata: { name: "tenant" } } });
    await cluster.core.createNamespacedService({
      namespace: "tenant",
      body: {
        metadata: { name: "gitea-http", labels: { ...OUR_LABELS, "ui-exposure.io/entry": "gitea" } },
        spec: { type: "NodePort", selector: { app: "tenant" }, ports: [{ name: "http", port: 80 }] },
      },
    });
    const d = drift();
    expect(d.code, d.raw).toBe(3);
    expect(d.json.audit.undeclared).toEqual([
      expect.objectContaining({
        namespace: "tenant",
        name: "gitea-http",
        reason: expect.stringContaining("impersonates contract entry 'gitea'"),
        fix: "kubectl -n tenant delete service gitea-http",
      }),
    ]);
    // status says it too, with the same words and the command that removes it (issue 40 #5).
    const status = sandbox.exposure(["status", "--stack", "sandbox"]);
    expect(status.stdout, summary(status)).toContain("undeclared exposure: 1 UNDECLARED");
    expect(status.stdout).toMatch(
      / {2}NodePort tenant\/gitea-http \(http 80->\d+\): impersonates contract entry 'gitea' .*\n {4}fix: kubectl -n tenant delete service gitea-http$/m,
    );
    const ours = await nodePortOf("gitea", "gitea-nodeport");
    expect(verdict(d.json, "gitea")?.url).toBe(`http://127.0.0.11:${ours}`);
    expect(d.json.preview.state).toBe("no-changes");
  });

  it("a Service of ours deleted and re-created by hand (labels copied, one selector key added) is refused by up, touching nothing; removing it lets up recreate ours", async () => {
    const original = await svc("gitea", "gitea-nodeport");
    if (!original?.spec) throw new Error("gitea-nodeport missing");
    await cluster.core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
    await cluster.core.createNamespacedService({
      namespace: "gitea",
      body: {
        metadata: { name: "gitea-nodeport", labels: original.metadata?.labels ?? {} },
        spec: {
          type: "NodePort",
          selector: { ...original.spec.selector, intruder: "yes" },
          ports: [{ name: "http", port: 80, targetPort: original.spec.ports?.[0]?.targetPort ?? 3000 }],
        },
      },
    });
    const copy = await svc("gitea", "gitea-nodeport");
    const refused = sandbox.pulumi(["up", "--yes"]);
    expect(refused.code, summary(refused)).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain(
      `entry 'gitea': Service gitea/gitea-nodeport is not the Service the last up published (its uid ${copy?.metadata?.uid}; the last up published ${original.metadata?.uid}); ui-exposure never takes over a Service it did not create: remove it (kubectl -n gitea delete service gitea-nodeport), then pulumi up recreates this stack's own`,
    );
    // Touching nothing: the copy keeps its selector, the intruder's key included.
    expect((await svc("gitea", "gitea-nodeport"))?.spec?.selector).toMatchObject({ intruder: "yes" });
    expect((await svc("gitea", "gitea-nodeport"))?.metadata?.uid).toBe(copy?.metadata?.uid);
    const d = drift();
    expect(verdict(d.json, "gitea")?.reasons.join(" ")).toContain("is not the Service the last up published");

    // The remedy as printed.
    await cluster.core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
    upThenCleanPreview("up after removing the copy");
    expect((await svc("gitea", "gitea-nodeport"))?.spec?.selector).toEqual(original.spec.selector);
  });

  it("an up stopped after re-creating our Service but before writing its outputs (deterministically: the API server refuses the port hold): the next up cannot prove that Service ours (the state a refresh rewrites proves nothing) and refuses it; the remedy as printed converges on the published port", async () => {
    const kc = new cluster.lib.KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    const admission = kc.makeApiClient(cluster.lib.AdmissionregistrationV1Api);
    const stop = "e2e-stop-after-create";
    const refusesUpdates = async () => {
      const live = await svc("gitea", "gitea-nodeport");
      try {
        await cluster.core.replaceNamespacedService({ namespace: "gitea", name: "gitea-nodeport", body: live as never, dryRun: "All" });
        return false;
      } catch {
        return true;
      }
    };
    const until = async (want: boolean) => {
      for (let i = 0; i < 100 && (await refusesUpdates()) !== want; i++) await new Promise((r) => setTimeout(r, 200));
      expect(await refusesUpdates()).toBe(want);
    };
    const published = outputs().endpoints.gitea?.uid;
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: stop },
        spec: {
          failurePolicy: "Fail",
          matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["services"] }] },
          validations: [{ expression: "object.metadata.name != 'gitea-nodeport'", message: "stopped here by the test" }],
        },
      } as never,
    });
    await admission.createValidatingAdmissionPolicyBinding({
      body: { metadata: { name: stop }, spec: { policyName: stop, validationActions: ["Deny"] } } as never,
    });
    try {
      await until(true);
      await cluster.core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
      const stopped = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(stopped.code, summary(stopped)).not.toBe(0);
      expect(stopped.stdout + stopped.stderr).toContain("stopped here by the test");
      // The Service exists again (created and recorded by the stopped up); the outputs still name the old one.
      const recreated = await svc("gitea", "gitea-nodeport");
      expect(recreated?.metadata?.uid).toBeDefined();
      expect(recreated?.metadata?.uid).not.toBe(published);
      expect(outputs().endpoints.gitea?.uid).toBe(published);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name: stop });
      await admission.deleteValidatingAdmissionPolicy({ name: stop });
    }
    await until(false);
    const uid = (await svc("gitea", "gitea-nodeport"))?.metadata?.uid;
    const port = outputs().endpoints.gitea?.nodePort;
    const refused = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(refused.code, summary(refused)).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain(
      `entry 'gitea': Service gitea/gitea-nodeport is not the Service the last up published (its uid ${uid}; the last up published ${published}); ui-exposure never takes over a Service it did not create: remove it (kubectl -n gitea delete service gitea-nodeport), then pulumi up recreates this stack's own`,
    );
    expect((await svc("gitea", "gitea-nodeport"))?.metadata?.uid).toBe(uid);
    await cluster.core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
    upThenCleanPreview("the up after the remedy");
    expect(await nodePortOf("gitea", "gitea-nodeport")).toBe(port);
    expect(outputs().endpoints.gitea?.uid).toBe((await svc("gitea", "gitea-nodeport"))?.metadata?.uid);
  });

  it("a port or an externalIP added to our Service is undeclared exposure for status and drift's audit", async () => {
    await edit("argocd", "argocd-nodeport", (s) => {
      s.spec?.ports?.push({ name: "ssh", port: 22, targetPort: 22, protocol: "TCP" });
      if (s.spec) s.spec.externalIPs = ["198.18.0.9"];
    });
    try {
      const d = drift();
      expect(d.code, d.raw).toBe(3);
      expect(verdict(d.json, "argocd")?.reasons.join(" ")).toContain("undeclared port ssh 22->");
      expect(verdict(d.json, "argocd")?.reasons.join(" ")).toContain("undeclared externalIPs 198.18.0.9 on our Service");
      expect(d.json.audit.undeclared).toContainEqual(
        expect.objectContaining({ namespace: "argocd", name: "argocd-nodeport", reason: expect.stringContaining("opens more than the entry declares") }),
      );
    } finally {
      await edit("argocd", "argocd-nodeport", (s) => {
        if (s.spec) {
          s.spec.ports = s.spec.ports?.filter((p) => p.name !== "ssh");
          s.spec.externalIPs = undefined;
        }
      });
    }
  });

  it("a moved port, a deleted Service, a renamed port and a chart's selector change all show in the preview and in drift; up puts every URL back on its port", async () => {
    const before = outputs();
    const moved = await freePort();
    await edit("argocd", "argocd-nodeport", (s) => {
      if (s.spec?.ports?.[0]) s.spec.ports[0].nodePort = moved;
    });
    await cluster.core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
    await edit("monitoring", "kube-prometheus-stack-grafana", (s) => {
      if (s.spec) s.spec.selector = { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "v2" };
    });

    const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(preview.code, summary(preview)).not.toBe(0);
    expect(preview.stdout).toMatch(/ServicePatch\s+argocd-port\s+update/);
    expect(preview.stdout).toMatch(/Service\s+gitea-svc\s+create/);
    expect(preview.stdout).toMatch(/Service\s+grafana-svc\s+update/);

    const d = drift();
    expect(d.code, d.raw).toBe(3);
    expect(d.json.preview.state).toBe("changes");
    const was = before.endpoints.argocd?.nodePort;
    const publishedUrl = before.urls.argocd as string;
    expect(verdict(d.json, "argocd")?.reasons).toContain(
      `nodePort changed since the last up (${was} -> ${moved}): the published URL ${publishedUrl} no longer reaches this Service, which now listens on ${publishedUrl.replace(`:${was}`, `:${moved}`)}; pulumi up puts ${was} back`,
    );
    expect(verdict(d.json, "gitea")).toMatchObject({ verdict: "ABSENT" });
    expect(verdict(d.json, "grafana")?.reasons).toContain("selector differs from the vendored Service monitoring/kube-prometheus-stack-grafana");

    upThenCleanPreview("up after the hand edits");
    expect(await nodePortOf("argocd", "argocd-nodeport")).toBe(before.endpoints.argocd?.nodePort);
    expect(await nodePortOf("gitea", "gitea-nodeport")).toBe(before.endpoints.gitea?.nodePort);
    expect((await svc("monitoring", "grafana-nodeport"))?.spec?.selector).toEqual({ "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "v2" });
    expect(outputs().urls).toEqual(before.urls);

    // A port name or type changed by hand on our Service is drift too, and up takes it back.
    await edit("gitea", "gitea-nodeport", (s) => {
      if (s.spec?.ports?.[0]) s.spec.ports[0].name = "web";
    });
    const renamed = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(renamed.code, summary(renamed)).not.toBe(0);
    expect(renamed.stdout).toMatch(/Service\s+gitea-svc\s+update/);
    upThenCleanPreview("up after a renamed port");
    expect((await svc("gitea", "gitea-nodeport"))?.spec?.ports?.[0]).toMatchObject({ name: "http", nodePort: before.endpoints.gitea?.nodePort });
  });

  it("the URLs' node going NotReady shows in the preview and in drift; up moves the URLs to a Ready node", async () => {
    await addNodes(cluster, [{ name: "e2e-node-b", ip: "127.0.0.11", ready: false }]);
    try {
      const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
      expect(preview.code, summary(preview)).not.toBe(0);
      expect(preview.stdout).toMatch(/NodePortExposure\s+argocd\s+update/);
      const d = drift();
      expect(d.code, d.raw).toBe(3);
      expect(verdict(d.json, "argocd")?.reasons.join(" ")).toContain("node e2e-node-b is not Ready");
      upThenCleanPreview("up after the node went NotReady");
      expect(outputs().urls.argocd).toBe(`http://127.0.0.12:${await nodePortOf("argocd", "argocd-nodeport")}`);
    } finally {
      await addNodes(cluster, [{ name: "e2e-node-b", ip: "127.0.0.11", ready: true }]);
    }
  });

  it("a foreign object in the portal namespace survives the suggested remedy and destroy; destroy removes only what the stack created", async () => {
    const portal = { enabled: true, skipAwait: true };
    sandbox.writeStack(stack({ "ui-exposure:portal": portal }));
    upThenCleanPreview("first up with the portal");
    await cluster.core.createNamespacedConfigMap({ namespace: "platform-portal", body: { metadata: { name: "tenant-data" }, data: { keep: "me" } } });
    // The remedy the old message suggested: stop creating the namespace.
    sandbox.writeStack(stack({ "ui-exposure:portal": { ...portal, createNamespace: false } }));
    upThenCleanPreview("up with createNamespace: false");
    expect((await cluster.core.readNamespacedConfigMap({ namespace: "platform-portal", name: "tenant-data" })).data).toEqual({ keep: "me" });

    const destroy = sandbox.pulumi(["destroy", "--yes"]);
    expect(destroy.code, summary(destroy)).toBe(0);
    expect((await cluster.core.readNamespace({ name: "platform-portal" })).status?.phase).toBe("Active");
    expect((await cluster.core.readNamespacedConfigMap({ namespace: "platform-portal", name: "tenant-data" })).data).toEqual({ keep: "me" });
    expect(await svc("tenant", "gitea-http")).toBeDefined();
    for (const [entry, ns] of [
      ["argocd", "argocd"],
      ["gitea", "gitea"],
      ["grafana", "monitoring"],
    ] as const)
      expect(await svc(ns, `${entry}-nodeport`)).toBeUndefined();
    for (const ui of UIS) expect(await svc(ui.namespace, ui.service)).toBeDefined();
  });

  it("the portal's Service made by hand is refused with an import command that works end to end (adopted, never replaced)", async () => {
    await cluster.core.createNamespace({ body: { metadata: { name: "portal-b" } } });
    await cluster.core.createNamespacedService({
      namespace: "portal-b",
      body: {
        metadata: { name: "portal" },
        spec: { type: "ClusterIP", selector: { app: "old-portal" }, ports: [{ name: "http", port: 80, targetPort: 8000 }] },
      },
    });
    const foreign = await svc("portal-b", "portal");
    sandbox.writeStack(stack({ "ui-exposure:portal": { enabled: true, skipAwait: true, namespace: "portal-b", createNamespace: false } }));
    const refused = sandbox.pulumi(["up", "--yes"]);
    expect(refused.code, summary(refused)).not.toBe(0);
    const adopt = "pulumi import kubernetes:core/v1:Service portal-server-svc portal-b/portal --stack sandbox --generate-code=false --protect=false --yes";
    expect(refused.stdout + refused.stderr).toContain(`portal: Service portal-b/portal already exists and this stack did not create it`);
    expect(refused.stdout + refused.stderr).toContain(adopt);
    const imported = sandbox.pulumi(
      adopt
        .split(" ")
        .slice(1)
        .filter((a) => a !== "--stack" && a !== "sandbox"),
    );
    expect(imported.code, summary(imported)).toBe(0);
    upThenCleanPreview("up after importing the portal's Service");
    const adopted = await svc("portal-b", "portal");
    expect(adopted?.metadata?.uid).toBe(foreign?.metadata?.uid);
    expect(adopted?.spec?.selector).not.toEqual({ app: "old-portal" });
  });
});
