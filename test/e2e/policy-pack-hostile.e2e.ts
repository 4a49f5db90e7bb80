// The policy pack (policy-pack/) under the real engine, given what an outside tester found: a
// contract path that never ends (a FIFO, /dev/zero), a ReplicationController's host ports, and a
// Service whose namespace is unknown at preview. Each case failed when written (r10-tester).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import {
  type Cluster,
  exampleContractUis,
  projectDir,
  reapStrayPlugins,
  type Sandbox,
  startPlatform,
  stopPlatform,
  summary,
  toolchainBin,
} from "../support/harness";

const PACK = path.join(projectDir, "policy-pack");
const NODE = { name: "e2e-node-a", ip: "127.0.0.10", ready: true };
let cluster: Cluster;
let sandbox: Sandbox;
let charts: string;

const PROGRAM = `"use strict";
const pulumi = require("@pulumi/pulumi");
const k8s = require("@pulumi/kubernetes");
const set = new pulumi.Config("charts").require("set");
const tpl = (spec) => ({ metadata: { labels: { app: "a" } }, spec });
if (set === "plain") new k8s.core.v1.Service("plain", { metadata: { name: "plain", namespace: "tools" }, spec: { selector: { app: "a" }, ports: [{ port: 80 }] } });
if (set === "rc")
  new k8s.core.v1.ReplicationController("rc", {
    metadata: { name: "rc", namespace: "tools" },
    spec: { selector: { app: "a" }, template: tpl({ hostNetwork: true, containers: [{ name: "c", image: "x.invalid/a:1", ports: [{ containerPort: 7001, hostPort: 7001 }] }] }) },
  });
if (set === "late-namespace") {
  // The namespace is another resource's output: unknown at preview, "tools" (allowlisted) at up.
  const cm = new k8s.core.v1.ConfigMap("late", { metadata: { namespace: "tools" } });
  new k8s.core.v1.Service("late-ns", { metadata: { name: "late-ns", namespace: cm.id.apply(() => "tools") }, spec: { type: "NodePort", selector: { app: "a" }, ports: [{ port: 80 }] } });
}
`;

function chartsPulumi(args: string[], timeout = 300_000) {
  const stack = args[0] === "stack" ? [] : ["--stack", "charts"];
  const r = spawnSync(path.join(toolchainBin(), "pulumi"), [...args, ...stack, "--non-interactive"], {
    cwd: charts,
    env: sandbox.env,
    encoding: "utf8",
    timeout,
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

function preview(set: string, policyConfig: Record<string, unknown>, timeout?: number) {
  expect(chartsPulumi(["config", "set", "charts:set", set]).code).toBe(0);
  const file = path.join(charts, "policy-config.json");
  fs.writeFileSync(file, JSON.stringify(policyConfig));
  return chartsPulumi(["preview", "--policy-pack", PACK, "--policy-pack-config", file], timeout);
}

describe.sequential("e2e: the policy pack given hostile programs and configuration", () => {
  beforeAll(async () => {
    const build = spawnSync(process.execPath, [path.join(PACK, "build.cjs")], { encoding: "utf8" });
    if (build.status !== 0) throw new Error(`the pack did not build: ${build.stderr}`);
    const stack = { "kubernetes:context": "e2e", "ui-exposure:cilium": { mode: "cohabit" } };
    ({ cluster, sandbox } = await startPlatform({ nodes: [NODE], uis: exampleContractUis(NODE.name), stack }));
    await cluster.core.createNamespace({ body: { metadata: { name: "tools" } } }).catch(() => undefined);
    charts = path.join(sandbox.dir, "charts");
    fs.mkdirSync(charts);
    fs.writeFileSync(
      path.join(charts, "Pulumi.yaml"),
      stringify({ name: "charts", runtime: { name: "nodejs", options: { typescript: false } }, main: "index.js" }),
    );
    fs.writeFileSync(path.join(charts, "index.js"), PROGRAM);
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(charts, "node_modules"));
    const init = chartsPulumi(["stack", "init", "charts", "--secrets-provider", "passphrase"]);
    expect(init.code, summary(init)).toBe(0);
  }, 600_000);

  afterAll(() => {
    // A preview killed at its timeout leaves its plugins running (the provider, the pack's language host): ended here.
    if (sandbox) reapStrayPlugins(sandbox.dir);
    stopPlatform({ cluster, sandbox });
  });

  // readFileSync on these never returns (a FIFO with no writer) or fills memory (/dev/zero): the preview hung until killed.
  for (const [label, make] of [
    ["a FIFO", (file: string) => spawnSync("mkfifo", [file])],
    ["a symlink to /dev/zero", (file: string) => fs.symlinkSync("/dev/zero", file)],
  ] as const)
    it(`a contract path that is ${label} is one message naming it, promptly`, () => {
      const file = path.join(charts, `contract-${label.replace(/\W+/g, "-")}.yaml`);
      make(file);
      const r = preview("plain", { "undeclared-exposure": { contract: file } }, 60_000);
      expect(r.signal, `the preview did not end within 60 s\n${summary({ ...r, code: r.code })}`).toBeNull();
      expect(r.code, summary({ ...r, code: r.code })).not.toBe(0);
      expect(r.stdout + r.stderr).toContain(`contract ${file}`);
    });

  it("a ReplicationController on the host network with a hostPort fails the preview, as a Deployment's would", () => {
    // The pack said ✅ and the preview passed: its pods open 7001 on every node.
    const r = preview("rc", {});
    expect(r.code, summary({ ...r, code: r.code })).not.toBe(0);
    expect(r.stdout + r.stderr).toContain("ReplicationController tools/rc");
  });

  it("a Service whose namespace is unknown at preview is not judged in 'default'", () => {
    // Judged as default/late-ns, it failed the preview with an allowlist line for the wrong namespace.
    const r = preview("late-namespace", { "undeclared-exposure": { allowlist: { services: ["tools/late-*"], hostPorts: [] } } });
    expect(r.stdout + r.stderr, summary({ ...r, code: r.code })).not.toContain("default/late-ns");
    expect(r.code, summary({ ...r, code: r.code })).toBe(0);
  });
});
