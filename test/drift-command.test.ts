import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDriftCommand, summarisePreview } from "../cli/commands/drift";
import { type PulumiRun, type PulumiRunner, readStackOutputs } from "../src/adapters/pulumi-cli";
import { UserError } from "../src/core/errors";
import type { ClusterReader } from "../src/core/kube/cluster";
import {
  capture,
  healthyCluster,
  makeProject,
  managedService,
  managedServices,
  runCommand,
  service,
  snapshot,
  stackFile,
  type TestProject,
} from "./support/command-helpers";

let project: TestProject;
beforeAll(() => {
  project = makeProject({
    bench: stackFile({ "ui-exposure:allowlist": { services: ["kube-system/hubble-*"], hostPorts: [] } }),
  });
});
afterAll(() => project.remove());

/** What `pulumi preview --refresh --expect-no-changes --json` prints when someone edited our Service by hand. */
const RECORDED_PREVIEW_WITH_CHANGES = JSON.stringify({
  config: { "ui-exposure:cilium": '{"mode":"cohabit"}' },
  steps: [
    { op: "same", urn: "urn:pulumi:bench::ui-exposure::pulumi:pulumi:Stack::ui-exposure-bench" },
    {
      op: "update",
      urn: "urn:pulumi:bench::ui-exposure::ui-exposure:exposure:NodePortExposure$kubernetes:core/v1:Service::argocd-svc",
      provider: "urn:pulumi:bench::ui-exposure::pulumi:providers:kubernetes::default_4_32_0::04da6b54",
      diffReasons: ["spec"],
      detailedDiff: { "spec.selector.app": { kind: "update", inputDiff: true }, "spec.ports[0].targetPort": { kind: "update", inputDiff: true } },
    },
    {
      op: "create",
      urn: "urn:pulumi:bench::ui-exposure::ui-exposure:exposure:NodePortExposure$kubernetes:core/v1:Service::grafana-svc",
      diffReasons: [],
    },
    { op: "replace", urn: "urn:pulumi:bench::ui-exposure::kubernetes:core/v1:ConfigMap::portal-code", diffReasons: ["metadata"], detailedDiff: null },
    { op: "read", urn: "urn:pulumi:bench::ui-exposure::kubernetes:core/v1:Service::argocd-server" },
  ],
  diagnostics: [],
  duration: 2_150_000_000,
  changeSummary: { create: 1, update: 1, replace: 1, same: 1 },
});

const NO_CHANGES = JSON.stringify({
  steps: [{ op: "same", urn: "urn:pulumi:bench::ui-exposure::pulumi:pulumi:Stack::ui-exposure-bench" }],
  changeSummary: { same: 1 },
});

interface Recorder {
  runner: PulumiRunner;
  calls: { args: string[]; cwd: string; signal?: AbortSignal }[];
}
function fakePulumi(result: PulumiRun): Recorder {
  const calls: Recorder["calls"] = [];
  return {
    calls,
    runner: async (args, opts) => {
      calls.push({ args, cwd: opts.cwd, ...(opts.signal ? { signal: opts.signal } : {}) });
      return result;
    },
  };
}

/** The outputs of the last `up`: the Services this stack created, and the ports it published. */
const LAST_UP = {
  argocd: { service: "argocd-nodeport", nodePort: 31001 },
  gitea: { service: "gitea-nodeport", nodePort: 31002 },
  grafana: { service: "grafana-nodeport", nodePort: 31003 },
};

async function drift(argv: string[], cluster: ClusterReader, pulumi: Recorder, endpoints: Record<string, unknown> = LAST_UP) {
  const c = capture(project.dir);
  const code = await runCommand(
    "drift",
    createDriftCommand({ connect: async () => cluster, runPulumi: pulumi.runner, readOutputs: async () => ({ endpoints }) }),
    argv,
    c,
  );
  return { code, ...c };
}

const undeclaredNodePort = service("default", "debug", { type: "NodePort", ports: [{ port: 8080, nodePort: 32000 }] });

describe("summarisePreview", () => {
  it("lists the resources and fields a preview would change (exit 7), ignoring same/read steps", () => {
    expect(summarisePreview({ exitCode: 7, stdout: RECORDED_PREVIEW_WITH_CHANGES, stderr: "" })).toEqual({
      state: "changes",
      changes: [
        {
          op: "update",
          type: "kubernetes:core/v1:Service",
          name: "argocd-svc",
          urn: "urn:pulumi:bench::ui-exposure::ui-exposure:exposure:NodePortExposure$kubernetes:core/v1:Service::argocd-svc",
          fields: ["spec.selector.app (update)", "spec.ports[0].targetPort (update)"],
        },
        {
          op: "create",
          type: "kubernetes:core/v1:Service",
          name: "grafana-svc",
          urn: "urn:pulumi:bench::ui-exposure::ui-exposure:exposure:NodePortExposure$kubernetes:core/v1:Service::grafana-svc",
          fields: [],
        },
        {
          op: "replace",
          type: "kubernetes:core/v1:ConfigMap",
          name: "portal-code",
          urn: "urn:pulumi:bench::ui-exposure::kubernetes:core/v1:ConfigMap::portal-code",
          fields: ["metadata"],
        },
      ],
    });
  });

  it("says no changes on exit 0, and reports other exit codes as a failed preview with the error diagnostic", () => {
    expect(summarisePreview({ exitCode: 0, stdout: NO_CHANGES, stderr: "" })).toEqual({ state: "no-changes" });
    expect(
      summarisePreview({
        exitCode: 255,
        stdout: JSON.stringify({ steps: [], diagnostics: [{ severity: "error", message: "stack bench cannot be deployed (nothing was changed)\nmore" }] }),
        stderr: "",
      }),
    ).toEqual({ state: "failed", message: "pulumi preview exited with 255: stack bench cannot be deployed (nothing was changed)" });
    expect(summarisePreview({ exitCode: 1, stdout: "", stderr: "warning: x\nerror: no stack named 'bench' found\n" })).toEqual({
      state: "failed",
      message: "pulumi preview exited with 1: error: no stack named 'bench' found",
    });
  });

  it("never passes on a password the Pulumi CLI printed inside its backend URL", () => {
    const stderr =
      'error: unable to open bucket postgres://team:Hunter2-secret@127.0.0.1:5432/state?sslmode=disable: failed to ping PostgreSQL: pq: password authentication failed for user "team" (28P01)\n';
    const summary = summarisePreview({ exitCode: 1, stdout: "", stderr });
    expect(summary).toEqual({
      state: "failed",
      message:
        'pulumi preview exited with 1: error: unable to open bucket postgres://team:****@127.0.0.1:5432/state?sslmode=disable: failed to ping PostgreSQL: pq: password authentication failed for user "team" (28P01)',
    });
  });
});

describe("exposure drift: the exposure guard at admission", () => {
  let guarded: TestProject;
  beforeAll(() => {
    guarded = makeProject({ bench: stackFile({ "ui-exposure:admission": { mode: "deny" } }) });
  });
  afterAll(() => guarded.remove());

  it("exits 3 when the guard the contract generates is not in the cluster, and says what to do", async () => {
    const c = capture(guarded.dir);
    const run = createDriftCommand({
      connect: async () => snapshot(healthyCluster()),
      runPulumi: fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }).runner,
    });
    const code = await runCommand("drift", run, ["--stack", "bench"], c);
    expect(code).toBe(3);
    expect(c.out.join("\n")).toContain(
      "exposure guard at admission (ui-exposure:admission.mode deny): 2 DRIFT\n  ValidatingAdmissionPolicy ui-exposure-guard-bench: absent from the cluster: run `pulumi up` to create it [admission-guard-missing]",
    );
  });

  it("says nothing is in the cluster with the mode off (the default)", async () => {
    const r = await drift(["--stack", "bench"], snapshot(healthyCluster()), fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }));
    expect(r.code).toBe(0);
    expect(r.out.join("\n")).toContain("exposure guard at admission (ui-exposure:admission.mode off): none in the cluster");
  });
});

describe("exposure drift", () => {
  it("runs the preview with --refresh --expect-no-changes in the project, and exits 0 when it and the audit are clean", async () => {
    const pulumi = fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" });
    const cluster = snapshot(healthyCluster());
    const r = await drift(["--stack", "bench"], cluster, pulumi);
    expect(r.code).toBe(0);
    expect(pulumi.calls.map((c) => [c.args, c.cwd])).toEqual([
      [["preview", "--refresh", "--expect-no-changes", "--json", "--non-interactive", "--stack", "bench"], project.dir],
    ]);
    const text = r.out.join("\n");
    expect(text).toContain("pulumi preview --refresh --expect-no-changes: no changes");
    expect(text).toContain("exposure audit (NodePort/LoadBalancer Services, externalIPs and hostPorts, cluster-wide): 4 found, 0 UNDECLARED");
    expect(text).toMatch(/hostPort\s+lineage\/lineage-agent-0 on bench\s+8090\/TCP\s+declared by contract entry 'lineage-agent'/);
    expect(text).toContain("allowlist entries that matched nothing (stale?): kube-system/hubble-*");
    expect(text).toMatch(/argocd\s+nodePort\s+argocd\/argocd-nodeport\s+1\s+31001\s+http:\/\/127\.0\.0\.2:31001\s+MATCH/);
    expect(text).toContain("4 MATCH, 0 DRIFT, 0 ABSENT");
    // The audit's Services and Pods cluster-wide; the live verdicts' Services and EndpointSlices of the
    // three nodePort entries' namespaces, Nodes, the hostPort entry's Pods; admission policies and
    // bindings; the six workload kinds whose templates become pods (for what deny would refuse).
    expect(cluster.requests).toBe(2 + (3 + 3 + 1 + 1) + 2 + 6);
    expect(text).toContain("exposure guard in deny mode would refuse, of what exists now (each object created again): nothing: deny is safe to switch on");
  });

  it("tells a selector key the chart dropped (pulumi up drops it) from one added outside this stack, as status does (issue 39 #3)", async () => {
    const objects = healthyCluster().filter((o) => o !== managedServices[1]);
    const mirrored = { app: "gitea", "app.kubernetes.io/name": "gitea" };
    objects.push(managedService("gitea", "gitea", 31002, { selector: { ...mirrored, tier: "web" }, targetPort: 3000 }));
    const r = await drift(["--stack", "bench", "--json"], snapshot(objects), fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }), {
      ...LAST_UP,
      gitea: { ...LAST_UP.gitea, selector: mirrored },
    });
    expect(r.code).toBe(3);
    const gitea = (
      JSON.parse(r.out.join("\n")) as { status: { entries: { name: string; findings: { code: string; message: string }[] }[] } }
    ).status.entries.find((e) => e.name === "gitea");
    expect(gitea?.findings.map((f) => [f.code, f.message])).toEqual([
      [
        "selector-key-added",
        `selector differs from the vendored Service gitea/gitea-http: selector key tier=web of gitea/gitea-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n gitea patch service gitea-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]'`,
      ],
      [
        "selector-key-dropped-by-chart",
        "selector differs from the vendored Service gitea/gitea-http: selector key app=gitea of gitea/gitea-nodeport was mirrored by the last up from gitea/gitea-http, whose selector no longer has it (a chart upgrade): our Service may select no pod until pulumi up drops it",
      ],
    ]);
  });

  it("exits 3 and names the resources and fields when the preview proposes changes (recorded JSON, exit 7)", async () => {
    const r = await drift(["--stack", "bench"], snapshot(healthyCluster()), fakePulumi({ exitCode: 7, stdout: RECORDED_PREVIEW_WITH_CHANGES, stderr: "" }));
    expect(r.code).toBe(3);
    const text = r.out.join("\n");
    expect(text).toContain("pulumi preview --refresh --expect-no-changes: 3 CHANGES");
    expect(text).toMatch(/update\s+kubernetes:core\/v1:Service\s+argocd-svc\s+spec\.selector\.app \(update\), spec\.ports\[0\]\.targetPort \(update\)/);
    expect(text).toMatch(/create\s+kubernetes:core\/v1:Service\s+grafana-svc\s+-/);
    expect(r.err).toEqual([]);
  });

  it("exits 3 on undeclared exposure even when the preview is clean, and --json carries both parts", async () => {
    const r = await drift(
      ["--stack", "bench", "--json"],
      snapshot(healthyCluster([undeclaredNodePort])),
      fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }),
    );
    expect(r.code).toBe(3);
    const json = JSON.parse(r.out.join("\n")) as { drift: boolean; preview: { state: string }; audit: { undeclared: { name: string }[] } };
    expect(json.drift).toBe(true);
    expect(json.preview).toEqual({ state: "no-changes" });
    expect(json.audit.undeclared.map((u) => u.name)).toEqual(["debug"]);
  });

  it("gives each undeclared exposure the command that removes it, in the words status uses (issue 40 #5)", async () => {
    const r = await drift(["--stack", "bench"], snapshot(healthyCluster([undeclaredNodePort])), fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }));
    expect(r.code).toBe(3);
    expect(r.out.join("\n")).toContain(
      "  default/debug: fix: kubectl -n default delete service debug, or declare it: ui-exposure:allowlist.services 'default/debug'",
    );
    const json = await drift(
      ["--stack", "bench", "--json"],
      snapshot(healthyCluster([undeclaredNodePort])),
      fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }),
    );
    expect((JSON.parse(json.out.join("\n")) as { audit: { undeclared: { fix: string }[] } }).audit.undeclared.map((u) => u.fix)).toEqual([
      "kubectl -n default delete service debug, or declare it: ui-exposure:allowlist.services 'default/debug'",
    ]);
  });

  it("exits 3 on a live verdict alone, naming the entry and the reason (a nodePort moved by hand since the last up)", async () => {
    const r = await drift(["--stack", "bench", "--json"], snapshot(healthyCluster()), fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }), {
      ...LAST_UP,
      gitea: { service: "gitea-nodeport", nodePort: 30555 },
    });
    expect(r.code).toBe(3);
    const json = JSON.parse(r.out.join("\n")) as { drift: boolean; status: { entries: { name: string; verdict: string; reasons: string[] }[] } };
    expect(json.drift).toBe(true);
    expect(json.status.entries.find((e) => e.name === "gitea")).toMatchObject({
      verdict: "DRIFT",
      reasons: ["nodePort changed since the last up (30555 -> 31002): the published URL no longer reaches this Service; pulumi up puts 30555 back"],
      findings: [
        {
          code: "node-port-moved",
          severity: "drift",
          subject: "gitea",
          message: "nodePort changed since the last up (30555 -> 31002): the published URL no longer reaches this Service; pulumi up puts 30555 back",
        },
      ],
    });
  });

  it("without the Pulumi CLI, says the outputs are unavailable naming no --outputs flag (drift takes none)", async () => {
    const c = capture(project.dir, { PATH: project.dir });
    const command = createDriftCommand({
      connect: async () => snapshot(healthyCluster()),
      runPulumi: fakePulumi({ notFound: true }).runner,
      readOutputs: readStackOutputs,
    });
    expect(await runCommand("drift", command, ["--stack", "bench", "--skip-preview"], c)).toBe(0);
    expect(c.err).toEqual([
      'exposure drift: published outputs unavailable (the pulumi CLI is not on PATH; install it); the "changed since the last up" and ownership checks are skipped',
    ]);
  });

  it("--skip-preview runs the audit alone (no pulumi process)", async () => {
    const pulumi = fakePulumi({ notFound: true });
    const r = await drift(["--stack", "bench", "--skip-preview"], snapshot(healthyCluster()), pulumi);
    expect(r.code).toBe(0);
    expect(pulumi.calls).toEqual([]);
    expect(r.out.join("\n")).toContain("pulumi preview --refresh --expect-no-changes: skipped (--skip-preview)");
  });

  it("exits 1 with one line when the Pulumi CLI is missing or the preview fails, after still showing the audit", async () => {
    const missing = await drift(["--stack", "bench"], snapshot(healthyCluster()), fakePulumi({ notFound: true }));
    expect(missing.code).toBe(1);
    expect(missing.err).toEqual(["exposure drift: the pulumi CLI is not on PATH; install it, or pass --skip-preview to run the cluster audit alone"]);
    expect(missing.out.join("\n")).toContain("4 found, 0 UNDECLARED");

    const failed = await drift(
      ["--stack", "bench"],
      snapshot(healthyCluster()),
      fakePulumi({ exitCode: 255, stdout: "", stderr: "error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE\n" }),
    );
    expect(failed.code).toBe(1);
    expect(failed.err).toEqual(["exposure drift: pulumi preview exited with 255: error: passphrase must be set with PULUMI_CONFIG_PASSPHRASE"]);
  });

  it("still exits 3 when the audit finds drift and the preview could not run", async () => {
    const r = await drift(["--stack", "bench"], snapshot(healthyCluster([undeclaredNodePort])), fakePulumi({ notFound: true }));
    expect(r.code).toBe(3);
    expect(r.out.join("\n")).toContain("pulumi preview --refresh --expect-no-changes: FAILED: the pulumi CLI is not on PATH");
  });

  it("stops the preview and fails in one line when the cluster cannot be read", async () => {
    const pulumi = fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" });
    const unreachable: ClusterReader = {
      source: "context test (https://127.0.0.1:1)",
      listServices: async () => {
        throw new UserError(
          "cluster unreachable: context test (https://127.0.0.1:1): ECONNREFUSED while reading services; check the kube context and that the API server is up",
        );
      },
      listPods: async () => [],
      listNodes: async () => [],
      listEndpointSlices: async () => [],
      getConfigMap: async () => undefined,
      listSecrets: async () => [],
      listCustom: async () => [],
    };
    const r = await drift(["--stack", "bench"], unreachable, pulumi);
    expect(r.code).toBe(1);
    expect(r.err).toEqual([
      "exposure drift: cluster unreachable: context test (https://127.0.0.1:1): ECONNREFUSED while reading services; check the kube context and that the API server is up",
    ]);
    expect(r.out).toEqual([]);
    expect(pulumi.calls[0]?.signal?.aborted).toBe(true);
  });

  it("rejects bad usage with exit 2", async () => {
    const pulumi = fakePulumi({ notFound: true });
    const noStack = await drift(["--json"], snapshot([]), pulumi);
    expect(noStack.code).toBe(2);
    expect(noStack.err.join("\n")).toBe(
      "exposure drift: --stack is required\nusage: exposure drift --stack NAME [--skip-preview] [--timeout SECONDS] [--json]\n(`exposure drift --help` describes every flag)",
    );
    const badTimeout = await drift(["--stack", "bench", "--timeout", "-1"], snapshot([]), pulumi);
    expect(badTimeout.code).toBe(2);
    expect(pulumi.calls).toEqual([]);
  });
});

describe("exposure drift: the platform's agents and what deny would refuse", () => {
  let agents: TestProject;
  beforeAll(() => {
    agents = makeProject({
      bench: stackFile({
        "ui-exposure:allowlist": {
          hostPorts: [{ match: "monitoring/node-exporter-*:9100", reason: "node-exporter runs on the host network; 9100 is its metrics port" }],
        },
      }),
    });
  });
  afterAll(() => agents.remove());

  const exporterPod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "node-exporter-x7k2p", namespace: "monitoring" },
    spec: { nodeName: "bench", hostNetwork: true, containers: [{ name: "node-exporter", ports: [{ containerPort: 9100, hostPort: 9100, protocol: "TCP" }] }] },
    status: { phase: "Running" },
  };
  const agentDaemonSet = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "csi-node", namespace: "storage" },
    spec: { template: { metadata: {}, spec: { hostNetwork: true, containers: [{ name: "plugin", ports: [{ name: "healthz", containerPort: 29653 }] }] } } },
  };
  const run = async (cluster: ClusterReader, argv: string[] = []) => {
    const c = capture(agents.dir);
    const cmd = createDriftCommand({
      connect: async () => cluster,
      runPulumi: fakePulumi({ exitCode: 0, stdout: NO_CHANGES, stderr: "" }).runner,
      readOutputs: async () => ({ endpoints: LAST_UP }),
    });
    const code = await runCommand("drift", cmd, ["--stack", "bench", ...argv], c);
    return { code, text: c.out.join("\n") };
  };

  it("prints the allowlist item's reason next to what it declares, and lists the workloads deny would refuse", async () => {
    const r = await run(snapshot(healthyCluster([exporterPod, agentDaemonSet])));
    expect(r.text).toMatch(
      /hostPort\s+monitoring\/node-exporter-x7k2p on bench\s+9100\/TCP\s+declared by allowlist 'monitoring\/node-exporter-\*:9100': node-exporter runs on the host network; 9100 is its metrics port/,
    );
    expect(r.text).toContain(
      "exposure guard in deny mode would refuse, of what exists now (each object created again): 1\nKIND       WHERE             REFUSED\nDaemonSet  storage/csi-node  hostPort 29653/TCP",
    );
    const json = await run(snapshot(healthyCluster([exporterPod, agentDaemonSet])), ["--json"]);
    const doc = JSON.parse(json.text) as { denyPreview: unknown; audit: { declared: { name: string; reason?: string }[] } };
    expect(doc.denyPreview).toEqual({ refusals: [{ kind: "DaemonSet", namespace: "storage", name: "csi-node", what: "hostPort 29653/TCP" }], unread: [] });
    expect(doc.audit.declared.find((d) => d.name === "node-exporter-x7k2p")?.reason).toBe("node-exporter runs on the host network; 9100 is its metrics port");
  });

  it("says the list is partial when a workload kind cannot be listed, instead of calling deny safe", async () => {
    const base = snapshot(healthyCluster([exporterPod]));
    const forbidden: ClusterReader = Object.assign(Object.create(base) as ClusterReader, {
      listCustom: async (kind: { plural: string }) => {
        if (kind.plural === "cronjobs") throw new UserError("context test: 403 Forbidden reading cronjobs.batch");
        return base.listCustom(kind as Parameters<ClusterReader["listCustom"]>[0]);
      },
    });
    const r = await run(forbidden);
    expect(r.text).toContain(
      "exposure guard in deny mode would refuse, of what exists now (each object created again): nothing among what could be read\n  (not read, so not checked: cronjobs.batch (context test: 403 Forbidden reading cronjobs.batch))",
    );
  });
});
