#!/usr/bin/env node
// `npm run build` (also run by `npm ci` / `npm install` through `prepare`): compiles the CLI
// and everything it loads to dist/ with tsconfig.build.json, then records which sources it
// was built from (bin/exposure.cjs refuses a dist/ that does not match them).
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { sourceStamp, STAMP_FILE } = require("../bin/source-stamp.cjs");

const root = path.resolve(__dirname, "..");
// Hashed before compiling: a file edited during the build makes the stamp stale, never the reverse.
const stamp = sourceStamp(root);
// A clean dist/: a deleted source must not leave its compiled module behind.
fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
const tsc = require.resolve("typescript/bin/tsc", { paths: [root] });
const r = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (r.status !== 0) {
  process.stderr.write("build: tsc failed: dist/ left without a stamp (bin/exposure.cjs will run the sources through tsx)\n");
  process.exit(r.status ?? 1);
}
// client-node as one minified CommonJS file: its ~900 ES modules cost about 1 s of CPU to load,
// the bundle about a third of that (src/adapters/kube-live.ts loads it when present).
require("esbuild").buildSync({
  stdin: { contents: 'module.exports = require("@kubernetes/client-node");', resolveDir: root, loader: "js" },
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minify: true,
  legalComments: "none",
  logLevel: "error",
  outfile: path.join(root, "dist", "vendor", "client-node.cjs"),
});
fs.writeFileSync(path.join(root, STAMP_FILE), `${JSON.stringify({ sources: stamp }, null, 2)}\n`);
