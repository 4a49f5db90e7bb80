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

/**
 * dist/vendor/client-node.cjs: runs the bundle through vm.Script with V8's code cache. A cache
 * that V8 rejects (another Node.js version) is ignored: the bundle is then compiled as usual.
 */
const CODE_CACHE_LOADER = `"use strict";
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const { createRequire, wrap } = require("node:module");
const file = path.join(__dirname, "client-node.bundle.cjs");
const cacheFile = path.join(__dirname, "client-node.v8cache");
let cachedData;
try { cachedData = fs.readFileSync(cacheFile); } catch {}
const script = new vm.Script(wrap(fs.readFileSync(file, "utf8")), { filename: file, ...(cachedData ? { cachedData } : {}) });
const bundle = { exports: {} };
script.runInThisContext()(bundle.exports, createRequire(file), bundle, file, __dirname);
module.exports = bundle.exports;
Object.defineProperty(module.exports, "__writeCodeCache", { value: () => fs.writeFileSync(cacheFile, script.createCachedData()) });
`;
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
// the bundle about a third of that, and with V8's code cache (parsed and compiled once, here)
// about a sixth. src/adapters/kube-live.ts loads dist/vendor/client-node.cjs when present.
const vendor = path.join(root, "dist", "vendor");
require("esbuild").buildSync({
  stdin: { contents: 'module.exports = require("@kubernetes/client-node");', resolveDir: root, loader: "js" },
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  minify: true,
  legalComments: "none",
  logLevel: "error",
  outfile: path.join(vendor, "client-node.bundle.cjs"),
});
fs.writeFileSync(path.join(vendor, "client-node.cjs"), CODE_CACHE_LOADER);
// Run it once so the cache holds the functions a connection compiles, not only the top level.
const loaded = require(path.join(vendor, "client-node.cjs"));
new loaded.KubeConfig().loadFromString("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n");
loaded.__writeCodeCache();
fs.writeFileSync(path.join(root, STAMP_FILE), `${JSON.stringify({ sources: stamp }, null, 2)}\n`);
