"use strict";
// Entry point `pulumi up` / `preview` run (Pulumi.yaml `main:`, `runtime.options.typescript: false`).
// Type-checking belongs in CI (`npm run typecheck`), not in every run: the engine's default,
// ts-node, type-checks the whole program at each start (about 5 s of CPU). Here each TypeScript
// file is only transpiled, by esbuild (already a dependency), when Node.js first requires it:
// always from the sources on disk, so an edited index.ts is what runs; nothing is cached.
const fs = require("node:fs");
const Module = require("node:module");
const path = require("node:path");
const esbuild = require("esbuild");

process.setSourceMapsEnabled(true);

/** esbuild's first error as `file:line:col: message` (1-based column), shown by the engine without a stack trace. */
function syntaxError(err, filename) {
  const first = err && Array.isArray(err.errors) ? err.errors[0] : undefined;
  if (!first) return err;
  const where = first.location ? `${path.relative(process.cwd(), filename) || filename}:${first.location.line}:${first.location.column + 1}` : filename;
  const { RunError } = require("@pulumi/pulumi");
  return new RunError(`${where}: ${first.text}`);
}

Module._extensions[".ts"] = function transpile(module, filename) {
  const source = fs.readFileSync(filename, "utf8");
  let code;
  try {
    code = transform(source, filename);
  } catch (err) {
    throw syntaxError(err, filename);
  }
  module._compile(code, filename);
};

function transform(source, filename) {
  return esbuild.transformSync(source, {
    loader: "ts",
    format: "cjs",
    platform: "node",
    target: "node20",
    sourcefile: filename,
    sourcemap: "inline",
    // What tsc does for target ES2022 (tsconfig.json), so classes behave the same as under typecheck.
    tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
  }).code;
}

module.exports = require(path.join(__dirname, "..", "..", "index.ts"));
