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

Module._extensions[".ts"] = function transpile(module, filename) {
  const source = fs.readFileSync(filename, "utf8");
  const { code } = esbuild.transformSync(source, {
    loader: "ts",
    format: "cjs",
    platform: "node",
    target: "node20",
    sourcefile: filename,
    sourcemap: "inline",
    // What tsc does for target ES2022 (tsconfig.json), so classes behave the same as under typecheck.
    tsconfigRaw: { compilerOptions: { useDefineForClassFields: true } },
  });
  module._compile(code, filename);
};

module.exports = require(path.join(__dirname, "..", "..", "index.ts"));
