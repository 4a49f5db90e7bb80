#!/usr/bin/env node
// The `exposure` command: runs dist/, first rebuilt when missing, older than the sources or changed since built (scripts/build.cjs).
"use strict";
// Node.js >= 22.1 keeps V8's compiled code between runs; Node.js 20 has no such cache.
require("node:module").enableCompileCache?.();

const root = require("node:path").resolve(__dirname, "..");
const { ensureBuilt, exitTable, staleBuild } = require("../scripts/build.cjs");
const stale = staleBuild(root);
if (stale !== undefined) {
  if (process.stderr.isTTY) process.stderr.write(`exposure: ${stale}: building it (npm run build)\n`);
  const { error, warning } = ensureBuilt(root);
  if (warning) process.stderr.write(`exposure: warning: ${warning}\n`);
  if (error) {
    process.stderr.write(`exposure: ${error}\n`);
    process.exit(exitTable(root).ERROR);
  }
}
// process.exit() drops what a pipe has not taken yet (`| jq` would get a cut document): exit once both streams are flushed.
// EPIPE (`| head`) is no error of ours; any other failed stdout write (a full disk) is: never succeed over an empty file.
let stdoutFailure;
process.stdout.on("error", (err) => {
  if (err.code !== "EPIPE") stdoutFailure ??= err;
});
const flushed = (stream) =>
  new Promise((resolve) => {
    if (stream.writableLength === 0 || stream.destroyed) return resolve();
    stream.once("error", () => resolve());
    stream.write("", () => resolve());
  });
const exitAfterFlush = (code) =>
  Promise.all([flushed(process.stdout), flushed(process.stderr)])
    // A write's error is emitted on a later tick: let it arrive before the exit code is chosen.
    .then(() => new Promise((resolve) => setImmediate(resolve)))
    .then(() => {
      if (stdoutFailure === undefined) return process.exit(code);
      process.stderr.write(`exposure: cannot write the output: ${stdoutFailure.message}\n`, () => process.exit(exitTable(root).ERROR));
    });
// A brief command (cli/specs.ts) ends before V8's optimising compiler pays back: about a tenth less CPU without it.
if (require("../dist/cli/specs.js").SPECS[process.argv[2]]?.brief === true) require("node:v8").setFlagsFromString("--no-opt");
require("../dist/cli/main.js")
  .main(process.argv.slice(2))
  .then(exitAfterFlush, (err) => {
    process.stderr.write(`exposure: internal error: ${err?.stack ?? err}\n`);
    return exitAfterFlush(exitTable(root).ERROR);
  });
