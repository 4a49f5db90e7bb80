// Bundles the portal server (src/portal/main.ts, client-node included) into one CommonJS file at program time, shipped in a ConfigMap: the cluster runs a
// stock Node.js image, and no image is built or pushed.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { gzipSync } from "node:zlib";
import { buildSync } from "esbuild";
import { UserError } from "../core/errors";
import { PORTAL_FILES } from "../core/portal/spec";

/** Kubernetes refuses a ConfigMap whose data and binaryData exceed 1 MiB. */
const CONFIGMAP_LIMIT = 1024 * 1024;

export interface PortalBundle {
  /** `portal.js`: the plain-JS loader the container runs. */
  loader: string;
  /** `server.js.gz`: the bundle, gzipped (4 MB raw, client-node's models; ~0.5 MB gzipped). */
  gzipped: Buffer;
  /** sha256 of the uncompressed bundle: shown in outputs/annotations to tell builds apart. */
  sha256: string;
  /** This project's version (package.json), for the portal's /metrics build info. */
  version: string;
}

/** The loader: runs the bundle next to it, gunzipped, as a module whose `module` is the loader's, so its `require.main === module` starts the server. */
export const LOADER = `"use strict";
// ui-exposure portal loader: the server bundle is gzipped to fit the 1 MiB ConfigMap limit.
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const zlib = require("node:zlib");
const file = path.join(__dirname, "${PORTAL_FILES.bundle.replace(/\.gz$/, "")}");
const code = zlib.gunzipSync(fs.readFileSync(file + ".gz")).toString("utf8");
vm.compileFunction(code, ["exports", "require", "module", "__filename", "__dirname"], { filename: file })(exports, require, module, file, __dirname);
`;

let cached: PortalBundle | undefined;

/** Builds the bundle (once per process: the program, a test run and `render` may ask several times). */
export function bundlePortalServer(): PortalBundle {
  if (cached) return cached;
  // The project folder, from the TypeScript source or dist/: always built from the sources, so render and up produce the same bytes.
  const candidates = [path.resolve(__dirname, "../.."), path.resolve(__dirname, "../../..")];
  const root = candidates.find((dir) => fs.existsSync(path.join(dir, "src", "portal", "main.ts"))) ?? (candidates[0] as string);
  const entry = path.join(root, "src", "portal", "main.ts");
  let code: Uint8Array;
  try {
    const result = buildSync({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      target: "node20",
      format: "cjs",
      // No source paths in minified output: every checkout builds the same bytes (no spurious ConfigMap diff between two operators).
      minify: true,
      legalComments: "none",
      write: false,
      logLevel: "silent",
      absWorkingDir: root,
    });
    const out = result.outputFiles[0];
    if (!out) throw new Error("esbuild produced no output");
    code = out.contents;
  } catch (err) {
    throw new UserError(`cannot bundle the portal server (${entry}): ${(err as Error).message.split("\n")[0]}`);
  }
  // mtime 0 in the gzip header (Node's default) keeps the compressed bytes reproducible.
  const gzipped = gzipSync(code, { level: 9 });
  if (gzipped.length + LOADER.length > CONFIGMAP_LIMIT * 0.9) {
    throw new UserError(`the portal bundle is ${gzipped.length} bytes gzipped: too close to the 1 MiB ConfigMap limit`);
  }
  const version = (JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as { version?: unknown }).version;
  cached = { loader: LOADER, gzipped, sha256: createHash("sha256").update(code).digest("hex"), version: typeof version === "string" ? version : "unknown" };
  return cached;
}
