import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { JSON_API_VERSION } from "../src/core/findings";

const projectDir = path.resolve(__dirname, "..");
const bin = path.join(projectDir, "bin/exposure.cjs");

/**
 * The project as a clone has it, in a folder of its own: the stacks, the contract and the
 * examples, and nothing the working folder may also hold (the sandbox's generated stack file).
 */
const cleanProject = (() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "render-project-"));
  for (const f of ["Pulumi.yaml", "Pulumi.bench.yaml", "Pulumi.dirqual.yaml"]) fs.copyFileSync(path.join(projectDir, f), path.join(dir, f));
  for (const d of ["contract", "examples", "test/data"]) fs.cpSync(path.join(projectDir, d), path.join(dir, d), { recursive: true });
  return dir;
})();
afterAll(() => fs.rmSync(cleanProject, { recursive: true, force: true }));

/** Runs the real `exposure` command line in a child process (as an operator would), in the clean project. */
function exposure(...args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: cleanProject, encoding: "utf8", timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("exposure render", () => {
  it("bench: three NodePort Services, the Cilium release, URLs pending allocation (never invented)", () => {
    const r = exposure("render", "--stack", "bench", "--cluster", "examples/bench-cluster.yaml", "--format", "json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out)).toEqual(["apiVersion", "kind", "objects", "releases", "outputs"]);
    expect([out.apiVersion, out.kind]).toEqual([JSON_API_VERSION, "Render"]);
    expect(
      out.objects.map((o: { kind: string; metadata: { namespace: string; name: string } }) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`),
    ).toEqual(["Service argocd/argocd-nodeport", "Service gitea/gitea-nodeport", "Service monitoring/grafana-nodeport"]);
    expect(out.releases.map((x: { chart: string; version: string; namespace: string }) => [x.chart, x.version, x.namespace])).toEqual([
      ["cilium", "1.18.12", "kube-system"],
    ]);
    expect(out.outputs.urls).toEqual({
      argocd: "http://192.168.104.2:<nodePort allocated on apply>",
      gitea: "http://192.168.104.2:<nodePort allocated on apply>",
      grafana: "http://192.168.104.2:<nodePort allocated on apply>",
    });
    expect(out.outputs.node).toEqual({ name: "lima-bench", address: "192.168.104.2", pinned: false });
  });

  it("dirqual: every exposed entry on the pinned address, no Cilium release, nothing of Gateway API", () => {
    // --json and its older spelling --format json print the same document.
    const r = exposure("render", "--stack", "dirqual", "--cluster", "examples/dirqual-cluster.yaml", "--json");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.releases).toEqual([]);
    expect(Object.keys(out.outputs.urls)).toEqual(["argocd", "grafana", "gitea", "dagster", "mlflow", "marquez-web", "k8s-dashboard", "portal"]);
    expect(out.outputs.urls["k8s-dashboard"]).toBe("https://10.67.2.11:<nodePort allocated on apply>");
    // dirqual's exposure guard (mode warn) is part of what `up` applies.
    expect(new Set(out.objects.map((o: { kind: string }) => o.kind))).toEqual(
      new Set(["Service", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]),
    );
    const binding = out.objects.find((o: { kind: string }) => o.kind === "ValidatingAdmissionPolicyBinding");
    expect(binding).toEqual({
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: {
        name: "ui-exposure-guard-dirqual",
        labels: { "app.kubernetes.io/managed-by": "ui-exposure" },
        annotations: { "pulumi.com/patchForce": "true" },
      },
      spec: { policyName: "ui-exposure-guard-dirqual", validationActions: ["Warn"] },
    });
    expect(out.outputs.cilium.mode).toBe("cohabit");
  });

  it("a managed Service already in the cluster gives its real URL", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "render-"));
    const snapshot = path.join(dir, "cluster.yaml");
    const managed = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "argocd-nodeport", namespace: "argocd", labels: { "app.kubernetes.io/managed-by": "ui-exposure", "ui-exposure.io/entry": "argocd" } },
      spec: {
        type: "NodePort",
        selector: { "app.kubernetes.io/name": "argocd-server" },
        ports: [{ name: "http", port: 80, targetPort: 8080, nodePort: 31358 }],
      },
    };
    fs.writeFileSync(snapshot, `${fs.readFileSync(path.join(projectDir, "examples/bench-cluster.yaml"), "utf8")}---\n${stringify(managed)}`);
    const r = exposure("render", "--stack", "bench", "--cluster", snapshot, "--format", "json");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.outputs.urls.argocd).toBe("http://192.168.104.2:31358");
    expect(out.outputs.endpoints.argocd.nodePort).toBe(31358);
    expect(out.outputs.urls.gitea).toBe("http://192.168.104.2:<nodePort allocated on apply>");
  });

  it("fails in one line with exit 1 when the cluster lacks a backing Service", () => {
    const r = exposure("render", "--stack", "dirqual", "--cluster", "examples/bench-cluster.yaml");
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.split("\n")[0]).toBe("exposure render: stack dirqual cannot be deployed (nothing was changed) (5 problems):");
    expect(r.stderr).toContain(
      "  - entry 'dagster': Service dagster/dagster-dagster-webserver not found; install the UI first, fix the contract's service, or leave 'dagster' out of ui-exposure:entries",
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it("rejects an unknown stack and bad usage", () => {
    const unknown = exposure("render", "--stack", "prod", "--cluster", "examples/bench-cluster.yaml");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("exposure render: unknown stack 'prod': no Pulumi.prod.yaml (stacks: bench, dirqual)\n");
    const usage = exposure("render", "--stack", "bench");
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe(
      "exposure render: --cluster is required (a `kubectl get svc,nodes,pods,cm,endpointslices -A -o yaml` List)\nusage: exposure render --stack NAME --cluster SNAPSHOT [--contract FILE] [--json | --format yaml|json]\n(`exposure render --help` describes every flag)\n",
    );
  });

  it("an invalid contract given with --contract exits 2 with the contract's message", () => {
    const r = exposure("render", "--stack", "bench", "--cluster", "examples/bench-cluster.yaml", "--contract", "test/data/legacy-contract.yaml");
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "exposure render: invalid contract test/data/legacy-contract.yaml (1 problem):\ntest/data/legacy-contract.yaml:6:5: endpoints[0].ui_nodeport: legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'\n",
    );
  });
});
