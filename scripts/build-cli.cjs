#!/usr/bin/env node
// `npm run build` (also run by `npm ci` / `npm install` through `prepare`): compiles the CLI
// and everything it loads to dist/ with tsconfig.build.json, then records which sources it
// was built from (bin/exposure.cjs refuses a dist/ that does not match them).
"use strict";
const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { builtStamp, sourceStamp, STAMP_FILE } = require("../bin/source-stamp.cjs");

const root = path.resolve(__dirname, "..");

/**
 * dist/vendor/code-cache.cjs: runs a bundle through vm.Script with V8's code cache (the
 * compiled functions of an earlier run, written at build time). A cache V8 rejects (another
 * Node.js version, a corrupt file) is ignored: the bundle is then compiled as usual, and the
 * cache written again from that run (best effort). Node.js 20 has no
 * module.enableCompileCache(); this is the same saving for the files that matter.
 */
const CODE_CACHE_LOADER = `"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const { createRequire, wrap } = require("node:module");
// V8 accepts a cache for any source of the same length: the cache file starts with the sha256
// of the bundle it was made from, and is used only for that very text.
const DIGEST_BYTES = 32;
// The project folder (dist/vendor/..): paths in messages are relative to it, wherever the command runs.
const root = path.join(__dirname, "..", "..");
/** Writes the cache whole or not at all (another run may be reading it): a temporary file, renamed. */
function writeCache(cacheFile, digest, script) {
  const temporary = \`\${cacheFile}.\${process.pid}.tmp\`;
  try {
    fs.writeFileSync(temporary, Buffer.concat([digest, script.createCachedData()]));
    fs.renameSync(temporary, cacheFile);
  } catch (err) {
    try {
      fs.rmSync(temporary, { force: true });
    } catch {}
    throw err;
  }
}
exports.load = (file, cacheFile) => {
  let script;
  const bundle = { exports: {} };
  let digest;
  let cachedData;
  try {
    const source = fs.readFileSync(file, "utf8");
    digest = crypto.createHash("sha256").update(source).digest();
    try {
      const raw = fs.readFileSync(cacheFile);
      if (raw.length > DIGEST_BYTES && raw.subarray(0, DIGEST_BYTES).equals(digest)) cachedData = raw.subarray(DIGEST_BYTES);
    } catch {}
    script = new vm.Script(wrap(source), { filename: file, ...(cachedData ? { cachedData } : {}) });
    script.runInThisContext()(bundle.exports, createRequire(file), bundle, file, path.dirname(file));
  } catch (err) {
    const damaged = new Error(\`\${path.relative(root, file).split(path.sep).join("/")} cannot be loaded (\${String(err && err.message).split("\\n")[0]}): dist/ is damaged; run \\\`npm run build\\\`\`);
    damaged.code = "EXPOSURE_DIST_DAMAGED";
    throw damaged;
  }
  // A cache that is missing, made from another text, or refused by V8 (another Node.js, a
  // corrupt file) is made again from this run, so the next one starts fast without a rebuild.
  // Best effort: a read-only install keeps working without it.
  if (cachedData === undefined || script.cachedDataRejected) {
    try {
      writeCache(cacheFile, digest, script);
    } catch {}
  }
  Object.defineProperty(bundle.exports, "__writeCodeCache", { value: () => writeCache(cacheFile, digest, script) });
  return bundle.exports;
};
`;
/**
 * A module that loads `<name>.bundle.cjs` next to it with its code cache `<name>.v8cache`.
 * `names`: its exports spelled out, for a module loaded with import(): Node.js finds a CommonJS
 * module's named exports by reading its text, not by running it.
 */
function bundleLoader(codeCacheModule, name, names) {
  const load = `require(${JSON.stringify(codeCacheModule)}).load(path.join(__dirname, ${JSON.stringify(`${name}.bundle.cjs`)}), path.join(__dirname, ${JSON.stringify(`${name}.v8cache`)}))`;
  const head = ['"use strict";', 'const path = require("node:path");'];
  if (!names) return [...head, `module.exports = ${load};`, ""].join("\n");
  return [
    ...head,
    `const loaded = ${load};`,
    'Object.defineProperty(exports, "__esModule", { value: true });',
    ...names.map((key) => `exports.${key} = loaded.${key};`),
    'Object.defineProperty(exports, "__writeCodeCache", { value: loaded.__writeCodeCache });',
    "",
  ].join("\n");
}

/** What every bundle of this build shares: one CommonJS file for the Node.js 20 the CLI runs on. */
const BUNDLE = { bundle: true, platform: "node", target: "node20", format: "cjs", legalComments: "none", logLevel: "error" };
// Hashed before compiling: a file edited during the build makes the stamp stale, never the reverse.
const stamp = sourceStamp(root);
// `prepare` (npm ci, npm install, and `npx exposure`, which links this folder as a package and
// prepares it again) leaves a dist/ built from these very sources and intact as it is: rebuilding
// deletes dist/ first, under any command already running from it (found by an outside tester:
// `npx exposure` killed a running sandbox's stand-in servers). `npm run build` always rebuilds.
if (process.argv.includes("--if-stale") && builtStamp(root) === stamp) {
  const { BUILD_FILES, damagedDist } = require("../bin/load-failure.cjs");
  if (fs.existsSync(path.join(root, BUILD_FILES)) && damagedDist(root) === undefined) {
    process.stdout.write("build: dist/ is up to date with the sources (npm run build rebuilds it)\n");
    process.exit(0);
  }
}
// A clean dist/: a deleted source must not leave its compiled module behind.
fs.rmSync(path.join(root, "dist"), { recursive: true, force: true });
const tsc = require.resolve("typescript/bin/tsc", { paths: [root] });
const r = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
if (r.status !== 0) {
  process.stderr.write("build: tsc failed: dist/ left without a stamp (bin/exposure.cjs will run the sources through tsx)\n");
  process.exit(r.status ?? 1);
}
const vendor = path.join(root, "dist", "vendor");
/**
 * client-node as one minified file (its ~900 ES modules cost about 1 s of CPU to load), and only
 * its KubeConfig (what src/adapters/kube-live.ts uses: contexts, credentials, TLS options). Its fetch-based API clients (makeApiClient, applyToFetchOptions) are left out: kube-live
 * speaks HTTP itself. They pulled in the generated API models and node-fetch's URL tables, two
 * thirds of the bundle; here they are stand-ins that say so if anything ever calls them.
 */
const kubeConfigOnly = {
  name: "kubeconfig-only",
  setup(build) {
    const fromClientNode = (importer) => importer.includes(`${path.sep}@kubernetes${path.sep}client-node${path.sep}dist${path.sep}config.js`);
    build.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) => (fromClientNode(args.importer) ? { path: "gen", namespace: "left-out" } : undefined));
    build.onResolve({ filter: /^node-fetch$/ }, (args) => (fromClientNode(args.importer) ? { path: "node-fetch", namespace: "left-out" } : undefined));
    build.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      loader: "js",
      contents:
        args.path === "node-fetch"
          ? // Node.js's own Headers, looked up only when used: touching it loads undici (~40 ms).
            "export class Headers { constructor(init) { return new globalThis.Headers(init); } }"
          : 'const leftOut = () => { throw new Error("client-node API clients are not in this bundle (scripts/build-cli.cjs)"); };\n' +
            "export const createConfiguration = leftOut;\nexport class ServerConfiguration { constructor() { leftOut(); } }\n",
    }));
  },
};

async function bundleClientNode() {
  await require("esbuild").build({
    ...BUNDLE,
    stdin: { contents: 'module.exports = require("@kubernetes/client-node/dist/config.js");', resolveDir: root, loader: "js" },
    minify: true,
    plugins: [kubeConfigOnly],
    outfile: path.join(vendor, "client-node.bundle.cjs"),
  });
  fs.writeFileSync(path.join(vendor, "code-cache.cjs"), CODE_CACHE_LOADER);
  fs.writeFileSync(path.join(vendor, "client-node.cjs"), bundleLoader("./code-cache.cjs", "client-node"));
  // Run it once so the cache holds the functions a connection compiles, not only the top level.
  const loaded = require(path.join(vendor, "client-node.cjs"));
  const kc = new loaded.KubeConfig();
  kc.loadFromString(
    "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\ncurrent-context: x\n",
  );
  await kc.applyToHTTPSOptions({ headers: {} });
  loaded.__writeCodeCache();
}

// The operator commands, each as one file with what it loads (our modules, zod, yaml) and a
// code cache: loading and compiling those modules was most of their start-up (docs/benchmarks.md,
// CLI start-up). What dist/cli/main.js itself loads stays shared, not copied (one UserError
// class, one EXIT table); client-node keeps its own bundle; render (the Pulumi SDK), portal and
// sandbox (files found next to their modules) stay as tsc compiled them.
const BUNDLED_COMMANDS = ["access", "check", "drift", "probe", "schema", "status"];
const dist = path.join(root, "dist");
const commandsDir = path.join(dist, "cli", "commands");
require(path.join(dist, "cli", "main.js"));
const sharedWithMain = new Set(Object.keys(require.cache).filter((file) => file.startsWith(dist + path.sep)));
// The bundles are built from the TypeScript sources, not from dist/: their ES imports let esbuild
// keep only what is used of zod (about 20 KB of it instead of 750 KB). A source whose compiled
// module main.js already loaded is left out of the bundle and required from dist/.
const shareWithMain = {
  name: "share-with-main",
  setup(build) {
    build.onResolve({ filter: /^\./ }, (args) => {
      const source = path.relative(root, path.resolve(args.resolveDir, args.path));
      const compiled = [`${source}.js`, path.join(source, "index.js")].map((f) => path.join(dist, f)).find((f) => sharedWithMain.has(f));
      if (compiled === undefined) return undefined;
      return { path: `./${path.relative(commandsDir, compiled).split(path.sep).join("/")}`, external: true };
    });
  },
};
async function bundleCommands() {
  for (const name of BUNDLED_COMMANDS) {
    const compiled = path.join(commandsDir, `${name}.js`);
    // Plugins need esbuild's asynchronous API.
    await require("esbuild").build({
      ...BUNDLE,
      entryPoints: [path.join(root, "cli", "commands", `${name}.ts`)],
      external: ["@pulumi/*", "@kubernetes/client-node"],
      plugins: [shareWithMain],
      outfile: path.join(commandsDir, `${name}.bundle.cjs`),
    });
    // cli/main.js loads each command with import(): the loader spells out what it exports.
    const names = Object.keys(require(compiled)).filter((key) => key !== "__esModule");
    delete require.cache[compiled];
    fs.writeFileSync(compiled, bundleLoader("../../vendor/code-cache.cjs", name, names));
    fs.rmSync(`${compiled}.map`, { force: true });
    // Loaded once here (module top levels only: nothing runs a command) to write its cache.
    require(compiled).__writeCodeCache();
  }
}

/**
 * The Pulumi program (index.ts and what it imports) as one file with a code cache, which
 * src/infra/program-loader.cjs runs when dist/ matches the sources: loading some 60 compiled
 * modules, zod and yaml one by one was a tenth of a `pulumi preview`'s CPU. The Pulumi SDK and
 * providers stay outside (one SDK instance, shared with @pulumi/kubernetes), and so do esbuild
 * (a native binary: the portal's bundle is built at program time) and client-node (kube-live
 * loads dist/vendor's bundle). Two folders deep in dist/, like the modules it holds, so their
 * paths relative to __dirname (dist/vendor, the project folder) still hold.
 */
const PROGRAM_DIR = path.join(dist, "src", "infra");
async function bundleProgram() {
  await require("esbuild").build({
    ...BUNDLE,
    entryPoints: [path.join(root, "index.ts")],
    external: ["@pulumi/*", "@kubernetes/client-node", "esbuild"],
    outfile: path.join(PROGRAM_DIR, "stack-program.bundle.cjs"),
  });
  const loader = path.join(PROGRAM_DIR, "stack-program.cjs");
  fs.writeFileSync(loader, bundleLoader("../../vendor/code-cache.cjs", "stack-program"));
  // Module top levels only (declaring the stack needs the engine); enough to skip compiling them.
  require(loader).__writeCodeCache();
}

bundleClientNode()
  .then(bundleCommands)
  .then(bundleProgram)
  .then(
    () => {
      // Each file's digest, for bin/load-failure.cjs to name what was damaged after a failure.
      const { BUILD_FILES, distDigests } = require("../bin/load-failure.cjs");
      fs.writeFileSync(path.join(root, BUILD_FILES), `${JSON.stringify(distDigests(root), null, 2)}\n`);
      fs.writeFileSync(path.join(root, STAMP_FILE), `${JSON.stringify({ sources: stamp }, null, 2)}\n`);
    },
    (err) => {
      process.stderr.write(
        `build: bundling the commands failed: dist/ left without a stamp (bin/exposure.cjs will run the sources through tsx)\n${err?.message ?? err}\n`,
      );
      process.exit(1);
    },
  );
