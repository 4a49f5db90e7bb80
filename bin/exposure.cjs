#!/usr/bin/env node
// The `exposure` command: runs dist/, built by `npm ci` (`prepare`) or `npm run build`, and
// first builds it again when it is missing or older than the sources (scripts/build.cjs).
"use strict";
const path = require("node:path");
// Node.js >= 22.1 keeps V8's compiled code between runs; Node.js 20 has no such cache.
const { enableCompileCache } = require("node:module");
if (typeof enableCompileCache === "function") enableCompileCache();

const root = path.resolve(__dirname, "..");
const { ensureBuilt, staleBuild } = require("../scripts/build.cjs");
const stale = staleBuild(root);
if (stale !== undefined) {
  if (process.stderr.isTTY) process.stderr.write(`exposure: ${stale}: building it (npm run build)\n`);
  const failed = ensureBuilt(root);
  if (failed !== undefined) {
    process.stderr.write(`exposure: ${failed}\n`);
    process.exit(1);
  }
}
require("../dist/cli/main.js")
  .main(process.argv.slice(2))
  .then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`exposure: internal error: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
