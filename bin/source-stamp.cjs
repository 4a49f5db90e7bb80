// The fingerprint of the sources dist/ is compiled from: a hash of every .ts file of cli/,
// src/ and components/ (path and content), of index.ts and of the build's tsconfig files. Content, not
// mtimes: a copied or re-checked-out tree with the same sources still matches its build.
// Measured at about 5 ms for the ~50 files (docs/benchmarks.md, start-up section).
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");

const SOURCE_DIRS = ["cli", "src", "components"];
// index.ts: the Pulumi program's entry, bundled to dist/src/infra/stack-program.bundle.cjs (src/infra/program-loader.cjs).
const CONFIG_FILES = ["tsconfig.json", "tsconfig.build.json", "index.ts"];

function sourceFiles(root, dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
  } catch {
    return out;
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) sourceFiles(root, rel, out);
    else if (entry.name.endsWith(".ts")) out.push(rel);
  }
  return out;
}

/** sha256 of the sources under `root`, hex. */
function sourceStamp(root) {
  const hash = crypto.createHash("sha256");
  const files = [...CONFIG_FILES, ...SOURCE_DIRS.flatMap((d) => sourceFiles(root, d, []))];
  for (const rel of files) {
    let content;
    try {
      content = fs.readFileSync(path.join(root, rel));
    } catch {
      continue;
    }
    hash.update(`${rel}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest("hex");
}

const STAMP_FILE = path.join("dist", "build-stamp.json");

/** The stamp dist/ was built from, or undefined when there is no build. */
function builtStamp(root) {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, STAMP_FILE), "utf8")).sources;
  } catch {
    return undefined;
  }
}

module.exports = { sourceStamp, builtStamp, STAMP_FILE };
