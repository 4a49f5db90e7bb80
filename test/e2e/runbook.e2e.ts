// The README's runbooks, executed as printed (issue 14): the shell blocks marked
// ```sh runbook=bench / runbook=dirqual are extracted from README.md and run with bash in a fresh
// clone, with the default backend (no PULUMI_BACKEND_URL), the shipped stack files, a kubeconfig
// whose contexts `lima-bench` and `dirqual` point at the loopback control plane, and the
// toolchain's pulumi on PATH. The only substitution is the one the runbook itself offers an
// air-gapped operator: the Cilium chart comes from a Helm repository this test serves on 127.0.0.1.
import { execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import {
  type Cluster,
  installKubernetesPlugin,
  projectDir,
  runbookBlock,
  runProcess,
  startExampleCluster,
  toolchainBin,
  writeOperatorKubeconfig,
} from "../support/harness";

const AIR_GAPPED_LINE = "# pulumi config set --path 'ui-exposure:cilium.chart.repository' https://charts.internal/cilium-mirror";
const NODE = { name: "lima-bench", ip: "127.0.0.11" };

let cluster: Cluster;
let clone: string;
let work: string;
let env: NodeJS.ProcessEnv;
let chartRepo: http.Server;
let chartRepoUrl: string;
const dataPath = new Map<string, http.Server>();
let watching = true;
const timings: Record<string, number> = {};

/** Cilium's kube-proxy replacement on a node: every NodePort Service answers on <node IP>:<nodePort> as soon as it exists. */
async function serveNodePorts(): Promise<void> {
  while (watching) {
    const list = await cluster.core.listServiceForAllNamespaces().catch(() => ({ items: [] }));
    for (const s of list.items) {
      for (const p of s.spec?.type === "NodePort" ? (s.spec.ports ?? []) : []) {
        const key = `${NODE.ip}:${p.nodePort}`;
        if (!p.nodePort || dataPath.has(key)) continue;
        const server = http.createServer((_, res) => res.writeHead(200).end("ok"));
        dataPath.set(key, server);
        server.listen(p.nodePort, NODE.ip);
      }
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`;

function runbook(script: string) {
  return runProcess("bash", ["-c", `set -eo pipefail -x\n${script}`], { cwd: clone, env });
}

describe.sequential("e2e: README runbooks, as printed", () => {
  beforeAll(async () => {
    const bin = toolchainBin();
    ({ cluster } = await startExampleCluster(bin, NODE));

    work = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-runbook-"));
    // A fresh clone: what is committed, and nothing else (state, stack salts) ever lands in the repo.
    clone = path.join(work, "ui-exposure");
    execFileSync("git", ["clone", "-q", projectDir, clone]);
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(clone, "node_modules"));
    // What `npm ci` does after installing (its `prepare` script): build the CLI into dist/.
    execFileSync("npm", ["run", "build"], { cwd: clone, stdio: "ignore" });

    // The operator's kubeconfig: the stack files' contexts, on the loopback control plane.
    const kubeconfig = path.join(work, "kubeconfig");
    writeOperatorKubeconfig(cluster, kubeconfig, ["lima-bench", "dirqual"], "dirqual");

    // The air-gapped operator's chart mirror: a Helm repository (index.yaml + archive) on loopback.
    const archive = execFileSync("tar", ["-czf", "-", "-C", path.join(__dirname, "charts"), "cilium"]);
    chartRepo = http.createServer((req, res) => {
      if (req.url === "/index.yaml") {
        const index = {
          apiVersion: "v1",
          entries: {
            cilium: [
              {
                apiVersion: "v2",
                name: "cilium",
                version: "1.18.12",
                appVersion: "1.18.12",
                created: new Date().toISOString(),
                digest: crypto.createHash("sha256").update(archive).digest("hex"),
                urls: [`${chartRepoUrl}/cilium-1.18.12.tgz`],
              },
            ],
          },
          generated: new Date().toISOString(),
        };
        res.writeHead(200, { "content-type": "application/x-yaml" }).end(stringify(index));
      } else if (req.url === "/cilium-1.18.12.tgz") res.writeHead(200, { "content-type": "application/gzip" }).end(archive);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => chartRepo.listen(0, "127.0.0.1", () => r()));
    chartRepoUrl = `http://127.0.0.1:${(chartRepo.address() as { port: number }).port}`;

    const home = path.join(work, "pulumi-home");
    env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith("PULUMI_")) delete env[k];
    Object.assign(env, {
      PATH: `${bin}:${process.env.PATH}`,
      PULUMI_HOME: home,
      PULUMI_CONFIG_PASSPHRASE: "runbook-e2e",
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      PULUMI_IGNORE_AMBIENT_PLUGINS: "true",
      // A terminal would ask "Do you want to perform this update?"; the operator answers yes.
      PULUMI_SKIP_CONFIRMATIONS: "true",
      KUBECONFIG: kubeconfig,
    });
    await installKubernetesPlugin(bin, { cwd: work, env });

    // What the bench's bootstrap script (cni.sh) leaves behind: a Helm release kube-system/cilium,
    // installed outside this project (a throw-away program whose state is then dropped), with
    // kube-proxy replacement on (l4 refuses to turn it on), Gateway API and a BGP control plane.
    const boot = path.join(work, "bootstrap");
    fs.mkdirSync(boot);
    fs.writeFileSync(path.join(boot, "Pulumi.yaml"), "name: cni-bootstrap\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: index.js\n");
    fs.writeFileSync(
      path.join(boot, "index.js"),
      `const k8s = require("@pulumi/kubernetes");\nnew k8s.helm.v3.Release("cilium", { name: "cilium", namespace: "kube-system", chart: ${JSON.stringify(path.join(__dirname, "charts/cilium"))}, version: "1.18.12", values: { kubeProxyReplacement: true, gatewayAPI: { enabled: true }, bgpControlPlane: { enabled: true } }, skipAwait: true });\n`,
    );
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(boot, "node_modules"));
    const bootEnv = { ...env, PULUMI_BACKEND_URL: `file://${boot}`, KUBECONFIG: cluster.kubeconfig };
    for (const args of [
      ["stack", "init", "cni", "--non-interactive"],
      ["up", "--yes", "--skip-preview", "--non-interactive", "--stack", "cni"],
      ["stack", "rm", "cni", "--force", "--yes", "--non-interactive"],
    ]) {
      const r = await runProcess(path.join(bin, "pulumi"), args, { cwd: boot, env: bootEnv });
      if (r.code !== 0) throw new Error(`bootstrap release: pulumi ${args.join(" ")} failed:\n${summary(r)}`);
    }
    void serveNodePorts();
  }, 900_000);

  afterAll(async () => {
    watching = false;
    await Promise.all([...dataPath.values()].map((s) => new Promise((r) => s.close(r))));
    chartRepo?.close();
    cluster?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
    fs.mkdirSync(path.join(projectDir, "test-output"), { recursive: true });
    fs.writeFileSync(path.join(projectDir, "test-output/runbook-timings.json"), JSON.stringify(timings, null, 2));
  }, 120_000);

  it("bench: the runbook runs as printed, with the chart from the air-gapped mirror", async () => {
    const printed = runbookBlock(fs.readFileSync(path.join(clone, "README.md"), "utf8"), "bench");
    expect(printed.split(AIR_GAPPED_LINE)).toHaveLength(2);
    const script = printed.replace(AIR_GAPPED_LINE, `pulumi config set --path 'ui-exposure:cilium.chart.repository' ${chartRepoUrl}`);
    const shipped = fs.readFileSync(path.join(projectDir, "Pulumi.bench.yaml"), "utf8");
    expect(fs.readFileSync(path.join(clone, "Pulumi.bench.yaml"), "utf8")).toBe(shipped);

    const r = await runbook(script);
    timings.benchMs = r.ms;
    expect(r.code, summary(r)).toBe(0);
    // `pulumi stack output urls`, then `exposure probe` (exit 0 under set -e) reached each of them.
    for (const name of ["argocd", "gitea", "grafana"]) expect(r.stdout).toMatch(new RegExp(`"${name}": ?"http://127\\.0\\.0\\.11:3\\d{4}"`));
    // The release was adopted and upgraded in place from the mirror: the keys l4 owns changed, every other live value kept.
    const values = await cluster.core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-standin-values" });
    expect(values.data?.["kube-proxy-replacement"]).toBe("true");
    expect(JSON.parse(values.data?.["values.json"] ?? "{}")).toMatchObject({
      gatewayAPI: { enabled: false },
      l2announcements: { enabled: false },
      bgpControlPlane: { enabled: true },
      rollOutCiliumPods: true,
    });
    // preview logged the values diff, one line per key.
    expect(r.stdout).toContain("cilium values: gatewayAPI.enabled: true -> false (owned by mode 'l4')");
    // The stack file differs from the shipped one only by the passphrase salt and the one key.
    const after = parse(fs.readFileSync(path.join(clone, "Pulumi.bench.yaml"), "utf8")) as { config: Record<string, { chart?: { repository?: string } }> };
    expect(after.config["ui-exposure:cilium"]?.chart?.repository).toBe(chartRepoUrl);
    // The state went to the default backend, in the clone's .pulumi-state, never in the repository.
    expect(fs.existsSync(path.join(clone, ".pulumi-state/.pulumi/stacks/ui-exposure/bench.json"))).toBe(true);
    const changed = execFileSync("git", ["status", "--porcelain"], { cwd: clone, encoding: "utf8" })
      .split("\n")
      .filter((l) => l && !l.endsWith(" node_modules"));
    expect(changed).toEqual([" M Pulumi.bench.yaml"]);
  }, 900_000);

  it("dirqual phase 1: the runbook runs as printed; nothing is sent to the pinned node address", async () => {
    const script = runbookBlock(fs.readFileSync(path.join(clone, "README.md"), "utf8"), "dirqual");
    expect(script).not.toContain("exposure probe");
    // bench and dirqual are two clusters; here both contexts point at the one loopback control
    // plane, where the bench stack's argocd/gitea/grafana-nodeport Services still exist. The
    // ownership hooks rightly refuse to take over another stack's Services, so the bench stack
    // is destroyed first (its Cilium release is retained, as on a real destroy).
    const destroy = await runProcess(path.join(toolchainBin(), "pulumi"), ["destroy", "--stack", "bench", "--yes", "--non-interactive"], {
      cwd: clone,
      // The passphrase the bench runbook, run as printed, exported (`export PULUMI_CONFIG_PASSPHRASE=...`).
      env: { ...env, PULUMI_CONFIG_PASSPHRASE: "..." },
    });
    expect(destroy.code, summary(destroy)).toBe(0);
    const r = await runbook(script);
    timings.dirqualMs = r.ms;
    expect(r.code, summary(r)).toBe(0);
    // The preview, as the runbook says: the 8 Services, each with the ServicePatch that holds its
    // nodePort, + the exposure guard (warn), nothing else of Kubernetes.
    // (Without a terminal, the preview prints a resource's line again as its status changes: count each once.)
    const planned = [...new Set([...r.stdout.matchAll(/\+\s+kubernetes:(\S+)\s+(\S+)\s+create\s*$/gm)].map((m) => `${m[1]} ${m[2]}`))];
    const services = planned.filter((p) => p.startsWith("core/v1:Service "));
    expect(services).toHaveLength(8);
    for (const p of services) expect(p).toMatch(/^core\/v1:Service \S+-svc$/); // the Pulumi name; the Service itself is <entry>-nodeport
    const holds = planned.filter((p) => p.startsWith("core/v1:ServicePatch "));
    expect(holds.map((p) => p.replace(/-port$/, "")).sort()).toEqual(
      services.map((p) => p.replace("core/v1:Service ", "core/v1:ServicePatch ").replace(/-svc$/, "")).sort(),
    );
    expect(planned.filter((p) => !services.includes(p) && !holds.includes(p)).sort()).toEqual([
      "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy admission-policy",
      "admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding admission-binding",
    ]);
    expect(r.stdout).toMatch(/"argocd": ?"http:\/\/10\.67\.2\.11:3\d{4}"/);
  }, 900_000);
});
