import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccessCommand } from "../cli/commands/access";
import { createStatusCommand } from "../cli/commands/status";
import { main } from "../cli/main";
import type { OperatorDeps as StatusDeps } from "../cli/operator";
import { UserError } from "../src/core/errors";
import type { ClusterReader, SnapshotReader } from "../src/core/kube/cluster";
import {
  capture,
  healthyCluster,
  makeProject,
  managedService,
  managedServices,
  node,
  pod,
  readySlices,
  runCommand,
  service,
  slice,
  snapshot,
  stackFile,
  type TestProject,
  vendoredServices,
} from "./support/command-helpers";
import { fakeKubeconfig } from "./support/fake-api";

let project: TestProject;
beforeAll(() => {
  project = makeProject({
    bench: stackFile(),
    two: stackFile({ "ui-exposure:entries": ["argocd", "gitea"] }),
    pinned: stackFile({ "ui-exposure:entries": ["argocd"], "ui-exposure:nodeAddress": "127.0.0.9" }),
  });
});
afterAll(() => project.remove());

const noOutputs: StatusDeps["readOutputs"] = async () => {
  throw new UserError("the pulumi CLI is not on PATH; install it or pass --outputs FILE (saved `pulumi stack output --json`)");
};
const outputs =
  (endpoints: Record<string, unknown>): StatusDeps["readOutputs"] =>
  async () => ({ endpoints });

// What the last `up` published: the Services this stack created (no port, so no port check).
const lastUp = outputs({ argocd: { service: "argocd-nodeport" }, gitea: { service: "gitea-nodeport" }, grafana: { service: "grafana-nodeport" } });

async function status(argv: string[], cluster: ClusterReader, readOutputs: StatusDeps["readOutputs"] = lastUp) {
  const c = capture(project.dir);
  const code = await runCommand("status", createStatusCommand({ connect: async () => cluster, readOutputs }), argv, c);
  return { code, ...c };
}

interface StatusJson {
  ok: boolean;
  node?: { name: string; address: string; pinned: boolean };
  publishedOutputs: { from: string; reason?: string };
  entries: {
    name: string;
    verdict: string;
    reasons: string[];
    findings: { code: string; severity: string; subject: string; message: string }[];
    url?: string;
    nodePort?: number;
    hostPort?: number;
    readyEndpoints: number;
  }[];
  problems: string[];
}
const parse = (out: string[]) => JSON.parse(out.join("\n")) as StatusJson;
const entry = (json: StatusJson, name: string) => json.entries.find((e) => e.name === name);

describe("exposure status", () => {
  it("says MATCH for every healthy entry, with the observed nodePort and URL, and exits 0", async () => {
    const cluster = snapshot(healthyCluster());
    const r = await status(["--stack", "bench"], cluster);
    expect(r.code).toBe(0);
    const table = r.out.join("\n");
    expect(table).toContain("stack bench, snapshot test, node bench 127.0.0.2");
    expect(table).toMatch(/argocd\s+nodePort\s+argocd\/argocd-nodeport\s+1\s+31001\s+http:\/\/127\.0\.0\.2:31001\s+MATCH/);
    expect(table).toMatch(/lineage-agent\s+hostPort\s+\(pod in lineage\)\s+1\s+hostPort 8090\s+http:\/\/127\.0\.0\.2:8090\s+MATCH/);
    expect(table).toContain("not exposed (in-cluster only): postgres, openlineage, registry");
    expect(table).toContain("4 MATCH, 0 DRIFT, 0 ABSENT");
    expect(r.err).toEqual([]);
    // Where the entries are (invariant 8): services and endpointslices of the three nodePort
    // entries' namespaces (one list each), nodes, and the pods of the one hostPort entry; then
    // the audit's cluster-wide lists (Services, Pods: paged, each page bounded).
    expect(cluster.requests).toBe(3 + 3 + 1 + 1 + 2);
    expect(table).toContain("undeclared exposure: none");
  });

  it("shows the cluster's undeclared exposure with the command that removes each, as drift's audit finds it (issue 40 #5)", async () => {
    const debug = service("tools", "debug", { type: "NodePort", ports: [{ port: 8080, nodePort: 32000 }] });
    const agent = pod("tools", "agent-0", "bench", { hostPort: 9100 });
    const r = await status(["--stack", "bench"], snapshot(healthyCluster([debug, agent])));
    const text = r.out.join("\n");
    expect(text).toContain("undeclared exposure: 2 UNDECLARED (neither the contract nor the allowlist declares it)");
    expect(text).toContain(
      "  NodePort tools/debug (8080->32000): in neither the contract nor ui-exposure:allowlist.services: remove the exposure or declare it\n    fix: kubectl -n tools delete service debug, or declare it: ui-exposure:allowlist.services 'tools/debug'",
    );
    expect(text).toContain("    fix: kubectl -n tools edit pod agent-0 (remove it), or declare it: ui-exposure:allowlist.hostPorts 'tools/agent-0:9100'");
    // The entries' verdicts decide the exit code, as before: drift is the gate for undeclared exposure.
    expect(r.code).toBe(0);
    const json = parse((await status(["--stack", "bench", "--json"], snapshot(healthyCluster([debug, agent])))).out) as unknown as {
      undeclared: { name: string; fix: string }[];
    };
    expect(json.undeclared.map((u) => [u.name, u.fix])).toEqual([
      ["debug", "kubectl -n tools delete service debug, or declare it: ui-exposure:allowlist.services 'tools/debug'"],
      ["agent-0", "kubectl -n tools edit pod agent-0 (remove it), or declare it: ui-exposure:allowlist.hostPorts 'tools/agent-0:9100'"],
    ]);
    // Lists it may not make (a namespaced identity): said, and the verdicts still given.
    const cluster = snapshot(healthyCluster());
    const scoped = Object.assign(Object.create(cluster) as SnapshotReader, {
      listPods: (scope?: { namespace?: string }) =>
        scope?.namespace
          ? cluster.listPods(scope as never)
          : Promise.reject(new UserError('pods is forbidden: cannot list resource "pods" at the cluster scope')),
    });
    const partial = await status(["--stack", "bench"], scoped);
    expect(partial.out.join("\n")).toContain(
      'undeclared exposure: not checked (the cluster\'s Services and Pods could not be listed: pods is forbidden: cannot list resource "pods" at the cluster scope)',
    );
    expect(partial.code).toBe(0);
  });

  it("lists only the entries the stack selects and skips the pod list when no hostPort entry is selected", async () => {
    const cluster = snapshot(healthyCluster());
    const r = await status(["--stack", "two", "--json"], cluster);
    expect(r.code).toBe(0);
    const json = parse(r.out);
    expect(json.entries.filter((e) => e.verdict !== "NOT-EXPOSED").map((e) => e.name)).toEqual(["argocd", "gitea"]);
    // services and endpointslices of argocd's and gitea's namespaces, nodes; no pods for the
    // verdicts; the audit's two cluster-wide lists.
    expect(cluster.requests).toBe(2 + 2 + 1 + 2);
  });

  it("--entry reports only the named entries, and reads only what they need", async () => {
    const cluster = snapshot(healthyCluster());
    const r = await status(["--stack", "bench", "--entry", "grafana", "--entry", "argocd", "--json"], cluster);
    expect(r.code).toBe(0);
    const json = parse(r.out);
    // Contract order, no not-exposed entries, the documented document otherwise.
    expect(json.entries.map((e) => e.name)).toEqual(["argocd", "grafana"]);
    expect(json).toMatchObject({ apiVersion: expect.any(String), kind: "Status", stack: "bench", ok: true, problems: [] });
    // services and endpointslices of argocd's and grafana's namespaces, nodes; no hostPort entry named: no pod list.
    expect(cluster.requests).toBe(2 + 2 + 1);
    const table = await status(["--stack", "bench", "--entry", "gitea"], snapshot(healthyCluster()));
    expect(table.out.join("\n")).toMatch(/gitea .* MATCH/);
    expect(table.out.join("\n")).not.toMatch(/argocd|grafana|lineage-agent|not exposed/);
    expect(table.out.join("\n")).toContain("1 MATCH, 0 DRIFT, 0 ABSENT");
  });

  it("--entry: the exit code comes from the named entries alone", async () => {
    // argocd has no ready endpoint and grafana's Service is gone; gitea is healthy.
    const objects = healthyCluster().filter((o) => o !== readySlices[0] && o !== managedServices[2]);
    objects.push(slice("argocd", "argocd-nodeport", [false]));
    const healthyOne = await status(["--stack", "bench", "--entry", "gitea", "--json"], snapshot(objects));
    expect(healthyOne.code).toBe(0);
    expect(parse(healthyOne.out).ok).toBe(true);
    const broken = await status(["--stack", "bench", "--entry", "gitea", "--entry", "grafana", "--json"], snapshot(objects));
    expect(broken.code).toBe(3);
    expect(parse(broken.out).entries.map((e) => [e.name, e.verdict])).toEqual([
      ["gitea", "MATCH"],
      ["grafana", "ABSENT"],
    ]);
  });

  it("--entry: a name the stack does not publish is a usage error (exit 2) naming it, with a suggestion, before any read", async () => {
    const cluster = snapshot(healthyCluster());
    const cases: [string[], string][] = [
      [["--stack", "bench", "--entry", "grafna"], "--entry 'grafna': no such entry in the contract; did you mean 'grafana'?"],
      [["--stack", "bench", "--entry", "argocd", "--entry", "zzz"], "--entry 'zzz': no such entry in the contract"],
      [["--stack", "bench", "--entry", "postgres"], "--entry 'postgres': not published by stack bench (not exposed, or not in its ui-exposure:entries)"],
      [["--stack", "two", "--entry", "grafana"], "--entry 'grafana': not published by stack two (not exposed, or not in its ui-exposure:entries)"],
      [["--stack", "bench", "--entry", ""], "--entry '': an entry name cannot be empty"],
      [["--stack", "bench", "--entry", "graf\u001b[2Jana\u0007"], "--entry 'graf\\x1b[2Jana\\x07': no such entry in the contract"],
      // Found by an outside tester: a tab or a line break in the value split the message.
      [["--stack", "bench", "--entry", "a\nusage: fake\tx"], "--entry 'a\\x0ausage: fake\\x09x': no such entry in the contract"],
      [["--stack", "bench", "--entry", "a".repeat(100_000)], `--entry '${"a".repeat(108)}... (100000 characters)': no such entry in the contract`],
    ];
    for (const [argv, message] of cases) {
      let readOutputsCalls = 0;
      const c = capture(project.dir);
      const code = await runCommand(
        "status",
        createStatusCommand({
          connect: async () => cluster,
          readOutputs: async () => {
            readOutputsCalls++;
            return {};
          },
        }),
        argv,
        c,
      );
      expect(code, argv.join(" ")).toBe(2);
      expect(c.out).toEqual([]);
      const lines = c.err.join("\n").split("\n");
      expect(lines[0]).toBe(`exposure status: ${message}`);
      expect(lines.slice(1)).toEqual([expect.stringMatching(/^usage: exposure status /), "(`exposure status --help` describes every flag)"]);
      expect(readOutputsCalls).toBe(0);
    }
    expect(cluster.requests).toBe(0);
  });

  it("a Ready node whose InternalIP is not an IP is a problem (exit 3), not skipped in silence (issue 23 #7)", async () => {
    const r = await status(["--stack", "bench", "--json"], snapshot(healthyCluster([node("zz-bad", "evil.example/x?")])));
    expect(r.code).toBe(3);
    const json = parse(r.out);
    expect(json.node).toMatchObject({ name: "bench", address: "127.0.0.2" });
    expect(json.problems).toEqual([expect.stringContaining('node zz-bad is Ready but its InternalIP "evil.example/x?" is not an IP address')]);
  });

  it("uses the pinned node address in URLs", async () => {
    const r = await status(["--stack", "pinned", "--json"], snapshot(healthyCluster()));
    const json = parse(r.out);
    expect(json.node).toEqual({ name: "(pinned)", address: "127.0.0.9", pinned: true });
    expect(entry(json, "argocd")?.url).toBe("http://127.0.0.9:31001");
  });

  it("reports DRIFT when the nodePort changed since the last up (from the stack outputs) and exits 3", async () => {
    const r = await status(["--stack", "bench"], snapshot(healthyCluster()), outputs({ argocd: { nodePort: 30999 }, gitea: { nodePort: 31002 } }));
    expect(r.code).toBe(3);
    expect(r.out.join("\n")).toMatch(/argocd .* DRIFT\s+nodePort changed since the last up \(30999 -> 31001\)/);
    expect(r.out.join("\n")).toMatch(/gitea .* MATCH/);
  });

  it("never counts a Service this stack did not create as the entry's: not published by the last up, or another uid", async () => {
    const notPublished = await status(["--stack", "two", "--json"], snapshot(healthyCluster()), outputs({ argocd: { service: "argocd-nodeport" } }));
    expect(notPublished.code).toBe(3);
    const gitea = entry(parse(notPublished.out), "gitea");
    expect(gitea).toMatchObject({
      verdict: "DRIFT",
      reasons: [
        "gitea/gitea-nodeport exists but the last up published no Service for this entry: made outside this stack, it is never taken over: kubectl -n gitea delete service gitea-nodeport, then pulumi up creates this stack's own (after an interrupted up that created it: pulumi up alone)",
      ],
    });
    expect(gitea?.url).toBeUndefined();
    expect(gitea?.findings.map((f) => f.code)).toEqual(["service-not-ours"]);
    // Its endpoints are what they are (found by an outside tester: READY said 0 for one that has some).
    expect(gitea?.readyEndpoints).toBeGreaterThan(0);
    const objects = healthyCluster().filter((o) => o !== managedServices[0]);
    objects.push({ ...managedServices[0], metadata: { ...(managedServices[0] as { metadata: object }).metadata, uid: "uid-of-a-look-alike" } } as never);
    const replaced = await status(
      ["--stack", "two", "--json"],
      snapshot(objects),
      outputs({ argocd: { service: "argocd-nodeport", uid: "uid-we-created" }, gitea: { service: "gitea-nodeport" } }),
    );
    expect(entry(parse(replaced.out), "argocd")).toMatchObject({
      verdict: "DRIFT",
      reasons: [
        "argocd/argocd-nodeport is not the Service the last up published (its uid uid-of-a-look-alike; the last up published uid-we-created); ui-exposure never takes over a Service it did not create: remove it (kubectl -n argocd delete service argocd-nodeport), then pulumi up recreates this stack's own",
      ],
    });
  });

  it("reports DRIFT when the selector differs from the vendored Service", async () => {
    const objects = healthyCluster().filter((o) => o !== managedServices[1]);
    objects.push(managedService("gitea", "gitea", 31002, { selector: { app: "something-else" }, targetPort: 3000 }));
    const json = parse((await status(["--stack", "bench", "--json"], snapshot(objects))).out);
    // The key the vendored Service does not have is named, with what removes it (issue 34 #11).
    expect(entry(json, "gitea")).toMatchObject({
      verdict: "DRIFT",
      reasons: [
        `selector differs from the vendored Service gitea/gitea-http: selector key app=something-else of gitea/gitea-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n gitea patch service gitea-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/app"}]'`,
      ],
    });
    expect(entry(json, "gitea")?.findings.map((f) => f.code)).toEqual(["selector-key-added"]);
    expect(json.ok).toBe(false);
  });

  it("tells a key the chart dropped (pulumi up drops it) from a key added outside this stack (issue 39 #3)", async () => {
    const objects = healthyCluster().filter((o) => o !== managedServices[1]);
    // The last up mirrored {app, app.kubernetes.io/name}; the chart's upgrade kept only app.kubernetes.io/name.
    const mirrored = { app: "gitea", "app.kubernetes.io/name": "gitea" };
    const published = outputs({ gitea: { service: "gitea-nodeport", selector: mirrored } });
    const dropped =
      "selector differs from the vendored Service gitea/gitea-http: selector key app=gitea of gitea/gitea-nodeport was mirrored by the last up from gitea/gitea-http, whose selector no longer has it (a chart upgrade): our Service may select no pod until pulumi up drops it";
    const followed = await status(
      ["--stack", "two", "--json"],
      snapshot([...objects, managedService("gitea", "gitea", 31002, { selector: mirrored, targetPort: 3000 })]),
      published,
    );
    expect(followed.code).toBe(3);
    expect(entry(parse(followed.out), "gitea")).toMatchObject({ verdict: "DRIFT", reasons: [dropped] });
    expect(entry(parse(followed.out), "gitea")?.findings.map((f) => f.code)).toEqual(["selector-key-dropped-by-chart"]);
    // And a key added by hand next to it is still foreign, with the command that removes it alone.
    const both = await status(
      ["--stack", "two", "--json"],
      snapshot([...objects, managedService("gitea", "gitea", 31002, { selector: { ...mirrored, tier: "web" }, targetPort: 3000 })]),
      published,
    );
    expect(entry(parse(both.out), "gitea")).toMatchObject({
      verdict: "DRIFT",
      reasons: [
        `selector differs from the vendored Service gitea/gitea-http: selector key tier=web of gitea/gitea-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n gitea patch service gitea-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]'`,
        dropped,
      ],
    });
    expect(entry(parse(both.out), "gitea")?.findings.map((f) => f.code)).toEqual(["selector-key-added", "selector-key-dropped-by-chart"]);
  });

  it("reports DRIFT when no endpoint is ready, and ABSENT when our Service does not exist", async () => {
    const objects = healthyCluster().filter((o) => o !== readySlices[0] && o !== managedServices[2]);
    objects.push(slice("argocd", "argocd-nodeport", [false]));
    const r = await status(["--stack", "bench", "--json"], snapshot(objects));
    expect(r.code).toBe(3);
    const json = parse(r.out);
    expect(entry(json, "argocd")).toMatchObject({ verdict: "DRIFT", readyEndpoints: 0, reasons: ["no ready endpoints"] });
    expect(entry(json, "grafana")).toMatchObject({ verdict: "ABSENT", reasons: ["Service monitoring/grafana-nodeport does not exist (run pulumi up)"] });
    // Each reason is also a finding with a stable code, as every other report has.
    expect(entry(json, "argocd")?.findings).toEqual([{ code: "no-ready-endpoints", severity: "drift", subject: "argocd", message: "no ready endpoints" }]);
    expect(entry(json, "grafana")?.findings).toEqual([
      { code: "service-absent", severity: "drift", subject: "grafana", message: "Service monitoring/grafana-nodeport does not exist (run pulumi up)" },
    ]);
    expect(entry(json, "gitea")?.findings).toEqual([]);
  });

  it("reports a hostPort pod that is not ready as DRIFT and a missing one as ABSENT", async () => {
    const base = [node("bench", "127.0.0.2"), ...vendoredServices, ...managedServices, ...readySlices];
    const notReady = await status(
      ["--stack", "bench", "--json"],
      snapshot([...base, pod("lineage", "lineage-agent-0", "bench", { labels: { app: "lineage-agent" }, hostPort: 8090, ready: false })]),
    );
    expect(entry(parse(notReady.out), "lineage-agent")).toMatchObject({ verdict: "DRIFT", reasons: ["pod lineage/lineage-agent-0 is not ready"] });
    expect(entry(parse(notReady.out), "lineage-agent")?.findings.map((f) => f.code)).toEqual(["pod-not-ready"]);
    const missing = await status(["--stack", "bench"], snapshot(base));
    expect(missing.code).toBe(3);
    expect(missing.out.join("\n")).toMatch(/lineage-agent .* ABSENT\s+no pod in lineage holds hostPort 8090/);
  });

  it("exits 3 with the problem when no node is Ready (URLs cannot be built)", async () => {
    const objects = healthyCluster().filter((o) => (o as { kind?: string }).kind !== "Node");
    objects.push(node("bench", "127.0.0.2", false));
    const r = await status(["--stack", "two"], snapshot(objects));
    expect(r.code).toBe(3);
    expect(r.out.join("\n")).toContain("problem: no Ready node with an InternalIP (nodes: bench (NotReady))");
  });

  it("continues without the published-port check when the Pulumi CLI is unavailable, saying so in one stderr line", async () => {
    const r = await status(["--stack", "bench"], snapshot(healthyCluster()), noOutputs);
    expect(r.code).toBe(0);
    expect(r.err).toEqual([
      'exposure status: published outputs unavailable (the pulumi CLI is not on PATH; install it or pass --outputs FILE (saved `pulumi stack output --json`)); the "changed since the last up" checks are skipped',
    ]);
  });

  it("a malformed published output is the stack's error naming the field, never MATCH on names alone (found by an outside tester)", async () => {
    const malformed: StatusDeps["readOutputs"] = async () => ({ endpoints: "x" });
    const r = await status(["--stack", "bench"], snapshot(healthyCluster()), malformed);
    expect(r.code).toBe(1);
    expect(r.out).toEqual([]);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(/^exposure status: stack outputs: endpoints/);
  });

  it("a stack Pulumi says does not exist created nothing: its Services are not MATCH (found by an outside tester)", async () => {
    const noSuchStack: StatusDeps["readOutputs"] = async () => {
      throw new UserError("pulumi stack output --stack bench failed: error: no stack named 'bench' found");
    };
    const r = await status(["--stack", "bench"], snapshot(healthyCluster()), noSuchStack);
    expect(r.code).toBe(3);
    expect(r.out.join("\n")).toContain("gitea/gitea-nodeport exists but the last up published no Service for this entry");
    expect(r.out.join("\n")).toMatch(/^gitea\s+nodePort\s+\S+\s+\d+\s+-\s+-\s+DRIFT/m);
  });

  it("a stack Pulumi does not know (another backend, the sandbox's env not loaded): said with why in one line, and still nothing is taken for ours", async () => {
    // The CLI as it answers from a backend without the stack (PULUMI_BACKEND_URL unset).
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "no-stack-"));
    fs.writeFileSync(path.join(bin, "pulumi"), "#!/bin/sh\necho \"error: no stack named 'bench' found\" >&2\nexit 255\n", { mode: 0o755 });
    fs.mkdirSync(path.join(project.dir, ".sandbox"));
    fs.writeFileSync(path.join(project.dir, ".sandbox/env"), "export PULUMI_BACKEND_URL=file://x\n");
    try {
      const run = async (argv: string[]) => {
        const c = capture(project.dir, { PATH: `${bin}:${process.env.PATH}` });
        const code = await runCommand("status", createStatusCommand({ connect: async () => snapshot(healthyCluster()) }), argv, c);
        return { code, ...c };
      };
      const r = await run(["--stack", "bench"]);
      const rel = path.relative(process.cwd(), path.join(project.dir, ".sandbox/env"));
      const reason = `pulumi stack output --stack bench failed: error: no stack named 'bench' found: the stack is not in this backend; check PULUMI_BACKEND_URL or \`pulumi login\` (a sandbox runs in this folder: run \`. ${rel}\` in this shell first; it sets PULUMI_BACKEND_URL to the sandbox's)`;
      expect(r.err).toEqual([`exposure status: no outputs of this stack (${reason}); no Service is proven this stack's`]);
      expect(r.code).toBe(3);
      expect(r.out.join("\n")).toMatch(/^gitea\s+nodePort\s+\S+\s+\d+\s+-\s+-\s+DRIFT/m);
      const json = await run(["--stack", "bench", "--json"]);
      expect((JSON.parse(json.out.join("\n")) as StatusJson).publishedOutputs).toEqual({ from: "no-stack", reason });
    } finally {
      fs.rmSync(path.join(project.dir, ".sandbox"), { recursive: true, force: true });
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it("reads the published outputs from --outputs FILE, and fails on an unreadable one", async () => {
    const file = path.join(project.dir, "outputs.json");
    fs.writeFileSync(file, JSON.stringify({ endpoints: { grafana: { nodePort: 30000 } } }));
    const c = capture(project.dir);
    const code = await runCommand(
      "status",
      createStatusCommand({ connect: async () => snapshot(healthyCluster()) }),
      ["--stack", "bench", "--outputs", file],
      c,
    );
    expect(code).toBe(3);
    expect(c.out.join("\n")).toContain("nodePort changed since the last up (30000 -> 31003)");

    const missing = capture(project.dir);
    const failed = await runCommand(
      "status",
      createStatusCommand({ connect: async () => snapshot(healthyCluster()) }),
      ["--stack", "bench", "--outputs", path.join(project.dir, "nope.json")],
      missing,
    );
    expect(failed).toBe(1);
    expect(missing.err).toEqual([`exposure status: cannot read outputs file ${path.join(project.dir, "nope.json")}: ENOENT`]);
  });

  it("rejects bad usage with exit 2 and a usage line", async () => {
    const cluster = snapshot([]);
    const noStack = await status([], cluster);
    expect(noStack.code).toBe(2);
    expect(noStack.err.join("\n")).toBe(
      "exposure status: --stack is required\nusage: exposure status (--stack NAME... | --all-stacks) [--entry NAME]... [--outputs FILE] [--timeout SECONDS] [--json]\n(`exposure status --help` describes every flag)",
    );
    const badTimeout = await status(["--stack", "bench", "--timeout", "soon"], cluster);
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.err[0]).toContain("--timeout must be a positive number of seconds, not 'soon'");
    const unknownFlag = await status(["--stack", "bench", "--colour"], cluster);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.err[0]).toContain("unknown flag '--colour'");
    expect((cluster as SnapshotReader).requests).toBe(0);
  });

  it("fails with exit 1 on an unknown stack", async () => {
    const r = await status(["--stack", "prod"], snapshot([]));
    expect(r.code).toBe(1);
    expect(r.err[0]).toMatch(/^exposure status: unknown stack 'prod': no .*Pulumi\.prod\.yaml \(stacks: bench, pinned, two\)$/);
  });
});

describe("exposure status against an unreachable API server (real client, loopback only)", () => {
  let silent: net.Server;
  let silentPort = 0;
  let closedPort = 0;
  const sockets: net.Socket[] = [];
  beforeAll(async () => {
    // A server that accepts connections and never answers: the request must time out.
    silent = net.createServer((s) => {
      sockets.push(s);
      // Read (and drop) what the client sends, so a connection it closes is seen closed here.
      s.resume();
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    silentPort = (silent.address() as net.AddressInfo).port;
    // A port that was free a moment ago: connections are refused.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    closedPort = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  function kubeconfig(port: number): string {
    const file = path.join(project.dir, `kubeconfig-${port}`);
    fs.writeFileSync(file, fakeKubeconfig(`https://127.0.0.1:${port}`, { context: "test" }));
    return file;
  }

  async function liveStatus(port: number, argv: string[]) {
    const p = makeProject({ live: stackFile({ "kubernetes:kubeconfig": kubeconfig(port), "ui-exposure:entries": ["argocd"] }) });
    try {
      const c = capture(p.dir);
      const code = await runCommand("status", createStatusCommand({ readOutputs: noOutputs }), ["--stack", "live", ...argv], c);
      return { code, err: c.err, out: c.out };
    } finally {
      p.remove();
    }
  }

  it("refuses a stack without kubernetes:context before connecting: never whatever context is current (found by an outside tester)", async () => {
    const before = sockets.length;
    const file = kubeconfig(silentPort);
    const p = makeProject({ nocontext: { "kubernetes:kubeconfig": file, "ui-exposure:cilium": { mode: "cohabit" }, "ui-exposure:entries": ["argocd"] } });
    try {
      const commands = { status: createStatusCommand({ readOutputs: noOutputs }), access: createAccessCommand() };
      for (const name of ["status", "access"] as const) {
        const c = capture(p.dir);
        const code = await main([name, "--stack", "nocontext", ...(name === "access" ? ["--no-dotenv"] : [])], c.ctx, commands);
        expect(code).toBe(1);
        expect(c.out).toEqual([]);
        expect(c.err.filter((l) => !l.includes("published outputs unavailable"))).toEqual([
          `exposure ${name}: invalid stack configuration in Pulumi.nocontext.yaml: kubernetes:context is not set; set it (pulumi config set kubernetes:context <context> --stack nocontext) so the stack never deploys to (or reads) whatever context is current\nadd under 'config:' in Pulumi.nocontext.yaml:\n  kubernetes:context: <context>        # the cluster's, from: kubectl config get-contexts -o name`,
        ]);
      }
      await new Promise((r) => setTimeout(r, 100));
      expect(sockets.length).toBe(before);
    } finally {
      p.remove();
    }
  });

  it("says in one line that the cluster refused the connection, at the refusal (not at a timeout)", async () => {
    // A 600 s timeout: the command can only end here on the refusal itself, which the message names.
    const r = await liveStatus(closedPort, ["--timeout", "600"]);
    expect(r.code).toBe(1);
    expect(r.out).toEqual([]);
    const failure = r.err.filter((l) => !l.startsWith("exposure status: published outputs unavailable"));
    expect(failure).toHaveLength(1);
    expect(failure[0]).toMatch(
      /^exposure status: cluster unreachable: context test \(https:\/\/127\.0\.0\.1:\d+\): ECONNREFUSED while reading (services|endpointslices|nodes)( in namespace [a-z]+)?( \([^)]*\))?; check the kube context/,
    );
  });

  it("gives up after --timeout seconds when the API server does not answer: the timer aborts every request it held open", async () => {
    const before = sockets.length;
    const r = await liveStatus(silentPort, ["--timeout", "0.5"]);
    expect(r.code).toBe(1);
    const failure = r.err.filter((l) => !l.startsWith("exposure status: published outputs unavailable"));
    expect(failure).toHaveLength(1);
    expect(failure[0]).toMatch(
      /^exposure status: cluster unreachable: context test \(https:\/\/127\.0\.0\.1:\d+\) did not answer (services|endpointslices|nodes)( in namespace [a-z]+)?( \([^)]*\))? within 0\.5s$/,
    );
    // The server never answers: the 0.5 s timer (the message above) ended the command, and the client closed each connection it had opened.
    const opened = sockets.slice(before);
    expect(opened.length).toBeGreaterThan(0);
    await Promise.all(opened.map((s) => (s.closed ? undefined : new Promise((resolve) => s.once("close", resolve)))));
  });
});

describe("exposure status in a folder where a sandbox runs, without its env file sourced (issue 23, item 9)", () => {
  it("says to source .sandbox/env, not only that there is no kubeconfig or context", async () => {
    const p = makeProject({ sandbox: stackFile({ "kubernetes:context": "sandbox" }) });
    const saved = process.env.KUBECONFIG;
    try {
      fs.mkdirSync(path.join(p.dir, ".sandbox"));
      fs.writeFileSync(path.join(p.dir, ".sandbox", "env"), "export KUBECONFIG=...\n");
      // Some other kubeconfig of the user's, without the sandbox's context.
      const other = path.join(p.dir, "other-kubeconfig");
      fs.writeFileSync(other, "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n");
      process.env.KUBECONFIG = other;
      const c = capture(p.dir);
      const status = createStatusCommand({ readOutputs: async () => ({}) });
      expect(await runCommand("status", status, ["--stack", "sandbox"], c)).toBe(1);
      const rel = path.relative(process.cwd(), path.join(p.dir, ".sandbox", "env"));
      expect(c.err.join("\n")).toContain(`kube context 'sandbox' is not in the kubeconfig`);
      expect(c.err.join("\n")).toContain(`(a sandbox runs in this folder: run \`. ${rel}\` in this shell first; it sets KUBECONFIG to the sandbox's)`);
      // Sourced (KUBECONFIG is the sandbox's): no such hint.
      process.env.KUBECONFIG = path.join(p.dir, ".sandbox", "kubeconfig");
      fs.copyFileSync(other, process.env.KUBECONFIG);
      const sourced = capture(p.dir);
      await runCommand("status", status, ["--stack", "sandbox"], sourced);
      expect(sourced.err.join("\n")).not.toContain("a sandbox runs in this folder");
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
      p.remove();
    }
  });
});

describe("exposure status over several stacks (issue 41)", () => {
  // Each stack through its own connection: `two`'s API server refuses, bench's answers.
  const perStack =
    (down: string): StatusDeps["connect"] =>
    async (opened) => {
      if (opened.stack === down) throw new UserError("cannot reach the Kubernetes API at https://127.0.0.1:1 (connection refused)");
      return snapshot(healthyCluster());
    };
  const run = async (argv: string[], connect: StatusDeps["connect"]) => {
    const c = capture(project.dir);
    const code = await runCommand("status", createStatusCommand({ connect, readOutputs: lastUp }), argv, c);
    return { code, ...c };
  };

  it("one table with a STACK column; a stack not read is told on its own line, and the exit code is the worst of theirs", async () => {
    const r = await run(["--stack", "bench", "--stack", "two"], perStack("two"));
    const text = r.out.join("\n");
    expect(text).toContain("stack bench, snapshot test, node bench 127.0.0.2");
    expect(text).toContain("stack two: NOT READ: cannot reach the Kubernetes API at https://127.0.0.1:1 (connection refused)");
    expect(text).toMatch(/^STACK\s+ENTRY\s+EXPOSURE/m);
    expect(text).toMatch(/^bench\s+argocd\s+nodePort\s+argocd\/argocd-nodeport\s+1\s+31001\s+\S+\s+MATCH/m);
    expect(text).toContain("stack bench: 4 MATCH, 0 DRIFT, 0 ABSENT");
    expect(r.err).toEqual(["exposure status: stack two: cannot reach the Kubernetes API at https://127.0.0.1:1 (connection refused)"]);
    expect(r.code).toBe(1);
  });

  it("both read: every row names its stack (the same entry in both never mixes); exit 0 when all MATCH", async () => {
    const r = await run(["--stack", "bench", "--stack", "two", "--json"], perStack(""));
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out.join("\n")) as { kind: string; ok: boolean; stacks: { stack: string; ok: boolean; entries: { name: string }[] }[] };
    expect(doc).toMatchObject({ kind: "StatusList", ok: true });
    expect(doc.stacks.map((s) => s.stack)).toEqual(["bench", "two"]);
    expect(doc.stacks[1]?.entries.filter((e) => ["argocd", "gitea"].includes(e.name)).length).toBe(2);
  });

  it("--all-stacks reads every Pulumi.<NAME>.yaml of the project; with --stack, or --entry over several stacks, it is a usage error", async () => {
    const r = await run(["--all-stacks", "--json"], perStack("pinned"));
    const doc = JSON.parse(r.out.join("\n")) as { ok: boolean; stacks: { stack: string; ok: boolean; error?: string }[] };
    expect(doc.stacks.map((s) => [s.stack, s.ok])).toEqual([
      ["bench", true],
      ["two", true],
      ["pinned", false],
    ]);
    expect(r.code).toBe(1);
    expect((await run(["--all-stacks", "--stack", "bench"], perStack(""))).code).toBe(2);
    expect((await run(["--stack", "bench", "--stack", "two", "--entry", "argocd"], perStack(""))).code).toBe(2);
  });
});
