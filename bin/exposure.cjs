#!/usr/bin/env node
// The `exposure` command. Runs the compiled JavaScript in dist/ (built by `npm ci` through the
// `prepare` script, or `npm run build`) when it was built from the sources as they are now.
// Otherwise (no build yet, or a source edited since) it runs the TypeScript sources through
// tsx: slower to start, but never stale code. At a terminal it says so, once per run.
"use strict";
const path = require("node:path");
// Node.js >= 22.1 keeps V8's compiled code between runs (zod, yaml, client-node, our modules):
// a large part of what a command's start costs. Node.js 20 has no such cache: nothing happens.
const { enableCompileCache } = require("node:module");
if (typeof enableCompileCache === "function") enableCompileCache();
const { sourceStamp, builtStamp } = require("./source-stamp.cjs");

const root = path.resolve(__dirname, "..");

/** An error whose first stack frame is in dist/, as one line; else undefined. */
function thrownByDist(err) {
  const frame = /\n\s+at (?:.*? \()?(\/.*?):\d+:\d+\)?\n/.exec(String(err?.stack));
  const file = frame?.[1];
  if (file === undefined || !file.startsWith(path.join(root, "dist") + path.sep)) return undefined;
  return `${path.relative(root, file)} cannot be loaded (${err.name}: ${String(err.message).split("\n")[0]}): dist/ is damaged; run \`npm run build\``;
}
const built = builtStamp(root);
if (built !== undefined && built === sourceStamp(root)) {
  // A compiled file truncated or deleted since the build: one line, not Node.js's trace.
  // Also an error thrown by a dist/ file's top level (cut short after a function it exports):
  // the same code ran from the sources it matches, so this copy is what is broken.
  const main = require("./load-failure.cjs").loadMainOrExit(() => require("../dist/cli/main.js"), root, thrownByDist);
  if (typeof main !== "function") {
    // Cut short where what is left still parses.
    process.stderr.write("exposure: dist/cli/main.js cannot be loaded (it defines no main()): dist/ is damaged; run `npm run build`\n");
    process.exit(1);
  }
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      const damaged = require("./load-failure.cjs").damagedDist(root);
      process.stderr.write(damaged ? `exposure: ${damaged}\n` : `exposure: internal error: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
} else {
  if (process.stderr.isTTY) {
    process.stderr.write(
      `exposure: ${built === undefined ? "no build in dist/" : "dist/ is older than the sources"}: running the TypeScript sources (slow start); run \`npm run build\`\n`,
    );
  }
  // The sources load each command with a lazy import(): tsx must hook both require and import,
  // which only its --import loader does. A child process, signals passed on.
  const { spawn } = require("node:child_process");
  const { pathToFileURL } = require("node:url");
  const child = spawn(
    process.execPath,
    ["--import", pathToFileURL(require.resolve("tsx")).href, path.join(__dirname, "run-sources.cjs"), ...process.argv.slice(2)],
    {
      stdio: "inherit",
    },
  );
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + (require("node:os").constants.signals[signal] ?? 1) : 1)));
}
