import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { wrap } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import * as vm from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// bin/exposure.cjs runs the TypeScript sources when dist/ is missing or older than them (an
// operator who just edited a file). That path once crashed every command: the lazy import()
// of each command module was not hooked by tsx/cjs.
const projectDir = path.resolve(__dirname, "..");
let copy: string;

beforeAll(() => {
  copy = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bin-"));
  for (const d of ["bin", "cli", "src", "components", "contract"]) fs.cpSync(path.join(projectDir, d), path.join(copy, d), { recursive: true });
  for (const f of ["package.json", "tsconfig.json", "Pulumi.yaml", "Pulumi.bench.yaml"]) fs.copyFileSync(path.join(projectDir, f), path.join(copy, f));
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(copy, "node_modules"));
  // No dist/: the fallback is the only way to run.
});
afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

describe("bin/exposure.cjs without a build", () => {
  it("runs a command from the sources (its module loaded lazily), with the command's exit code", () => {
    const ok = spawnSync(process.execPath, [path.join(copy, "bin/exposure.cjs"), "check"], { cwd: copy, encoding: "utf8", timeout: 60_000 });
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("contract/endpoints.example.yaml: valid");

    const usage = spawnSync(process.execPath, [path.join(copy, "bin/exposure.cjs"), "check", "--nope"], { cwd: copy, encoding: "utf8", timeout: 60_000 });
    expect(usage.status).toBe(2);
    expect(usage.stderr).not.toContain("    at ");
  });

  // Found by an outside tester: a syntax error in an edited source printed tsx's "Transform
  // failed" with ten esbuild frames.
  it("a syntax error in an edited source is one line with file:line:col (exit 1), a source main loads or one a command loads", () => {
    for (const [file, args] of [
      ["src/core/plan.ts", ["status", "--stack", "sandbox"]],
      ["cli/context.ts", ["check"]],
    ] as const) {
      const target = path.join(copy, file);
      const text = fs.readFileSync(target, "utf8");
      fs.writeFileSync(target, `${text}const = ;\n`);
      const r = spawnSync(process.execPath, [path.join(copy, "bin/exposure.cjs"), ...args], { cwd: copy, encoding: "utf8", timeout: 60_000 });
      fs.writeFileSync(target, text);
      const line = text.split("\n").length;
      expect(r.status, file).toBe(1);
      expect(r.stderr.trim().split("\n"), file).toHaveLength(1);
      expect(r.stderr, file).toContain(`${file}:${line}:7: Expected identifier but found "="; fix the source`);
      expect(r.stderr, file).not.toContain("internal error");
    }
  });
});

// `npm ci` builds dist/ (scripts/build-cli.cjs): each operator command is one bundle run with
// V8's code cache, sharing with cli/main.js what main loads. A copy of UserError inside a
// bundle would turn every usage error into "internal error" (instanceof fails).
describe("bin/exposure.cjs with the build npm ci makes", () => {
  let built: string;
  beforeAll(() => {
    built = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-built-"));
    for (const d of ["bin", "cli", "src", "components", "contract", "scripts"]) fs.cpSync(path.join(projectDir, d), path.join(built, d), { recursive: true });
    for (const f of ["package.json", "tsconfig.json", "tsconfig.build.json", "index.ts", "Pulumi.yaml", "Pulumi.bench.yaml"])
      fs.copyFileSync(path.join(projectDir, f), path.join(built, f));
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(built, "node_modules"));
    const build = spawnSync(process.execPath, [path.join(built, "scripts/build-cli.cjs")], { cwd: built, encoding: "utf8", timeout: 180_000 });
    expect(build.stderr).toBe("");
    expect(build.status).toBe(0);
  }, 200_000);
  afterAll(() => fs.rmSync(built, { recursive: true, force: true }));

  const exposure = (...args: string[]) =>
    spawnSync(process.execPath, [path.join(built, "bin/exposure.cjs"), ...args], { cwd: built, encoding: "utf8", timeout: 60_000 });

  it("runs the bundled commands from dist/ with their code caches; usage errors stay usage errors", () => {
    for (const name of ["access", "check", "drift", "probe", "schema", "status"]) {
      expect(fs.existsSync(path.join(built, `dist/cli/commands/${name}.bundle.cjs`))).toBe(true);
      expect(fs.statSync(path.join(built, `dist/cli/commands/${name}.v8cache`)).size).toBeGreaterThan(0);
    }
    const ok = exposure("check");
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("contract/endpoints.example.yaml: valid");

    for (const args of [
      ["check", "--nope"],
      ["status", "--stack", "bench", "--entry", "grafna"],
      ["probe", "--json"],
    ]) {
      const r = exposure(...args);
      expect(r.status, args.join(" ")).toBe(2);
      expect(r.stderr).not.toContain("internal error");
      expect(r.stderr).not.toContain("    at ");
    }
    expect(JSON.parse(exposure("schema").stdout)).toHaveProperty("$schema");
  });

  it("a stale cache (another Node.js, a corrupt file) is ignored: the bundle is compiled as usual, and the cache made again", () => {
    const cacheFile = path.join(built, "dist/cli/commands/check.v8cache");
    fs.writeFileSync(cacheFile, "not a V8 code cache");
    const r = exposure("check");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    // Found by an outside tester: the corrupt cache stayed until the next build, its saving lost.
    const source = fs.readFileSync(path.join(built, "dist/cli/commands/check.bundle.cjs"), "utf8");
    const raw = fs.readFileSync(cacheFile);
    expect(raw.subarray(0, 32).equals(createHash("sha256").update(source).digest())).toBe(true);
    expect(new vm.Script(wrap(source), { filename: "check.bundle.cjs", cachedData: raw.subarray(32) }).cachedDataRejected).toBe(false);
    expect(fs.readdirSync(path.dirname(cacheFile)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    // A cache that cannot be written (a read-only install; here a folder in its place, which
    // even root cannot rename a file onto) costs the saving, never the command.
    fs.rmSync(cacheFile);
    fs.mkdirSync(cacheFile);
    try {
      const unwritable = exposure("check");
      expect(unwritable.stderr).toBe("");
      expect(unwritable.status).toBe(0);
      expect(fs.readdirSync(path.dirname(cacheFile)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    } finally {
      fs.rmSync(cacheFile, { recursive: true });
    }
    expect(exposure("check").status).toBe(0);
  });

  // Found by an outside tester: V8 accepts a code cache for any source of the same length, so a
  // same-length edit of a bundle ran the old code; a damaged bundle printed "internal error".
  it("a bundle edited after the build runs as edited, even at the same length", () => {
    const bundle = path.join(built, "dist/cli/commands/check.bundle.cjs");
    const text = fs.readFileSync(bundle, "utf8");
    const edited = text.replace(" NodePort, ", " NODEPORT, ");
    expect(edited.length).toBe(text.length);
    expect(edited).not.toBe(text);
    fs.writeFileSync(bundle, edited);
    const r = exposure("check");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(" NODEPORT, ");
    fs.writeFileSync(bundle, text);
  });

  it("a truncated or emptied bundle is one line asking for npm run build (exit 1), never an internal error", () => {
    const kubeconfig = path.join(built, "kubeconfig.yaml");
    fs.writeFileSync(
      kubeconfig,
      "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: lima-bench, context: {cluster: c, user: u}}]\ncurrent-context: lima-bench\n",
    );
    for (const [file, damage] of [
      ["dist/cli/commands/drift.bundle.cjs", (t: string) => t.slice(0, Math.floor(t.length / 2))],
      ["dist/cli/commands/drift.bundle.cjs", () => ""],
      ["dist/vendor/client-node.bundle.cjs", (t: string) => t.slice(0, Math.floor(t.length / 2))],
    ] as const) {
      const target = path.join(built, file);
      const text = fs.readFileSync(target, "utf8");
      fs.writeFileSync(target, damage(text));
      // drift --skip-preview loads its bundle, then client-node's to connect (to a closed loopback port).
      const r = spawnSync(process.execPath, [path.join(built, "bin/exposure.cjs"), "drift", "--stack", "bench", "--skip-preview"], {
        cwd: built,
        encoding: "utf8",
        timeout: 60_000,
        env: { ...process.env, KUBECONFIG: kubeconfig },
      });
      fs.writeFileSync(target, text);
      expect(r.status, file).toBe(1);
      expect(r.stderr.trim().split("\n"), file).toHaveLength(1);
      expect(r.stderr, file).toContain("dist/ is damaged");
      expect(r.stderr, file).toContain("npm run build");
      expect(r.stderr, file).not.toContain("internal error");
      expect(r.stderr, file).not.toContain("    at ");
    }
  });

  // Found by an outside tester: the files around the bundles (main.js, a command's loader, a
  // module tsc compiled, the code-cache loader) printed Node.js's stack trace when damaged.
  it("any damaged or missing module of dist/ is one line naming it, asking for npm run build (exit 1)", () => {
    const truncate = (t: string) => t.slice(0, 500);
    const cut = (t: string) => t.slice(0, 100);
    for (const [file, damage, args] of [
      ["dist/cli/main.js", truncate, ["check"]],
      ["dist/cli/main.js", (t: string) => t.slice(0, t.indexOf("function helpText")), ["check"]],
      ["dist/cli/context.js", (t: string) => t.slice(0, 300), ["check"]],
      ["dist/cli/commands/status.js", cut, ["status", "--stack", "bench"]],
      ["dist/cli/commands/render.js", undefined, ["render"]],
      ["dist/vendor/code-cache.cjs", undefined, ["status", "--stack", "bench"]],
    ] as const) {
      const target = path.join(built, file);
      const text = fs.readFileSync(target, "utf8");
      if (damage === undefined) fs.rmSync(target);
      else fs.writeFileSync(target, damage(text));
      // From another folder: the message names the file from the project folder all the same.
      const r = spawnSync(process.execPath, [path.join(built, "bin/exposure.cjs"), ...args], { cwd: os.tmpdir(), encoding: "utf8", timeout: 60_000 });
      fs.writeFileSync(target, text);
      const what = `${file} ${damage === undefined ? "deleted" : "damaged"}`;
      expect(r.status, what).toBe(1);
      expect(r.stderr.trim().split("\n"), what).toHaveLength(1);
      expect(r.stderr, what).toMatch(new RegExp(`^exposure( ${args[0]})?: ${file} cannot be loaded \\(.+\\): dist/ is damaged; run \`npm run build\`\n$`));
    }
    expect(exposure("check").status).toBe(0);
  });

  it("prepare (npm ci, and npx exposure preparing this folder again) leaves an intact dist/ built from these sources alone (found by an outside tester)", () => {
    const prepare = () =>
      spawnSync(process.execPath, [path.join(built, "scripts/build-cli.cjs"), "--if-stale"], { cwd: built, encoding: "utf8", timeout: 180_000 });
    const main = path.join(built, "dist/cli/main.js");
    const before = fs.statSync(main).mtimeMs;
    const kept = prepare();
    expect(kept.status).toBe(0);
    expect(kept.stdout).toContain("dist/ is up to date");
    expect(fs.statSync(main).mtimeMs).toBe(before);
    // A damaged copy is rebuilt.
    fs.writeFileSync(main, '"use strict";\n');
    const rebuilt = prepare();
    expect(rebuilt.status).toBe(0);
    expect(rebuilt.stdout).not.toContain("up to date");
    expect(exposure("check").status).toBe(0);
  });

  it("a compiled file cut short where it still parses (it loads without its exports) is named as damaged, not an internal error (found by an outside tester)", () => {
    for (const [file, args] of [
      ["dist/cli/context.js", ["check"]],
      ["dist/cli/flags.js", ["status", "--stack", "bench"]],
    ] as const) {
      const target = path.join(built, file);
      const text = fs.readFileSync(target, "utf8");
      fs.writeFileSync(target, '"use strict";\n');
      const r = spawnSync(process.execPath, [path.join(built, "bin/exposure.cjs"), ...args], { cwd: os.tmpdir(), encoding: "utf8", timeout: 60_000 });
      fs.writeFileSync(target, text);
      expect(r.status, file).toBe(1);
      expect(r.stderr.trim().split("\n"), file).toHaveLength(1);
      expect(r.stderr, file).toContain(file);
      expect(r.stderr, file).toContain("dist/ is damaged; run `npm run build`");
      expect(r.stderr, file).not.toContain("internal error");
    }
    expect(exposure("check").status).toBe(0);
  });
});
