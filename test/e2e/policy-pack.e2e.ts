// The CrossGuard policy pack (policy-pack/, docs/policy-pack.md) run by the real engine: `pulumi
// preview --policy-pack` starts it through the toolchain's Node.js language host (RunPlugin), from
// the pack's own node_modules, against a third-party-shaped program (a chart's NodePort Service, a
// DaemonSet with a hostPort, allowlisted ones) and against this project's own program.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  buildPolicyPack,
  type Cluster,
  exampleContractUis,
  POLICY_PACK,
  projectDir,
  reapStrayPlugins,
  type Sandbox,
  startPlatform,
  stopPlatform,
  summary,
  toolchainBin,
} from "../support/harness";

const NODE = { name: "e2e-node-a", ip: "127.0.0.10", ready: true };
const ALLOWLIST = { services: ["tools/allowed-*"], hostPorts: ["tools/agent-*:9964"] };

let cluster: Cluster;
let sandbox: Sandbox;
let charts: string;

/**
 * The charts' stack, as a team writes one with @pulumi/kubernetes: what it declares depends on its
 * `charts:set` config ("declared", "undeclared": declared plus a chart's NodePort Service and a
 * DaemonSet with a hostPort; "unknown": declared plus a NodePort Service whose type is another
 * resource's output, unknown at preview; "late-namespace": declared plus an allowlisted NodePort
 * Service whose namespace is another resource's output;
 * "rc": declared plus a ReplicationController on the host network with a hostPort).
 */
const CHARTS_PROGRAM = `"use strict";
const pulumi = require("@pulumi/pulumi");
const k8s = require("@pulumi/kubernetes");
const set = new pulumi.Config("charts").require("set");
// autoName: no metadata.name, the provider names it "<name>-<random suffix>" (the pack sees the name it will have).
const svc = (name, namespace, type, autoName) =>
  new k8s.core.v1.Service(name, {
    metadata: autoName ? { namespace } : { name, namespace },
    spec: { type, selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
  });
const daemonSet = (name, namespace, hostPort) =>
  new k8s.apps.v1.DaemonSet(name, {
    metadata: { name, namespace },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: "agent", image: "example.invalid/agent:1", ports: [{ containerPort: hostPort, hostPort }] }] } },
    },
  });
svc("allowed-ui", "tools", "NodePort", true);
svc("plain-ui", "tools", "ClusterIP");
daemonSet("agent", "tools", 9964);
if (set === "undeclared") {
  svc("grafana-np", "monitoring", "NodePort");
  daemonSet("node-exporter", "monitoring", 9100);
}
if (set === "rc")
  new k8s.core.v1.ReplicationController("rc", {
    metadata: { name: "rc", namespace: "tools" },
    spec: {
      selector: { app: "rc" },
      template: { metadata: { labels: { app: "rc" } }, spec: { hostNetwork: true, containers: [{ name: "c", image: "example.invalid/a:1", ports: [{ containerPort: 7001, hostPort: 7001 }] }] } },
    },
  });
if (set === "unknown") {
  const cm = new k8s.core.v1.ConfigMap("exposure-type", { metadata: { namespace: "tools" } });
  // The ConfigMap's id exists once it is created: unknown at preview, known at up.
  svc("late-ui", "tools", cm.id.apply(() => "NodePort"));
}
if (set === "late-namespace") {
  const cm = new k8s.core.v1.ConfigMap("exposure-namespace", { metadata: { namespace: "tools" } });
  // Its namespace is known once the ConfigMap exists: at up, not at preview.
  svc("allowed-late", cm.id.apply(() => "tools"), "NodePort");
}
`;

/** What the policies said (the section the engine prints before the outputs) and every error line: what a failure shows. */
const policies = (r: { code: number | null; stdout: string; stderr: string }) => {
  const out = `${r.stdout}\n${r.stderr}`;
  const at = out.indexOf("Policies:");
  return `exit ${r.code}\n${at >= 0 ? out.slice(at, at + 4000) : ""}\n${out
    .split("\n")
    .filter((l) => /error|violation/i.test(l))
    .join("\n")
    .slice(0, 4000)}`;
};

function chartsPulumi(args: string[]) {
  const stack = args[0] === "stack" ? [] : ["--stack", "charts"];
  const r = spawnSync(path.join(toolchainBin(), "pulumi"), [...args, ...stack, "--non-interactive"], {
    cwd: charts,
    env: sandbox.env,
    encoding: "utf8",
    timeout: 300_000,
  });
  return { code: r.status, stdout: r.stdout ?? "", stderr: `${r.stderr ?? ""}${r.signal ? `\n(killed by ${r.signal}: it did not end in time)` : ""}` };
}

/** `pulumi preview` of the charts' stack with the pack, its config in a file (`--policy-pack-config`). */
function previewCharts(set: string, policyConfig?: Record<string, unknown>) {
  expect(chartsPulumi(["config", "set", "charts:set", set]).code).toBe(0);
  const file = path.join(charts, "policy-config.json");
  fs.writeFileSync(file, JSON.stringify(policyConfig ?? {}));
  return chartsPulumi(["preview", "--policy-pack", POLICY_PACK, "--policy-pack-config", file]);
}

describe.sequential("e2e: the policy pack under the real engine", () => {
  beforeAll(async () => {
    buildPolicyPack();
    const stack = { "kubernetes:context": "e2e", "ui-exposure:cilium": { mode: "cohabit" } };
    ({ cluster, sandbox } = await startPlatform({ nodes: [NODE], uis: exampleContractUis(NODE.name), stack }));
    // The pack runs in its own folder: the stack names its contract by an absolute path (the program takes it as well).
    sandbox.writeStack({ ...stack, "ui-exposure:contract": path.join(sandbox.dir, "contract/endpoints.example.yaml") });
    for (const name of ["tools", "monitoring"]) await cluster.core.createNamespace({ body: { metadata: { name } } }).catch(() => undefined);
    charts = path.join(sandbox.dir, "charts");
    fs.mkdirSync(charts);
    fs.writeFileSync(
      path.join(charts, "Pulumi.yaml"),
      stringify({ name: "charts", runtime: { name: "nodejs", options: { typescript: false } }, main: "index.js" }),
    );
    fs.writeFileSync(path.join(charts, "index.js"), CHARTS_PROGRAM);
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(charts, "node_modules"));
    const init = chartsPulumi(["stack", "init", "charts", "--secrets-provider", "passphrase"]);
    expect(init.code, summary(init)).toBe(0);
  }, 600_000);

  afterAll(() => {
    // A preview killed at its timeout leaves its plugins running (the provider, the pack's language host): ended here.
    if (sandbox) reapStrayPlugins(sandbox.dir);
    stopPlatform({ cluster, sandbox });
  });

  it("fails the preview on a chart's NodePort Service and a DaemonSet's hostPort, naming each with the allowlist line that admits it", () => {
    const r = previewCharts("undeclared", { "undeclared-exposure": { allowlist: ALLOWLIST } });
    expect(r.code, policies(r)).not.toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toContain("mandatory");
    expect(out).toContain(
      "Service monitoring/grafana-np (NodePort, ports http 80): in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it; the allowlist line that admits it: ui-exposure:allowlist.services 'monitoring/grafana-np'",
    );
    expect(out).toContain("DaemonSet monitoring/node-exporter (hostPort 9100/TCP): in neither a contract hostPort entry nor ui-exposure:allowlist.hostPorts");
    expect(out).toContain("ui-exposure:allowlist.hostPorts 'monitoring/node-exporter-*:9100'");
    // The declared ones are not reported.
    expect(out).not.toMatch(/Service tools\/allowed-ui|DaemonSet tools\/agent/);
  });

  it("passes the declared ones (the allowlist's Service and hostPort, a ClusterIP Service)", () => {
    const r = previewCharts("declared", { "undeclared-exposure": { allowlist: ALLOWLIST } });
    expect(r.code, policies(r)).toBe(0);
    expect(r.stdout + r.stderr).not.toContain("undeclared-exposure");
  });

  it("advisory by config: the same undeclared ones are warnings and the preview passes", () => {
    const r = previewCharts("undeclared", { "undeclared-exposure": { enforcementLevel: "advisory", allowlist: ALLOWLIST } });
    expect(r.code, policies(r)).toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toContain("advisory");
    expect(out).toContain("ui-exposure:allowlist.services 'monitoring/grafana-np'");
    expect(out).toContain("ui-exposure:allowlist.hostPorts 'monitoring/node-exporter-*:9100'");
  });

  it("a Service whose type is unknown at preview is reported as not judged yet, then judged at up: refused before it exists", async () => {
    const preview = previewCharts("unknown", { "undeclared-exposure": { allowlist: ALLOWLIST } });
    expect(preview.code, summary(preview)).toBe(0);
    expect(preview.stdout + preview.stderr).toContain("can't be known during preview");
    const up = chartsPulumi(["up", "--yes", "--policy-pack", POLICY_PACK, "--policy-pack-config", path.join(charts, "policy-config.json")]);
    expect(up.code, summary(up)).not.toBe(0);
    expect(up.stdout + up.stderr).toContain("Service tools/late-ui (NodePort, ports http 80): in neither the contract nor ui-exposure:allowlist.services");
    const services = await cluster.core.listNamespacedService({ namespace: "tools" });
    expect(services.items.map((s) => s.metadata?.name)).not.toContain("late-ui");
  });

  it("a namespace unknown at preview is judged there as the provider's default namespace (the provider fills it in), at up as its own", async () => {
    const preview = previewCharts("late-namespace", { "undeclared-exposure": { allowlist: ALLOWLIST } });
    expect(preview.code, policies(preview)).not.toBe(0);
    expect(preview.stdout + preview.stderr).toContain("Service default/allowed-late (NodePort, ports http 80): in neither the contract nor");
    const up = chartsPulumi(["up", "--yes", "--skip-preview", "--policy-pack", POLICY_PACK, "--policy-pack-config", path.join(charts, "policy-config.json")]);
    expect(up.code, summary(up)).toBe(0);
    const services = await cluster.core.listNamespacedService({ namespace: "tools" });
    expect(services.items.map((s) => s.metadata?.name)).toContain("allowed-late");
    const destroy = chartsPulumi(["destroy", "--yes"]);
    expect(destroy.code, summary(destroy)).toBe(0);
  });

  it("a ReplicationController on the host network with a hostPort fails the preview, as a Deployment's would", () => {
    const r = previewCharts("rc", { "undeclared-exposure": { allowlist: ALLOWLIST } });
    expect(r.code, policies(r)).not.toBe(0);
    expect(r.stdout + r.stderr).toContain("ui-exposure:allowlist.hostPorts 'tools/rc-*:7001'");
  });

  // Read whole, these never end (a FIFO with no writer) or fill memory (/dev/zero): the preview hung until killed.
  for (const [label, make] of [
    ["a FIFO", (file: string) => spawnSync("mkfifo", [file])],
    ["a symlink to /dev/zero", (file: string) => fs.symlinkSync("/dev/zero", file)],
  ] as const)
    it(`a contract path that is ${label} is one message naming it, promptly`, () => {
      const file = path.join(charts, `contract-${label.replace(/\W+/g, "-")}.yaml`);
      make(file);
      const r = previewCharts("declared", { "undeclared-exposure": { contract: file } });
      expect(r.code, policies(r)).not.toBe(0);
      expect(r.stdout + r.stderr).toContain(`cannot read contract ${file}: it is`);
    });

  it("an invalid configuration is one message, without a stack trace", () => {
    const r = previewCharts("declared", { "undeclared-exposure": { allowlist: { services: [], hostPorts: ["tools/agent-*:99999"] } } });
    expect(r.code, policies(r)).not.toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toContain("the ui-exposure policy pack's configuration");
    expect(out).toContain("ui-exposure:allowlist.hostPorts[0]: must end with a port number between 1 and 65535");
    expect(out).not.toMatch(/^\s+at .+\(.+:\d+:\d+\)$/m);
  });

  it("our own program passes its own pack, configured from its stack's settings alone", () => {
    const r = sandbox.pulumi(["preview", "--policy-pack", POLICY_PACK]);
    expect(r.code, policies(r)).toBe(0);
    expect(r.stdout).toMatch(/argocd-nodeport/);
    expect(r.stdout + r.stderr).not.toContain("undeclared-exposure");
  });
});
