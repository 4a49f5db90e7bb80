// scripts/build.cjs with its two users, bin/exposure.cjs and components/program-loader.cjs: what
// runs is dist/, built again first when it is missing or older than the sources.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

const projectDir = path.resolve(__dirname, "..");
const LOADER = "components/program-loader.cjs";
let copy: string;

beforeAll(() => {
  // A project without dist/, as a fresh clone before `npm ci` builds it.
  copy = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-build-"));
  for (const d of ["bin", "cli", "src", "components", "contract", "scripts"]) fs.cpSync(path.join(projectDir, d), path.join(copy, d), { recursive: true });
  for (const f of ["package.json", "tsconfig.json", "index.ts", "Pulumi.yaml", "Pulumi.bench.yaml"])
    fs.copyFileSync(path.join(projectDir, f), path.join(copy, f));
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(copy, "node_modules"));
});
afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

const exposure = (...args: string[]) =>
  spawnSync(process.execPath, [path.join(copy, "bin/exposure.cjs"), ...args], { cwd: copy, encoding: "utf8", timeout: 120_000 });

/** Runs `command` in the copy mounted read-only (as root, permissions would not stop a write: a read-only bind mount does). */
const inReadOnlyCopy = (command: string[], cwd = ".") =>
  spawnSync(
    "unshare",
    ["--mount", "sh", "-c", 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && cd "$0/$1" && shift && exec "$@"', copy, cwd, ...command],
    {
      encoding: "utf8",
      timeout: 120_000,
    },
  );

/** Edits `file` of the copy, runs `during`, puts the file back. */
function edited<T>(file: string, edit: (text: string) => string, during: () => T): T {
  const target = path.join(copy, file);
  const text = fs.readFileSync(target, "utf8");
  fs.writeFileSync(target, edit(text));
  try {
    return during();
  } finally {
    fs.writeFileSync(target, text);
  }
}

describe("bin/exposure.cjs", () => {
  it("without a build, builds dist/ and runs the command, with the command's exit code", () => {
    const ok = exposure("check");
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("contract/endpoints.example.yaml: valid");
    expect(fs.existsSync(path.join(copy, "dist/build-stamp.json"))).toBe(true);

    const usage = exposure("check", "--nope");
    expect(usage.status).toBe(2);
    expect(usage.stderr).not.toContain("    at ");
  }, 120_000);

  // Each bundle has its own UserError class: main knows one by its mark, or usage errors would be "internal errors".
  it("runs each operator command as one bundle; usage errors stay usage errors", () => {
    for (const name of ["access", "check", "drift", "probe", "schema", "status"]) {
      const bundle = fs.readFileSync(path.join(copy, `dist/cli/commands/${name}.js`), "utf8");
      expect(bundle, name).not.toMatch(/require\("(zod|yaml)[/"]/);
    }
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
  }, 120_000);

  it("a source edited since the build is what the next run executes", () => {
    const r = edited(
      "cli/commands/check.ts",
      (t) => t.replace(" NodePort, ", " NODEPORT, "),
      () => exposure("check"),
    );
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(" NODEPORT, ");
    expect(exposure("check").stdout).toContain(" NodePort, ");
  }, 120_000);

  it("a syntax error in an edited source is one line with file:line:col (exit 1), a source main loads or one a command loads", () => {
    for (const [file, args] of [
      ["src/core/plan.ts", ["status", "--stack", "sandbox"]],
      ["cli/context.ts", ["check"]],
    ] as const) {
      const line = fs.readFileSync(path.join(copy, file), "utf8").split("\n").length;
      const r = edited(
        file,
        (t) => `${t}const = ;\n`,
        () => exposure(...args),
      );
      expect(r.status, file).toBe(1);
      expect(r.stderr.trim().split("\n"), file).toHaveLength(1);
      expect(r.stderr, file).toContain(`${file}:${line}:7: Expected identifier but found "="; fix the source`);
      expect(r.stderr, file).not.toContain("internal error");
    }
    expect(exposure("check").status).toBe(0);
  }, 120_000);

  it("a command module that exports nothing is one line asking for npm run build (exit 1)", () => {
    const r = edited(
      "cli/commands/check.ts",
      (t) => t.replace("export const command: Command", "const command: Command"),
      () => exposure("check"),
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toBe("exposure check: the check command's module exports no command: run `npm run build`\n");
  }, 120_000);

  it("a dist/ changed after its build (a module truncated, or edited) is built again before anything runs", () => {
    expect(exposure("check").status).toBe(0);
    const before = fs.readFileSync(path.join(copy, "dist/build-stamp.json"), "utf8");
    const truncated = edited(
      "dist/src/core/contract/parse.js",
      (t) => t.slice(0, t.length / 2),
      () => exposure("check"),
    );
    expect(truncated.stderr).toBe("");
    expect(truncated.status).toBe(0);
    const edit = edited(
      "dist/cli/commands/check.js",
      (t) => t.replace(" NodePort, ", " EDITED, "),
      () => exposure("check"),
    );
    expect(edit.stdout).toContain(" NodePort, ");
    expect(edit.stdout).not.toContain("EDITED");
    expect(fs.readFileSync(path.join(copy, "dist/build-stamp.json"), "utf8")).toBe(before);
  }, 120_000);

  it("in a checkout it cannot write: a stale build runs with one warning saying why; a changed one is refused with one line", () => {
    const readOnly = (...args: string[]) => inReadOnlyCopy([process.execPath, "bin/exposure.cjs", ...args]);
    expect(exposure("check").status).toBe(0);
    const stale = edited(
      "cli/flags.ts",
      (t) => `${t}\n`,
      () => readOnly("check"),
    );
    expect(stale.stderr).toMatch(
      /^exposure: warning: dist\/ is older than the sources and cannot write dist\/ in \S+ \((EROFS|EACCES)\): build it where the project folder is writable \(npm run build\); running the old build\n$/,
    );
    expect(stale.stdout).toContain("contract/endpoints.example.yaml: valid");
    expect(stale.status).toBe(0);
    const changed = edited(
      "dist/cli/commands/check.js",
      (t) => `${t}\n// edited\n`,
      () => readOnly("check"),
    );
    expect(changed.stderr).toMatch(
      /^exposure: dist\/ was changed after it was built and cannot write dist\/ in \S+ \((EROFS|EACCES)\): build it where the project folder is writable \(npm run build\)\n$/,
    );
    expect(changed.stdout).toBe("");
    expect(changed.status).toBe(1);
  }, 120_000);

  it("stops with one line when the installed client-node is not the release it leaves parts out of", () => {
    const { clientNodeProblem } = require(path.join(copy, "scripts/build.cjs")) as { clientNodeProblem: (root: string) => string | undefined };
    expect(clientNodeProblem(copy)).toBeUndefined();
    const fake = fs.mkdtempSync(path.join(os.tmpdir(), "client-node-"));
    try {
      fs.mkdirSync(path.join(fake, "node_modules/@kubernetes/client-node"), { recursive: true });
      fs.writeFileSync(path.join(fake, "node_modules/@kubernetes/client-node/package.json"), JSON.stringify({ version: "1.5.0" }));
      expect(clientNodeProblem(fake)).toMatch(/^@kubernetes\/client-node is 1\.5\.0, but scripts\/build\.cjs leaves out parts of 1\.4\.0 by file path: /);
    } finally {
      fs.rmSync(fake, { recursive: true, force: true });
    }
  });

  it("prepare (npm ci, and npx exposure preparing this folder again) leaves a dist/ built from these sources alone; a stale one is rebuilt", () => {
    const prepare = () => spawnSync(process.execPath, [path.join(copy, "scripts/build.cjs"), "--if-stale"], { cwd: copy, encoding: "utf8", timeout: 120_000 });
    const main = path.join(copy, "dist/cli/main.js");
    const before = fs.statSync(main).mtimeMs;
    const kept = prepare();
    expect(kept.status).toBe(0);
    expect(kept.stdout).toContain("dist/ is up to date");
    expect(fs.statSync(main).mtimeMs).toBe(before);
    const rebuilt = edited("cli/flags.ts", (t) => `${t}\n`, prepare);
    expect(rebuilt.status).toBe(0);
    expect(rebuilt.stdout).not.toContain("up to date");
    expect(fs.readdirSync(copy).filter((f) => f.startsWith("dist."))).toEqual([]);
    expect(exposure("check").status).toBe(0);
  }, 120_000);
});

describe("program loader", () => {
  /** Loads the entry point as the nodejs language host does (require of `main`, from components/), prints what it exports or throws. */
  function load(): string {
    const probe = `Error.prepareStackTrace = () => "mapped"; try { const m = require(${JSON.stringify(path.join(copy, LOADER))}); Promise.resolve(typeof m === "function" ? m() : m).then((v) => console.log(JSON.stringify({ value: v, mapped: Error.prepareStackTrace !== undefined }))); } catch (e) { console.log(e.constructor.name + ": " + e.message); }`;
    return spawnSync(process.execPath, ["-e", probe], { cwd: path.join(copy, "components"), encoding: "utf8", timeout: 120_000 }).stdout.trim();
  }

  it("is what Pulumi.yaml runs, with the engine's ts-node (and its type check) off", () => {
    const project = parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8"));
    expect(project.main).toBe(LOADER);
    expect(project.runtime).toMatchObject({ name: "nodejs", options: { typescript: false } });
  });

  it("the build's program bundle holds our code, zod and yaml, and leaves the Pulumi SDK and the providers outside (one SDK instance)", () => {
    const bundle = path.join(copy, "dist/bundles/program/stack-program.cjs");
    const probe = `const m = require(${JSON.stringify(bundle)}); const loaded = Object.keys(require.cache); console.log(JSON.stringify({ type: typeof m, sdk: loaded.some((f) => f.includes("node_modules/@pulumi/pulumi/")), k8s: loaded.some((f) => f.includes("node_modules/@pulumi/kubernetes/")), zod: loaded.some((f) => f.includes("node_modules/zod/")), yaml: loaded.some((f) => f.includes("node_modules/yaml/")) }));`;
    const r = spawnSync(process.execPath, ["-e", probe], { cwd: copy, encoding: "utf8", timeout: 30_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ type: "function", sdk: true, k8s: true, zod: false, yaml: false });
  });

  it("runs index.ts as it is on disk, bundled, the SDK's source-map hook set aside; a type error does not stop the run (CI's typecheck does)", () => {
    const index = (value: string) => `const n: number = ${JSON.stringify(value)};\nexport = async () => n;\n`;
    expect(edited("index.ts", () => index("first"), load)).toBe(JSON.stringify({ value: "first", mapped: false }));
    expect(edited("index.ts", () => index("edited"), load)).toBe(JSON.stringify({ value: "edited", mapped: false }));
  }, 120_000);

  // Found by an outside tester: the engine runs the program from the folder of `main`, so the file was
  // named `../core/plan.ts`; the project folder is where the operator looks.
  it("a syntax error in the program or a source it imports is one RunError named from the project folder", () => {
    expect(edited("index.ts", () => "export = async () => {\n", load)).toMatch(/^RunError: index\.ts:2:1: Unexpected end of file; fix the source/);
    expect(edited("src/core/plan.ts", (t) => `const = ;\n${t}`, load)).toMatch(
      /^RunError: src\/core\/plan\.ts:1:7: Expected identifier but found "="; fix the source/,
    );
  }, 120_000);

  it("in a checkout it cannot write, runs the old program bundle with one warning when the sources changed", () => {
    const index = (value: string) => `export = async () => ${JSON.stringify(value)};\n`;
    edited("index.ts", () => index("built"), load);
    const probe = `const m = require(${JSON.stringify(path.join(copy, LOADER))}); m().then((v) => console.log(JSON.stringify(v)));`;
    const r = edited(
      "index.ts",
      () => index("edited"),
      () => inReadOnlyCopy([process.execPath, "-e", probe], "components"),
    );
    expect(r.stdout.trim()).toBe('"built"');
    expect(r.stderr).toContain("dist/ is older than the sources and cannot write dist/ in");
    expect(r.stderr).toContain("running the old build");
  }, 120_000);

  // An empty module would be taken for a program declaring nothing: preview would plan deleting everything.
  it("a program bundle that exports no program is refused before anything is declared", () => {
    expect(edited("index.ts", () => "export const nothing = 1;\n", load)).toBe(
      "RunError: dist/bundles/program/stack-program.cjs exports no program (a function declaring the stack): run `npm run build`; nothing was declared, so nothing is planned",
    );
  }, 120_000);
});
