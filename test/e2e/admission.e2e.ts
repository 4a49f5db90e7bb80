// The exposure guard at admission against the real API server: the ValidatingAdmissionPolicy
// that `pulumi up` generates from the contract is evaluated by kube-apiserver itself (CEL),
// so every expression here runs for real, with the users' commands (up, destroy, drift).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as https from "node:https";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { LiveClusterReader } from "../../src/adapters/kube-live";
import { untilPolicyTypeChecked } from "../../src/core/admission";
import { readChartFixture, type Workload } from "../support/chart-fixtures";
import { type Cluster, EXAMPLE_UIS, type Sandbox, startPlatform, stopPlatform, toolchainBin } from "../support/harness";

type ClientNode = Cluster["lib"];
const POLICY = "ui-exposure-guard-sandbox";
const UIS = [EXAMPLE_UIS.argocd, EXAMPLE_UIS.gitea];
const ARGOCD = { name: "argocd", exposed: true, scheme: "http", service: { namespace: "argocd", name: "argocd-server", port: "http" } };
const GITEA = { name: "gitea", exposed: true, scheme: "http", service: { namespace: "gitea", name: "gitea-http", port: "http" } };
const LINEAGE = {
  name: "lineage-api",
  exposed: true,
  scheme: "http",
  hostPort: { namespace: "tools", port: 8090, podSelector: { "app.kubernetes.io/name": "lineage-api" } },
};

let cluster: Cluster;
let sandbox: Sandbox;
let kc: InstanceType<ClientNode["KubeConfig"]>;
let apps: InstanceType<ClientNode["AppsV1Api"]>;
let batch: InstanceType<ClientNode["BatchV1Api"]>;
let admission: InstanceType<ClientNode["AdmissionregistrationV1Api"]>;

const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

function writeContract(endpoints: unknown[]) {
  fs.writeFileSync(path.join(sandbox.dir, "contract/e2e.yaml"), stringify({ version: 1, endpoints }));
}

/** The platform agents the shipped dirqual stack allows, as written there (items with their reason). */
const SHIPPED_HOST_PORTS = (
  parse(fs.readFileSync(path.resolve(__dirname, "../../Pulumi.dirqual.yaml"), "utf8")) as { config: Record<string, { hostPorts: unknown[] }> }
).config["ui-exposure:allowlist"]?.hostPorts as unknown[];

/** The most items an allowlist list may hold (the guard's bound on the work per object). */
const ALLOWLIST_LIMIT = 500;
/** Items that match nothing here, filling a list up to the limit: every case runs with the largest allowlist the guard accepts. */
const filledTo = (items: unknown[], filler: (i: number) => string) => [
  ...items,
  ...Array.from({ length: ALLOWLIST_LIMIT - items.length }, (_, i) => filler(i)),
];

function stack(mode: string) {
  return {
    "kubernetes:context": "e2e",
    "ui-exposure:contract": "contract/e2e.yaml",
    "ui-exposure:cilium": { mode: "cohabit" },
    "ui-exposure:allowlist": {
      services: filledTo(["tools/allowed-*"], (i) => `other-${i}/ui-${i}-*`),
      hostPorts: filledTo(
        ["tools/agent-*:9964", "tools/debug-pod:2222", "default/node-debugger-*:hostNetwork", ...SHIPPED_HOST_PORTS],
        (i) => `other-${i}/agent-${i}-*:${1000 + i}`,
      ),
    },
    "ui-exposure:admission": { mode },
  };
}

/** A workload of a rendered upstream chart (test/data/charts) as an object to create: its real pod template, a stand-in image. */
function chartWorkload(file: string, name: string, extraPort?: number) {
  const w = readChartFixture(file).workloads.find((x) => x.metadata.name === name) as Workload;
  const t = w.spec.template;
  const containers = t.spec.containers.map((c, i) => ({
    name: c.name,
    image: "example.invalid/x:1",
    ports: [...(c.ports ?? []), ...(i === 0 && extraPort ? [{ name: "extra", containerPort: extraPort, protocol: "TCP" }] : [])],
  }));
  return {
    kind: w.kind,
    namespace: w.metadata.namespace,
    body: {
      metadata: { name: w.metadata.name, namespace: w.metadata.namespace, labels: w.metadata.labels },
      spec: {
        selector: w.spec.selector,
        template: { metadata: t.metadata, spec: { ...(t.spec.hostNetwork ? { hostNetwork: true } : {}), automountServiceAccountToken: false, containers } },
      },
    },
  };
}

/** The message of the API server's refusal, or "admitted". */
async function outcome(request: Promise<unknown>): Promise<string> {
  try {
    await request;
    return "admitted";
  } catch (err) {
    const e = err as { code?: number; body?: unknown };
    const body = typeof e.body === "string" ? e.body : JSON.stringify(e.body);
    try {
      return `${e.code}: ${(JSON.parse(body) as { message?: string }).message}`;
    } catch {
      return `${e.code}: ${body}`;
    }
  }
}

const svc = (name: string, type: string) => ({
  metadata: { name },
  spec: { type, selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
});
const podSpec = (ports: { containerPort: number; hostPort?: number }[], extra: Record<string, unknown> = {}) => ({
  automountServiceAccountToken: false,
  containers: [{ name: "main", image: "example.invalid/x:1", ports }],
  ...extra,
});
const pod = (
  name: string,
  ports: { containerPort: number; hostPort?: number }[],
  labels: Record<string, string> = {},
  extra: Record<string, unknown> = {},
) => ({
  metadata: { name, labels },
  spec: podSpec(ports, extra),
});
const workload = (name: string, ports: { containerPort: number; hostPort?: number }[]) => ({
  metadata: { name },
  spec: { selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: podSpec(ports) } },
});

/** Creates a Service by a raw request and returns the API server's Warning headers (kubectl shows them the same way). */
async function createWithWarnings(namespace: string, body: unknown, dryRun = false): Promise<{ status: number; warnings: string[] }> {
  const server = new URL(cluster.server);
  const opts: https.RequestOptions = {
    method: "POST",
    hostname: server.hostname,
    port: server.port,
    path: `/api/v1/namespaces/${namespace}/services${dryRun ? "?dryRun=All" : ""}`,
    headers: { "content-type": "application/json" },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = https.request(opts, (res) => {
      res.resume();
      res.on("end", () => {
        const w = res.headers.warning;
        resolve({ status: res.statusCode ?? 0, warnings: w === undefined ? [] : Array.isArray(w) ? w : [w] });
      });
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.sequential("e2e: the exposure guard at admission", () => {
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({ nodes: [{ name: "e2e-node-b", ip: "127.0.0.11", ready: true }], uis: UIS, stack: stack("deny") }));
    kc = new cluster.lib.KubeConfig();
    kc.loadFromFile(cluster.kubeconfig);
    apps = kc.makeApiClient(cluster.lib.AppsV1Api);
    batch = kc.makeApiClient(cluster.lib.BatchV1Api);
    admission = kc.makeApiClient(cluster.lib.AdmissionregistrationV1Api);
    await cluster.core.createNamespace({ body: { metadata: { name: "tools" } } });
    // The ServiceAccount admission wants it before the first pod; the controller may be later.
    await outcome(cluster.core.createNamespacedServiceAccount({ namespace: "tools", body: { metadata: { name: "default" } } }));
    // The brick behind the contract's hostPort entry: planning publishes the node of a scheduled pod
    // that declares the port (no kubelet here, so the pod is bound to the node by spec.nodeName).
    await cluster.core.createNamespacedPod({
      namespace: "tools",
      body: pod(
        "lineage-api-node-b",
        [{ containerPort: 8090, hostPort: 8090 }],
        { "app.kubernetes.io/name": "lineage-api" },
        { nodeName: "e2e-node-b" },
      ) as never,
    });
    writeContract([ARGOCD, LINEAGE]);
  }, 600_000);

  afterAll(() => stopPlatform({ cluster, sandbox }));

  it("with deny, the first up creates the guard and then our Service, which the guard admits", async () => {
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    const policy = await admission.readValidatingAdmissionPolicy({ name: POLICY });
    // The API server compiled every expression: no type-checking warning on the kinds it matches (the fifth refuses the stack's own probe).
    expect(policy.spec?.validations?.length).toBe(5);
    const binding = await admission.readValidatingAdmissionPolicyBinding({ name: POLICY });
    expect(binding.spec?.validationActions).toEqual(["Deny"]);
    const ours = await cluster.core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
    expect(ours.spec?.type).toBe("NodePort");
    // The guard is stable: nothing to change on the next preview.
    const again = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(again.code, summary(again)).toBe(0);
  });

  it("up applied the binding only after the API server type-checked the policy clean; a policy it flags gets one clear refusal (issue 23 #4)", async () => {
    const reader = await LiveClusterReader.connect({ kubeconfig: cluster.kubeconfig });
    const policy = await admission.readValidatingAdmissionPolicy({ name: POLICY });
    // What `up` waited for before the binding: this generation checked, no warning.
    expect(policy.status?.observedGeneration).toBe(policy.metadata?.generation);
    expect(policy.status?.typeChecking?.expressionWarnings ?? []).toEqual([]);
    expect(await untilPolicyTypeChecked(reader, POLICY, { timeoutMs: 30_000, intervalMs: 250 })).toBeUndefined();

    // A policy whose expression the API server's type check flags (a field no matched kind has):
    // it is stored (it compiles untyped), then flagged in its status; the check says so, once.
    const flagged = `${POLICY}-flagged`;
    const spec = JSON.parse(JSON.stringify(policy.spec));
    spec.validations.push({ expression: "object.spec.nonexistentField == 'x'", message: "m", reason: "Forbidden" });
    await admission.createValidatingAdmissionPolicy({ body: { metadata: { name: flagged }, spec } as never });
    try {
      const problem = await untilPolicyTypeChecked(reader, flagged, { timeoutMs: 60_000, intervalMs: 250 });
      expect(problem).toContain(
        `ValidatingAdmissionPolicy ${flagged}: the API server's type check of the generated expressions warns (spec.validations[5].expression: `,
      );
      expect(problem).toContain("undefined field 'nonexistentField'");
      expect(problem).toContain("its binding refuses nothing until an up passes this check");
    } finally {
      await admission.deleteValidatingAdmissionPolicy({ name: flagged });
    }

    // What the API server refuses outright (a lone surrogate in a literal) is never even stored.
    const badLiteral = JSON.parse(JSON.stringify(policy.spec));
    badLiteral.validations.push({ expression: "'\\ud800' == 'x'", message: "m", reason: "Forbidden" });
    expect(
      await outcome(admission.createValidatingAdmissionPolicy({ body: { metadata: { name: `${POLICY}-literal` }, spec: badLiteral } as never })),
    ).toContain("invalid unicode code point");
  });

  it("with deny, refuses undeclared NodePort/LoadBalancer Services and hostPorts with the message, admits the rest", async () => {
    // The API server wraps the policy's message in its Forbidden status ('<resource> "<name>" is forbidden: ').
    const refusedService = `403: services "debug" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: Service tools/debug (type NodePort) is not in the ui-exposure contract of stack sandbox: publish the UI through an entry of contract/e2e.yaml (ui-exposure then creates '<entry>-nodeport'), or declare the Service in ui-exposure:allowlist.services of Pulumi.sandbox.yaml`;
    const hostPortHelp =
      "which is not in the ui-exposure contract of stack sandbox: declare it as a hostPort entry (namespace, port, podSelector) of contract/e2e.yaml, or in ui-exposure:allowlist.hostPorts of Pulumi.sandbox.yaml as 'namespace/pod-prefix*:port' (or 'namespace/pod-prefix*:hostNetwork' for a pod on the host network)";
    const core = cluster.core;
    const create = (body: unknown) => outcome(core.createNamespacedService({ namespace: "tools", body: body as never }));
    const createPod = (body: unknown) => outcome(core.createNamespacedPod({ namespace: "tools", body: body as never }));

    expect(await create(svc("debug", "NodePort"))).toBe(refusedService);
    expect(await create(svc("lb", "LoadBalancer"))).toContain("denied request: Service tools/lb (type LoadBalancer) is not in the ui-exposure contract");
    expect(await create(svc("plain", "ClusterIP"))).toBe("admitted");
    expect(await create(svc("allowed-ui", "NodePort"))).toBe("admitted");
    // Our own name in another namespace is not ours.
    expect(await create(svc("argocd-nodeport", "NodePort"))).toContain("Service tools/argocd-nodeport (type NodePort) is not in");
    // A server-side dry run of a Service presenting itself as ours passes (what `pulumi preview`
    // does for an entry just added); the real create of the same object does not.
    const lookAlike = {
      ...svc("x-nodeport", "NodePort"),
      metadata: { name: "x-nodeport", labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "x" } },
    };
    expect(await outcome(core.createNamespacedService({ namespace: "tools", body: lookAlike as never, dryRun: "All" }))).toBe("admitted");
    expect(await create(lookAlike)).toContain("Service tools/x-nodeport (type NodePort) is not in");
    // Changing an existing Service to NodePort is refused too.
    const plain = await core.readNamespacedService({ namespace: "tools", name: "plain" });
    expect(
      await outcome(core.replaceNamespacedService({ namespace: "tools", name: "plain", body: { ...plain, spec: { ...plain.spec, type: "NodePort" } } })),
    ).toContain("Service tools/plain (type NodePort) is not in the ui-exposure contract");

    expect(await createPod(pod("hp", [{ containerPort: 8080, hostPort: 9999 }]))).toBe(
      `403: pods "hp" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: Pod tools/hp declares hostPort 9999, ${hostPortHelp}`,
    );
    expect(await createPod(pod("no-hostport", [{ containerPort: 8080 }]))).toBe("admitted");
    // hostNetwork: every containerPort is a hostPort.
    expect(await createPod(pod("hostnet", [{ containerPort: 7070 }], {}, { hostNetwork: true }))).toContain("Pod tools/hostnet declares hostPort 7070,");
    // On the host network with no port listed, it may serve on any: refused too (issue 33 #3)...
    expect(await createPod(pod("hostnet-noport", [], {}, { hostNetwork: true }))).toBe(
      `403: pods "hostnet-noport" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: Pod tools/hostnet-noport is on the host network (it may serve on every port of the node), which is not in the ui-exposure contract of stack sandbox: declare it in ui-exposure:allowlist.hostPorts of Pulumi.sandbox.yaml as 'namespace/pod-prefix*:hostNetwork'`,
    );
    // ...unless declared: the documented line admits `kubectl debug node/...`'s pod, as kubectl creates it.
    await outcome(core.createNamespacedServiceAccount({ namespace: "default", body: { metadata: { name: "default" } } }));
    const nodeDebugger = {
      metadata: { name: "node-debugger-e2e-node-b-x7k2p" },
      spec: { ...podSpec([]), nodeName: "e2e-node-b", hostNetwork: true, hostPID: true, hostIPC: true, restartPolicy: "Never" },
    };
    expect(await outcome(core.createNamespacedPod({ namespace: "default", body: nodeDebugger as never }))).toBe("admitted");
    // The contract's hostPort entry: namespace, port and podSelector.
    expect(await createPod(pod("lineage-api-0", [{ containerPort: 8090, hostPort: 8090 }], { "app.kubernetes.io/name": "lineage-api" }))).toBe("admitted");
    expect(await createPod(pod("impostor", [{ containerPort: 8090, hostPort: 8090 }], { "app.kubernetes.io/name": "other" }))).toContain(
      "Pod tools/impostor declares hostPort 8090,",
    );
    // The allowlist: an exact pod name, a prefix (with a generated name too).
    expect(await createPod(pod("debug-pod", [{ containerPort: 2222, hostPort: 2222 }]))).toBe("admitted");
    expect(await createPod({ metadata: { generateName: "agent-" }, spec: podSpec([{ containerPort: 9964, hostPort: 9964 }]) })).toBe("admitted");

    // Pod templates of workloads, refused before any pod exists.
    expect(
      await outcome(apps.createNamespacedDeployment({ namespace: "tools", body: workload("web", [{ containerPort: 80, hostPort: 8081 }]) as never })),
    ).toContain("Deployment tools/web (pod template) declares hostPort 8081, which is not in the ui-exposure contract");
    expect(
      await outcome(apps.createNamespacedDaemonSet({ namespace: "tools", body: workload("agent", [{ containerPort: 9964, hostPort: 9964 }]) as never })),
    ).toBe("admitted");
    const db = workload("db", [{ containerPort: 5432, hostPort: 5432 }]);
    expect(
      await outcome(apps.createNamespacedStatefulSet({ namespace: "tools", body: { ...db, spec: { ...db.spec, serviceName: "db" } } as never })),
    ).toContain("StatefulSet tools/db (pod template) declares hostPort 5432");
    const jobTemplate = { template: { spec: { ...podSpec([{ containerPort: 1234, hostPort: 1234 }]), restartPolicy: "Never" } } };
    expect(await outcome(batch.createNamespacedJob({ namespace: "tools", body: { metadata: { name: "once" }, spec: jobTemplate } as never }))).toContain(
      "Job tools/once (pod template) declares hostPort 1234",
    );
    expect(
      await outcome(
        batch.createNamespacedCronJob({
          namespace: "tools",
          body: { metadata: { name: "nightly" }, spec: { schedule: "0 3 * * *", jobTemplate: { spec: jobTemplate } } } as never,
        }),
      ),
    ).toContain("CronJob tools/nightly (pod template) declares hostPort 1234");
    // An admitted workload is not blocked later: scaling keeps the same hostPorts.
    // (The DaemonSet controller writes its status meanwhile: retry on a version conflict.)
    let relabel = "";
    for (let attempt = 0; attempt < 5; attempt++) {
      const ds = await apps.readNamespacedDaemonSet({ namespace: "tools", name: "agent" });
      const body = { ...ds, metadata: { ...ds.metadata, labels: { touched: "yes" } } };
      relabel = await outcome(apps.replaceNamespacedDaemonSet({ namespace: "tools", name: "agent", body }));
      if (!relabel.startsWith("409")) break;
    }
    expect(relabel).toBe("admitted");
  });

  it("with deny (failurePolicy Ignore), a pod near the object size limit cannot outspend the guard: refused as too large, while the largest pod it checks is judged port by port", async () => {
    const createPod = (body: unknown) => outcome(cluster.core.createNamespacedPod({ namespace: "tools", body: body as never }));
    // 30,000 containerPorts on the host network (22 and 80 among them): the check's cost would pass the
    // API server's limit, and failurePolicy Ignore would admit it. It is refused before any port is read.
    const huge = Array.from({ length: 30_000 }, (_, i) => ({ containerPort: i === 0 ? 22 : i === 1 ? 80 : 20_000 + i }));
    expect(await createPod(pod("huge", huge, {}, { hostNetwork: true }))).toBe(
      `403: pods "huge" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}' denied request: Pod tools/huge has more than 32 containers in a list or 32 ports in a container: too large for the exposure guard to check (ui-exposure refuses what it cannot check): split it or declare fewer ports`,
    );
    // At the bound (32 containers of 32 ports, every one undeclared), the policy still answers within its cost: refused by port.
    const containers = Array.from({ length: 32 }, (_, c) => ({
      name: `c${c}`,
      image: "example.invalid/x:1",
      ports: Array.from({ length: 32 }, (_, p) => ({ containerPort: 30_000 + c * 32 + p })),
    }));
    const widest = await createPod({ metadata: { name: "widest" }, spec: { automountServiceAccountToken: false, hostNetwork: true, containers } });
    expect(widest).toContain("denied request: Pod tools/widest declares hostPort 30000, 30001,");
    // At the bound in both lists a pod can fill (2,048 ports), with the largest allowlist accepted:
    // each port is one lookup, so the check stays within the cost limit and refuses by port.
    const atBound = (lists: string[], hostNetwork: boolean, portsPerContainer = 32) => {
      let next = 20_000;
      const spec: Record<string, unknown> = { automountServiceAccountToken: false, hostNetwork };
      for (const l of lists) {
        spec[l] = Array.from({ length: 32 }, (_, c) => ({
          name: `${l.slice(0, 4).toLowerCase()}${c}`,
          image: "example.invalid/x:1",
          ports: Array.from({ length: portsPerContainer }, () => ({ containerPort: next++ })),
        }));
      }
      return spec;
    };
    expect(await createPod({ metadata: { name: "widest2" }, spec: atBound(["containers", "initContainers"], true) })).toContain(
      "denied request: Pod tools/widest2 declares hostPort 21024, 21025,",
    );
    // A workload at the bound that holds no host port is admitted; its UPDATE to the host network
    // (2,048 new host ports, compared with what it held as one list) is refused.
    const sneaky = {
      metadata: { name: "sneaky" },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: "sneaky" } },
        template: { metadata: { labels: { app: "sneaky" } }, spec: atBound(["initContainers", "containers"], false) },
      },
    };
    expect(await outcome(apps.createNamespacedDeployment({ namespace: "tools", body: sneaky as never }))).toBe("admitted");
    const patched = await outcome(
      apps.patchNamespacedDeployment(
        { namespace: "tools", name: "sneaky", body: { spec: { template: { spec: { hostNetwork: true } } } } },
        cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.MergePatch),
      ),
    );
    expect(patched).toContain("denied request: Deployment tools/sneaky (pod template) declares hostPort 20000, 20001,");
    expect((await apps.readNamespacedDeployment({ namespace: "tools", name: "sneaky" })).spec?.template.spec?.hostNetwork).not.toBe(true);
    // A pod with many containerPorts and no host port opens nothing: admitted after one cheap pass.
    const many = Array.from({ length: 40 }, (_, i) => ({ containerPort: 8000 + i }));
    expect(await createPod(pod("many-ports", many))).toBe("admitted");
    expect(await createPod(pod("many-ports-one-host", [...many, { containerPort: 9000, hostPort: 9000 }]))).toContain(
      "Pod tools/many-ports-one-host has more than 32 containers in a list or 32 ports in a container: too large",
    );
    // The cheap pass at its own bound (2 lists x 32 containers x 256 ports): admitted without a
    // host port; one hostPort in the last container read is refused as too large, not admitted by a cost error.
    const plainBound = atBound(["initContainers", "containers"], false, 256);
    expect(await createPod({ metadata: { name: "plain-bound" }, spec: plainBound })).toBe("admitted");
    const lastPorts = (plainBound.containers as { ports: { containerPort: number; hostPort?: number }[] }[])[31]?.ports as { hostPort?: number }[];
    (lastPorts[255] as { hostPort?: number }).hostPort = 9001;
    expect(await createPod({ metadata: { name: "plain-bound-one-host" }, spec: plainBound })).toContain(
      "denied request: Pod tools/plain-bound-one-host has more than 32 containers in a list or 32 ports in a container: too large",
    );
    // The same as a workload UPDATE: both templates read in full, old and new.
    (lastPorts[255] as { hostPort?: number }).hostPort = undefined;
    const wide = {
      metadata: { name: "wide" },
      spec: { replicas: 0, selector: { matchLabels: { app: "wide" } }, template: { metadata: { labels: { app: "wide" } }, spec: plainBound } },
    };
    expect(await outcome(apps.createNamespacedDeployment({ namespace: "tools", body: wide as never }))).toBe("admitted");
    // (The Deployment controller writes its status meanwhile: retry on a version conflict.)
    let widened = "";
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await apps.readNamespacedDeployment({ namespace: "tools", name: "wide" });
      const lastNow = current.spec?.template.spec?.containers?.[31]?.ports?.[255];
      if (lastNow) lastNow.hostPort = 9001;
      widened = await outcome(apps.replaceNamespacedDeployment({ namespace: "tools", name: "wide", body: current }));
      if (!widened.startsWith("409")) break;
    }
    expect(widened).toContain("denied request: Deployment tools/wide has more than 32 containers in a list or 32 ports in a container: too large");
  });

  it("with deny, a second port or an externalIP added to our Service, and externalIPs on any Service, are refused", async () => {
    const ours = await cluster.core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
    const ports = [...(ours.spec?.ports ?? []), { name: "ssh", port: 22, targetPort: 22, protocol: "TCP" }];
    expect(
      await outcome(cluster.core.replaceNamespacedService({ namespace: "argocd", name: "argocd-nodeport", body: { ...ours, spec: { ...ours.spec, ports } } })),
    ).toContain("denied request: Service argocd/argocd-nodeport (type NodePort, 2 ports where the contract declares one) is not in the ui-exposure contract");
    expect(
      await outcome(
        cluster.core.replaceNamespacedService({
          namespace: "argocd",
          name: "argocd-nodeport",
          body: { ...ours, spec: { ...ours.spec, externalIPs: ["198.18.0.9"] } },
        }),
      ),
    ).toContain("denied request: Service argocd/argocd-nodeport (type NodePort, externalIPs 198.18.0.9) is not in the ui-exposure contract");
    const external = { ...svc("external", "ClusterIP"), spec: { ...svc("external", "ClusterIP").spec, externalIPs: ["198.18.0.9"] } };
    expect(await outcome(cluster.core.createNamespacedService({ namespace: "tools", body: external as never }))).toContain(
      "denied request: Service tools/external (type ClusterIP, externalIPs 198.18.0.9) is not in the ui-exposure contract",
    );
    // Where Kubernetes ignores externalIPs (it warns so), nothing opens: admitted.
    const headless = {
      metadata: { name: "headless-extip" },
      spec: { clusterIP: "None", selector: { app: "x" }, ports: [{ port: 80 }], externalIPs: ["198.18.0.9"] },
    };
    expect(await outcome(cluster.core.createNamespacedService({ namespace: "tools", body: headless as never }))).toBe("admitted");
    const extname = { metadata: { name: "extname-extip" }, spec: { type: "ExternalName", externalName: "example.invalid", externalIPs: ["198.18.0.9"] } };
    expect(await outcome(cluster.core.createNamespacedService({ namespace: "tools", body: extname as never }))).toBe("admitted");
  });

  it("with deny, admits the platform's host-network agents the shipped stacks allow (the real charts' templates) and their pods; refuses one more port", async () => {
    await outcome(cluster.core.createNamespace({ body: { metadata: { name: "monitoring" } } }));
    for (const ns of ["kube-system", "monitoring"])
      await outcome(cluster.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "default" } } }));
    const agents = [
      chartWorkload("cilium.yaml", "cilium-envoy"),
      chartWorkload("cilium.yaml", "cilium-operator"),
      chartWorkload("kube-prometheus-stack.yaml", "kube-prometheus-stack-prometheus-node-exporter"),
    ];
    const create = (w: ReturnType<typeof chartWorkload>) =>
      outcome(
        w.kind === "DaemonSet"
          ? apps.createNamespacedDaemonSet({ namespace: w.namespace, body: w.body as never })
          : apps.createNamespacedDeployment({ namespace: w.namespace, body: w.body as never }),
      );
    for (const w of agents) expect(await create(w), `${w.kind} ${w.body.metadata.name}`).toBe("admitted");
    // Their pods, created as a DaemonSet or ReplicaSet controller creates them: from the template,
    // named by generateName, bound to a node. (No kubelet here: the DaemonSet controller itself
    // skips nodes whose heartbeat went stale, so the pods are created by the test.)
    for (const w of agents) {
      const template = w.body.spec.template;
      const created = await cluster.core.createNamespacedPod({
        namespace: w.namespace,
        body: {
          metadata: { generateName: `${w.body.metadata.name}-`, labels: template.metadata.labels },
          spec: { ...template.spec, nodeName: "e2e-node-b" },
        } as never,
      });
      expect(created.metadata?.name?.startsWith(`${w.body.metadata.name}-`)).toBe(true);
      // The API server holds every containerPort of a host-network pod as a hostPort.
      expect(created.spec?.containers.flatMap((c) => c.ports ?? []).every((port) => port.hostPort === port.containerPort)).toBe(true);
    }
    // One more port on the same agent is new exposure: refused, by name.
    const more = chartWorkload("kube-prometheus-stack.yaml", "kube-prometheus-stack-prometheus-node-exporter", 9101);
    // (Named under the allowlisted prefix: 9100 stays declared, only 9101 is new.)
    more.body.metadata.name = "kube-prometheus-stack-prometheus-node-exporter-extra";
    expect(await create(more)).toContain(
      "DaemonSet monitoring/kube-prometheus-stack-prometheus-node-exporter-extra (pod template) declares hostPort 9101, which",
    );
    // drift agrees: nothing of theirs would be refused, and each is declared with its reason.
    const d = sandbox.exposure(["drift", "--stack", "sandbox", "--skip-preview", "--json"]);
    const doc = JSON.parse(d.stdout) as { denyPreview: { refusals: { namespace: string }[] }; audit: { declared: { namespace: string; reason?: string }[] } };
    expect(
      doc.denyPreview.refusals.filter((r) => r.namespace !== "tools"),
      summary(d),
    ).toEqual([]);
    const agentsDeclared = doc.audit.declared.filter((x) => x.namespace === "kube-system" || x.namespace === "monitoring");
    expect(agentsDeclared.length).toBeGreaterThan(0);
    for (const x of agentsDeclared) expect(x.reason).toMatch(/host network/);
  });

  it("exposure drift finds the guard clean, then stale after a hand edit; up puts it back", async () => {
    const clean = sandbox.exposure(["drift", "--stack", "sandbox", "--skip-preview", "--json"]);
    expect(JSON.parse(clean.stdout).admission, summary(clean)).toEqual([]);
    const live = await admission.readValidatingAdmissionPolicy({ name: POLICY });
    await admission.replaceValidatingAdmissionPolicy({
      name: POLICY,
      body: { ...live, spec: { ...live.spec, validations: live.spec?.validations?.slice(0, 1) } },
    });
    const stale = sandbox.exposure(["drift", "--stack", "sandbox", "--skip-preview", "--json"]);
    expect(stale.code, summary(stale)).toBe(3);
    expect(JSON.parse(stale.stdout).admission.map((f: { code: string; subject: string }) => `${f.code} ${f.subject}`)).toEqual([
      `admission-guard-stale ValidatingAdmissionPolicy ${POLICY}`,
    ]);
    const up = sandbox.pulumi(["up", "--yes", "--refresh"]);
    expect(up.code, summary(up)).toBe(0);
    expect(sandbox.exposure(["drift", "--stack", "sandbox", "--skip-preview"]).stdout).toContain(
      "exposure guard at admission (ui-exposure:admission.mode deny): matches the contract",
    );
  });

  it("adding an entry to the contract and running up admits its Service in deny mode (the guard is updated first)", async () => {
    writeContract([ARGOCD, LINEAGE, GITEA]);
    // The preview dry-runs the new Service against the guard still in place: it must pass.
    const preview = sandbox.pulumi(["preview"]);
    expect(preview.code, summary(preview)).toBe(0);
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    expect((await cluster.core.readNamespacedService({ namespace: "gitea", name: "gitea-nodeport" })).spec?.type).toBe("NodePort");
  });

  it("with warn, the same undeclared Service is admitted and the warning returned", async () => {
    sandbox.writeStack(stack("warn"));
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    expect((await admission.readValidatingAdmissionPolicyBinding({ name: POLICY })).spec?.validationActions).toEqual(["Warn"]);
    // The API server applies a changed binding a moment later.
    const created = await waitFor("the warning", async () => {
      const r = await createWithWarnings("tools", svc("debug", "NodePort"));
      if (r.status === 201) return r;
      return undefined;
    });
    expect(created.warnings.join("\n")).toContain(
      `Validation failed for ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}': Service tools/debug (type NodePort) is not in the ui-exposure contract of stack sandbox`,
    );
  });

  it("with deny again, an UPDATE opening node ports on a Service admitted before is refused: allocated, moved, a health check node port", async () => {
    // Created while the guard only warned: a LoadBalancer without node ports.
    const lb = {
      metadata: { name: "lb-nonodeports" },
      spec: { type: "LoadBalancer", allocateLoadBalancerNodePorts: false, selector: { app: "x" }, ports: [{ port: 8081 }] },
    };
    expect((await createWithWarnings("tools", lb)).status).toBe(201);
    const local = { metadata: { name: "lb-local" }, spec: { type: "LoadBalancer", selector: { app: "x" }, ports: [{ port: 8082 }] } };
    expect((await createWithWarnings("tools", local)).status).toBe(201);
    const manyPorts = Array.from({ length: 128 }, (_, i) => ({ name: `p${i}`, port: 1000 + i }));
    expect(
      (await createWithWarnings("tools", { metadata: { name: "lb-wide" }, spec: { type: "LoadBalancer", selector: { app: "x" }, ports: manyPorts } })).status,
    ).toBe(201);
    sandbox.writeStack(stack("deny"));
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    const core = cluster.core;
    await waitFor("deny in force", async () => ((await createWithWarnings("tools", svc("probe", "NodePort"), true)).status === 403 ? true : undefined));
    const patch = (name: string, body: unknown) =>
      outcome(
        core.patchNamespacedService({ namespace: "tools", name, body }, cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.MergePatch)),
      );
    expect(await patch("lb-nonodeports", { spec: { allocateLoadBalancerNodePorts: true } })).toContain(
      "denied request: Service tools/lb-nonodeports (type LoadBalancer) is not in the ui-exposure contract",
    );
    expect((await core.readNamespacedService({ namespace: "tools", name: "lb-nonodeports" })).spec?.ports?.[0]?.nodePort).toBeUndefined();
    const held = (await core.readNamespacedService({ namespace: "tools", name: "lb-local" })).spec?.ports?.[0];
    expect(held?.nodePort).toBeGreaterThan(0);
    // A nodePort no Service of the cluster holds: a fixed one (32000) was, once in a while, one of
    // lb-wide's 128 allocated ports, and the API server refused the move before the guard saw it.
    const taken = new Set(
      (await core.listServiceForAllNamespaces()).items.flatMap((x) => [...(x.spec?.ports ?? []).map((q) => q.nodePort), x.spec?.healthCheckNodePort]),
    );
    const moved = Array.from({ length: 2768 }, (_, i) => 30000 + i).find((n) => !taken.has(n));
    expect(await patch("lb-local", { spec: { ports: [{ ...held, nodePort: moved }] } })).toContain(
      "denied request: Service tools/lb-local (type LoadBalancer)",
    );
    expect(await patch("lb-local", { spec: { externalTrafficPolicy: "Local" } })).toContain("denied request: Service tools/lb-local (type LoadBalancer)");
    expect((await core.readNamespacedService({ namespace: "tools", name: "lb-local" })).spec?.healthCheckNodePort).toBeUndefined();
    // What opens nothing new stays possible: a label.
    expect(await patch("lb-local", { metadata: { labels: { touched: "yes" } } })).toBe("admitted");
    // At the Service bound (128 ports): every port found in the old list but in reverse order,
    // the last one read with a moved nodePort. Refused within the cost limit, not admitted by an error.
    const widePorts = await (async () => {
      const all = await core.listServiceForAllNamespaces();
      const used = new Set(all.items.flatMap((x) => [...(x.spec?.ports ?? []).map((q) => q.nodePort), x.spec?.healthCheckNodePort]));
      const free = Array.from({ length: 2768 }, (_, i) => 30000 + i).find((n) => !used.has(n));
      const wide = await core.readNamespacedService({ namespace: "tools", name: "lb-wide" });
      const reversed = [...(wide.spec?.ports ?? [])].reverse();
      const last = reversed[reversed.length - 1];
      if (last) last.nodePort = free;
      return reversed;
    })();
    expect(widePorts).toHaveLength(128);
    expect(await patch("lb-wide", { spec: { ports: widePorts } })).toContain("denied request: Service tools/lb-wide (type LoadBalancer)");
  });

  it("never locks the cluster: up refuses deny while a DaemonSet's pods would be refused; allowlisted, deny is in force when up returns and the controller's replacement pod is admitted (issue 33 #2)", async () => {
    sandbox.writeStack(stack("warn"));
    const warn = sandbox.pulumi(["up", "--yes"]);
    expect(warn.code, summary(warn)).toBe(0);
    await waitFor("warn in force", async () => ((await createWithWarnings("tools", svc("probe-warn", "NodePort"), true)).status === 201 ? true : undefined));
    // A CNI agent on the host network with its metrics port, not allowlisted (it tolerates every taint, as CNIs do).
    const cniAgent = {
      metadata: { name: "cni-agent", labels: { app: "cni-agent" } },
      spec: {
        selector: { matchLabels: { app: "cni-agent" } },
        template: {
          metadata: { labels: { app: "cni-agent" } },
          spec: { ...podSpec([{ containerPort: 9962 }]), hostNetwork: true, tolerations: [{ operator: "Exists" }] },
        },
      },
    };
    expect(await outcome(apps.createNamespacedDaemonSet({ namespace: "kube-system", body: cniAgent as never }))).toBe("admitted");
    const agentPods = async () =>
      (await cluster.core.listNamespacedPod({ namespace: "kube-system", labelSelector: "app=cni-agent" })).items.filter((p) => !p.metadata?.deletionTimestamp);
    // The real DaemonSet controller creates its pods, one per node.
    const created = await waitFor(
      "the DaemonSet controller's pods",
      async () => {
        const desired = (await apps.readNamespacedDaemonSet({ namespace: "kube-system", name: "cni-agent" })).status?.desiredNumberScheduled ?? 0;
        const pods = await agentPods();
        return desired > 0 && pods.length >= desired ? pods : undefined;
      },
      60_000,
    );
    const first = created[0] as (typeof created)[number];

    const allowlist = stack("deny")["ui-exposure:allowlist"];
    sandbox.writeStack(stack("deny"));
    const refused = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(refused.code, summary(refused)).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain(
      "DaemonSet kube-system/cni-agent (hostPort 9962/TCP): admit it with ui-exposure:allowlist.hostPorts 'kube-system/cni-agent-*:9962', or acknowledge its refusal in ui-exposure:admission.acknowledge ('kube-system/cni-agent-*') of Pulumi.sandbox.yaml",
    );
    // Nothing changed: the binding still only warns.
    expect((await admission.readValidatingAdmissionPolicyBinding({ name: POLICY })).spec?.validationActions).toEqual(["Warn"]);

    sandbox.writeStack({
      ...stack("deny"),
      "ui-exposure:allowlist": { ...allowlist, hostPorts: [...allowlist.hostPorts.slice(0, -1), "kube-system/cni-agent-*:9962"] },
    });
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);
    // Deny is in force when up returns: an undeclared NodePort Service created at once is refused.
    expect((await createWithWarnings("tools", svc("right-after-up", "NodePort"))).status).toBe(403);
    // The controller replaces a deleted pod: admitted.
    await cluster.core.deleteNamespacedPod({ namespace: "kube-system", name: first.metadata?.name as string, gracePeriodSeconds: 0 });
    const seen = new Set(created.map((p) => p.metadata?.name));
    const replacement = await waitFor("the replacement pod", async () => (await agentPods()).find((p) => !seen.has(p.metadata?.name)), 60_000);
    expect(replacement.metadata?.name?.startsWith("cni-agent-")).toBe(true);
    await apps.deleteNamespacedDaemonSet({ namespace: "kube-system", name: "cni-agent" });
  });

  it("deny admits workloads, not pod names: a 60-character DaemonSet and a Deployment's next revision keep getting pods; a second stack in deny on the same cluster sees its own guard in force (issue 39 #4, #5)", async () => {
    const ds = "observability-kube-prometheus-stack-prometheus-node-exporter";
    const allowlist = stack("deny")["ui-exposure:allowlist"];
    // Each stack's guard refuses the other's Services unless allowlisted (docs/commands.md): A allows B's, B allows A's.
    const hostPorts = [
      ...allowlist.hostPorts.slice(0, -4),
      "kube-system/cni-agent-*:9962",
      `kube-system/${ds}-*:9100`,
      "tools/web-rollout-*:8088",
      "tools/lineage-api-*:8090",
    ];
    const services = [...allowlist.services.slice(0, -2), "gitea/gitea-nodeport", "argocd/argocd-nodeport"];
    sandbox.writeStack({ ...stack("deny"), "ui-exposure:allowlist": { services, hostPorts } });
    // gitea goes to the second stack (one stack publishes an entry in a cluster).
    writeContract([ARGOCD, LINEAGE]);
    const up = sandbox.pulumi(["up", "--yes"]);
    expect(up.code, summary(up)).toBe(0);

    // A DaemonSet whose name is longer than the 58 characters a generated pod name keeps: the line admits its pods.
    const exporter = {
      metadata: { name: ds, labels: { app: "node-exporter" } },
      spec: {
        selector: { matchLabels: { app: "node-exporter" } },
        template: {
          metadata: { labels: { app: "node-exporter" } },
          spec: { ...podSpec([{ containerPort: 9100, hostPort: 9100 }]), tolerations: [{ operator: "Exists" }] },
        },
      },
    };
    expect(await outcome(apps.createNamespacedDaemonSet({ namespace: "kube-system", body: exporter as never }))).toBe("admitted");
    const exporterPods = await waitFor(
      "the long-named DaemonSet's pods",
      async () => {
        const desired = (await apps.readNamespacedDaemonSet({ namespace: "kube-system", name: ds })).status?.desiredNumberScheduled ?? 0;
        const pods = (await cluster.core.listNamespacedPod({ namespace: "kube-system", labelSelector: "app=node-exporter" })).items;
        return desired > 0 && pods.length >= desired ? pods : undefined;
      },
      60_000,
    );
    // Its pods' names are cut short: no prefix of "<name>-" matches them, their generateName does.
    expect(exporterPods[0]?.metadata?.name?.startsWith(`${ds}-`)).toBe(false);
    expect(exporterPods[0]?.metadata?.generateName).toBe(`${ds}-`);

    // A Deployment rolled to a new revision: the new ReplicaSet's pod is admitted by the same line.
    const rollout = workload("web-rollout", [{ containerPort: 8088, hostPort: 8088 }]);
    expect(await outcome(apps.createNamespacedDeployment({ namespace: "tools", body: rollout as never }))).toBe("admitted");
    const hashes = async () =>
      new Set(
        (await cluster.core.listNamespacedPod({ namespace: "tools", labelSelector: "app=web-rollout" })).items.map(
          (p) => p.metadata?.labels?.["pod-template-hash"],
        ),
      );
    const [first] = await waitFor("the first revision's pod", async () => ((await hashes()).size > 0 ? [...(await hashes())] : undefined), 60_000);
    await apps.patchNamespacedDeployment(
      { namespace: "tools", name: "web-rollout", body: { spec: { template: { metadata: { annotations: { revision: "2" } } } } } },
      cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.MergePatch),
    );
    const next = await waitFor("the next revision's pod", async () => [...(await hashes())].find((h) => h !== first), 60_000);
    expect(next).not.toBe(first);

    // A second stack in deny on the same cluster: its up sees its own guard in force, although A's refuses undeclared Services too.
    const run = (args: string[]) => {
      const r = spawnSync(path.join(toolchainBin(), "pulumi"), [...args, "--stack", "team-b", "--non-interactive"], {
        cwd: sandbox.dir,
        env: sandbox.env,
        encoding: "utf8",
        timeout: 600_000,
      });
      return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
    };
    fs.writeFileSync(path.join(sandbox.dir, "contract/e2e-b.yaml"), stringify({ version: 1, endpoints: [GITEA] }));
    const init = run(["stack", "init", "--secrets-provider", "passphrase"]);
    expect(init.code, summary(init)).toBe(0);
    const stackB = path.join(sandbox.dir, "Pulumi.team-b.yaml");
    const salt = fs.readFileSync(stackB, "utf8");
    fs.writeFileSync(
      stackB,
      `${salt}${stringify({ config: { ...stack("deny"), "ui-exposure:contract": "contract/e2e-b.yaml", "ui-exposure:allowlist": { services, hostPorts } } })}`,
    );
    try {
      const upB = run(["up", "--yes"]);
      expect(upB.code, summary(upB)).toBe(0);
      expect(upB.stdout + upB.stderr).not.toContain("deny is not in force");
      expect((await admission.readValidatingAdmissionPolicyBinding({ name: "ui-exposure-guard-team-b" })).spec?.validationActions).toEqual(["Deny"]);
      expect((await admission.readValidatingAdmissionPolicyBinding({ name: POLICY })).spec?.validationActions).toEqual(["Deny"]);
      expect(await outcome(cluster.core.readNamespacedService({ namespace: "gitea", name: "gitea-nodeport" }))).toBe("admitted");
    } finally {
      const destroyB = run(["destroy", "--yes"]);
      expect(destroyB.code, summary(destroyB)).toBe(0);
      await apps.deleteNamespacedDaemonSet({ namespace: "kube-system", name: ds });
      await apps.deleteNamespacedDeployment({ namespace: "tools", name: "web-rollout" });
    }
  });

  it("destroy removes the policy and its binding", async () => {
    const destroy = sandbox.pulumi(["destroy", "--yes"]);
    expect(destroy.code, summary(destroy)).toBe(0);
    expect(await outcome(admission.readValidatingAdmissionPolicy({ name: POLICY }))).toMatch(/^404/);
    expect(await outcome(admission.readValidatingAdmissionPolicyBinding({ name: POLICY }))).toMatch(/^404/);
  });

  it("never takes over a guard of its name that it did not create (another stack's, or made by hand): up refuses, changing nothing (issue 33 #4)", async () => {
    const live = await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: POLICY },
        spec: {
          matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] }] },
          validations: [{ expression: "true" }],
        },
      } as never,
    });
    try {
      const up = sandbox.pulumi(["up", "--yes"]);
      expect(up.code, summary(up)).not.toBe(0);
      expect(up.stdout + up.stderr).toContain(`ValidatingAdmissionPolicy ${POLICY} exists but this stack did not create it`);
      const after = await admission.readValidatingAdmissionPolicy({ name: POLICY });
      expect([after.metadata?.uid, after.metadata?.generation]).toEqual([live.metadata?.uid, live.metadata?.generation]);
      expect(await outcome(admission.readValidatingAdmissionPolicyBinding({ name: POLICY }))).toMatch(/^404/);
    } finally {
      await admission.deleteValidatingAdmissionPolicy({ name: POLICY });
    }
  });
});
