// `exposure portal` and the bundled in-cluster server as real processes, reading a fake API
// server on loopback through @kubernetes/client-node (the same client as in production):
// the kubeconfig, the list calls and the signals are real, only the API answers are recorded.
import * as fs from "node:fs";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishedReader } from "../cli/commands/portal";
import { main } from "../cli/main";
import { bundlePortalServer } from "../src/adapters/portal-bundle";
import { pulumiNotFound, readStackOutputs } from "../src/adapters/pulumi-cli";
import { UserError } from "../src/core/errors";
import { PORTAL_FILES } from "../src/core/portal/spec";
import { writeKubeconfig } from "./support/fake-api";
import { GRAFANA_DRIFT_REASON, NODE_IP, PORTAL_TEST_CONTRACT, recordedCluster } from "./support/portal-fixtures";
import { startProcess } from "./support/processes";
import { recordedApiServer } from "./support/recorded-api";

const projectDir = path.resolve(__dirname, "..");
const bin = path.join(projectDir, "bin", "exposure.cjs");

describe("exposure portal and the bundled server, against a fake API server", () => {
  const api = recordedApiServer(recordedCluster());
  let tmp: string;
  let kubeconfig: string;
  let contractFile: string;

  beforeAll(async () => {
    await new Promise<void>((r) => api.server.listen(0, "127.0.0.1", r));
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "portal-cli-"));
    kubeconfig = writeKubeconfig(tmp, (api.server.address() as AddressInfo).port);
    contractFile = path.join(tmp, "contract.yaml");
    fs.writeFileSync(contractFile, PORTAL_TEST_CONTRACT);
  });
  afterAll(async () => {
    await new Promise((r) => api.server.close(r));
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** A project folder `name` under tmp: Pulumi.yaml, the test contract and `stackFile` as Pulumi.fake.yaml. */
  function fakeProject(name: string, stackFile: string): string {
    const project = path.join(tmp, name);
    fs.mkdirSync(project, { recursive: true });
    fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
    fs.copyFileSync(contractFile, path.join(project, "contract.yaml"));
    fs.writeFileSync(path.join(project, "Pulumi.fake.yaml"), stackFile);
    return project;
  }

  it("serves the page through the current kube context, then stops cleanly on SIGTERM", async () => {
    const p = await startProcess([bin, "portal", "--listen", "127.0.0.1:0", "--contract", contractFile], {
      cwd: projectDir,
      env: { KUBECONFIG: kubeconfig },
      announce: /^portal: (http:\/\/127\.0\.0\.1:\d+\/) \(cluster: context fake \(http:\/\/127\.0\.0\.1:\d+\)\); Ctrl-C to stop$/m,
    });
    try {
      api.seen.length = 0;
      const res = await fetch(p.url);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain(`<a href="http://${NODE_IP}:31358">`);
      expect(html).toContain(GRAFANA_DRIFT_REASON);
      // Scoped reads: the entries' namespaces (their Services, our Services' slices), the nodes; nothing
      // cluster-wide that a tenant could fill (issue 34 #2); no Pods (no hostPort entry).
      expect(api.seen.sort()).toEqual([
        "/api/v1/namespaces/argocd/services",
        "/api/v1/namespaces/gitea/services",
        "/api/v1/namespaces/monitoring/services",
        "/api/v1/nodes",
        "/apis/discovery.k8s.io/v1/namespaces/argocd/endpointslices",
        "/apis/discovery.k8s.io/v1/namespaces/gitea/endpointslices",
        "/apis/discovery.k8s.io/v1/namespaces/monitoring/endpointslices",
      ]);
      expect((await fetch(new URL("/healthz", p.url))).status).toBe(200);
    } finally {
      p.child.kill("SIGTERM");
    }
    expect(await p.exit).toBe(0);
    expect(p.stdout()).toContain("portal: stopped (SIGTERM)");
  });

  it("with --stack: the stack's kube context, selected entries and pinned node address", async () => {
    const project = fakeProject(
      "project",
      `config:
  kubernetes:kubeconfig: ${kubeconfig}
  kubernetes:context: fake
  ui-exposure:contract: contract.yaml
  ui-exposure:entries: [argocd]
  ui-exposure:nodeAddress: 127.0.0.9
  ui-exposure:cilium: { mode: cohabit }
`,
    );
    const p = await startProcess([bin, "portal", "--stack", "fake", "--listen", "127.0.0.1:0"], {
      cwd: project,
      // No Pulumi CLI (PATH: node's folder only): the outputs are unavailable, whatever pulumi the caller has.
      env: { KUBECONFIG: path.join(tmp, "absent-kubeconfig"), PATH: path.dirname(process.execPath) },
      announce: /^portal: (http:\/\/127\.0\.0\.1:\d+\/) \(cluster: context fake .*, stack fake\); Ctrl-C to stop$/m,
    });
    try {
      const body = (await (await fetch(new URL("/api/entries", p.url))).json()) as { stack: string; entries: { name: string; url?: string }[] };
      expect(body.stack).toBe("fake");
      expect(body.entries.map((e) => [e.name, e.url])).toEqual([
        ["argocd", "http://127.0.0.9:31358"],
        ["postgres", undefined],
      ]);
    } finally {
      p.child.kill("SIGINT");
    }
    expect(await p.exit).toBe(0);
  });

  it("with --stack: one verdict with `exposure status`, a hand-moved nodePort is DRIFT in both (issue 23 #8)", async () => {
    const project = fakeProject(
      "project-moved",
      `config:\n  kubernetes:kubeconfig: ${kubeconfig}\n  kubernetes:context: fake\n  ui-exposure:contract: contract.yaml\n  ui-exposure:entries: [argocd]\n  ui-exposure:cilium: { mode: cohabit }\n`,
    );
    // The last up published argocd on 30999; someone moved it to 31358 since.
    const outputs = path.join(project, "outputs.json");
    fs.writeFileSync(outputs, JSON.stringify({ endpoints: { argocd: { nodePort: 30999, url: `http://${NODE_IP}:30999`, service: "argocd-nodeport" } } }));
    const reason = `nodePort changed since the last up (30999 -> 31358): the published URL http://${NODE_IP}:30999 no longer reaches this Service, which now listens on http://${NODE_IP}:31358; pulumi up puts 30999 back`;

    const out: string[] = [];
    const code = await main(["status", "--stack", "fake", "--outputs", outputs, "--json"], {
      projectDir: project,
      stdout: (t) => out.push(t),
      stderr: () => {},
      env: {},
    });
    expect(code).toBe(3);
    const fromStatus = (JSON.parse(out.join("\n")) as { entries: { name: string; verdict: string; reasons: string[] }[] }).entries.find(
      (e) => e.name === "argocd",
    );
    expect(fromStatus).toMatchObject({ verdict: "DRIFT", reasons: [reason] });

    const p = await startProcess([bin, "portal", "--stack", "fake", "--outputs", outputs, "--listen", "127.0.0.1:0"], {
      cwd: project,
      env: {},
      announce: /^portal: (http:\/\/127\.0\.0\.1:\d+\/) \(cluster: context fake .*, stack fake\); Ctrl-C to stop$/m,
    });
    try {
      const body = (await (await fetch(new URL("/api/entries", p.url))).json()) as { entries: { name: string; verdict: string; reasons: string[] }[] };
      const fromPortal = body.entries.find((e) => e.name === "argocd");
      expect(fromPortal).toMatchObject({ verdict: fromStatus?.verdict, reasons: fromStatus?.reasons });
      const html = await (await fetch(p.url)).text();
      expect(html).toContain('<span class="badge v-DRIFT">DRIFT</span>');
      expect(html).toContain(reason.replace(">", "&gt;"));
    } finally {
      p.child.kill("SIGINT");
    }
    expect(await p.exit).toBe(0);
  });

  it("--outputs needs --stack, and a named outputs file that cannot be read stops the portal before it listens", async () => {
    const err: string[] = [];
    const ctx = { projectDir, stdout: () => {}, stderr: (t: string) => err.push(t), env: {} };
    expect(await main(["portal", "--outputs", "x.json"], ctx)).toBe(2);
    expect(err.join("\n")).toContain("--outputs needs --stack");
  });

  it("refuses a bad --listen with the usage exit code (before touching the cluster)", async () => {
    const err: string[] = [];
    const code = await main(["portal", "--listen", "8080"], { projectDir, stdout: () => {}, stderr: (t) => err.push(t), env: {} });
    expect(code).toBe(2);
    expect(err).toEqual([
      "exposure portal: --listen must be HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), not '8080'\nusage: exposure portal [--stack NAME... | --all-stacks] [--outputs FILE] [--listen HOST:PORT] [--contract FILE] [--json]\n(`exposure portal --help` describes every flag)",
    ]);
  });

  it("runs the bundle shipped in the ConfigMap with plain node (loader + gzipped server)", async () => {
    const app = path.join(tmp, "app");
    fs.mkdirSync(app);
    const bundle = bundlePortalServer();
    fs.writeFileSync(path.join(app, PORTAL_FILES.loader), bundle.loader);
    fs.writeFileSync(path.join(app, PORTAL_FILES.bundle), bundle.gzipped);
    fs.writeFileSync(path.join(app, PORTAL_FILES.contract), PORTAL_TEST_CONTRACT);
    const publishedFile = path.join(app, "endpoints.json");
    fs.writeFileSync(
      publishedFile,
      JSON.stringify({ argocd: { nodePort: 30999, service: "argocd-nodeport" }, grafana: { nodePort: 31088, service: "grafana-nodeport" } }),
    );
    const p = await startProcess([path.join(app, PORTAL_FILES.loader)], {
      cwd: app,
      env: {
        KUBECONFIG: kubeconfig,
        PORTAL_LISTEN: "127.0.0.1:0",
        PORTAL_CONTRACT: path.join(app, PORTAL_FILES.contract),
        PORTAL_ENTRIES: '["argocd","grafana"]',
        PORTAL_STACK: "bundle",
        // What the last up published (the ConfigMap components/portal.ts mounts): argocd was on 30999.
        PORTAL_PUBLISHED: publishedFile,
      },
      announce: /^portal listening on (http:\/\/127\.0\.0\.1:\d+\/) \(cluster: context fake/m,
    });
    try {
      const res = await fetch(p.url);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain("Platform UIs · bundle");
      expect(html).toContain(`<a href="http://${NODE_IP}:31358">`);
      expect(html).toContain('<span class="badge v-DRIFT">DRIFT</span>');
      // The in-cluster portal judges against the published ports too (issue 23 #8).
      expect(html).toContain("nodePort changed since the last up (30999 -&gt; 31358)");
    } finally {
      p.child.kill("SIGTERM");
    }
    expect(await p.exit).toBe(0);
  });
});

describe("publishedReader", () => {
  const ctx = (said: string[]) => ({ projectDir: os.tmpdir(), stdout: () => {}, stderr: (t: string) => said.push(t), env: {} });

  it("reads a stack Pulumi does not know as one that published nothing, as status does (not as unknown: names only), saying why once", async () => {
    const said: string[] = [];
    const read = await publishedReader(ctx(said), "nope", undefined, async () => {
      throw new UserError("pulumi stack output --stack nope failed: error: no stack named 'nope' found: the stack is not in this backend");
    });
    expect(await read()).toEqual({});
    expect(said).toEqual([
      "portal: no outputs of this stack (pulumi stack output --stack nope failed: error: no stack named 'nope' found: the stack is not in this backend); no Service is proven this stack's",
    ]);
  });

  it("parses an --outputs file once, and again only when it changed (issue 34 #7)", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "outputs-")), "outputs.json");
    fs.writeFileSync(file, JSON.stringify({ endpoints: { argocd: { service: "argocd-nodeport", uid: "uid-1" } } }));
    let parses = 0;
    const read = await publishedReader(ctx([]), "bench", file, async (c, stack, f) => {
      parses++;
      return readStackOutputs(c, stack, f);
    });
    for (let i = 0; i < 5; i++) expect(await read()).toEqual({ argocd: { service: "argocd-nodeport", uid: "uid-1" } });
    expect(parses).toBe(1);
    fs.writeFileSync(file, JSON.stringify({ endpoints: { argocd: { service: "argocd-nodeport", uid: "uid-22" } } }));
    expect(await read()).toEqual({ argocd: { service: "argocd-nodeport", uid: "uid-22" } });
    expect(parses).toBe(2);
    fs.rmSync(path.dirname(file), { recursive: true });
  });

  it("asks the Pulumi CLI at most every 30 s, and at once for a fresh read", async () => {
    let calls = 0;
    const read = await publishedReader(ctx([]), "bench", undefined, async () => {
      calls++;
      return { endpoints: { argocd: { service: "argocd-nodeport", uid: `uid-${calls}` } } };
    });
    expect(await read()).toEqual({ argocd: { service: "argocd-nodeport", uid: "uid-1" } });
    expect(await read()).toEqual({ argocd: { service: "argocd-nodeport", uid: "uid-1" } });
    expect(await read({ fresh: true })).toEqual({ argocd: { service: "argocd-nodeport", uid: "uid-2" } });
    expect(calls).toBe(2);
  });

  it("says once that the outputs are unavailable, and checks names only", async () => {
    const said: string[] = [];
    const read = await publishedReader(ctx(said), "bench", undefined, async () => {
      throw new UserError(pulumiNotFound("pass --outputs FILE (saved `pulumi stack output --json`)"));
    });
    expect(await read()).toBeUndefined();
    expect(said).toEqual([
      'portal: published outputs unavailable (the pulumi CLI is not on PATH; install it, or pass --outputs FILE (saved `pulumi stack output --json`)); the "changed since the last up" checks are skipped',
    ]);
  });
});
