// Ownership holds however `up` runs (issue 33 #1): one row per way of running it, each against a
// Service `argocd-nodeport` re-created by hand after the last up published ours. Real engine,
// real API server. And our Service's selector is ours whole (issue 34 #11): it follows the
// vendored one when a chart upgrade drops a key, a key added by hand stays refused (issue 39 #3).
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Cluster, EXAMPLE_UIS, reapStrayPlugins, type Sandbox, startPlatform, stopPlatform, summary, THREE_NODES, toolchainBin } from "../support/harness";

const NS = "argocd";
const NAME = "argocd-nodeport";
const RESOURCE = "argocd-svc";
let cluster: Cluster;
let sandbox: Sandbox;

async function live() {
  try {
    return await cluster.core.readNamespacedService({ namespace: NS, name: NAME });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

function outputs(): { endpoints: Record<string, { uid?: string; nodePort?: number }> } {
  const out = sandbox.pulumi(["stack", "output", "--json"]);
  if (out.code !== 0) throw new Error(summary(out));
  return JSON.parse(out.stdout);
}

/** Ours again, published: the copy removed (as the refusal says) and an up. */
async function restoreOurs() {
  if (await live()) await cluster.core.deleteNamespacedService({ namespace: NS, name: NAME });
  const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
  expect(up.code, summary(up)).toBe(0);
}

/** Someone deletes our Service and creates a copy by hand (labels and spec copied, no port pinned). */
async function copyByHand(): Promise<string> {
  const ours = await live();
  if (ours) await cluster.core.deleteNamespacedService({ namespace: NS, name: NAME });
  await cluster.core.createNamespacedService({
    namespace: NS,
    body: {
      metadata: { name: NAME, labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd", "ui-exposure.io/stack": "sandbox" } },
      spec: { type: "NodePort", selector: { ...EXAMPLE_UIS.argocd.selector }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
    },
  });
  return (await live())?.metadata?.uid as string;
}

const checkpoint = () =>
  JSON.parse(fs.readFileSync(path.join(sandbox.dir, ".state/.pulumi/stacks/ui-exposure/sandbox.json"), "utf8")) as {
    checkpoint: {
      latest: { resources?: { urn: string; outputs?: { metadata?: { uid?: string } } }[]; pending_operations?: { type: string; resource: { urn: string } }[] };
    };
  };
const isOurs = (urn: string) => urn.endsWith(`$kubernetes:core/v1:Service::${RESOURCE}`);

/**
 * An up (no preview, as pipelines run it) that recreates our deleted Service, SIGKILLed with its
 * process group where the checkpoint shows it: `pending` (the create recorded as pending, maybe not
 * sent) or `recorded` (the create recorded, the outputs not written: an admission policy refuses
 * the update that follows, so the up cannot finish first). Its lock is then cancelled. False when
 * the up got past the point first (a pending create lasts one API call): the caller tries again.
 */
async function killUpAt(point: "pending" | "recorded", published: string): Promise<boolean> {
  const kc = new cluster.lib.KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const admission = kc.makeApiClient(cluster.lib.AdmissionregistrationV1Api);
  const hold = "e2e-hold-update";
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name: hold },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["UPDATE"], resources: ["services"] }] },
        validations: [{ expression: `object.metadata.name != '${NAME}'`, message: "held by the test" }],
      },
    } as never,
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: { metadata: { name: hold }, spec: { policyName: hold, validationActions: ["Deny"] } } as never,
  });
  // In force once a dry-run update of our Service is refused.
  for (let i = 0; ; i++) {
    const refused = await cluster.core.replaceNamespacedService({ namespace: NS, name: NAME, body: (await live()) as never, dryRun: "All" }).then(
      () => false,
      () => true,
    );
    if (refused) break;
    if (i > 100) throw new Error("the hold policy is not in force");
    await new Promise((r) => setTimeout(r, 200));
  }
  if (await live()) await cluster.core.deleteNamespacedService({ namespace: NS, name: NAME });
  const up = spawn(path.join(toolchainBin(), "pulumi"), ["up", "--yes", "--skip-preview", "--stack", "sandbox", "--non-interactive"], {
    cwd: sandbox.dir,
    env: sandbox.env,
    detached: true,
    stdio: "ignore",
  });
  const exited = new Promise((r) => up.once("exit", r));
  let reachedPoint = false;
  try {
    const reached = () => {
      const latest = checkpoint().checkpoint.latest;
      if (point === "pending") return (latest.pending_operations ?? []).some((o) => o.type === "creating" && isOurs(o.resource.urn));
      const uid = (latest.resources ?? []).find((r) => isOurs(r.urn))?.outputs?.metadata?.uid;
      return uid !== undefined && uid !== published;
    };
    const end = Date.now() + 300_000;
    for (;;) {
      try {
        if (reached()) break;
      } catch {} // the checkpoint being written
      if (up.exitCode !== null) return false;
      if (Date.now() > end) throw new Error(`the up did not reach "${point}" in 5 minutes`);
      await new Promise((r) => setTimeout(r, 5));
    }
    reachedPoint = true;
  } finally {
    if (up.exitCode === null) process.kill(-(up.pid as number), "SIGKILL");
    await exited;
    reapStrayPlugins(sandbox.dir);
    reapSandboxProcesses();
    await admission.deleteValidatingAdmissionPolicyBinding({ name: hold });
    await admission.deleteValidatingAdmissionPolicy({ name: hold });
  }
  // The killed run's lock (none when the up ended by itself).
  sandbox.pulumi(["cancel", "--yes"]);
  return reachedPoint;
}

/**
 * Whatever the killed up left running (its language host runs in its own process group): every
 * process carrying this sandbox's PULUMI_HOME, a fresh temporary folder, is this test's.
 */
function reapSandboxProcesses() {
  const mark = `PULUMI_HOME=${sandbox.dir}/.home\0`;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/environ`, "utf8").includes(mark)) process.kill(Number(entry), "SIGKILL");
    } catch {} // gone meanwhile, or not ours to read
  }
}

/** The project's `options.refresh: always` on or off (Pulumi.yaml knows no other value: off is the block commented out). */
const setProjectRefresh = (on: boolean) => {
  const file = path.join(sandbox.dir, "Pulumi.yaml");
  const text = fs.readFileSync(file, "utf8");
  const [from, to] = [/^(options:| {2}refresh: always)$/gm, /^#(options:| {2}refresh: always)$/gm];
  fs.writeFileSync(file, on ? text.replace(to, "$1") : text.replace(from, "#$1"));
};

const TARGET = `urn:pulumi:sandbox::ui-exposure::ui-exposure:exposure:NodePortExposure$kubernetes:core/v1:Service::${RESOURCE}`;

/** Each way `up` runs: `killed`, after an up killed at that point; `before`, once the copy exists. */
const WAYS: { way: string; up: string[]; killed?: "pending" | "recorded"; before?: () => void }[] = [
  { way: "up with its preview (the project's refresh: always)", up: ["up", "--yes"] },
  { way: "up --skip-preview (refresh: always, as pipelines run it)", up: ["up", "--yes", "--skip-preview"] },
  { way: "up --refresh --skip-preview", up: ["up", "--yes", "--skip-preview", "--refresh"] },
  { way: "up --refresh=false", up: ["up", "--yes", "--skip-preview", "--refresh=false"] },
  { way: "up without the project's refresh: always (Pulumi has no refresh: never)", up: ["up", "--yes"], before: () => setProjectRefresh(false) },
  {
    way: "up after a bare pulumi refresh (the state holds the copy's uid)",
    up: ["up", "--yes", "--skip-preview", "--refresh=false"],
    before: () => {
      const refresh = sandbox.pulumi(["refresh", "--yes"]);
      expect(refresh.code, summary(refresh)).toBe(0);
    },
  },
  { way: "up --target our Service", up: ["up", "--yes", "--skip-preview", "--target", TARGET] },
  { way: "up after an up killed before its create (pending create)", up: ["up", "--yes", "--skip-preview"], killed: "pending" },
  { way: "up after an up killed after its create, before its outputs", up: ["up", "--yes", "--skip-preview"], killed: "recorded" },
];

describe.sequential("e2e: ownership holds however up runs (real engine, real API server)", () => {
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({
      nodes: THREE_NODES,
      uis: [EXAMPLE_UIS.argocd],
      stack: { "kubernetes:context": "e2e", "ui-exposure:entries": ["argocd"], "ui-exposure:cilium": { mode: "cohabit" } },
    }));
    await restoreOurs();
  }, 600_000);

  afterAll(() => stopPlatform({ cluster, sandbox }));

  it.each(WAYS)("$way: refused in one line naming the entry and the final command; the copy and the outputs untouched", async ({ up, killed, before }) => {
    const published = outputs();
    const publishedUid = published.endpoints.argocd?.uid as string;
    expect(publishedUid).toBe((await live())?.metadata?.uid);
    try {
      for (let i = 0; killed && !(await killUpAt(killed, publishedUid)); i++) if (i >= 4) throw new Error(`no up killed at "${killed}" in 5 tries`);
      const copy = await copyByHand();
      before?.();
      const r = sandbox.pulumi(up);
      expect(r.code, summary(r)).not.toBe(0);
      const line = `entry 'argocd': Service ${NS}/${NAME} is not the Service the last up published (its uid ${copy}; the last up published ${publishedUid}); ui-exposure never takes over a Service it did not create: remove it (kubectl -n ${NS} delete service ${NAME}), then pulumi up recreates this stack's own`;
      expect(
        `${r.stdout}\n${r.stderr}`.split("\n").some((l) => l.includes(line)),
        summary(r),
      ).toBe(true);
      expect((await live())?.metadata?.uid).toBe(copy);
      expect(outputs()).toEqual(published);
    } finally {
      setProjectRefresh(true);
      await restoreOurs();
    }
  });

  it("a Service a bare pulumi refresh adopted is not ours for status and drift", async () => {
    const copy = await copyByHand();
    try {
      const refresh = sandbox.pulumi(["refresh", "--yes"]);
      expect(refresh.code, summary(refresh)).toBe(0);
      const status = sandbox.exposure(["status", "--stack", "sandbox", "--json"]);
      const entry = (JSON.parse(status.stdout) as { entries: { name: string; verdict: string; reasons: string[] }[] }).entries.find((e) => e.name === "argocd");
      expect(entry?.verdict, summary(status)).toBe("DRIFT");
      expect(entry?.reasons.join(" ")).toContain(`${NS}/${NAME} is not the Service the last up published (its uid ${copy}`);
      const drift = sandbox.exposure(["drift", "--stack", "sandbox", "--json"]);
      expect(drift.code, summary(drift)).not.toBe(0);
      expect(drift.stdout).toContain(`${NS}/${NAME} is not the Service the last up published (its uid ${copy}`);
    } finally {
      await restoreOurs();
    }
  });

  it("a selector key added to ours (kubectl patch) is named by status and drift; up refuses with the exact command, which works", async () => {
    const published = outputs();
    const uid = (await live())?.metadata?.uid;
    await cluster.core.patchNamespacedService(
      { namespace: NS, name: NAME, body: { spec: { selector: { tier: "frontend" } } }, fieldManager: "kubectl-patch" },
      cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.StrategicMergePatch),
    );
    const command = `kubectl -n ${NS} patch service ${NAME} --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]'`;
    const status = sandbox.exposure(["status", "--stack", "sandbox", "--json"]);
    expect(status.stdout, summary(status)).toContain("selector key tier=frontend of argocd/argocd-nodeport was added outside this stack");
    const drift = sandbox.exposure(["drift", "--stack", "sandbox", "--json"]);
    expect(drift.code, summary(drift)).not.toBe(0);
    expect(drift.stdout).toContain("selector key tier=frontend");
    const r = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(r.code, summary(r)).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain(
      `entry 'argocd': selector key tier=frontend of ${NS}/${NAME} was added outside this stack (traffic may go to other pods); remove it: ${command}, then pulumi up`,
    );
    expect((await live())?.spec?.selector).toEqual({ ...EXAMPLE_UIS.argocd.selector, tier: "frontend" });
    expect(outputs()).toEqual(published);
    // The command as printed (the JSON patch it holds, sent as kubectl sends it).
    const ops = JSON.parse(command.slice(command.indexOf("'") + 1, command.lastIndexOf("'")));
    await cluster.core.patchNamespacedService(
      { namespace: NS, name: NAME, body: ops },
      cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.JsonPatch),
    );
    const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(up.code, summary(up)).toBe(0);
    expect((await live())?.spec?.selector).toEqual(EXAMPLE_UIS.argocd.selector);
    expect((await live())?.metadata?.uid).toBe(uid);
    const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(preview.code, summary(preview)).toBe(0);
  });

  it("a chart upgrade drops a selector key ours mirrored: status and drift say up drops it, up follows; a key added by hand next to it is still refused (issue 39 #3)", async () => {
    const VENDORED = EXAMPLE_UIS.argocd.service;
    const upgraded = { ...EXAMPLE_UIS.argocd.selector };
    const before = { app: "argocd-server", ...upgraded };
    const setVendored = (selector: Record<string, string>) =>
      cluster.core.patchNamespacedService(
        { namespace: NS, name: VENDORED, body: [{ op: "replace", path: "/spec/selector", value: selector }] },
        cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.JsonPatch),
      );
    const uid = (await live())?.metadata?.uid;
    const dropped = `selector differs from the vendored Service ${NS}/${VENDORED}: selector key app=argocd-server of ${NS}/${NAME} was mirrored by the last up from ${NS}/${VENDORED}, whose selector no longer has it (a chart upgrade): our Service may select no pod until pulumi up drops it`;
    type Entry = { name: string; findings: { code: string; message: string }[] };
    const argocd = (doc: { entries: Entry[] }) => doc.entries.find((e) => e.name === "argocd");
    try {
      // The chart's previous version also selected on `app`: the stack mirrors it and publishes what it applied.
      await setVendored(before);
      const first = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(first.code, summary(first)).toBe(0);
      expect((await live())?.spec?.selector).toEqual(before);
      expect(outputs().endpoints.argocd).toMatchObject({ uid, selector: before });

      // The upgrade drops `app`: ours still has it (the stand-in pods never carried it: the URL selects no pod).
      await setVendored(upgraded);
      const status = sandbox.exposure(["status", "--stack", "sandbox", "--json"]);
      const found = argocd(JSON.parse(status.stdout) as { entries: Entry[] })?.findings ?? [];
      expect(
        found.filter((f) => f.code.startsWith("selector-")).map((f) => [f.code, f.message]),
        summary(status),
      ).toEqual([["selector-key-dropped-by-chart", dropped]]);
      const drift = sandbox.exposure(["drift", "--stack", "sandbox", "--json"]);
      expect(drift.code, summary(drift)).not.toBe(0);
      const driftFound = argocd((JSON.parse(drift.stdout) as { status: { entries: Entry[] } }).status)?.findings ?? [];
      expect(driftFound.filter((f) => f.code.startsWith("selector-")).map((f) => [f.code, f.message])).toEqual([["selector-key-dropped-by-chart", dropped]]);
      // The faithful drift check shows it, and up (no preview, as pipelines run it) follows the chart: the same Service, the vendored selector.
      const preview = sandbox.pulumi(["preview", "--expect-no-changes"]);
      expect(preview.code, summary(preview)).not.toBe(0);
      const up = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(up.code, summary(up)).toBe(0);
      expect((await live())?.spec?.selector).toEqual(upgraded);
      expect((await live())?.metadata?.uid).toBe(uid);
      expect(outputs().endpoints.argocd).toMatchObject({ uid, selector: upgraded });
      const clean = sandbox.pulumi(["preview", "--expect-no-changes"]);
      expect(clean.code, summary(clean)).toBe(0);

      // Again, with a key added by hand before the upgrade: the foreign key is refused alone, touching nothing; once removed, up follows the chart.
      await setVendored(before);
      const again = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(again.code, summary(again)).toBe(0);
      await cluster.core.patchNamespacedService(
        { namespace: NS, name: NAME, body: { spec: { selector: { tier: "frontend" } } }, fieldManager: "kubectl-patch" },
        cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.StrategicMergePatch),
      );
      await setVendored(upgraded);
      const published = outputs();
      const command = `kubectl -n ${NS} patch service ${NAME} --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]'`;
      const refused = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(refused.code, summary(refused)).not.toBe(0);
      expect(`${refused.stdout}${refused.stderr}`).toContain(
        `entry 'argocd': selector key tier=frontend of ${NS}/${NAME} was added outside this stack (traffic may go to other pods); remove it: ${command}, then pulumi up`,
      );
      expect((await live())?.spec?.selector).toEqual({ ...before, tier: "frontend" });
      expect(outputs()).toEqual(published);
      const ops = JSON.parse(command.slice(command.indexOf("'") + 1, command.lastIndexOf("'")));
      await cluster.core.patchNamespacedService(
        { namespace: NS, name: NAME, body: ops },
        cluster.lib.setHeaderOptions("Content-Type", cluster.lib.PatchStrategy.JsonPatch),
      );
      const followed = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(followed.code, summary(followed)).toBe(0);
      expect((await live())?.spec?.selector).toEqual(upgraded);
      expect((await live())?.metadata?.uid).toBe(uid);
    } finally {
      await setVendored(upgraded);
      const restored = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
      expect(restored.code, summary(restored)).toBe(0);
    }
  });
});
