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
function run(): { code: number | null; stdout: string; stderr: string } {
  const probe = `const m = require(${JSON.stringify(path.join(dir, LOADER))}); Promise.resolve(typeof m === "function" ? m() : m).then((v) => console.log(JSON.stringify(v))); process.on("exit", () => console.error(Object.keys(require.cache).some((f) => f.includes("esbuild")) ? "esbuild loaded" : ""));`;
  const r = spawnSync(process.execPath, ["-e", probe], { cwd: dir, encoding: "utf8", timeout: 30_000 });
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
});
