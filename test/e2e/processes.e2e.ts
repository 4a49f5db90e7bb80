// Nothing we start outlives its owner (DESIGN.md invariant 9), against the real engine and API
// server: a `pulumi up` whose process group is killed leaves no language host (it runs in a
// process group of its own, which the kill does not reach), and an e2e run interrupted with
// SIGTERM in the middle of a `pulumi up` leaves no control plane, no pulumi and no plugin.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environOf } from "../../src/adapters/sandbox/processes";
import {
  type Cluster,
  EXAMPLE_UIS,
  projectDir,
  reapStrayPlugins,
  type Sandbox,
  startPlatform,
  stopPlatform,
  strayPlugins,
  THREE_NODES,
  waitFor,
} from "../support/harness";
import { E2E_RUN_VARIABLE } from "../support/run-record";

/** Live processes whose environment has `marker` (NAME=value), with their command names. */
function carriers(marker: string): { pid: number; name: string }[] {
  const found: { pid: number; name: string }[] = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    if (!environOf(Number(d))?.includes(marker)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      if (/^\S+ \(.*\) Z/.test(stat)) continue;
      found.push({ pid: Number(d), name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) });
    } catch {}
  }
  return found;
}

/** The language hosts working for `dir`, and the programs they run (node .../cmd/run). */
function languageHosts(dir: string): { pid: number; name: string }[] {
  return fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .flatMap((d) => {
      try {
        const args = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
        const cwd = fs.readlinkSync(`/proc/${d}/cwd`);
        const host = args[0]?.endsWith("pulumi-language-nodejs");
        const program = args.some((a) => a.endsWith("@pulumi/pulumi/cmd/run/index.js") || a.endsWith("@pulumi/pulumi/cmd/run"));
        return (host || program) && cwd.startsWith(dir) ? [{ pid: Number(d), name: host ? "language host" : "program" }] : [];
      } catch {
        return [];
      }
    });
}

describe("a killed pulumi up leaves no language host", () => {
  let cluster: Cluster;
  let sandbox: Sandbox;
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({
      nodes: THREE_NODES,
      uis: [EXAMPLE_UIS.argocd, EXAMPLE_UIS.gitea],
      stack: { "kubernetes:context": "e2e", "ui-exposure:entries": ["argocd", "gitea"], "ui-exposure:cilium": { mode: "cohabit" } },
    }));
  }, 600_000);
  afterAll(() => {
    reapStrayPlugins(sandbox?.dir ?? "/nonexistent");
    stopPlatform({ cluster, sandbox });
  });

  it("the control plane's kubeconfig verifies the API server with its CA, never skipping TLS verification (found by an outside tester)", async () => {
    const text = fs.readFileSync(cluster.kubeconfig, "utf8");
    expect(text).not.toContain("insecure-skip-tls-verify");
    expect(text).toMatch(/^ {4}certificate-authority-data: [A-Za-z0-9+/=]{100,}$/m);
    // A request through it succeeds (the client verifies the server against that CA)...
    expect((await cluster.core.readNamespace({ name: "default" })).metadata?.name).toBe("default");
    // ...and the same request against another CA fails verification.
    const lib = cluster.lib;
    const kc = new lib.KubeConfig();
    kc.loadFromString(
      text.replace(
        /certificate-authority-data: .*/,
        `certificate-authority-data: ${Buffer.from(fs.readFileSync(path.join(cluster.dir, "pki/etcd/ca.crt"))).toString("base64")}`,
      ),
    );
    await expect(kc.makeApiClient(lib.CoreV1Api).readNamespace({ name: "default" })).rejects.toThrow(/certificate|self.signed|verify/i);
  });

  it("kill -9 of up's process group mid-run: its language host and program exit within seconds (the provider is reaped as the runbook says)", async () => {
    const log = path.join(sandbox.dir, "killed-up.log");
    const up = spawn("pulumi", ["up", "--yes", "--skip-preview", "--non-interactive", "--stack", "sandbox"], {
      cwd: sandbox.dir,
      env: sandbox.env,
      detached: true,
      stdio: ["ignore", fs.openSync(log, "w"), fs.openSync(log, "a")],
    });
    const exited = new Promise((r) => up.once("exit", r));
    // Mid-run: the program runs under its language host.
    await waitFor(
      "the up's program to run",
      async () => (languageHosts(sandbox.dir).some((p) => p.name === "program") ? true : undefined),
      300_000,
      () => fs.readFileSync(log, "utf8").slice(-2000),
    );
    const hosts = languageHosts(sandbox.dir);
    expect(hosts.map((h) => h.name).sort()).toEqual(["language host", "program"]);
    process.kill(-(up.pid as number), "SIGKILL");
    await exited;
    const t0 = Date.now();
    await waitFor(
      "the language host and its program to exit",
      async () => (languageHosts(sandbox.dir).length === 0 ? true : undefined),
      5000,
      () => JSON.stringify(languageHosts(sandbox.dir)),
    );
    console.info(`processes e2e: language host gone ${Date.now() - t0} ms after the kill`);
    // What stays is the upstream provider: a stray, as docs/team-state.md says.
    expect(strayPlugins(sandbox.dir).every((p) => p.name.startsWith("pulumi-resourc"))).toBe(true);
    reapStrayPlugins(sandbox.dir);
    expect(sandbox.pulumi(["cancel", "--yes"]).code).toBe(0);
  });
});

describe("an e2e run interrupted with SIGTERM leaves nothing", () => {
  it("SIGTERM to vitest during a pulumi up: control plane, pulumi and plugins stopped within 30 s, the record removed", async () => {
    const runs = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-runs-"));
    try {
      const log = path.join(runs, "vitest.log");
      const vitest = spawn(
        process.execPath,
        [path.join(projectDir, "node_modules/vitest/vitest.mjs"), "run", "--config", "test/support/interrupted-run.vitest.mts"],
        {
          cwd: projectDir,
          env: { ...process.env, UI_EXPOSURE_E2E_RUNS: runs, [E2E_RUN_VARIABLE]: "" },
          stdio: ["ignore", fs.openSync(log, "w"), fs.openSync(log, "a")],
        },
      );
      const exited = new Promise((r) => vitest.once("exit", r));
      const id = await waitFor("the interrupted run's record", async () => fs.readdirSync(runs).find((r) => /^[0-9a-f]{32}$/.test(r)), 60_000);
      const marker = `${E2E_RUN_VARIABLE}=${id}`;
      await waitFor(
        "the interrupted run's pulumi up to run its program",
        async () => (carriers(marker).some((p) => p.name.startsWith("pulumi-languag")) ? true : undefined),
        600_000,
        () => fs.readFileSync(log, "utf8").slice(-3000),
      );
      const started = carriers(marker).map((p) => p.name);
      for (const name of ["etcd", "kube-apiserver", "kube-controller", "pulumi"]) expect(started).toContain(name);
      const planes = fs
        .readFileSync(path.join(runs, id, "control-planes"), "utf8")
        .split("\n")
        .filter(Boolean);
      expect(planes).toHaveLength(1);
      vitest.kill("SIGTERM");
      await exited;
      const t0 = Date.now();
      await waitFor(
        "nothing of the interrupted run to be left",
        async () => (carriers(marker).length === 0 && !fs.existsSync(path.join(runs, id)) ? true : undefined),
        30_000,
        () => JSON.stringify(carriers(marker)),
      );
      console.info(`processes e2e: ${started.length} processes of the interrupted run stopped ${Date.now() - t0} ms after vitest exited`);
      expect(fs.existsSync(planes[0] as string)).toBe(false);
    } finally {
      fs.rmSync(runs, { recursive: true, force: true });
    }
  });
});
