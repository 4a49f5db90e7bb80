"use strict";
// Entry point `pulumi up` / `preview` run (Pulumi.yaml `main:`, `runtime.options.typescript: false`).
// Type-checking belongs in CI (`npm run typecheck`), not in every run: the engine's default,
// ts-node, type-checks the whole program at each start (about 5 s of CPU).
// - dist/ built from exactly these sources (`npm ci` builds it; bin/source-stamp.cjs compares
//   the hashes): the compiled program runs, one bundle with its code cache, nothing transpiled.
// - Otherwise (a source edited since the build, no build): each TypeScript file is transpiled
//   by esbuild when Node.js first requires it, from the sources on disk, so an edit is what runs.
const fs = require("node:fs");
const Module = require("node:module");
const path = require("node:path");

const root = path.join(__dirname, "..", "..");

/** dist/'s bundle of the program (scripts/build-cli.cjs) when dist/ was built from the sources as they are now. */
function compiledProgram() {
  let stamps;
  try {
    stamps = require(path.join(root, "bin", "source-stamp.cjs"));
  } catch {
    return undefined;
  }
  const built = stamps.builtStamp(root);
  const compiled = path.join(root, "dist", "src", "infra", "stack-program.cjs");
  return built !== undefined && built === stamps.sourceStamp(root) && fs.existsSync(compiled) ? compiled : undefined;
}

/** `file` relative to the project folder (the engine runs the program from src/infra/). */
const shown = (file) => path.relative(root, file).split(path.sep).join("/") || file;

/** esbuild's first error as `file:line:col: message` (1-based column), shown by the engine without a stack trace. */
function syntaxError(err, filename) {
  const first = err && Array.isArray(err.errors) ? err.errors[0] : undefined;
  if (!first) return err;
  const where = first.location ? `${shown(filename)}:${first.location.line}:${first.location.column + 1}` : shown(filename);
  const { RunError } = require("@pulumi/pulumi");
  return new RunError(`${where}: ${first.text}`);
}

/**
 * A damaged dist/ (a truncated bundle, a deleted file: bin/load-failure.cjs) as one line the
 * engine shows without a stack trace; anything else unchanged.
 */
function unloadable(err) {
  let failure;
  try {
    failure = require(path.join(root, "bin", "load-failure.cjs")).loadFailure(err, root);
  } catch {
    failure = err && err.code === "EXPOSURE_DIST_DAMAGED" ? err.message : undefined;
  }
  if (failure === undefined) return err;
  const { RunError } = require("@pulumi/pulumi");
  return new RunError(failure);
}

function transpileOnLoad() {
  // Errors then point at the TypeScript lines (inline source maps). Not for dist/: Node.js would
  // read the source map of every module that names one, the Pulumi SDK's included.
  process.setSourceMapsEnabled(true);
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
}

function transform(source, filename) {
  return require("esbuild").transformSync(source, {
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

const compiled = compiledProgram();
if (compiled === undefined) transpileOnLoad();
// The SDK maps every stack through source maps (source-map-support, installed before this file
// runs), and every resource captures its whole stack at registration: about 7 ms of CPU each,
// a fifth of the program's CPU in a 100-entry `up`. The compiled program's stacks name lines
// of its bundle instead (unminified, named after the sources); the sources' path keeps the mapping.
else Error.prepareStackTrace = undefined;
const runError = (message) => new (require("@pulumi/pulumi").RunError)(message);
/** A damaged copy of dist/ (bin/load-failure.cjs: files that differ from what the build wrote), or undefined. */
function damagedDist() {
  try {
    return require(path.join(root, "bin", "load-failure.cjs")).damagedDist(root);
  } catch {
    return undefined;
  }
}
// Before anything runs: a damaged bundle may still load, as an empty module whose exports the
// engine would take for a program declaring nothing, and a preview would then plan to delete
// every resource (found by an outside tester). Hashing dist/ costs a few tens of ms per run.
const damaged = compiled === undefined ? undefined : damagedDist();
if (damaged !== undefined) throw runError(damaged);
let program;
try {
  program = require(compiled ?? path.join(root, "index.ts"));
} catch (err) {
  throw compiled === undefined ? err : unloadable(err);
}
if (typeof program !== "function") {
  throw runError(
    `${shown(compiled ?? path.join(root, "index.ts"))} exports no program (a function declaring the stack): ${compiled ? "dist/ is damaged; run `npm run build`" : "restore index.ts"}; nothing was declared, so nothing is planned`,
  );
}
// A module that fails to load while the program runs (client-node's bundle, loaded on first
// use) is the same damage: one line, not a trace.
module.exports = async (...args) => {
  try {
    return await program(...args);
  } catch (err) {
    if (compiled === undefined || err instanceof require("@pulumi/pulumi").RunError) throw err;
    const failure = unloadable(err);
    if (failure !== err) throw failure;
    const damagedNow = damagedDist();
    throw damagedNow === undefined ? err : runError(damagedNow);
  }
};
