// The entry point `pulumi up` runs (Pulumi.yaml `main:`): the compiled program in dist/ when it
// was built from the sources as they are, else TypeScript transpiled as it is loaded, so what
// runs is always the sources on disk.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

const projectDir = path.resolve(__dirname, "..");
const LOADER = "src/infra/program-loader.cjs";
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "program-loader-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Loads the entry point as the nodejs language host does (require of `main`), prints what it exports. */
function run(cwd = dir): { code: number | null; stdout: string; stderr: string } {
  const probe = `const m = require(${JSON.stringify(path.join(dir, LOADER))}); Promise.resolve(typeof m === "function" ? m() : m).then((v) => console.log(JSON.stringify(v))); process.on("exit", () => console.error(Object.keys(require.cache).some((f) => f.includes("esbuild")) ? "esbuild loaded" : ""));`;
  const r = spawnSync(process.execPath, ["-e", probe], { cwd, encoding: "utf8", timeout: 30_000 });
  return { code: r.status, stdout: r.stdout.trim(), stderr: r.stderr };
}

describe("program loader", () => {
  it("is what Pulumi.yaml runs, with the engine's ts-node (and its type check) off", () => {
    const project = parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8"));
    expect(project.main).toBe(LOADER);
    expect(project.runtime).toMatchObject({ name: "nodejs", options: { typescript: false } });
  });

  it("runs the TypeScript on disk: an edit to index.ts is what the next run executes", () => {
    fs.mkdirSync(path.join(dir, "src/infra"), { recursive: true });
    fs.copyFileSync(path.join(projectDir, LOADER), path.join(dir, LOADER));
    fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(dir, "node_modules"));
    fs.mkdirSync(path.join(dir, "src/lib"));
    fs.writeFileSync(path.join(dir, "src/lib/greet.ts"), 'export const greet = (who: string): string => ["hello", who].join(" ");\n');
    const index = (who: string) =>
      `import * as path from "node:path";\nimport { greet } from "./src/lib/greet";\ninterface Out { text: string; dir: string }\nexport = async (): Promise<Out> => ({ text: greet("${who}"), dir: path.basename(__dirname) });\n`;

    fs.writeFileSync(path.join(dir, "index.ts"), index("first"));
    const first = run();
    expect(first.stderr.trim()).toBe("esbuild loaded");
    expect(JSON.parse(first.stdout)).toEqual({ text: "hello first", dir: path.basename(dir) });

    fs.writeFileSync(path.join(dir, "index.ts"), index("edited"));
    expect(JSON.parse(run().stdout)).toEqual({ text: "hello edited", dir: path.basename(dir) });
  });

  it("a type error does not stop the run (CI's typecheck does); a syntax error names file, line and column", () => {
    fs.writeFileSync(path.join(dir, "index.ts"), "const n: number = 'not a number';\nexport = async () => n;\n");
    expect(JSON.parse(run().stdout)).toBe("not a number");
    fs.writeFileSync(path.join(dir, "index.ts"), "export = async () => {\n");
    const broken = run();
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toContain(`${path.join("index.ts")}:2:1: Unexpected end of file`);
    expect(broken.stderr).not.toContain("esbuild/lib");
  });

  // Found by an outside tester: the engine runs the program from src/infra/, so the file was
  // named `../core/plan.ts`; the project folder is where the operator looks.
  it("a syntax error in a source the program imports is named from the project folder, not from src/infra/", () => {
    fs.writeFileSync(path.join(dir, "index.ts"), 'import { greet } from "./src/lib/greet";\nexport = async () => greet("x");\n');
    const greet = path.join(dir, "src/lib/greet.ts");
    const text = fs.readFileSync(greet, "utf8");
    fs.writeFileSync(greet, `${text}const = ;\n`);
    const broken = run(path.join(dir, "src/infra"));
    fs.writeFileSync(greet, text);
    expect(broken.code).not.toBe(0);
    expect(broken.stderr).toContain('Error: src/lib/greet.ts:2:7: Expected identifier but found "="');
    expect(broken.stderr).toContain("__pulumiRunError: true");
  });

  it("runs dist/'s program bundle when dist/ was built from these very sources (nothing transpiled); an edit since the build runs the sources", () => {
    fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
    fs.copyFileSync(path.join(projectDir, "bin/source-stamp.cjs"), path.join(dir, "bin/source-stamp.cjs"));
    const { sourceStamp, STAMP_FILE } = require(path.join(projectDir, "bin/source-stamp.cjs")) as { sourceStamp: (root: string) => string; STAMP_FILE: string };
    fs.writeFileSync(path.join(dir, "index.ts"), 'export = async () => "from the sources";\n');
    fs.mkdirSync(path.join(dir, "dist/src/infra"), { recursive: true });
    fs.writeFileSync(path.join(dir, "dist/src/infra/stack-program.cjs"), '"use strict";\nmodule.exports = async () => "compiled";\n');
    fs.writeFileSync(path.join(dir, STAMP_FILE), JSON.stringify({ sources: sourceStamp(dir) }));
    const compiled = run();
    expect(JSON.parse(compiled.stdout)).toBe("compiled");
    expect(compiled.stderr.trim()).toBe("");
    // The SDK's source-map-support hook (installed before the loader runs) is set aside: stacks
    // then cost what V8 charges, not a source-map lookup per frame per resource.
    const hooked = (file: string) =>
      spawnSync(
        process.execPath,
        [
          "-e",
          `Error.prepareStackTrace = (e, frames) => "mapped"; require(${JSON.stringify(file)}); console.log(String(Error.prepareStackTrace === undefined));`,
        ],
        { cwd: dir, encoding: "utf8", timeout: 30_000 },
      ).stdout.trim();
    expect(hooked(path.join(dir, LOADER))).toBe("true");

    // index.ts is part of the stamp: edited after the build, it is what runs.
    fs.writeFileSync(path.join(dir, "index.ts"), 'export = async () => "edited since the build";\n');
    expect(JSON.parse(run().stdout)).toBe("edited since the build");
    expect(hooked(path.join(dir, LOADER))).toBe("false");
    // A stamp file that is not JSON (or any garbage) is no build: the sources run.
    fs.writeFileSync(path.join(dir, STAMP_FILE), "\u0000not json");
    expect(JSON.parse(run().stdout)).toBe("edited since the build");
    fs.rmSync(path.join(dir, "dist"), { recursive: true });
  });

  it("the build's program bundle holds our code, zod and yaml, and leaves the Pulumi SDK and the providers outside (one SDK instance)", () => {
    const bundle = path.join(projectDir, "dist/src/infra/stack-program.cjs");
    if (!fs.existsSync(bundle)) return; // no build in this checkout (npm ci builds it: CI always has one)
    const probe = `const m = require(${JSON.stringify(bundle)}); const loaded = Object.keys(require.cache); console.log(JSON.stringify({ type: typeof m, sdk: loaded.some((f) => f.includes("node_modules/@pulumi/pulumi/")), k8s: loaded.some((f) => f.includes("node_modules/@pulumi/kubernetes/")), zod: loaded.some((f) => f.includes("node_modules/zod/")), yaml: loaded.some((f) => f.includes("node_modules/yaml/")) }));`;
    const r = spawnSync(process.execPath, ["-e", probe], { cwd: projectDir, encoding: "utf8", timeout: 30_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ type: "function", sdk: true, k8s: true, zod: false, yaml: false });
  });

  // Found by an outside tester: a truncated program bundle was the engine's "unhandled exception"
  // with ten stack frames, and named the file from src/infra/.
  it("a damaged dist/ program is one RunError (no stack trace from the engine) naming the file from the project folder", () => {
    const built = path.join(projectDir, "dist");
    if (!fs.existsSync(path.join(built, "src/infra/stack-program.cjs"))) return; // no build in this checkout
    const copy = fs.mkdtempSync(path.join(os.tmpdir(), "program-loader-dist-"));
    try {
      for (const f of [LOADER, "bin/source-stamp.cjs", "bin/load-failure.cjs", "index.ts"]) fs.cpSync(path.join(projectDir, f), path.join(copy, f));
      fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(copy, "node_modules"));
      const program = "dist/src/infra";
      for (const f of ["stack-program.cjs", "stack-program.bundle.cjs", "stack-program.v8cache"])
        fs.cpSync(path.join(built, "src/infra", f), path.join(copy, program, f));
      fs.cpSync(path.join(built, "vendor/code-cache.cjs"), path.join(copy, "dist/vendor/code-cache.cjs"));
      const { sourceStamp, STAMP_FILE } = require(path.join(projectDir, "bin/source-stamp.cjs")) as {
        sourceStamp: (root: string) => string;
        STAMP_FILE: string;
      };
      fs.writeFileSync(path.join(copy, STAMP_FILE), JSON.stringify({ sources: sourceStamp(copy) }));
      const load = () => {
        const probe = `try { require(${JSON.stringify(path.join(copy, LOADER))}); console.log("loaded"); } catch (e) { console.log(e.constructor.name + ": " + e.message); }`;
        return spawnSync(process.execPath, ["-e", probe], { cwd: path.join(copy, "src/infra"), encoding: "utf8", timeout: 30_000 }).stdout.trim();
      };
      const bundle = path.join(copy, program, "stack-program.bundle.cjs");
      fs.writeFileSync(bundle, fs.readFileSync(bundle, "utf8").slice(0, 5000));
      expect(load()).toMatch(/^RunError: dist\/src\/infra\/stack-program\.bundle\.cjs cannot be loaded \(.+\): dist\/ is damaged; run `npm run build`$/);
      fs.rmSync(path.join(copy, "dist/vendor/code-cache.cjs"));
      expect(load()).toBe("RunError: dist/vendor/code-cache.cjs cannot be loaded (no such file): dist/ is damaged; run `npm run build`");
      fs.writeFileSync(path.join(copy, program, "stack-program.cjs"), '"use strict";\nconst x = require(');
      expect(load()).toMatch(/^RunError: dist\/src\/infra\/stack-program\.cjs cannot be loaded \(.+\): dist\/ is damaged; run `npm run build`$/);

      // Emptied, the bundle still loads: as a module exporting nothing, which the engine would
      // take for a program declaring nothing, and preview would plan to delete everything.
      // Found by an outside tester. Refused before running, by the build's record or without it.
      fs.cpSync(path.join(built, "vendor/code-cache.cjs"), path.join(copy, "dist/vendor/code-cache.cjs"));
      for (const f of ["stack-program.cjs", "stack-program.bundle.cjs"]) fs.cpSync(path.join(built, "src/infra", f), path.join(copy, program, f));
      fs.writeFileSync(bundle, "");
      expect(load()).toBe(
        "RunError: dist/src/infra/stack-program.cjs exports no program (a function declaring the stack): dist/ is damaged; run `npm run build`; nothing was declared, so nothing is planned",
      );
      const { distDigests, BUILD_FILES } = require(path.join(projectDir, "bin/load-failure.cjs")) as {
        distDigests: (root: string) => Record<string, string>;
        BUILD_FILES: string;
      };
      fs.cpSync(path.join(built, "src/infra/stack-program.bundle.cjs"), bundle);
      fs.writeFileSync(path.join(copy, BUILD_FILES), JSON.stringify(distDigests(copy)));
      expect(load()).toBe("loaded");
      fs.writeFileSync(bundle, "");
      expect(load()).toBe("RunError: dist/src/infra/stack-program.bundle.cjs differs from what the build wrote: dist/ is damaged; run `npm run build`");
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });
});
