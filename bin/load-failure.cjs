// A module that cannot be loaded, said in one line instead of Node.js's stack trace: a damaged
// dist/ (a compiled file truncated or deleted, or a bundle the code-cache loader refused) asks
// for `npm run build`; a syntax error in an edited TypeScript source names file:line:col.
// Used where dist/ itself may be what is broken: bin/exposure.cjs, bin/run-sources.cjs,
// cli/main.ts (looked up from the package folder) and src/infra/program-loader.cjs.
// Anything else (an error of code that loaded fine) is not recognised: its stack trace stays.
"use strict";
const path = require("node:path");

const REBUILD = "dist/ is damaged; run `npm run build`";

/** `file` relative to the project folder when inside it, with / separators. */
function shown(root, file) {
  const rel = path.relative(root, file);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel.split(path.sep).join("/") : file;
}

const inside = (dir, file) => {
  const rel = path.relative(dir, file);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
};

/** The module a MODULE_NOT_FOUND (require) or ERR_MODULE_NOT_FOUND (import()) names, absolute; else undefined. */
function missingModule(err) {
  if (err.code === "ERR_MODULE_NOT_FOUND" && typeof err.url === "string" && err.url.startsWith("file:")) {
    return require("node:url").fileURLToPath(err.url);
  }
  if (err.code === "MODULE_NOT_FOUND") {
    const request = /^Cannot find module '([^']+)'/.exec(String(err.message))?.[1];
    if (request === undefined) return undefined;
    if (path.isAbsolute(request)) return request;
    const from = Array.isArray(err.requireStack) ? err.requireStack[0] : undefined;
    if (request.startsWith(".") && typeof from === "string") return path.resolve(path.dirname(from), request);
  }
  return undefined;
}

/** A source that did not compile: Node.js names it on the first line of the stack (`/abs/file.js:12`), where a runtime error has `Name: message`. */
function uncompiled(err) {
  if (!(err instanceof SyntaxError) && err.name !== "SyntaxError") return undefined;
  const first = String(err.stack ?? "").split("\n")[0] ?? "";
  const m = /^(.+):(\d+)$/.exec(first);
  return m && path.isAbsolute(m[1]) ? { file: m[1], line: Number(m[2]) } : undefined;
}

/** esbuild's first error (esbuild's own errors[], or tsx's TransformError message): file, 1-based line and column, text. */
function transformError(err) {
  const first = Array.isArray(err.errors) ? err.errors[0] : undefined;
  if (first?.location) {
    return { file: first.location.file, line: first.location.line, column: first.location.column + 1, text: first.text };
  }
  if (err.name !== "TransformError" && !/^Transform failed with \d+ error/.test(String(err.message))) return undefined;
  const m = /^(.+):(\d+):(\d+): ERROR: (.*)$/m.exec(String(err.message));
  return m ? { file: m[1], line: Number(m[2]), column: Number(m[3]) + 1, text: m[4] } : undefined;
}

/**
 * One line for a module of the project at `root` that could not be loaded, or undefined when
 * `err` is no such failure.
 */
function loadFailure(err, root) {
  if (err === null || typeof err !== "object") return undefined;
  if (err.code === "EXPOSURE_DIST_DAMAGED") return String(err.message);
  const dist = path.join(root, "dist");
  const missing = missingModule(err);
  if (missing !== undefined) return inside(dist, missing) ? `${shown(root, missing)} cannot be loaded (no such file): ${REBUILD}` : undefined;
  const bad = uncompiled(err);
  if (bad !== undefined) {
    return inside(dist, bad.file)
      ? `${shown(root, bad.file)} cannot be loaded (${String(err.message).split("\n")[0]} at line ${bad.line}): ${REBUILD}`
      : undefined;
  }
  const edit = transformError(err);
  if (edit !== undefined && typeof edit.file === "string") {
    const file = path.resolve(root, edit.file);
    return `${shown(root, file)}:${edit.line}:${edit.column}: ${edit.text}; fix the source (or restore it: \`git checkout -- ${shown(root, file)}\`)`;
  }
  return undefined;
}

/** What the build wrote in dist/ (scripts/build-cli.cjs): each file's sha256, to tell a damaged copy. */
const BUILD_FILES = path.join("dist", "build-files.json");
/** Written at run time (code caches, their temporary files) or the records themselves: not compared. */
const unrecorded = (rel) => /\.v8cache$|\.tmp$/.test(rel) || rel === "build-files.json" || rel === "build-stamp.json";

/** sha256 of every file of dist/ the build wrote, by path relative to dist/ (with /). */
function distDigests(root) {
  const crypto = require("node:crypto");
  const fs = require("node:fs");
  const dist = path.join(root, "dist");
  const out = {};
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      const rel = path.relative(dist, file).split(path.sep).join("/");
      if (entry.isDirectory()) walk(file);
      else if (!unrecorded(rel)) out[rel] = crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex");
    }
  };
  walk(dist);
  return out;
}

/**
 * One line when files of dist/ differ from what the build wrote, else undefined. The CLI asks
 * only after a failure (a compiled file cut short where what is left still parses loads without
 * its exports and fails later, far from the cause); the Pulumi program asks before it runs,
 * since an emptied bundle would declare nothing and plan deleting everything.
 */
function damagedDist(root) {
  let recorded;
  try {
    recorded = JSON.parse(require("node:fs").readFileSync(path.join(root, BUILD_FILES), "utf8"));
  } catch {
    return undefined;
  }
  if (recorded === null || typeof recorded !== "object") return undefined;
  let now;
  try {
    now = distDigests(root);
  } catch {
    return undefined;
  }
  const differ = [...new Set([...Object.keys(recorded), ...Object.keys(now)])].filter((rel) => recorded[rel] !== now[rel]).sort();
  if (differ.length === 0) return undefined;
  const named = differ.slice(0, 3).map((rel) => `dist/${rel}`);
  const more = differ.length > 3 ? ` and ${differ.length - 3} more` : "";
  return `${named.join(", ")}${more} ${differ.length === 1 ? "differs" : "differ"} from what the build wrote: ${REBUILD}`;
}

/**
 * The `main` of the CLI module `load()` requires. One that cannot be loaded (or `explain(err)`
 * says why) ends the process with one line, exit 1; any other error is thrown as is.
 */
function loadMainOrExit(load, root, explain = () => undefined) {
  try {
    return load().main;
  } catch (err) {
    const failure = loadFailure(err, root) ?? explain(err);
    if (failure === undefined) throw err;
    process.stderr.write(`exposure: ${failure}\n`);
    process.exit(1);
  }
}

module.exports = { BUILD_FILES, damagedDist, distDigests, loadFailure, loadMainOrExit };
