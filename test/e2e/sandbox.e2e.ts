// `npm run sandbox` as a new user runs it, in a throw-away copy of the project: `sandbox up
// --json`, every printed URL and the portal answer (MATCH, links), the operator commands work
// against it, `up` again is safe, and `sandbox down` leaves no process and no folder.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projectDir, runProcess, toolchainBin } from "../support/harness";

let copy: string;
let env: NodeJS.ProcessEnv;
const timings: Record<string, number> = {};

const exposure = (args: string[], extraEnv: NodeJS.ProcessEnv = {}) =>
  runProcess(process.execPath, [path.join(copy, "bin/exposure.cjs"), ...args], { cwd: copy, env: { ...env, ...extraEnv } });
const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

/** The variables `. .sandbox/env` would export. */
function sandboxEnv(folder: string): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const line of fs.readFileSync(path.join(folder, "env"), "utf8").split("\n")) {
    const m = /^export (\w+)='(.*)'$/.exec(line);
    if (m?.[1] && m[2] !== undefined) out[m[1]] = m[2];
    const p = /^export PATH='(.*)':"\$PATH"$/.exec(line);
    if (p?.[1]) out.PATH = `${p[1]}:${env.PATH}`;
  }
  return out;
}

/** Pids whose command line mentions the copy (what the sandbox started there). */
function processesUnder(dir: string): number[] {
  return fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid)
    .filter((d) => {
      try {
        return fs.readFileSync(`/proc/${d}/cmdline`, "utf8").includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe.sequential("e2e: exposure sandbox", () => {
  beforeAll(() => {
    // The toolchain must be there: the test never starts a 45-minute build by itself.
    const bin = toolchainBin();
    for (const b of ["pulumi", "kube-apiserver", "etcd", "kube-controller-manager", "prov/pulumi-resource-kubernetes"]) {
      if (!fs.existsSync(path.join(bin, b))) throw new Error(`${bin}/${b} missing: build the toolchain first (scripts/e2e-toolchain.sh)`);
    }
    copy = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-sandbox-e2e-"));
    for (const f of ["Pulumi.yaml", "index.ts", "tsconfig.json", "package.json"]) fs.copyFileSync(path.join(projectDir, f), path.join(copy, f));
    for (const d of ["src", "components", "contract", "cli", "bin", "scripts"]) fs.cpSync(path.join(projectDir, d), path.join(copy, d), { recursive: true });
    // The compiled CLI, as `npm ci` leaves it (bin/exposure.cjs rebuilds it if it does not match the copied sources).
    if (fs.existsSync(path.join(projectDir, "dist"))) fs.cpSync(path.join(projectDir, "dist"), path.join(copy, "dist"), { recursive: true });
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(copy, "node_modules"));
    // A new user's shell: no pulumi on PATH (the toolchain's is used), no backend nor kube settings.
    env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith("PULUMI_") || k === "KUBECONFIG") delete env[k];
    env.PATH = (env.PATH ?? "")
      .split(":")
      .filter((d) => !fs.existsSync(path.join(d, "pulumi")))
      .join(":");
  }, 60_000);

  afterAll(async () => {
    if (copy && fs.existsSync(path.join(copy, ".sandbox"))) await exposure(["sandbox", "down"]);
    if (copy) fs.rmSync(copy, { recursive: true, force: true });
    fs.mkdirSync(path.join(projectDir, "test-output"), { recursive: true });
    fs.writeFileSync(path.join(projectDir, "test-output/sandbox-timings.json"), JSON.stringify(timings, null, 2));
  }, 120_000);

  it("sandbox up --json returns once every printed URL and the portal answer, all MATCH", async () => {
    const up = await exposure(["sandbox", "up", "--json"]);
    timings.firstUpMs = up.ms;
    expect(up.code, summary(up)).toBe(0);
    expect(up.stderr).toContain("pulumi v3.248.0 from the toolchain");
    const out = JSON.parse(up.stdout) as { urls: Record<string, string>; portal: string; folder: string; mode: string };
    expect(out.folder).toBe(path.join(copy, ".sandbox"));
    // Root here: the data path (kube-proxy in the node's namespace), said as such; elsewhere the forwarder, said too.
    const kubeProxy = out.mode === "kube-proxy";
    expect(kubeProxy, up.stderr).toBe(process.getuid?.() === 0);
    expect(up.stderr).toContain(kubeProxy ? "sandbox: mode kube-proxy: node sandbox-node at 198.18." : "sandbox: mode forwarder: ");
    const node = kubeProxy ? String.raw`198\.18\.\d{1,3}\.11` : String.raw`127\.0\.0\.11`;
    // Every exposed entry of the example contract but the in-cluster portal's (the sandbox's portal is out.portal), at the sandbox node's address.
    expect(Object.keys(out.urls).sort()).toEqual(["argocd", "dagster", "gitea", "grafana", "k8s-dashboard", "marquez-web", "mlflow"]);
    for (const [name, url] of Object.entries(out.urls)) {
      expect(url).toMatch(new RegExp(`^${name === "k8s-dashboard" ? "https" : "http"}://${node}:3\\d{4}$`));
      if (url.startsWith("https:")) continue; // self-signed: checked through exposure probe below
      const res = await fetch(url);
      expect(res.status, `${name} ${url}`).toBe(200);
      // Through kube-proxy, the entry's own pod answers (its server says its name).
      if (kubeProxy) expect((await res.text()).trim()).toMatch(new RegExp(`^[a-z-]+/${name}-0$`));
    }
    const view = (await (await fetch(`${out.portal}api/entries`)).json()) as { entries: { name: string; verdict: string; url?: string }[] };
    const exposed = view.entries.filter((e) => e.url);
    expect(exposed.map((e) => [e.name, e.verdict, e.url]).sort()).toEqual(
      Object.entries(out.urls)
        .map(([n, u]) => [n, "MATCH", u])
        .sort(),
    );
    const page = await (await fetch(out.portal)).text();
    for (const url of Object.values(out.urls)) expect(page).toContain(`href="${url}"`);
    expect(fs.statSync(path.join(out.folder, "passphrase")).mode & 0o777).toBe(0o600);
  }, 900_000);

  it("the operator commands work against it with the printed environment: status, probe, access, preview", async () => {
    const folder = path.join(copy, ".sandbox");
    const senv = sandboxEnv(folder);
    const status = await exposure(["status", "--stack", "sandbox"], senv);
    expect(status.code, summary(status)).toBe(0);
    const probe = await exposure(["probe", "--stack", "sandbox"], senv);
    expect(probe.code, summary(probe)).toBe(0);
    const access = await exposure(["access", "--stack", "sandbox", "--no-dotenv", "--json"], senv);
    expect(access.code, summary(access)).toBe(0);
    const preview = await runProcess("pulumi", ["preview", "--stack", "sandbox", "--expect-no-changes", "--non-interactive"], {
      cwd: copy,
      env: { ...env, ...senv },
    });
    expect(preview.code, summary(preview)).toBe(0);
  }, 300_000);

  it("sandbox up again is safe (same URLs, nothing restarted) and sandbox status says up", async () => {
    const before = JSON.parse(fs.readFileSync(path.join(copy, ".sandbox/sandbox.json"), "utf8")) as {
      urls: Record<string, string>;
      processes: { pid: number }[];
    };
    const again = await exposure(["sandbox", "up", "--json"]);
    timings.warmUpAgainMs = again.ms;
    expect(again.code, summary(again)).toBe(0);
    expect(JSON.parse(again.stdout).urls).toEqual(before.urls);
    const after = JSON.parse(fs.readFileSync(path.join(copy, ".sandbox/sandbox.json"), "utf8")) as { processes: { pid: number }[] };
    expect(after.processes.map((p) => p.pid)).toEqual(before.processes.map((p) => p.pid));
    const status = await exposure(["sandbox", "status"]);
    expect(status.code, summary(status)).toBe(0);
    expect(status.stdout).toContain("sandbox up");
    // The control plane is listed (issue 23, item 7): a dead API server is said as such.
    expect(status.stdout).toMatch(/^kube-apiserver \(pid \d+\) +running$/m);
    expect(status.stdout).toMatch(/^API server https:\/\/127\.0\.0\.1:\d+ +answers \(ready\)$/m);
  }, 120_000);

  it("with kube-proxy, what answers follows the live cluster: a deleted Service stops answering and sandbox status says so", async () => {
    const info = JSON.parse(fs.readFileSync(path.join(copy, ".sandbox/sandbox.json"), "utf8")) as { urls: Record<string, string>; mode: string };
    if (info.mode !== "kube-proxy") return;
    const lib = await import("@kubernetes/client-node");
    const kc = new lib.KubeConfig();
    kc.loadFromFile(path.join(copy, ".sandbox/kubeconfig"));
    await kc.makeApiClient(lib.CoreV1Api).deleteNamespacedService({ namespace: "marquez", name: "marquez-web-nodeport" });
    const url = info.urls["marquez-web"] as string;
    let gone = false;
    for (let i = 0; i < 50 && !gone; i++) {
      gone = await fetch(url, { signal: AbortSignal.timeout(1000) }).then(
        () => false,
        () => true,
      );
      if (!gone) await new Promise((r) => setTimeout(r, 200));
    }
    expect(gone).toBe(true);
    const status = await exposure(["sandbox", "status"]);
    expect(status.code, summary(status)).toBe(1);
    expect(status.stdout).toMatch(new RegExp(`marquez-web ${url.replace(/[.]/g, "\\.")}\\s+NO ANSWER`));
  }, 120_000);

  it("a dead API server is said as such by sandbox status, not as the portal not answering (issue 23, item 7)", async () => {
    const pids = fs.readFileSync(path.join(copy, ".sandbox/cluster/pids"), "utf8");
    const pid = Number(/^kube-apiserver=(\d+)$/m.exec(pids)?.[1]);
    // Ours: its command line names the sandbox's cluster folder.
    expect(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")).toContain(path.join(copy, ".sandbox/cluster"));
    process.kill(pid, "SIGKILL");
    for (let i = 0; i < 50 && fs.existsSync(`/proc/${pid}`); i++) await new Promise((r) => setTimeout(r, 100));
    const status = await exposure(["sandbox", "status"]);
    expect(status.code, summary(status)).toBe(1);
    expect(status.stdout).toMatch(new RegExp(`^kube-apiserver \\(pid ${pid}\\) +STOPPED$`, "m"));
    expect(status.stdout).toMatch(/^API server https:\/\/127\.0\.0\.1:\d+ +NO ANSWER \(connection refused/m);
    expect(status.stdout).toContain("sandbox incomplete: the API server does not answer");
  }, 60_000);

  it("sandbox down stops every process it started and removes the folder; a warm up from scratch takes under a minute", async () => {
    const run = path.join(copy, ".sandbox/datapath-run");
    const prefix = fs.existsSync(run) ? fs.readFileSync(run, "utf8").trim() : undefined;
    const down = await exposure(["sandbox", "down"]);
    expect(down.code, summary(down)).toBe(0);
    expect(fs.existsSync(path.join(copy, ".sandbox"))).toBe(false);
    // The data path's namespaces and the host's link went with it.
    if (prefix) {
      expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).not.toContain(prefix);
      expect(execFileSync("ip", ["link", "show"], { encoding: "utf8" })).not.toContain(prefix);
    }
    expect(fs.existsSync(path.join(copy, "Pulumi.sandbox.yaml"))).toBe(false);
    expect(processesUnder(copy)).toEqual([]);
    // Warm: the toolchain is built; measured, reported in docs/e2e.md (not a timed assertion).
    // This one in forwarder mode (forced): what answers follows the live cluster there too.
    const warm = await exposure(["sandbox", "up", "--json"], { EXPOSURE_SANDBOX_DATAPATH: "off" });
    timings.warmUpMs = warm.ms;
    expect(warm.code, summary(warm)).toBe(0);
    expect(warm.stderr).toContain("sandbox: mode forwarder: EXPOSURE_SANDBOX_DATAPATH=off");
    const fwd = JSON.parse(warm.stdout) as { urls: Record<string, string>; mode: string };
    expect(fwd.mode).toBe("forwarder");
    const lib = await import("@kubernetes/client-node");
    const kc = new lib.KubeConfig();
    kc.loadFromFile(path.join(copy, ".sandbox/kubeconfig"));
    const core = kc.makeApiClient(lib.CoreV1Api);
    const answersAt = (url: string) =>
      fetch(url, { signal: AbortSignal.timeout(1000) }).then(
        () => true,
        () => false,
      );
    const until = async (fn: () => Promise<boolean>) => {
      for (let i = 0; i < 60 && !(await fn()); i++) await new Promise((r) => setTimeout(r, 250));
      return fn();
    };
    const argocd = await core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
    const port = argocd.spec?.ports?.[0];
    if (!port?.nodePort) throw new Error("argocd-nodeport has no nodePort");
    const published = fwd.urls.argocd as string;
    port.nodePort = port.nodePort === 32767 ? 32766 : port.nodePort + 1;
    await core.replaceNamespacedService({ namespace: "argocd", name: "argocd-nodeport", body: argocd });
    const movedUrl = `http://127.0.0.11:${port.nodePort}`;
    expect(await until(async () => (await answersAt(movedUrl)) && !(await answersAt(published)))).toBe(true);
    await core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
    expect(await until(async () => !(await answersAt(fwd.urls.gitea as string)))).toBe(true);
    const fstatus = await exposure(["sandbox", "status"]);
    expect(fstatus.code, summary(fstatus)).toBe(1);
    expect(fstatus.stdout).toMatch(/^gitea \S+ +NO ANSWER$/m);
    const down2 = await exposure(["sandbox", "down"]);
    expect(down2.code, summary(down2)).toBe(0);
    expect(processesUnder(copy)).toEqual([]);
  }, 600_000);
});
