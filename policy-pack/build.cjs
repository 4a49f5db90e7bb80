#!/usr/bin/env node
// The pack as one file, dist/index.js (the `main` the engine loads): index.ts with the project's pure
// core bundled in; @pulumi/* stay the pack's own node_modules. Uses the project's esbuild
// (`npm ci` in the project first). `npm ci` here runs it (prepare).
"use strict";
const path = require("node:path");
const esbuild = require(require.resolve("esbuild", { paths: [path.join(__dirname, "..")] }));

esbuild.buildSync({
  entryPoints: [path.join(__dirname, "index.ts")],
  outfile: path.join(__dirname, "dist/index.js"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  external: ["@pulumi/*"],
  logLevel: "warning",
});
