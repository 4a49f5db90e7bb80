import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AccessDeps, createAccessCommand } from "../cli/commands/access";
import { SPECS } from "../cli/specs";
import { openStack } from "../cli/stack";
import { writePrivateFile } from "../src/adapters/env-file";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { readStackOutputs } from "../src/adapters/pulumi-cli";
import { readSnapshotFile } from "../src/adapters/snapshot-file";
import {
  accessEndpoints,
  accessEntries,
  type CredentialView,
  credentialNamespaces,
  quoteEnvValue,
  readCredentials,
  renderEnvTemplate,
  resolveReference,
} from "../src/core/access";
import { parseContract } from "../src/core/contract/parse";
import { UserError } from "../src/core/errors";
import type { ClusterReader } from "../src/core/kube/cluster";
import { observe } from "../src/core/observe";
import {
  capture,
  freePortRange,
  healthyCluster,
  makeProject,
  managedService,
  managedServices,
  runCommand,
  secret,
  snapshot,
  stackFile,
  TEST_CONTRACT,
  type TestProject,
  vendoredServices,
} from "./support/command-helpers";
import { list, startFakeApi } from "./support/fake-api";

// Secret values chosen to need quoting in a .env and URL-encoding in a push URL.
const ARGOCD_PASSWORD = "argo-S3cret!";
const GITEA_PASSWORD = "gi#tea pass'word";
const POSTGRES_PASSWORD = "pg$pass";
const ALL_SECRETS = [ARGOCD_PASSWORD, GITEA_PASSWORD, POSTGRES_PASSWORD];

const clusterSecrets = [
  secret("argocd", "argocd-initial-admin-secret", { password: ARGOCD_PASSWORD }),
  secret("gitea", "gitea-admin-secret", { username: "gitea-admin", password: GITEA_PASSWORD }),
  secret("data", "postgres-atlas-role", { username: "atlas", password: POSTGRES_PASSWORD }),
  // Other Secrets of a listed namespace: read by the list call, never shown.
  secret("gitea", "gitea-internal-token", { token: "do-not-show-me" }),
];

const contract = parseContract(TEST_CONTRACT, "test-contract.yaml");

/** A template exercising TEST_CONTRACT's entries (the real one names entries TEST_CONTRACT lacks). */
const TEST_TEMPLATE = `# How to use this template: {{ENTRY.FIELD}} placeholders...
# (this opening block is not copied)

# Postgres: {{gitea.password}} stays a comment
POSTGRES_HOST={{postgres.host}}
POSTGRES_PORT={{postgres.port}}
POSTGRES_USER={{postgres.username}}
POSTGRES_PASSWORD={{postgres.password}}
GITEA_URL={{gitea.url}}
GITEA_PUSH_URL={{gitea.scheme}}://{{gitea.username|urlencode}}:{{gitea.password|urlencode}}@{{gitea.hostport}}
GITEA_PASSWORD={{gitea.password}}
ARGOCD_URL={{argocd.url}}
OPENLINEAGE_URL={{openlineage.url}}
REGISTRY={{registry.hostport}}
DAGSTER_URL={{dagster.url}}
`;

// ---------------------------------------------------------------------------------------------
// Pure parts
// ---------------------------------------------------------------------------------------------

function viewOf(objects: unknown[], forwards = new Map<string, string>()) {
  const services = objects.filter((o) => (o as { kind?: string }).kind === "Service") as never[];
  const observation = observe(
    contract,
    {
      services,
      endpointSlices: objects.filter((o) => (o as { kind?: string }).kind === "EndpointSlice") as never[],
      nodes: objects.filter((o) => (o as { kind?: string }).kind === "Node") as never[],
      pods: objects.filter((o) => (o as { kind?: string }).kind === "Pod") as never[],
    },
    { selected: ["argocd", "gitea", "grafana", "lineage-agent"] },
  );
  return { observation, endpoints: accessEndpoints(contract, observation, services, forwards) };
}

describe("accessEndpoints", () => {
  it("gives the published URL of exposed entries, and the in-cluster DNS name and Service port of the others", () => {
    const { endpoints } = viewOf(healthyCluster());
    const by = (n: string) => endpoints.find((e) => e.name === n);
    expect(by("argocd")).toEqual({
      name: "argocd",
      exposed: true,
      scheme: "http",
      reach: "node",
      url: "http://127.0.0.2:31001",
      host: "127.0.0.2",
      port: 31001,
      verdict: "MATCH",
    });
    expect(by("lineage-agent")).toMatchObject({ reach: "node", url: "http://127.0.0.2:8090", port: 8090 });
    // Port named "postgresql" in the contract: the number comes from the live Service.
    expect(by("postgres")).toEqual({
      name: "postgres",
      exposed: false,
      scheme: "postgresql",
      reach: "in-cluster",
      url: "postgresql://postgres.data.svc.cluster.local:5432",
      host: "postgres.data.svc.cluster.local",
      port: 5432,
    });
    expect(by("openlineage")).toMatchObject({ reach: "in-cluster", url: "http://marquez.marquez.svc.cluster.local:5000" });
  });

  it("says why an entry has no address (our Service absent, vendored Service missing)", () => {
    const objects = healthyCluster().filter((o) => o !== managedServices[2] && o !== vendoredServices[5]);
    const { endpoints } = viewOf(objects);
    expect(endpoints.find((e) => e.name === "grafana")).toMatchObject({
      reach: "none",
      verdict: "ABSENT",
      problem: "Service monitoring/grafana-nodeport does not exist (run pulumi up)",
    });
    expect(endpoints.find((e) => e.name === "registry")).toMatchObject({ reach: "none", problem: "Service registry/registry not found" });
  });

  it("points forwarded UIs at 127.0.0.1 and keeps the node URL they forward to", () => {
    const { endpoints } = viewOf(healthyCluster(), new Map([["gitea", "http://127.0.0.1:18081"]]));
    expect(endpoints.find((e) => e.name === "gitea")).toMatchObject({
      reach: "forward",
      url: "http://127.0.0.1:18081",
      host: "127.0.0.1",
      port: 18081,
      forwardOf: "http://127.0.0.2:31002",
    });
  });
});

describe("readCredentials", () => {
  const entries = contract.endpoints;
  it("needs one Secret list per namespace holding a credential", () => {
    expect(credentialNamespaces(entries)).toEqual(["argocd", "data", "gitea"]);
  });

  it("reads fixed usernames, username keys and passwords from the Secrets", () => {
    const secrets = new Map([
      ["argocd", clusterSecrets.filter((s) => s.metadata.namespace === "argocd")],
      ["gitea", clusterSecrets.filter((s) => s.metadata.namespace === "gitea")],
      ["data", clusterSecrets.filter((s) => s.metadata.namespace === "data")],
    ]);
    expect(readCredentials(entries, secrets)).toEqual([
      { entry: "argocd", label: "Argo CD admin", secret: "argocd/argocd-initial-admin-secret", username: "admin", password: ARGOCD_PASSWORD },
      { entry: "gitea", label: "Gitea admin", secret: "gitea/gitea-admin-secret", username: "gitea-admin", password: GITEA_PASSWORD },
      { entry: "postgres", label: "Postgres role atlas", secret: "data/postgres-atlas-role", username: "atlas", password: POSTGRES_PASSWORD },
    ]);
  });

  it("reports a missing Secret, a missing key (naming the keys, never a value) and a namespace it could not list", () => {
    const secrets = new Map<string, readonly ReturnType<typeof secret>[] | { error: string }>([
      ["argocd", []],
      ["gitea", [secret("gitea", "gitea-admin-secret", { user: "gitea-admin", pass: GITEA_PASSWORD })]],
      ["data", { error: "context test is not allowed to read secrets in namespace data (403): grant list/get on it" }],
    ]);
    const views = readCredentials(entries, secrets);
    expect(views.map((v) => v.problem)).toEqual([
      "Secret argocd/argocd-initial-admin-secret not found",
      "Secret gitea/gitea-admin-secret has no key 'username' (keys: pass, user); Secret gitea/gitea-admin-secret has no key 'password' (keys: pass, user)",
      "context test is not allowed to read secrets in namespace data (403): grant list/get on it",
    ]);
    expect(JSON.stringify(views)).not.toContain(GITEA_PASSWORD);
  });
});

describe("the .env template", () => {
  const credentials: CredentialView[] = [
    { entry: "gitea", label: "Gitea admin", secret: "gitea/gitea-admin-secret", username: "gitea-admin", password: GITEA_PASSWORD },
    { entry: "postgres", label: "Postgres role atlas", secret: "data/postgres-atlas-role", problem: "Secret data/postgres-atlas-role not found" },
  ];
  const { endpoints } = viewOf(healthyCluster());
  const resolve = (ref: string) => resolveReference(ref, { contract, endpoints, credentials });

  it("quotes values only when needed, with single quotes unless the value holds one", () => {
    expect(quoteEnvValue("http://127.0.0.2:31002")).toEqual({ text: "http://127.0.0.2:31002" });
    expect(quoteEnvValue("a b#c")).toEqual({ text: "'a b#c'" });
    expect(quoteEnvValue("it's")).toEqual({ text: `"it's"` });
    // No syntax reads `'` and `$` back the same in bash and python-dotenv: refused (issue 12, defect 6).
    expect(quoteEnvValue("it's $HOME")).toHaveProperty("refused");
    expect(quoteEnvValue("")).toEqual({ text: "" });
  });

  it("replaces placeholders, url-encodes on request, comments out what it cannot resolve and leaves comments alone", () => {
    const rendered = renderEnvTemplate(TEST_TEMPLATE, "t.env", resolve, ["generated"]);
    expect(rendered.text).toBe(
      [
        "# generated",
        "",
        "# Postgres: {{gitea.password}} stays a comment",
        "POSTGRES_HOST=postgres.data.svc.cluster.local",
        "POSTGRES_PORT=5432",
        "# POSTGRES_USER= (unresolved: Postgres role atlas: Secret data/postgres-atlas-role not found)",
        "# POSTGRES_PASSWORD= (unresolved: Postgres role atlas: Secret data/postgres-atlas-role not found)",
        "GITEA_URL=http://127.0.0.2:31002",
        "GITEA_PUSH_URL=http://gitea-admin:gi%23tea%20pass%27word@127.0.0.2:31002",
        `GITEA_PASSWORD="gi#tea pass'word"`,
        "ARGOCD_URL=http://127.0.0.2:31001",
        "OPENLINEAGE_URL=http://marquez.marquez.svc.cluster.local:5000",
        "REGISTRY=registry.registry.svc.cluster.local:5000",
        "# DAGSTER_URL= (unresolved: the contract has no entry 'dagster')",
        "",
      ].join("\n"),
    );
    expect(rendered.unresolved.map((u) => u.variable)).toEqual(["POSTGRES_USER", "POSTGRES_PASSWORD", "DAGSTER_URL"]);
  });

  it("rejects a malformed line, an unknown field or filter, with file:line", () => {
    expect(() => renderEnvTemplate("A=1\nnot a line\n", "t.env", resolve, [])).toThrow(new UserError("t.env:2: expected KEY=VALUE, a comment or a blank line"));
    expect(() => renderEnvTemplate("A={{gitea.token}}\n", "t.env", resolve, [])).toThrow(
      "t.env:1: unknown placeholder '{{gitea.token}}': use ENTRY.url|scheme|host|port|hostport|username|password or ENTRY.credentials[N].username|password",
    );
    expect(() => renderEnvTemplate("A={{gitea.url|base64}}\n", "t.env", resolve, [])).toThrow("t.env:1: unknown filter '|base64' (known: urlencode)");
  });

  it("the versioned template renders against the example contract with no unknown placeholder", () => {
    const projectDir = path.resolve(__dirname, "..");
    const opened = openStack({ projectDir, stack: "dirqual" });
    const cluster = readSnapshotFile(path.join(projectDir, "examples", "dirqual-cluster.yaml"));
    return Promise.all([cluster.listServices(), cluster.listNodes()]).then(([services, nodes]) => {
      const observation = observe(opened.contract, { services, nodes, endpointSlices: [], pods: [] }, { selected: opened.selected, nodeAddress: "10.67.2.11" });
      const endpoints = accessEndpoints(opened.contract, observation, services);
      const credentials = readCredentials(accessEntries(opened.contract, observation), new Map());
      const template = fs.readFileSync(path.join(projectDir, "contract", "atlas.env.cluster.example"), "utf8");
      const rendered = renderEnvTemplate(
        template,
        "atlas.env.cluster.example",
        (ref) => resolveReference(ref, { contract: opened.contract, endpoints, credentials }),
        [],
      );
      // Before the first up nothing is published and no Secret is read: only in-cluster addresses resolve.
      expect(rendered.text).toContain("POSTGRES_HOST=postgres.data.svc.cluster.local\nPOSTGRES_PORT=5432\n");
      // The example snapshot carries the real marquez chart's Service (port http 80 -> targetPort http, the pods' 5000).
      expect(rendered.text).toContain("OPENLINEAGE_URL=http://marquez.marquez.svc.cluster.local:80\n");
      expect(rendered.text).toContain("REGISTRY=registry.registry.svc.cluster.local:5000\n");
      expect(rendered.unresolved.map((u) => u.variable)).toContain("GITEA_PUSH_URL");
    });
  });
});

describe("writePrivateFile", () => {
  it("writes 0600 even over a file that existed with wider permissions", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-env-"));
    try {
      const file = path.join(dir, ".env.cluster.local");
      fs.writeFileSync(file, "OLD=1\n", { mode: 0o644 });
      fs.chmodSync(file, 0o644);
      writePrivateFile(file, "NEW=1\n");
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(fs.readFileSync(file, "utf8")).toBe("NEW=1\n");
      expect(fs.readdirSync(dir)).toEqual([".env.cluster.local"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------
// The command, with a fake `ssh` on PATH
// ---------------------------------------------------------------------------------------------

let project: TestProject;
let sandbox = "";
let fakeBin = "";
let basePort = 0;

const FAKE_SSH = (node: string) => `#!${node}
// Fake ssh for the tests: records its arguments, optionally listens on the -L port like a
// real forward, or fails like ssh does when the port is taken; then waits to be killed.
const fs = require("node:fs");
const args = process.argv.slice(2);
fs.appendFileSync(process.env.FAKE_SSH_LOG, JSON.stringify(args) + "\\n");
if (process.env.FAKE_SSH_FAIL) {
  console.error("bind [127.0.0.1]:1: Address already in use");
  console.error("channel_setup_fwd_listener_tcpip: cannot listen to port: 1");
  process.exit(255);
}
const spec = args[args.indexOf("-L") + 1];
require("node:net").createServer((s) => s.destroy()).listen(Number(spec.split(":")[1]), "127.0.0.1");
setInterval(() => {}, 1000);
`;

beforeAll(async () => {
  sandbox = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-access-"));
  fakeBin = path.join(sandbox, "bin");
  fs.mkdirSync(fakeBin);
  fs.writeFileSync(path.join(fakeBin, "ssh"), FAKE_SSH(process.execPath), { mode: 0o755 });
  fs.mkdirSync(path.join(sandbox, "lima", "bench"), { recursive: true });
  fs.writeFileSync(path.join(sandbox, "lima", "bench", "ssh.config"), "Host lima-bench\n  Hostname 127.0.0.1\n");
  project = makeProject({
    bench: stackFile({ "kubernetes:context": "lima-bench" }),
    other: stackFile({ "kubernetes:context": "dirqual", "ui-exposure:entries": ["argocd"] }),
    evilctx: stackFile({ "kubernetes:context": "lima-../evil" }),
  });
  // A folder beside Lima's whose ssh.config would run a command (ProxyCommand) if ssh read it.
  fs.mkdirSync(path.join(sandbox, "evil"));
  fs.writeFileSync(path.join(sandbox, "evil", "ssh.config"), "Host *\n  ProxyCommand touch PWNED\n");
  fs.writeFileSync(path.join(project.dir, "contract", "atlas.env.cluster.example"), TEST_TEMPLATE);
  // A free range for the forwards' local ports, out of the way of the ports other tests open.
  basePort = await freePortRange(8);
});

let envDir = "";
beforeEach(() => {
  envDir = fs.mkdtempSync(path.join(sandbox, "atlas-"));
  fs.writeFileSync(path.join(sandbox, "ssh.log"), "");
});
afterEach(async () => {
  // Never leave a fake ssh behind, whatever a test did.
  await runAccess(["--stack", "bench", "--stop"], snapshot([]));
});
afterAll(() => {
  project.remove();
  fs.rmSync(sandbox, { recursive: true, force: true });
});

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: `${fakeBin}${path.delimiter}${process.env.PATH}`,
    HOME: sandbox,
    LIMA_HOME: path.join(sandbox, "lima"),
    EXPOSURE_STATE_DIR: path.join(sandbox, "state"),
    FAKE_SSH_LOG: path.join(sandbox, "ssh.log"),
    ...extra,
  };
}

// What the last `up` published: the Services this stack created (no uid: names only).
const lastUp: AccessDeps["readOutputs"] = async () => ({
  endpoints: { argocd: { service: "argocd-nodeport" }, gitea: { service: "gitea-nodeport" }, grafana: { service: "grafana-nodeport" } },
});

async function runAccess(argv: string[], cluster: ClusterReader, opts: { terminal?: boolean; env?: NodeJS.ProcessEnv; deps?: Partial<AccessDeps> } = {}) {
  const c = capture(project.dir, env(opts.env));
  const command = createAccessCommand({
    connect: async () => cluster,
    readOutputs: lastUp,
    isTerminal: () => opts.terminal ?? true,
    forwardBasePort: basePort,
    // Returns as soon as the fake ssh listens; the margin is for a loaded CI machine (node start).
    forwardSettleMs: 15_000,
    ...opts.deps,
  });
  const code = await runCommand("access", command, argv, c);
  return { code, ...c };
}

const sshCalls = () =>
  fs
    .readFileSync(path.join(sandbox, "ssh.log"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as string[]);

const pidFiles = () =>
  fs.existsSync(path.join(sandbox, "state", "forwards", "bench"))
    ? fs.readdirSync(path.join(sandbox, "state", "forwards", "bench")).filter((f) => f.endsWith(".pid.json"))
    : [];
const readPid = (entry: string) =>
  (JSON.parse(fs.readFileSync(path.join(sandbox, "state", "forwards", "bench", `${entry}.pid.json`), "utf8")) as { pid: number }).pid;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const fullCluster = () => snapshot(healthyCluster(clusterSecrets));

describe("exposure access", () => {
  it("shows URLs, in-cluster addresses and credentials on one screen, and writes the .env 0600", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    const cluster = fullCluster();
    const r = await runAccess(["--stack", "bench", "--dotenv", file], cluster);
    expect(r.code).toBe(0);
    const screen = r.out.join("\n");
    expect(screen).toContain("stack bench, snapshot test, node bench 127.0.0.2");
    expect(screen).toMatch(/argocd\s+http:\/\/127\.0\.0\.2:31001\s+MATCH/);
    expect(screen).toMatch(/postgres\s+postgresql:\/\/postgres\.data\.svc\.cluster\.local:5432/);
    expect(screen).toMatch(/Argo CD admin\s+admin\s+argo-S3cret!\s+argocd\/argocd-initial-admin-secret/);
    expect(screen).toMatch(/Gitea admin\s+gitea-admin\s+gi#tea pass'word\s+gitea\/gitea-admin-secret/);
    expect(screen).not.toContain("do-not-show-me");
    expect(screen).toContain(
      `.env: wrote ${file} (0600) from contract/atlas.env.cluster.example; 1 left unset (commented out there, with the reason): DAGSTER_URL`,
    );
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const written = fs.readFileSync(file, "utf8");
    expect(written).toContain(`POSTGRES_PASSWORD='pg$pass'\n`);
    expect(written).toContain("GITEA_PUSH_URL=http://gitea-admin:gi%23tea%20pass%27word@127.0.0.2:31002\n");
    expect(written).toContain("# DAGSTER_URL= (unresolved: the contract has no entry 'dagster')\n");
    expect(written).not.toContain("How to use this template");
    // Secrets go to the screen and the file, never to stderr.
    expect(r.err).toEqual([]);
    // The services of every entry's namespace (argocd, gitea, monitoring, data, marquez, registry),
    // the endpointslices of our Services (argocd, gitea, monitoring), nodes, the hostPort entry's
    // pods, one Secret list per credentials namespace (argocd, data, gitea).
    expect(cluster.requests).toBe(6 + 3 + 1 + 1 + 3);
  });

  it("gives no URL, on screen or in the .env, for a <entry>-nodeport this stack did not create (found by an outside tester)", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    const cluster = healthyCluster(clusterSecrets);
    // gitea-nodeport was deleted and re-created by hand: same name, another uid than the last up's.
    const replaced = cluster.map((item) => {
      const o = item as { kind?: string; metadata: { name: string } };
      return o.kind === "Service" && o.metadata.name === "gitea-nodeport" ? { ...o, metadata: { ...o.metadata, uid: "uid-made-by-hand" } } : item;
    });
    const readOutputs: AccessDeps["readOutputs"] = async () => ({
      endpoints: {
        argocd: { service: "argocd-nodeport" },
        gitea: { service: "gitea-nodeport", uid: "uid-created-by-up" },
        grafana: { service: "grafana-nodeport" },
      },
    });
    const r = await runAccess(["--stack", "bench", "--dotenv", file], snapshot(replaced), { deps: { readOutputs } });
    const screen = r.out.join("\n");
    expect(screen).toMatch(/argocd\s+http:\/\/127\.0\.0\.2:31001\s+MATCH/);
    expect(screen).not.toContain("127.0.0.2:31002");
    expect(screen).toContain("is not the Service the last up published");
    const written = fs.readFileSync(file, "utf8");
    expect(written).not.toContain("127.0.0.2:31002");
    expect(written).not.toMatch(/^GITEA_PUSH_URL=/m);
    expect(written).not.toContain("gi%23tea");
  });

  it("without the Pulumi CLI, says Services are matched by name only, naming no --outputs flag (access takes none)", async () => {
    const r = await runAccess(["--stack", "bench", "--no-dotenv"], fullCluster(), { env: { PATH: fakeBin }, deps: { readOutputs: readStackOutputs } });
    expect(r.code).toBe(0);
    expect(r.err).toEqual(["exposure access: published outputs unavailable (the pulumi CLI is not on PATH; install it); Services are matched by name only"]);
  });

  it("a stack Pulumi does not know (another backend selected) proves nothing is ours, as status says: said once with why, no Service taken for ours by its name", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    const reason =
      "pulumi stack output --stack bench failed: error: no stack named 'bench' found: the stack is not in this backend; check PULUMI_BACKEND_URL or `pulumi login`";
    const readOutputs: AccessDeps["readOutputs"] = async () => {
      throw new UserError(reason);
    };
    const r = await runAccess(["--stack", "bench", "--dotenv", file], fullCluster(), { deps: { readOutputs } });
    expect(r.err).toEqual([`exposure access: no outputs of this stack (${reason}); no Service is proven this stack's`]);
    expect(r.out.join("\n")).not.toMatch(/argocd\s+http:\/\/127\.0\.0\.2:31001\s+MATCH/);
  });

  it("exits 5 when a declared credential could not be read, after showing everything else", async () => {
    const withoutGitea = clusterSecrets.filter((s) => s.metadata.name !== "gitea-admin-secret");
    const r = await runAccess(["--stack", "bench", "--no-dotenv"], snapshot(healthyCluster(withoutGitea)));
    expect(r.code).toBe(5);
    expect(r.out.join("\n")).toMatch(/Argo CD admin\s+admin\s+argo-S3cret!/);
    expect(r.err).toEqual(["exposure access: 1 credential(s) could not be read: Gitea admin (gitea/gitea-admin-secret)"]);
  });

  it("rewrites an existing .env with mode 0600 even when it was world-readable", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    fs.writeFileSync(
      file,
      "# Generated by `exposure access --stack bench` from contract/atlas.env.cluster.example: DO NOT EDIT, DO NOT COMMIT.\n# Credentials in clear text: this file is written 0600 and must stay out of git.\nSTALE=1\n",
    );
    fs.chmodSync(file, 0o644);
    const r = await runAccess(["--stack", "bench", "--dotenv", file], fullCluster());
    expect(r.code).toBe(0);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(file, "utf8")).not.toContain("STALE");
  });

  it("hides passwords when stdout is not a terminal (a log), unless --show-secrets", async () => {
    const hidden = await runAccess(["--stack", "bench", "--no-dotenv"], fullCluster(), { terminal: false });
    expect(hidden.code).toBe(0);
    for (const value of ALL_SECRETS) expect(hidden.all()).not.toContain(value);
    expect(hidden.out.join("\n")).toMatch(/Argo CD admin\s+admin\s+\(hidden\)/);
    expect(hidden.out.join("\n")).toContain("passwords hidden: stdout is not a terminal (pass --show-secrets to print them anyway)");
    const shown = await runAccess(["--stack", "bench", "--no-dotenv", "--show-secrets"], fullCluster(), { terminal: false });
    expect(shown.out.join("\n")).toContain(ARGOCD_PASSWORD);
  });

  it("--json marks every secret value and says the document holds secrets", async () => {
    const r = await runAccess(["--stack", "bench", "--no-dotenv", "--json"], fullCluster(), { terminal: false });
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out.join("\n")) as {
      containsSecrets: boolean;
      warning: string;
      credentials: { label: string; password?: { secret: boolean; value: string } }[];
      envFile: { written: boolean; reason: string };
    };
    expect(json.containsSecrets).toBe(true);
    expect(json.warning).toBe("credentials[].password.value are secrets in clear text: do not log, commit or paste this output");
    expect(json.credentials.map((c) => [c.label, c.password])).toEqual([
      ["Argo CD admin", { secret: true, value: ARGOCD_PASSWORD }],
      ["Gitea admin", { secret: true, value: GITEA_PASSWORD }],
      ["Postgres role atlas", { secret: true, value: POSTGRES_PASSWORD }],
    ]);
    expect(json.envFile).toEqual({ written: false, reason: "--no-dotenv" });
    expect(r.err).toEqual([]);
  });

  it("refuses an .env path inside a git work tree that does not ignore it, and accepts it once ignored", async () => {
    execFileSync("git", ["init", "-q", envDir]);
    const file = path.join(envDir, ".env.cluster.local");
    const refused = await runAccess(["--stack", "bench", "--dotenv", file], fullCluster());
    expect(refused.code).toBe(1);
    expect(refused.err).toEqual([
      `exposure access: refusing to write ${file}: it is inside the git work tree ${fs.realpathSync(envDir)} and git does not ignore it; add '.env.cluster.local' to ${fs.realpathSync(envDir)}/.gitignore or pass another --dotenv`,
    ]);
    expect(refused.out).toEqual([]);
    expect(fs.existsSync(file)).toBe(false);

    fs.writeFileSync(path.join(envDir, ".gitignore"), ".env.cluster.local\n");
    const accepted = await runAccess(["--stack", "bench", "--dotenv", file], fullCluster());
    expect(accepted.code).toBe(0);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it("refuses a file git already tracks, even if .gitignore lists it", async () => {
    execFileSync("git", ["init", "-q", envDir]);
    const file = path.join(envDir, ".env.cluster.local");
    const earlier =
      "# Generated by `exposure access --stack bench` from contract/atlas.env.cluster.example: DO NOT EDIT, DO NOT COMMIT.\n# Credentials in clear text: this file is written 0600 and must stay out of git.\nX=1\n";
    fs.writeFileSync(file, earlier);
    execFileSync("git", ["-C", envDir, "add", ".env.cluster.local"]);
    fs.writeFileSync(path.join(envDir, ".gitignore"), ".env.cluster.local\n");
    const r = await runAccess(["--stack", "bench", "--dotenv", file], fullCluster());
    expect(r.code).toBe(1);
    expect(r.err[0]).toContain(`refusing to write ${file}: git tracks it in`);
    expect(fs.readFileSync(file, "utf8")).toBe(earlier);
  });

  it("never overwrites a file it did not write, nor follows a symbolic link; rewrites its own (found by an outside tester: --dotenv /etc/passwd was replaced)", async () => {
    const foreign = path.join(envDir, "passwd");
    fs.writeFileSync(foreign, "root:x:0:0:root:/root:/bin/bash\n");
    const refused = await runAccess(["--stack", "bench", "--dotenv", foreign], fullCluster());
    expect(refused.code).toBe(1);
    expect(refused.err).toEqual([
      `exposure access: refusing to overwrite ${foreign}: \`exposure access\` did not write it (it does not start with its two header lines); move it away or pass another --dotenv`,
    ]);
    expect(fs.readFileSync(foreign, "utf8")).toBe("root:x:0:0:root:/root:/bin/bash\n");

    const link = path.join(envDir, "link.env");
    fs.symlinkSync(foreign, link);
    const viaLink = await runAccess(["--stack", "bench", "--dotenv", link], fullCluster());
    expect(viaLink.code).toBe(1);
    expect(viaLink.err).toEqual([`exposure access: refusing to write ${link}: it is a symbolic link; pass the path of the file itself with --dotenv`]);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(foreign, "utf8")).toBe("root:x:0:0:root:/root:/bin/bash\n");

    // The header's first words are not enough (found by a second outside tester: notes lost).
    const lookalike = path.join(envDir, "notes.env");
    fs.writeFileSync(lookalike, "# Generated by `exposure access` -- actually my notes\nimportant data\n");
    const notes = await runAccess(["--stack", "bench", "--dotenv", lookalike], fullCluster());
    expect(notes.code).toBe(1);
    expect(fs.readFileSync(lookalike, "utf8")).toContain("important data");

    // Nor a path inside .git, an empty --dotenv, or an empty $EXPOSURE_ENV_FILE taken as a path (same tester).
    fs.mkdirSync(path.join(envDir, ".git"), { recursive: true });
    const inGit = await runAccess(["--stack", "bench", "--dotenv", path.join(envDir, ".git", "x.env")], fullCluster());
    expect(inGit.code).toBe(1);
    expect(inGit.err).toEqual([`exposure access: refusing to write ${path.join(envDir, ".git", "x.env")}: it is inside a .git folder; pass another --dotenv`]);
    expect(fs.existsSync(path.join(envDir, ".git", "x.env"))).toBe(false);
    fs.rmSync(path.join(envDir, ".git"), { recursive: true });
    expect((await runAccess(["--stack", "bench", "--dotenv", ""], fullCluster())).code).toBe(2);
    const emptyVar = await runAccess(["--stack", "bench"], fullCluster(), { env: { EXPOSURE_ENV_FILE: "" } });
    expect(emptyVar.code).toBe(0);
    expect(emptyVar.out.join("\n")).toContain("does not exist (pass --dotenv PATH)");

    const own = path.join(envDir, "own.env");
    expect((await runAccess(["--stack", "bench", "--dotenv", own], fullCluster())).code).toBe(0);
    fs.appendFileSync(own, "# a line added by hand\n");
    expect((await runAccess(["--stack", "bench", "--dotenv", own], fullCluster())).code).toBe(0);
    expect(fs.readFileSync(own, "utf8")).not.toContain("a line added by hand");
  });

  it("uses ../atlas/.env.cluster.local by default (or $EXPOSURE_ENV_FILE), and skips it with a note when ../atlas is missing", async () => {
    const missing = await runAccess(["--stack", "bench"], fullCluster());
    expect(missing.code).toBe(0);
    expect(missing.out.join("\n")).toContain(`.env: not written: ${path.resolve(project.dir, "..", "atlas")} does not exist (pass --dotenv PATH)`);

    const configured = path.join(envDir, "custom.env");
    const viaEnv = await runAccess(["--stack", "bench"], fullCluster(), { env: { EXPOSURE_ENV_FILE: configured } });
    expect(viaEnv.code).toBe(0);
    expect(fs.statSync(configured).mode & 0o777).toBe(0o600);

    const badDir = await runAccess(["--stack", "bench", "--dotenv", path.join(envDir, "nope", ".env")], fullCluster());
    expect(badDir.code).toBe(1);
    expect(badDir.err).toEqual([`exposure access: cannot write ${path.join(envDir, "nope", ".env")}: folder ${path.join(envDir, "nope")} does not exist`]);
  });

  it("fails in one line, writing nothing, when the cluster cannot be read", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    const unreachable = snapshot([]);
    unreachable.listServices = async () => {
      throw new UserError("cluster unreachable: context lima-bench (https://127.0.0.1:6443) did not answer services within 5s");
    };
    const r = await runAccess(["--stack", "bench", "--dotenv", file, "--forward"], unreachable);
    expect(r.code).toBe(1);
    expect(r.err).toEqual(["exposure access: cluster unreachable: context lima-bench (https://127.0.0.1:6443) did not answer services within 5s"]);
    expect(fs.existsSync(file)).toBe(false);
    expect(sshCalls()).toEqual([]);
  });

  it("refuses a .env template larger than its bound in one line, writing nothing", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    const template = path.join(project.dir, "contract", "atlas.env.cluster.example");
    const original = fs.readFileSync(template);
    fs.writeFileSync(template, `# ${"x".repeat(2 * 2 ** 20)}\n`);
    try {
      const r = await runAccess(["--stack", "bench", "--dotenv", file], fullCluster());
      expect(r.code).toBe(1);
      expect(r.err).toEqual(["exposure access: the .env template contract/atlas.env.cluster.example is 2.0 MiB: larger than the 1 MiB limit"]);
      expect(fs.existsSync(file)).toBe(false);
    } finally {
      fs.writeFileSync(template, original);
    }
  });

  it("rejects bad usage with exit 2", async () => {
    const both = await runAccess(["--stack", "bench", "--forward", "--stop"], fullCluster());
    expect(both.code).toBe(2);
    expect(both.err[0]?.split("\n")[0]).toBe("exposure access: --forward and --stop exclude each other");
    const noStack = await runAccess(["--forward"], fullCluster());
    expect(noStack.code).toBe(2);
    const instanceAlone = await runAccess(["--stack", "bench", "--lima-instance", "bench"], fullCluster());
    expect(instanceAlone.code).toBe(2);
  });
});

describe("exposure access --forward / --stop (fake ssh on PATH)", () => {
  it("opens one ssh per UI through Lima's SSH config without connection sharing, and prints the localhost URLs", async () => {
    const file = path.join(envDir, ".env.cluster.local");
    const r = await runAccess(["--stack", "bench", "--forward", "--dotenv", file], fullCluster());
    expect(r.code).toBe(0);
    const config = path.join(sandbox, "lima", "bench", "ssh.config");
    const calls = sshCalls();
    expect(calls).toHaveLength(4);
    expect(calls[0]).toEqual([
      "-F",
      config,
      "-o",
      "ControlMaster=no",
      "-o",
      "ControlPath=none",
      "-o",
      "ExitOnForwardFailure=yes",
      "-o",
      "BatchMode=yes",
      "-N",
      "-L",
      `127.0.0.1:${basePort}:127.0.0.2:31001`,
      "lima-bench",
    ]);
    expect(calls.map((c) => c[c.indexOf("-L") + 1])).toEqual([
      `127.0.0.1:${basePort}:127.0.0.2:31001`,
      `127.0.0.1:${basePort + 1}:127.0.0.2:31002`,
      `127.0.0.1:${basePort + 2}:127.0.0.2:31003`,
      `127.0.0.1:${basePort + 3}:127.0.0.2:8090`,
    ]);
    const screen = r.out.join("\n");
    expect(screen).toMatch(new RegExp(`argocd\\s+http://127\\.0\\.0\\.1:${basePort}\\s+MATCH\\s+SSH forward to http://127\\.0\\.0\\.2:31001`));
    expect(screen).toContain("SSH forwards: 4 started, 0 running, 0 restarted; end them with `exposure access --stack bench --stop`");
    expect(pidFiles().sort()).toEqual(["argocd.pid.json", "gitea.pid.json", "grafana.pid.json", "lineage-agent.pid.json"]);
    expect(alive(readPid("argocd"))).toBe(true);
    // The .env points at the forwards, since the node network is not routable from here.
    expect(fs.readFileSync(file, "utf8")).toContain(`GITEA_URL=http://127.0.0.1:${basePort + 1}\n`);
    // No secret on the ssh command lines.
    for (const value of ALL_SECRETS) expect(JSON.stringify(calls)).not.toContain(value);
  });

  it("running --forward twice opens no duplicate, and --stop ends them all", async () => {
    await runAccess(["--stack", "bench", "--forward", "--no-dotenv"], fullCluster());
    const pids = ["argocd", "gitea", "grafana", "lineage-agent"].map(readPid);
    const again = await runAccess(["--stack", "bench", "--forward", "--no-dotenv", "--json"], fullCluster());
    expect(again.code).toBe(0);
    expect(sshCalls()).toHaveLength(4);
    const json = JSON.parse(again.out.join("\n")) as { forwards: { entry: string; pid: number; state: string; localUrl: string }[] };
    expect(json.forwards.map((f) => [f.entry, f.state, f.pid])).toEqual([
      ["argocd", "running", pids[0]],
      ["gitea", "running", pids[1]],
      ["grafana", "running", pids[2]],
      ["lineage-agent", "running", pids[3]],
    ]);

    const stopped = await runAccess(["--stack", "bench", "--stop"], snapshot([]));
    expect(stopped.code).toBe(0);
    expect(stopped.out.join("\n")).toMatch(new RegExp(`argocd\\s+${pids[0]}\\s+${basePort}\\s+stopped`));
    await new Promise((r) => setTimeout(r, 100));
    for (const pid of pids) expect(alive(pid)).toBe(false);
    expect(pidFiles()).toEqual([]);
    const nothing = await runAccess(["--stack", "bench", "--stop"], snapshot([]));
    expect(nothing.out).toEqual(["stack bench: no SSH forward to stop"]);
  });

  it("replaces a forward that died, on the same local port, and restarts one whose nodePort changed", async () => {
    await runAccess(["--stack", "bench", "--forward", "--no-dotenv"], fullCluster());
    const giteaPid = readPid("gitea");
    process.kill(giteaPid, "SIGKILL");
    await new Promise((r) => setTimeout(r, 100));
    const objects = healthyCluster(clusterSecrets).filter((o) => o !== managedServices[0]);
    objects.push(managedService("argocd", "argocd", 31999, { selector: { "app.kubernetes.io/name": "argocd-server" }, targetPort: 8080 }));
    const r = await runAccess(["--stack", "bench", "--forward", "--no-dotenv", "--json"], snapshot(objects));
    expect(r.code).toBe(0);
    const json = JSON.parse(r.out.join("\n")) as { forwards: { entry: string; state: string; localPort: number; target: string }[] };
    expect(json.forwards.map((f) => [f.entry, f.state, f.localPort, f.target])).toEqual([
      ["argocd", "restarted", basePort, "127.0.0.2:31999"],
      ["gitea", "started", basePort + 1, "127.0.0.2:31002"],
      ["grafana", "running", basePort + 2, "127.0.0.2:31003"],
      ["lineage-agent", "running", basePort + 3, "127.0.0.2:8090"],
    ]);
    expect(sshCalls()).toHaveLength(6);
  });

  it("ends the forward of a UI that has no URL any more", async () => {
    await runAccess(["--stack", "bench", "--forward", "--no-dotenv"], fullCluster());
    const grafanaPid = readPid("grafana");
    const withoutGrafana = healthyCluster(clusterSecrets).filter((o) => o !== managedServices[2]);
    const r = await runAccess(["--stack", "bench", "--forward", "--no-dotenv"], snapshot(withoutGrafana));
    expect(r.code).toBe(0);
    expect(r.out.join("\n")).toContain("SSH forwards ended (no URL any more): grafana");
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(alive(grafanaPid)).toBe(false);
    expect(pidFiles().sort()).toEqual(["argocd.pid.json", "gitea.pid.json", "lineage-agent.pid.json"]);
  });

  it("--stop never kills a process that merely reuses a recorded pid", async () => {
    const stateDir = path.join(sandbox, "state", "forwards", "bench");
    fs.mkdirSync(stateDir, { recursive: true });
    // Our own pid stands for "some unrelated process": its command line holds no -L spec.
    fs.writeFileSync(
      path.join(stateDir, "argocd.pid.json"),
      JSON.stringify({
        entry: "argocd",
        pid: process.pid,
        localPort: basePort,
        remoteHost: "127.0.0.2",
        remotePort: 31001,
        scheme: "http",
        instance: "bench",
        startTime: "1",
      }),
    );
    const r = await runAccess(["--stack", "bench", "--stop"], snapshot([]));
    expect(r.out.join("\n")).toMatch(/argocd\s+\d+\s+\d+\s+was not running \(stale pid file removed\)/);
    expect(pidFiles()).toEqual([]);
  });

  it("reports a forward ssh could not open, with ssh's own reason, and exits 1", async () => {
    const r = await runAccess(["--stack", "bench", "--forward", "--no-dotenv"], fullCluster(), { env: { FAKE_SSH_FAIL: "1" } });
    expect(r.code).toBe(1);
    expect(r.err).toHaveLength(4);
    expect(r.err[0]).toBe(
      `exposure access: SSH forward for argocd (127.0.0.1:${basePort} -> 127.0.0.2:31001) failed: channel_setup_fwd_listener_tcpip: cannot listen to port: 1`,
    );
    expect(pidFiles()).toEqual([]);
  });

  it("takes only a Lima instance name, from the flag, $LIMA_INSTANCE or the kube context: a path never reaches ssh -F (issue 28 #10)", async () => {
    const flag = await runAccess(["--stack", "bench", "--forward", "--no-dotenv", "--lima-instance", "../evil"], fullCluster());
    expect(flag.code).toBe(2);
    // A usage error: the usage line follows (found by an outside tester).
    expect(flag.err).toEqual([
      `exposure access: --lima-instance must be a Lima instance name (letters and digits, with '.', '_' or '-' between them, at most 76 characters, as limactl accepts), not '../evil'\nusage: exposure access ${SPECS.access.synopsis}\n(\`exposure access --help\` describes every flag)`,
    ]);
    const fromEnv = await runAccess(["--stack", "bench", "--forward", "--no-dotenv"], fullCluster(), { env: { LIMA_INSTANCE: "../evil" } });
    expect(fromEnv.code).toBe(1);
    expect(fromEnv.err[0]).toMatch(/^exposure access: \$LIMA_INSTANCE must be a Lima instance name .*, not '\.\.\/evil'$/);
    const fromContext = await runAccess(["--stack", "evilctx", "--forward", "--no-dotenv"], fullCluster());
    expect(fromContext.code).toBe(1);
    expect(fromContext.err[0]).toMatch(
      /^exposure access: the Lima instance of kube context 'lima-\.\.\.' \(stack evilctx; pass --lima-instance NAME\) must be a Lima instance name .*, not '\.\.\/evil'$/,
    );
    const newline = await runAccess(["--stack", "bench", "--forward", "--no-dotenv", "--lima-instance", "a\nb"], fullCluster());
    expect(newline.err).toHaveLength(1);
    expect(newline.err[0]).toContain("not 'a\\x0ab'");
    expect(sshCalls()).toEqual([]);
    // What Lima accepts still goes through (to the missing-config message here).
    const dotted = await runAccess(["--stack", "bench", "--forward", "--no-dotenv", "--lima-instance", "k8s-1.30_a"], fullCluster());
    expect(dotted.err[0]).toContain("no Lima SSH config at");
  });

  it("needs the Lima instance and its SSH config", async () => {
    const other = await runAccess(["--stack", "other", "--forward", "--no-dotenv"], fullCluster());
    expect(other.code).toBe(1);
    expect(other.err).toEqual([
      "exposure access: --forward needs the Lima instance of stack other: pass --lima-instance NAME (its kube context 'dirqual' is not lima-<name>)",
    ]);
    const missing = await runAccess(["--stack", "other", "--forward", "--no-dotenv", "--lima-instance", "ghost"], fullCluster());
    expect(missing.code).toBe(1);
    expect(missing.err).toEqual([
      `exposure access: no Lima SSH config at ${path.join(sandbox, "lima", "ghost", "ssh.config")}: is the Lima instance 'ghost' created and running? (limactl list; or pass --lima-instance NAME)`,
    ]);
    expect(sshCalls()).toEqual([]);
  });
});

describe("exposure access against corrupt Secrets answers (issue 12, defect 12)", () => {
  it("never echoes a fragment of a Secret in the error text, the .env comments or --json", async () => {
    const fragment = Buffer.from("super-secret-value").toString("base64");
    const byKind = (kind: string) => healthyCluster().filter((o) => (o as { kind?: string }).kind === kind);
    const api = await startFakeApi({
      "/api/v1/services": list("ServiceList", byKind("Service")),
      "/api/v1/nodes": list("NodeList", byKind("Node")),
      "/api/v1/pods": list("PodList", byKind("Pod")),
      "/apis/discovery.k8s.io/v1/endpointslices": list("EndpointSliceList", byKind("EndpointSlice")),
      // Truncated JSON holding part of a value; a value that is not base64; an item of the wrong shape.
      "/api/v1/namespaces/argocd/secrets": {
        raw: true,
        body: `{"kind":"SecretList","items":[{"metadata":{"name":"argocd-initial-admin-secret"},"data":{"password":"${fragment}`,
      },
      "/api/v1/namespaces/gitea/secrets": list("SecretList", [
        { metadata: { name: "gitea-admin-secret", namespace: "gitea" }, data: { username: "Z2l0ZWE=", password: `!!${fragment}` } },
      ]),
      "/api/v1/namespaces/data/secrets": list("SecretList", [
        {
          metadata: { name: "postgres-atlas-role", namespace: "data" }, // A number longer than any port, so the fake server's random port can never contain it.
          data: { username: 987654321, password: fragment },
        },
      ]),
    });
    try {
      const cluster = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 3000 });
      const file = path.join(envDir, ".env.cluster.local");
      const r = await runAccess(["--stack", "bench", "--dotenv", file, "--json"], cluster);
      const everything = [r.all(), fs.readFileSync(file, "utf8")].join("\n");
      for (const leak of [fragment.slice(0, 8), "super-secret", "987654321"]) expect(everything).not.toContain(leak);
      const json = JSON.parse(r.out.join("\n")) as { containsSecrets: boolean; credentials: { label: string; problem?: string }[] };
      expect(json.containsSecrets).toBe(false);
      expect(json.credentials.map((c) => c.problem)).toEqual([
        expect.stringContaining("with something that is not JSON"),
        "Secret gitea/gitea-admin-secret: key 'password' is not valid base64 (value not shown)",
        expect.stringContaining("items[0].data.username: expected a string (value not shown: it is read from a Secret)"),
      ]);
    } finally {
      await api.close();
    }
  });
});

describe("Secret values never appear in problems", () => {
  it("says a key is not base64 without showing any of it", () => {
    const entries = parseContract(
      `version: 1
endpoints:
  - name: a
    service: { namespace: a, name: a, port: http }
    credentials:
      - label: A
        secret: { namespace: a, name: s }
        usernameKey: user
        passwordKey: password
`,
      "c.yaml",
    ).endpoints;
    const secrets = new Map([
      ["a", [{ metadata: { name: "s", namespace: "a" }, data: { user: 12345 as unknown as string, password: "!!c3VwZXItc2VjcmV0LXZhbHVl" } }]],
    ]);
    const [view] = readCredentials(entries, secrets);
    expect(view?.password).toBeUndefined();
    expect(view?.problem).toBe(
      "Secret a/s: key 'user' is not valid base64 (value not shown); Secret a/s: key 'password' is not valid base64 (value not shown)",
    );
    expect(JSON.stringify(view)).not.toMatch(/12345|c3VwZXI/);
  });
});
