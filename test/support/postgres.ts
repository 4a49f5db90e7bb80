// A throw-away PostgreSQL server for the team-state e2e: Debian's packaged binaries, a data
// folder under the temporary directory, TCP on 127.0.0.1 only, the unix socket inside that
// folder. The server refuses to run as root, so under root it runs as an unprivileged system
// user (Debian's `postgres`, else one created for it). `stop()` removes everything, and a
// process exit handler stops the server if a test dies before its afterAll.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freeLoopbackPort } from "../../src/adapters/free-port";

export interface Postgres {
  dir: string;
  port: number;
  /** The superuser the harness administers the server with (trust over the private socket only). */
  admin: string;
  /** Runs SQL as the superuser over the private socket; throws with psql's error on failure. */
  sql(statement: string, database?: string): string;
  /** Same, returning the exit code and stderr instead of throwing. */
  trySql(statement: string, database?: string): { code: number | null; stdout: string; stderr: string };
  /** Runs a psql script (`psql -f`) as the superuser, with extra environment; throws on failure. */
  sqlFile(file: string, env?: NodeJS.ProcessEnv): string;
  /** Stops the server (fast shutdown) and keeps the data: `start()` brings it back on the same port. */
  halt(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const SYSTEM_USER = "ui-exposure-pg";

/** The newest PostgreSQL installed from Debian's packages (`apt-get install postgresql`). */
export function postgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!fs.existsSync(root)) return undefined;
  const versions = fs
    .readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && fs.existsSync(path.join(root, v, "bin/postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], "bin") : undefined;
}

/** uid/gid to run the server as: ours unless we are root (the server refuses root). */
function serverUser(): { uid: number; gid: number } {
  if (process.getuid?.() !== 0) return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
  for (const name of ["postgres", SYSTEM_USER]) {
    const r = spawnSync("id", ["-u", name], { encoding: "utf8" });
    if (r.status === 0) {
      const gid = spawnSync("id", ["-g", name], { encoding: "utf8" }).stdout.trim();
      return { uid: Number(r.stdout.trim()), gid: Number(gid) };
    }
  }
  const add = spawnSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER], { encoding: "utf8" });
  if (add.status !== 0) throw new Error(`useradd ${SYSTEM_USER} failed: ${add.stderr}`);
  return serverUser();
}

const live = new Set<ChildProcess>();
const folders = new Set<string>();
// A test that dies before its afterAll still leaves no server and no folder behind.
process.once("exit", () => {
  for (const p of live) p.kill("SIGQUIT");
  for (const d of folders) fs.rmSync(d, { recursive: true, force: true });
});

export async function startPostgres(): Promise<Postgres> {
  const bin = postgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)");
  const user = serverUser();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-pg-"));
  folders.add(dir);
  const data = path.join(dir, "data");
  const sock = path.join(dir, "sock");
  fs.mkdirSync(sock);
  fs.chmodSync(dir, 0o700);
  for (const p of [dir, sock]) fs.chownSync(p, user.uid, user.gid);
  const admin = "harness";
  const asServer = { uid: user.uid, gid: user.gid, cwd: dir, env: { PATH: process.env.PATH ?? "", LC_ALL: "C.UTF-8" } };
  // TCP clients need a password (scram); only the private socket trusts the harness.
  const init = spawnSync(path.join(bin, "initdb"), ["-D", data, "-U", admin, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8"], {
    ...asServer,
    encoding: "utf8",
  });
  if (init.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.stderr}`);
  }
  const port = await freeLoopbackPort();
  let server: ChildProcess | undefined;

  const psql = (statement: string, database = "postgres", how: "-c" | "-f" = "-c", env: NodeJS.ProcessEnv = process.env) =>
    spawnSync(path.join(bin, "psql"), ["-h", sock, "-p", String(port), "-U", admin, "-d", database, "-v", "ON_ERROR_STOP=1", "-Atq", how, statement], {
      encoding: "utf8",
      timeout: 30_000,
      env,
    });

  const start = async () => {
    const log = fs.openSync(path.join(dir, "server.log"), "a");
    server = spawn(
      path.join(bin, "postgres"),
      ["-D", data, "-c", "listen_addresses=127.0.0.1", "-c", `port=${port}`, "-c", `unix_socket_directories=${sock}`, "-c", "fsync=off"],
      { ...asServer, stdio: ["ignore", log, log] },
    );
    fs.closeSync(log);
    live.add(server);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (server.exitCode !== null) break;
      if (psql("select 1").status === 0) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`postgres did not start:\n${fs.readFileSync(path.join(dir, "server.log"), "utf8").slice(-2000)}`);
  };

  const halt = async () => {
    const p = server;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGINT"); // fast shutdown: active sessions are ended
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (p.exitCode === null) p.kill("SIGKILL");
    live.delete(p);
  };

  try {
    await start();
  } catch (err) {
    await halt();
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    dir,
    port,
    admin,
    sql(statement, database) {
      const r = psql(statement, database);
      if (r.status !== 0) throw new Error(`psql: ${r.stderr.trim()}`);
      return r.stdout.trim();
    },
    trySql(statement, database) {
      const r = psql(statement, database);
      return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
    },
    sqlFile(file, env) {
      const r = psql(file, "postgres", "-f", { ...process.env, ...env });
      if (r.status !== 0) throw new Error(`psql -f ${file}: ${r.stderr.trim()}`);
      return r.stdout.trim();
    },
    halt,
    start,
    async stop() {
      await halt();
      fs.rmSync(dir, { recursive: true, force: true });
      folders.delete(dir);
    },
  };
}
