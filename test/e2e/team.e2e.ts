// A team runs production (issue 22): the state of the shipped dirqual stack in one PostgreSQL
// database (Pulumi's DIY postgres:// backend), two operators' clones of the repository, the
// README's "Share state with your team" runbooks and docs/team-state.md's blocks executed as
// printed. Real engine, real API server, a real PostgreSQL started by the harness on loopback.
//
// Substitutions, each asserted to exist exactly once: the runbooks' backend URL line (the
// harness's server is on 127.0.0.1, without TLS) and, in the shared repository, the dirqual
// stack's pinned `ui-exposure:nodeAddress` line (10.67.2.11: nothing here may send traffic
// there, and the portal probes every URL it shows), so the URLs use the Ready node's loopback
// address. Everything else (the stack file, the contract, the commands) is as shipped.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freeLoopbackPort } from "../../src/adapters/free-port";
import {
  type Cluster,
  type exampleContractUis,
  installKubernetesPlugin,
  projectDir,
  reapStrayPlugins,
  runbookBlock,
  runProcess,
  startExampleCluster,
  strayPlugins,
  toolchainBin,
  writeOperatorKubeconfig,
} from "../support/harness";
import { type Postgres, startPostgres } from "../support/postgres";

const NODE = { name: "dirqual-node-1", ip: "127.0.0.11" };
const DB = "ui_exposure_state";
const ROLE = "ui_exposure";
const PASSWORD = "Team-e2e-pw-7f3k9";
const PASSPHRASE = "the team's passphrase, e2e";
const PINNED_LINE = "  ui-exposure:nodeAddress: 10.67.2.11\n";
// The backend prefixes every key with the URL's path (the database name).
const CHECKPOINT_KEY = `${DB}/.pulumi/stacks/ui-exposure/dirqual.json`;
const STACK = "dirqual";

const readme = () => fs.readFileSync(path.join(projectDir, "README.md"), "utf8");
const teamDoc = () => fs.readFileSync(path.join(projectDir, "docs/team-state.md"), "utf8");
const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`;

interface Operator {
  name: string;
  home: string;
  clone: string;
  env: NodeJS.ProcessEnv;
}

let cluster: Cluster;
let pg: Postgres;
let work: string;
let bin: string;
let origin: string;
let backendUrl: string;
let a: Operator;
let b: Operator;
let uis: ReturnType<typeof exampleContractUis>;

/** The README's backend URL line, replaced by the one for the harness's server. */
function teamBlock(name: string, text = readme()): string {
  const block = runbookBlock(text, name);
  const lines = block.split("\n").filter((l) => l.startsWith("export PULUMI_BACKEND_URL="));
  if (name === "team") expect(lines).toHaveLength(1);
  return lines.length ? block.replace(lines[0] as string, `export PULUMI_BACKEND_URL='${backendUrl}'`) : block;
}

const pulumi = (op: Operator, args: string[], env: NodeJS.ProcessEnv = op.env) =>
  runProcess(path.join(bin, "pulumi"), [...args, "--non-interactive"], { cwd: op.clone, env });
const exposure = (op: Operator, args: string[], env: NodeJS.ProcessEnv = op.env) =>
  runProcess(process.execPath, [path.join(op.clone, "bin/exposure.cjs"), ...args], { cwd: op.clone, env });
const runbook = (op: Operator, script: string) => runProcess("bash", ["-c", `set -eo pipefail -x\n${script}`], { cwd: op.clone, env: op.env });

/** The variables the README's `team` block exports, as that block computes them for this operator. */
function teamVariables(op: Operator): Record<string, string> {
  const exports = teamBlock("team")
    .split("\n")
    .filter((l) => l.startsWith("export "));
  const names = exports.map((l) => l.slice("export ".length, l.indexOf("=")));
  const out = execFileSync("bash", ["-c", `${exports.join("\n")}\n${names.map((n) => `printf '%s\\0' "$${n}"`).join("\n")}`], {
    env: op.env,
    encoding: "utf8",
  });
  const values = out.split("\0");
  return Object.fromEntries(names.map((n, i) => [n, values[i] as string]));
}

async function makeOperator(name: string, kubeconfig: string): Promise<Operator> {
  const home = path.join(work, `home-${name}`);
  const clone = path.join(work, `clone-${name}`);
  fs.mkdirSync(home, { recursive: true });
  execFileSync("git", ["clone", "-q", origin, clone]);
  execFileSync("git", ["-C", clone, "config", "user.email", `${name}@e2e.invalid`]);
  execFileSync("git", ["-C", clone, "config", "user.name", `operator ${name}`]);
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(clone, "node_modules"));
  execFileSync("npm", ["run", "build"], { cwd: clone, stdio: "ignore" });
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith("PULUMI_") || k.startsWith("PG")) delete env[k];
  Object.assign(env, {
    HOME: home,
    PATH: `${bin}:${process.env.PATH}`,
    PULUMI_HOME: path.join(home, ".pulumi"),
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_IGNORE_AMBIENT_PLUGINS: "true",
    PULUMI_SKIP_CONFIRMATIONS: "true",
    KUBECONFIG: kubeconfig,
  });
  const op: Operator = { name, home, clone, env };
  // What the team lead hands each operator (docs/team-state.md): the passfile and the passphrase, 0600.
  const vars = teamVariables(op);
  const pgpass = vars.PGPASSFILE as string;
  const passphrase = vars.PULUMI_CONFIG_PASSPHRASE_FILE as string;
  fs.mkdirSync(path.dirname(pgpass), { recursive: true });
  fs.writeFileSync(pgpass, `127.0.0.1:${pg.port}:${DB}:${ROLE}:${PASSWORD}\n`, { mode: 0o600 });
  fs.mkdirSync(path.dirname(passphrase), { recursive: true });
  fs.writeFileSync(passphrase, `${PASSPHRASE}\n`, { mode: 0o600 });
  Object.assign(op.env, vars);
  await installKubernetesPlugin(bin, { cwd: clone, env: op.env });
  return op;
}

type Services = Record<string, { uid: string; nodePort: number }>;

/** Our Services, live: name -> {uid, nodePort}. */
async function ourServices(): Promise<Services> {
  const list = await cluster.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });
  return Object.fromEntries(
    list.items
      .filter((s) => s.spec?.type === "NodePort")
      .map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, { uid: s.metadata?.uid as string, nodePort: s.spec?.ports?.[0]?.nodePort as number }]),
  );
}

const expectedServices = () => uis.map((u) => `${u.namespace}/${u.entry}-nodeport`).sort();

/** The state rows, as a digest: "changes nothing" is checked on it. */
const stateDigest = () => pg.sql("select coalesce(md5(string_agg(key || data::text, ',' order by key)), '') from pulumi_state", DB);
const lockCount = () => Number(pg.sql(`select count(*) from pulumi_state where key like '${DB}/.pulumi/locks/%'`, DB));
const pendingOperations = () =>
  Number(
    pg
      .trySql(
        `select coalesce(json_array_length(convert_from(decode(data->>'data', 'base64'), 'UTF8')::json->'checkpoint'->'latest'->'pending_operations'), 0) from pulumi_state where key = '${CHECKPOINT_KEY}'`,
        DB,
      )
      .stdout.trim() || "0",
  );

async function waitFor<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 120_000, everyMs = 200): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// The Service whose create the killed-up cases interrupt.
const MLFLOW = { key: "mlflow/mlflow-nodeport", namespace: "mlflow", name: "mlflow-nodeport", resource: "mlflow-svc" };
/** Where a killed up stops in mlflow-svc's create (see holdAt). */
type KillPoint = "pending" | "live" | "recorded";

/**
 * Makes the database hold the CLI's write of the state at one point of mlflow-svc's create: a
 * BEFORE INSERT trigger (the backend upserts every row with INSERT ... ON CONFLICT) sleeps in the
 * writing backend, uncommitted, so the kill lands exactly there. The engine persists each step's
 * state before going on (the pending create before it calls the provider, the finished create
 * before the next step); before each checkpoint the CLI copies the previous one to `<key>.bak`,
 * and with PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS it writes, after each committed checkpoint, the
 * same bytes again under `<key>.<nanoseconds>`:
 * - pending: the copy of the first checkpoint listing the pending create is held: that checkpoint
 *   is committed and the provider was not called;
 * - live: the checkpoint that moves mlflow-svc from the pending creates (the `.bak`, the previous
 *   one) to the resources is held: the Service exists (its create returned), the state still has
 *   the pending create;
 * - recorded: the copy of that checkpoint is held: the create is committed, the up is not over.
 * (Before the create, the up's refresh writes checkpoints still holding the deleted mlflow-svc as
 * a resource: the `.bak` condition tells them apart.)
 */
function holdAt(point: KillPoint) {
  const retainedCopy = `starts_with(NEW.key, '${CHECKPOINT_KEY}.') AND substr(NEW.key, ${CHECKPOINT_KEY.length + 2}) ~ '^[0-9]+$'`;
  const created = `mlflow_listed(NEW.data, 'resources') AND mlflow_listed((SELECT data FROM pulumi_state WHERE key = '${CHECKPOINT_KEY}.bak'), 'pending_operations')`;
  const hold = {
    pending: `${retainedCopy} AND mlflow_listed(NEW.data, 'pending_operations')`,
    live: `NEW.key = '${CHECKPOINT_KEY}' AND ${created}`,
    recorded: `${retainedCopy} AND ${created}`,
  }[point];
  pg.sql(
    `CREATE FUNCTION mlflow_listed(row_data json, list text) RETURNS boolean LANGUAGE sql AS $$
  SELECT coalesce(json_typeof(items) = 'array' AND EXISTS (SELECT 1 FROM json_array_elements(items) e
    WHERE CASE list WHEN 'resources' THEN e->>'urn' ELSE CASE e->>'type' WHEN 'creating' THEN e->'resource'->>'urn' END END
      LIKE '%$kubernetes:core/v1:Service::${MLFLOW.resource}'), false)
  FROM (SELECT convert_from(decode(row_data->>'data', 'base64'), 'UTF8')::json->'checkpoint'->'latest'->list AS items) c
$$;
CREATE FUNCTION hold_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF ${hold} THEN
    PERFORM pg_sleep(600);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER hold_checkpoint BEFORE INSERT ON pulumi_state FOR EACH ROW EXECUTE FUNCTION hold_checkpoint();`,
    DB,
  );
}

/**
 * Deletes mlflow's Service and runs A's up, in its own process group (the CLI, its language host
 * and providers die together, as on a crash), held at `point` (holdAt); once the held write
 * sleeps, SIGKILLs the group, ends the held transaction (rolled back) and removes the trigger and
 * the retained copies. Returns our Services as the API server held them at the kill.
 */
async function killUpAt(point: KillPoint): Promise<Services> {
  await cluster.core.deleteNamespacedService({ namespace: MLFLOW.namespace, name: MLFLOW.name });
  holdAt(point);
  const upLog = path.join(work, `killed-up-${point}.log`);
  const up = spawn(path.join(bin, "pulumi"), ["up", "--yes", "--non-interactive", "--stack", STACK], {
    cwd: a.clone,
    env: { ...a.env, PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS: "true" },
    detached: true,
    stdio: ["ignore", fs.openSync(upLog, "w"), fs.openSync(upLog, "a")],
  });
  let exit: number | null | undefined;
  const exited = new Promise((r) =>
    up.once("exit", (code) => {
      exit = code;
      r(undefined);
    }),
  );
  try {
    const sleeper = await waitFor(
      `the up's write held at "${point}"`,
      () => {
        if (exit !== undefined)
          throw new Error(`the up ended (exit ${exit}) before its write was held at "${point}":\n${fs.readFileSync(upLog, "utf8").slice(-4000)}`);
        const pid = pg.sql(`select pid from pg_stat_activity where datname = '${DB}' and wait_event = 'PgSleep'`);
        return pid ? pid : undefined;
      },
      300_000,
      50,
    );
    const live = await ourServices();
    process.kill(-(up.pid as number), "SIGKILL");
    await exited;
    pg.sql(`select pg_terminate_backend(${sleeper})`);
    return live;
  } finally {
    if (exit === undefined) {
      try {
        process.kill(-(up.pid as number), "SIGKILL");
      } catch {}
    }
    pg.sql(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${DB}' and wait_event = 'PgSleep'`);
    pg.sql("DROP TRIGGER hold_checkpoint ON pulumi_state; DROP FUNCTION hold_checkpoint(); DROP FUNCTION mlflow_listed(json, text)", DB);
    pg.sql(`DELETE FROM pulumi_state WHERE starts_with(key, '${CHECKPOINT_KEY}.') AND substr(key, ${CHECKPOINT_KEY.length + 2}) ~ '^[0-9]+$'`, DB);
  }
}

/**
 * docs/team-state.md: `pulumi refresh --import-pending-creates URN ID` does not adopt a pending
 * create whose object is live (the pinned CLI makes it a pending import, which the refresh drops
 * without reading it). Run on the killed state (point "live"), which is then put back as it was.
 */
async function expectImportPendingCreatesDrops() {
  pg.sql("CREATE TABLE killed_state AS TABLE pulumi_state", DB);
  try {
    const urn = `urn:pulumi:${STACK}::ui-exposure::ui-exposure:exposure:NodePortExposure$kubernetes:core/v1:Service::${MLFLOW.resource}`;
    const cancel = await pulumi(b, ["cancel", "--stack", STACK, "--yes"]);
    expect(cancel.code, summary(cancel)).toBe(0);
    // One value per flag: `--import-pending-creates URN ID` stops with "accepts 0 arg(s), received 1".
    const refresh = await pulumi(b, ["refresh", "--stack", STACK, "--yes", "--import-pending-creates", urn, "--import-pending-creates", MLFLOW.key]);
    expect(refresh.code, summary(refresh)).toBe(0);
    const state = JSON.parse((await pulumi(b, ["stack", "export", "--stack", STACK])).stdout) as {
      deployment: { resources: { urn: string }[]; pending_operations?: unknown[] };
    };
    expect(state.deployment.resources.map((res) => res.urn)).not.toContain(urn);
    expect(state.deployment.pending_operations ?? []).toEqual([]);
  } finally {
    pg.sql("BEGIN; DELETE FROM pulumi_state; INSERT INTO pulumi_state TABLE killed_state; DROP TABLE killed_state; COMMIT", DB);
  }
}

/** The stack converged: no lock, nothing pending, every Service once with its nodePort, state uids = live uids, previews clean. */
async function expectConverged(before: Services) {
  expect(lockCount()).toBe(0);
  expect(pendingOperations()).toBe(0);
  const after = await ourServices();
  expect(Object.keys(after).sort()).toEqual(expectedServices());
  for (const [key, svc] of Object.entries(before)) expect(after[key]?.nodePort, key).toBe(svc.nodePort);
  // No orphan: every live Service of ours is in the state, once, with its uid.
  const state = JSON.parse((await pulumi(b, ["stack", "export", "--stack", STACK])).stdout) as {
    deployment: { resources: { type: string; urn: string; outputs?: { metadata?: { namespace?: string; name?: string; uid?: string } } }[] };
  };
  const inState = state.deployment.resources
    .filter((res) => res.type === "kubernetes:core/v1:Service" && res.urn.endsWith("-svc") && res.outputs?.metadata?.name?.endsWith("-nodeport"))
    .map((res) => [`${res.outputs?.metadata?.namespace}/${res.outputs?.metadata?.name}`, res.outputs?.metadata?.uid]);
  expect(inState.map(([k]) => k).sort()).toEqual(expectedServices());
  expect(Object.fromEntries(inState)).toEqual(Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v.uid])));
  for (const op of [a, b]) {
    const clean = await pulumi(op, ["preview", "--expect-no-changes", "--stack", STACK]);
    expect(clean.code, summary(clean)).toBe(0);
  }
}

/** Lines a password could leak through. */
function expectNoPassword(...texts: string[]) {
  for (const t of texts) expect(t).not.toContain(PASSWORD);
}

/** The DBA's one-time set-up (docs/team-state.md), as printed, run by psql as the server's admin. */
function createDatabase() {
  const file = path.join(pg.dir, "team-db.sql");
  fs.writeFileSync(file, runbookBlock(teamDoc(), "team-db", "sql"));
  pg.sqlFile(file, { UI_EXPOSURE_DB_PASSWORD: PASSWORD });
}

describe.sequential("e2e: a team shares the dirqual state in PostgreSQL", () => {
  beforeAll(async () => {
    bin = toolchainBin();
    ({ cluster, uis } = await startExampleCluster(bin, NODE));
    pg = await startPostgres();
    createDatabase();
    backendUrl = `postgres://${ROLE}@127.0.0.1:${pg.port}/${DB}?sslmode=disable&connect_timeout=10`;

    work = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-team-"));
    // The operators' kubeconfig: the shipped stack's context, on the loopback control plane.
    const kubeconfig = path.join(work, "kubeconfig");
    writeOperatorKubeconfig(cluster, kubeconfig, ["dirqual"], "dirqual");

    // The team's repository: what is committed here, with the one substitution (see the top).
    origin = path.join(work, "origin.git");
    execFileSync("git", ["clone", "-q", "--bare", projectDir, origin]);
    const edit = path.join(work, "edit");
    execFileSync("git", ["clone", "-q", origin, edit]);
    const stackFile = fs.readFileSync(path.join(edit, "Pulumi.dirqual.yaml"), "utf8");
    expect(stackFile.split(PINNED_LINE)).toHaveLength(2);
    fs.writeFileSync(path.join(edit, "Pulumi.dirqual.yaml"), stackFile.replace(PINNED_LINE, ""));
    execFileSync("git", ["-C", edit, "-c", "user.email=e2e@e2e.invalid", "-c", "user.name=e2e", "commit", "-qam", "e2e: URLs on the loopback node"]);
    execFileSync("git", ["-C", edit, "push", "-q", "origin", "HEAD"]);
    a = await makeOperator("a", kubeconfig);
  }, 900_000);

  afterAll(async () => {
    cluster?.stop();
    await pg?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  }, 120_000);

  it("migration: the stack A ran on the default file backend moves to the database; nothing is recreated", async () => {
    // Before the team shares it: A's clone, the default backend (Pulumi.yaml: file://./.pulumi-state).
    const fileEnv = { ...a.env };
    delete fileEnv.PULUMI_BACKEND_URL;
    for (const args of [
      ["stack", "select", "--create", STACK],
      ["up", "--yes", "--stack", STACK],
    ]) {
      const r = await pulumi(a, args, fileEnv);
      expect(r.code, summary(r)).toBe(0);
    }
    expect(fs.existsSync(path.join(a.clone, ".pulumi-state/.pulumi/stacks/ui-exposure/dirqual.json"))).toBe(true);
    const before = await ourServices();
    expect(Object.keys(before).sort()).toEqual(expectedServices());
    // The passphrase salt `stack select --create` wrote is the team's: commit it.
    execFileSync("git", ["-C", a.clone, "commit", "-qam", "dirqual: passphrase salt"]);
    execFileSync("git", ["-C", a.clone, "push", "-q", "origin", "HEAD"]);

    const r = await runbook(a, teamBlock("team-migrate", teamDoc()));
    expect(r.code, summary(r)).toBe(0);
    expectNoPassword(r.stdout, r.stderr);
    // Same Services: same uid, same nodePort. The file backend no longer has the stack.
    expect(await ourServices()).toEqual(before);
    expect(fs.existsSync(path.join(a.clone, ".pulumi-state/.pulumi/stacks/ui-exposure/dirqual.json"))).toBe(false);
    const ls = await pulumi(a, ["stack", "ls", "--json"]);
    expect((JSON.parse(ls.stdout) as { name: string; resourceCount?: number }[]).find((s) => s.name === STACK)?.resourceCount).toBeGreaterThan(8);
    const up = await pulumi(a, ["up", "--yes", "--stack", STACK]);
    expect(up.code, summary(up)).toBe(0);
    expect(await ourServices()).toEqual(before);
  });

  it("a second operator's clone: the README's team runbook as printed; status, drift, access and the portal read the same URLs", async () => {
    b = await makeOperator("b", a.env.KUBECONFIG as string);
    const r = await runbook(b, teamBlock("team"));
    expect(r.code, summary(r)).toBe(0);
    const published = JSON.parse((await pulumi(a, ["stack", "output", "urls", "--json", "--stack", STACK])).stdout) as Record<string, string>;
    expect(Object.keys(published).sort()).toEqual(uis.map((u) => u.entry).sort());
    for (const url of Object.values(published)) expect(url).toMatch(/^https?:\/\/127\.0\.0\.11:3\d{4}$/);

    const status = await exposure(b, ["status", "--stack", STACK, "--json"]);
    expect(status.code, summary(status)).toBe(0);
    const statusDoc = JSON.parse(status.stdout) as {
      publishedOutputs: { from: string };
      entries: { name: string; exposed: boolean; verdict: string; url?: string }[];
    };
    // B's status read what A's up published, from the database.
    expect(statusDoc.publishedOutputs).toEqual({ from: "pulumi" });
    const exposed = statusDoc.entries.filter((e) => e.exposed);
    expect(Object.fromEntries(exposed.map((e) => [e.name, e.url]))).toEqual(published);
    expect(exposed.map((e) => e.verdict)).toEqual(exposed.map(() => "MATCH"));

    const drift = await exposure(b, ["drift", "--stack", STACK]);
    expect(drift.code, summary(drift)).toBe(0);

    const access = await exposure(b, ["access", "--stack", STACK, "--no-dotenv", "--json"]);
    // 5: the contract's credential Secrets are not installed in this cluster (said per credential).
    expect(access.code, summary(access)).toBe(5);
    const accessDoc = JSON.parse(access.stdout) as { endpoints: { name: string; exposed: boolean; reach: string; url?: string }[] };
    expect(Object.fromEntries(accessDoc.endpoints.filter((e) => e.exposed).map((e) => [e.name, e.url]))).toEqual(published);
    expectNoPassword(status.stdout, status.stderr, drift.stdout, drift.stderr, access.stdout, access.stderr);

    const port = await freeLoopbackPort();
    const portal: ChildProcess = spawn(
      process.execPath,
      [path.join(b.clone, "bin/exposure.cjs"), "portal", "--stack", STACK, "--listen", `127.0.0.1:${port}`],
      {
        cwd: b.clone,
        env: b.env,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let portalLog = "";
    portal.stdout?.on("data", (d: Buffer) => {
      portalLog += d.toString();
    });
    portal.stderr?.on("data", (d: Buffer) => {
      portalLog += d.toString();
    });
    try {
      const view = await waitFor("the portal to answer", async () => {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/entries`);
          return res.ok ? ((await res.json()) as { entries: { name: string; url?: string }[] }) : undefined;
        } catch {
          return undefined;
        }
      });
      expect(Object.fromEntries(view.entries.filter((e) => e.url).map((e) => [e.name, e.url]))).toEqual(published);
      expectNoPassword(portalLog, JSON.stringify(view), await (await fetch(`http://127.0.0.1:${port}/`)).text());
    } finally {
      portal.kill("SIGTERM");
    }
  });

  it("the nodePort holding (the stack's reference to itself) reads the last up from the database: B puts back a port moved by hand", async () => {
    const before = await ourServices();
    const argocd = await cluster.core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" });
    const old = argocd.spec?.ports?.[0]?.nodePort as number;
    const moved = old === 32111 ? 32112 : 32111;
    const port = argocd.spec?.ports?.[0];
    if (port) port.nodePort = moved;
    await cluster.core.replaceNamespacedService({ namespace: "argocd", name: "argocd-nodeport", body: argocd });
    const preview = await pulumi(b, ["preview", "--expect-no-changes", "--stack", STACK]);
    expect(preview.code, summary(preview)).not.toBe(0);
    const up = await pulumi(b, ["up", "--yes", "--stack", STACK]);
    expect(up.code, summary(up)).toBe(0);
    expect(await ourServices()).toEqual(before);
    const clean = await pulumi(a, ["preview", "--expect-no-changes", "--stack", STACK]);
    expect(clean.code, summary(clean)).toBe(0);
  });

  it("secrets: a setting A encrypts with the team's passphrase is read in B's clone; a wrong passphrase is one line", async () => {
    const set = await pulumi(a, ["config", "set", "--secret", "--stack", STACK, "ops:pagerToken", "pager-e2e-token"]);
    expect(set.code, summary(set)).toBe(0);
    expect(fs.readFileSync(path.join(a.clone, "Pulumi.dirqual.yaml"), "utf8")).not.toContain("pager-e2e-token");
    execFileSync("git", ["-C", a.clone, "commit", "-qam", "dirqual: pager token (encrypted)"]);
    execFileSync("git", ["-C", a.clone, "push", "-q", "origin", "HEAD"]);
    execFileSync("git", ["-C", b.clone, "pull", "-q", "--ff-only"]);
    const get = await pulumi(b, ["config", "get", "--stack", STACK, "ops:pagerToken"]);
    expect(get.code, summary(get)).toBe(0);
    expect(get.stdout.trim()).toBe("pager-e2e-token");
    const wrongFile = path.join(b.home, "wrong-passphrase");
    fs.writeFileSync(wrongFile, "not the team's\n", { mode: 0o600 });
    const wrong = await pulumi(b, ["preview", "--stack", STACK], { ...b.env, PULUMI_CONFIG_PASSPHRASE_FILE: wrongFile });
    expect(wrong.code).not.toBe(0);
    expect(
      wrong.stderr
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("error:")),
    ).toEqual(["error: getting stack configuration: get stack secrets manager: incorrect passphrase"]);
    const preview = await pulumi(b, ["preview", "--expect-no-changes", "--stack", STACK]);
    expect(preview.code, summary(preview)).toBe(0);
  });

  it("A and B run up at once: one proceeds, the other is told who holds the lock since when; nothing is lost", async () => {
    const before = await ourServices();
    await cluster.core.deleteNamespacedService({ namespace: "gitea", name: "gitea-nodeport" });
    const digest = stateDigest();
    const upA = pulumi(a, ["up", "--yes", "--stack", STACK]);
    await waitFor("A's lock", () => (lockCount() > 0 ? true : undefined), 120_000, 50);
    const upB = await pulumi(b, ["up", "--yes", "--stack", STACK]);
    const resultA = await upA;
    expect(resultA.code, summary(resultA)).toBe(0);
    expect(upB.code).not.toBe(0);
    const errors = upB.stderr.trim().split("\n");
    expect(errors[0]).toMatch(
      /^error: the stack is currently locked by 1 lock\(s\)\. Either wait for the other process\(es\) to end or delete the lock file with `pulumi cancel`\.$/,
    );
    expect(errors[1]).toMatch(
      new RegExp(
        `^ {2}postgres://\\*\\*\\*\\*:\\*\\*\\*\\*@127\\.0\\.0\\.1:${pg.port}/${DB}/\\.pulumi/locks/organization/ui-exposure/dirqual/[0-9a-f-]{36}\\.json\\?sslmode=disable&connect_timeout=10: created by \\S+@\\S+ \\(pid \\d+\\) at \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(Z|[+-]\\d\\d:\\d\\d)$`,
      ),
    );
    expect(errors).toHaveLength(2);
    expect(upB.stdout).not.toMatch(/Updating|created|updated/);
    expect(digest).not.toBe(stateDigest()); // A's update landed
    expect(lockCount()).toBe(0);
    const after = await ourServices();
    expect(Object.keys(after).sort()).toEqual(expectedServices());
    expect(after["gitea/gitea-nodeport"]?.nodePort).toBe(before["gitea/gitea-nodeport"]?.nodePort);
    for (const op of [a, b]) {
      const clean = await pulumi(op, ["preview", "--expect-no-changes", "--stack", STACK]);
      expect(clean.code, summary(clean)).toBe(0);
    }
  });

  it("A and B start up in the same instant: at most one proceeds, a refused one changed nothing, the next preview is clean", async () => {
    const before = await ourServices();
    await cluster.core.deleteNamespacedService({ namespace: "marquez", name: "marquez-web-nodeport" });
    const [ra, rb] = await Promise.all([pulumi(a, ["up", "--yes", "--stack", STACK]), pulumi(b, ["up", "--yes", "--stack", STACK])]);
    const refused = [ra, rb].filter((r) => r.code !== 0);
    // The lock is written, then checked: two CLIs within the same milliseconds may both see the
    // other's lock and both stop (docs/team-state.md). Either way a refusal is the lock's.
    for (const r of refused) expect(r.stderr, summary(r)).toMatch(/^error: the stack is currently locked by \d lock\(s\)/);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    console.info(`team e2e: simultaneous ups: ${2 - refused.length} proceeded, ${refused.length} refused by the lock`);
    if (refused.length === 2) {
      const again = await pulumi(a, ["up", "--yes", "--stack", STACK]);
      expect(again.code, summary(again)).toBe(0);
    }
    expect(lockCount()).toBe(0);
    expect((await ourServices())["marquez/marquez-web-nodeport"]?.nodePort).toBe(before["marquez/marquez-web-nodeport"]?.nodePort);
    const clean = await pulumi(b, ["preview", "--expect-no-changes", "--stack", STACK]);
    expect(clean.code, summary(clean)).toBe(0);
  });

  // An up killed at each point of one Service create (mlflow/mlflow-nodeport, resource mlflow-svc),
  // each point made exact by holding the CLI's write of the state in the database (see holdAt);
  // then docs/team-state.md's recovery runbook as printed, and the one outcome of that point.
  const KILL_POINTS: { point: KillPoint; title: string }[] = [
    { point: "pending", title: "the state records the pending create, the API server has not received it" },
    { point: "live", title: "the API server created the Service, the state has not recorded it (pending create, object live)" },
    { point: "recorded", title: "the state recorded the create, the up has not finished" },
  ];
  for (const { point, title } of KILL_POINTS) {
    it(`an up killed (SIGKILL) when ${title}: the recovery runbook as printed converges with no duplicate or orphan, taking over nothing`, async () => {
      const before = await ourServices();
      const killedAt = await killUpAt(point);
      const held = killedAt[MLFLOW.key];
      // What the API server holds at the kill is the point's, not the timing's.
      if (point === "pending") expect(held).toBeUndefined();
      // (Its nodePort is the API server's pick until the entry's ServicePatch puts the held one back.)
      else expect(held).toBeDefined();
      // Its language host exits with its engine, within seconds; its provider outlives the kill
      // (reparented to init): found as docs/team-state.md says, and stopped.
      await waitFor(
        "the killed up's language host to exit",
        async () => (strayPlugins(a.clone).some((p) => p.name.startsWith("pulumi-languag")) ? undefined : true),
        5000,
      );
      const strays = reapStrayPlugins(a.clone);
      console.info(`team e2e: up killed at "${point}": its ${strays.length} provider process(es) stopped`);
      expect(lockCount()).toBe(1);
      // The next operator is refused by the dead run's lock.
      const refused = await pulumi(b, ["up", "--yes", "--stack", STACK]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/the stack is currently locked by 1 lock\(s\)/);
      if (point === "live") await expectImportPendingCreatesDrops();

      const r = await runbook(b, teamBlock("team-recover", teamDoc()));
      // The export the runbook took lists the killed run's unfinished create (pending and live), or nothing (recorded).
      const exported = JSON.parse(fs.readFileSync(path.join(b.clone, "dirqual-interrupted.json"), "utf8")) as {
        deployment: { pending_operations?: { type: string; resource: { urn: string } }[] };
      };
      const pending = (exported.deployment.pending_operations ?? []).map((o) => `${o.type} ${o.resource.urn.split("::").pop()}`);
      expect(pending).toEqual(point === "recorded" ? [] : ["creating mlflow-svc"]);
      if (point === "pending") {
        expect(r.code, summary(r)).toBe(0);
      } else {
        // The killed run created the Service, but nothing a refresh cannot rewrite says so (the outputs
        // name the one deleted before): the runbook's up refuses it, touching nothing, and prints the
        // command that removes it; the next up creates it again on the port the last finished up published.
        expect(r.code, summary(r)).not.toBe(0);
        const remedy = `kubectl -n ${MLFLOW.namespace} delete service ${MLFLOW.name}`;
        expect(`${r.stdout}${r.stderr}`, summary(r)).toContain(
          `entry 'mlflow': Service ${MLFLOW.key} is not the Service the last up published (its uid ${held?.uid};`,
        );
        expect(`${r.stdout}${r.stderr}`).toContain(`remove it (${remedy}), then pulumi up`);
        expect((await ourServices())[MLFLOW.key]?.uid).toBe(held?.uid);
        await cluster.core.deleteNamespacedService({ namespace: MLFLOW.namespace, name: MLFLOW.name });
        const again = await pulumi(b, ["up", "--yes", "--stack", STACK]);
        expect(again.code, summary(again)).toBe(0);
      }
      await expectConverged(before);
    });
  }

  it("backup and restore: export, the database dropped and created again, import; the preview is clean", async () => {
    const before = await ourServices();
    const backup = await runbook(a, teamBlock("team-backup", teamDoc()));
    expect(backup.code, summary(backup)).toBe(0);
    pg.sql(`drop database ${DB} with (force)`);
    pg.sql(`drop role ${ROLE}`);
    const gone = await pulumi(a, ["preview", "--stack", STACK]);
    expect(gone.code).not.toBe(0);
    createDatabase();
    const restore = await runbook(a, teamBlock("team-restore", teamDoc()));
    expect(restore.code, summary(restore)).toBe(0);
    expect(await ourServices()).toEqual(before);
    const clean = await pulumi(b, ["preview", "--expect-no-changes", "--stack", STACK]);
    expect(clean.code, summary(clean)).toBe(0);
  });

  it("bad input: wrong password, database down, wrong table, missing privileges: one clear line each, nothing changed, the password nowhere", async () => {
    const digest = stateDigest();
    const tables = () => pg.sql("select string_agg(tablename, ',' order by tablename) from pg_tables where schemaname = 'public'", DB);
    const tablesBefore = tables();
    const services = await ourServices();
    const check = async (label: string, env: NodeJS.ProcessEnv, line: RegExp) => {
      const preview = await pulumi(b, ["preview", "--stack", STACK], env);
      expect(preview.code, `${label}: ${summary(preview)}`).not.toBe(0);
      const errors = preview.stderr.split("\n").filter((l) => l.trim());
      expect(errors, label).toHaveLength(1);
      expect(errors[0], label).toMatch(line);
      const status = await exposure(b, ["status", "--stack", STACK, "--json"], env);
      expectNoPassword(preview.stdout, preview.stderr, status.stdout, status.stderr);
      return { preview, status };
    };
    const wrongPass = path.join(b.home, "wrong-pgpass");
    fs.writeFileSync(wrongPass, `127.0.0.1:${pg.port}:${DB}:${ROLE}:not-the-password\n`, { mode: 0o600 });
    await check(
      "wrong password",
      { ...b.env, PGPASSFILE: wrongPass },
      /^error: unable to open bucket postgres:\/\/ui_exposure@.*: failed to ping PostgreSQL: pq: password authentication failed for user "ui_exposure" \(28P01\)$/,
    );
    // The password in the URL (what the runbook says never to do): the CLI prints it; exposure does not.
    const inUrl = await exposure(b, ["status", "--stack", STACK], { ...b.env, PULUMI_BACKEND_URL: backendUrl.replace(`${ROLE}@`, `${ROLE}:${PASSWORD}x@`) });
    expectNoPassword(inUrl.stdout, inUrl.stderr);
    expect(`${inUrl.stdout}${inUrl.stderr}`).toContain(`postgres://${ROLE}:****@127.0.0.1:${pg.port}/`);
    await check(
      "wrong table",
      { ...b.env, PULUMI_BACKEND_URL: `${backendUrl}&table=pulumi_stat` },
      /^error: unable to open bucket .*: failed to create table pulumi_stat: pq: database ui_exposure_state holds the table pulumi_state only, not public\.pulumi_stat: check table= in PULUMI_BACKEND_URL \(P0001\)$/,
    );
    pg.sql("create role ui_exposure_reader login password 'reader-pw'");
    pg.sql("grant select on pulumi_state to ui_exposure_reader", DB);
    const readerPass = path.join(b.home, "reader-pgpass");
    fs.writeFileSync(readerPass, `127.0.0.1:${pg.port}:${DB}:ui_exposure_reader:reader-pw\n`, { mode: 0o600 });
    const reader = { ...b.env, PGPASSFILE: readerPass, PULUMI_BACKEND_URL: backendUrl.replace(`${ROLE}@`, "ui_exposure_reader@") };
    await check(
      "no CREATE on the schema",
      reader,
      /^error: unable to open bucket .*: failed to create table pulumi_state: pq: permission denied for schema public at position \d+:\d+ \(42501\)$/,
    );
    pg.sql("grant create on schema public to ui_exposure_reader", DB);
    await check(
      "not the table's owner",
      reader,
      /^error: unable to open bucket .*: failed to create table pulumi_state: pq: must be owner of table pulumi_state \(42501\)$/,
    );
    await pg.halt();
    try {
      await check(
        "database down",
        b.env,
        /^error: unable to open bucket .*: failed to ping PostgreSQL: dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/,
      );
    } finally {
      await pg.start();
    }
    expect(stateDigest()).toBe(digest);
    expect(tables()).toBe(tablesBefore);
    expect(await ourServices()).toEqual(services);
  });
});
