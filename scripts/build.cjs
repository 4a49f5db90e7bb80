#!/usr/bin/env node
// `npm run build` (also `npm ci` through `prepare`, and bin/exposure.cjs or the Pulumi program
// when dist/ is missing or older than the sources): the TypeScript sources to dist/ with esbuild
// (type-checking is `npm run typecheck`), then the bundles that make start-up cheap. dist/ is
// built aside and put in place whole, so a command running from the old one keeps its files.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const SOURCE_DIRS = ["cli", "src", "components"];
const STAMP = path.join("dist", "build-stamp.json");
/** The files' sizes and times when built (filesMeta), apart from the stamp, which the content alone decides. */
const META = path.join("dist", "build-meta.txt");
/**
 * The Pulumi program as one file (components/program-loader.cjs runs it). Two folders deep, like
 * the compiled modules it holds, so their paths from __dirname (dist/vendor...) still hold.
 */
const PROGRAM_BUNDLE = "dist/bundles/program/stack-program.cjs";

/** The TypeScript sources under `dir`, sorted. */
const sourceFiles = (root, dir) => filesUnder(root, dir).filter((f) => f.endsWith(".ts"));

/** sha256 of files (paths and content, not mtimes: a copied tree still matches its build). */
function filesHash(root, files) {
  const hash = require("node:crypto").createHash("sha256");
  for (const rel of files) {
    let content;
    try {
      content = fs.readFileSync(path.join(root, rel));
    } catch {
      continue;
    }
    hash.update(`${rel}\0${content.length}\0`).update(content);
  }
  return hash.digest("hex");
}

/** The sources and this script. */
const sourceList = (root) => ["index.ts", "scripts/build.cjs", ...SOURCE_DIRS.flatMap((d) => sourceFiles(root, d))];

/** The hash of the sources and of this script. */
const sourceStamp = (root) => filesHash(root, sourceList(root));

/**
 * Path, size and modification time of each file: what every start compares first. Equal to the
 * stamp's, the files are the ones the build hashed and nothing is read (a tenth of `exposure
 * check`'s CPU); any difference (an edit, a copied tree) and the hashes decide.
 */
function filesMeta(root, files) {
  return files
    .map((rel) => {
      try {
        const stat = fs.statSync(path.join(root, rel));
        return `${rel}\0${stat.size}\0${stat.mtimeMs}`;
      } catch {
        return `${rel}\0-`;
      }
    })
    .join("\n");
}

/** Every file under `dir` (relative to `base`), sorted. */
function filesUnder(base, dir) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(base, dir), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .map((e) => ({ e, rel: dir ? `${dir}/${e.name}` : e.name }))
    .sort((a, b) => (a.rel < b.rel ? -1 : 1))
    .flatMap(({ e, rel }) => (e.isDirectory() ? filesUnder(base, rel) : [rel]));
}

/** What the build wrote. */
const outputList = (dist) => filesUnder(dist, "").filter((f) => f !== "build-stamp.json" && f !== "build-meta.txt");

/** The hash of what the build wrote (a truncated or edited module of dist/ changes it). */
const outputStamp = (dist) => filesHash(dist, outputList(dist));

const NO_BUILD = "no build in dist/";
const OLDER = "dist/ is older than the sources";
const CHANGED = "dist/ was changed after it was built";

/** Why dist/ cannot run as it is (no build, older than the sources, changed since built), or undefined. */
function staleBuild(root) {
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(path.join(root, STAMP), "utf8"));
  } catch {
    return NO_BUILD;
  }
  const dist = path.join(root, "dist");
  let meta;
  try {
    meta = fs.readFileSync(path.join(root, META), "utf8");
  } catch {}
  if (meta === `${filesMeta(root, sourceList(root))}\n\n${filesMeta(dist, outputList(dist))}`) return undefined;
  if (stamp?.sources !== sourceStamp(root)) return OLDER;
  return stamp.outputs === outputStamp(dist) ? undefined : CHANGED;
}

/** What every bundle shares: one CommonJS file for Node.js 20 and later. */
const BUNDLE = { bundle: true, platform: "node", target: "node20", format: "cjs", legalComments: "none", logLevel: "silent" };

/**
 * The @kubernetes/client-node release the plugin below was written for: it leaves out files by
 * their path inside that release. Another release may move them; the build then stops and says so.
 */
const CLIENT_NODE_VERSION = "1.4.0";

/** Why the installed client-node is not the one kubeConfigOnly was written for, or undefined. */
function clientNodeProblem(root) {
  let version;
  try {
    version = JSON.parse(fs.readFileSync(path.join(root, "node_modules", "@kubernetes", "client-node", "package.json"), "utf8")).version;
  } catch {
    return "@kubernetes/client-node is not installed: run `npm ci`";
  }
  if (version === CLIENT_NODE_VERSION) return undefined;
  return `@kubernetes/client-node is ${version}, but scripts/build.cjs leaves out parts of ${CLIENT_NODE_VERSION} by file path: check that its dist/config.js still reaches the API clients only through ./gen/index.js and node-fetch, then set CLIENT_NODE_VERSION`;
}

/**
 * client-node's KubeConfig alone (what src/adapters/kube-live.ts uses): its ~900 ES modules cost
 * about 1 s of CPU to load. Its fetch-based API clients (kube-live speaks HTTP itself), two
 * thirds of it, are left out: stand-ins that say so if anything ever calls them.
 */
const kubeConfigOnly = {
  name: "kubeconfig-only",
  setup(build) {
    const fromConfig = (importer) => importer.endsWith(path.join("@kubernetes", "client-node", "dist", "config.js"));
    for (const filter of [/^\.\/gen\/index\.js$/, /^node-fetch$/]) {
      build.onResolve({ filter }, (args) => (fromConfig(args.importer) ? { path: args.path, namespace: "left-out" } : undefined));
    }
    build.onLoad({ filter: /.*/, namespace: "left-out" }, (args) => ({
      loader: "js",
      contents:
        args.path === "node-fetch"
          ? // Node.js's own Headers, looked up only when used: touching it loads undici (~40 ms).
            "export class Headers { constructor(init) { return new globalThis.Headers(init); } }"
          : 'const leftOut = () => { throw new Error("client-node API clients are not in this bundle (scripts/build.cjs)"); };\n' +
            "export const createConfiguration = leftOut;\nexport class ServerConfiguration { constructor() { leftOut(); } }\n",
    }));
  },
};

/**
 * The commands whose spec says `bundle` (cli/specs.ts, the registry of commands, compiled here in
 * memory): each is bundled with what it loads (our modules, zod, yaml). Each bundle has its own
 * copy of UserError: cli/main.ts knows one by its mark (isUserError), not by its class.
 */
function bundledCommands(esbuild, root) {
  const { outputFiles } = esbuild.buildSync({ ...BUNDLE, absWorkingDir: root, entryPoints: ["cli/specs.ts"], write: false });
  const module = { exports: {} };
  new Function("module", "exports", "require", outputFiles[0].text)(module, module.exports, require);
  return Object.values(module.exports.SPECS)
    .filter((spec) => spec.bundle)
    .map((spec) => spec.name);
}

async function buildInto(root, out) {
  const esbuild = require("esbuild");
  const outdated = clientNodeProblem(root);
  if (outdated) throw new Error(outdated);
  const base = { absWorkingDir: root, platform: "node", target: "node20", format: "cjs", logLevel: "silent" };
  const sources = ["index.ts", ...SOURCE_DIRS.flatMap((d) => sourceFiles(root, d))];
  const main = path.join("cli", "main.ts");
  await esbuild.build({ ...base, entryPoints: sources.filter((f) => f !== main.split(path.sep).join("/")), outdir: out, outbase: root });
  // main's import() of each command as require(): Node.js's import() of a CommonJS bundle first
  // scans its whole text for export names (about 0.15 s for a command's bundle).
  await esbuild.build({ ...base, entryPoints: [main], outdir: out, outbase: root, supported: { "dynamic-import": false } });
  await esbuild.build({
    ...BUNDLE,
    absWorkingDir: root,
    stdin: { contents: 'module.exports = require("@kubernetes/client-node/dist/config.js");', resolveDir: root, loader: "js" },
    minify: true,
    plugins: [kubeConfigOnly],
    outfile: path.join(out, "vendor", "client-node.cjs"),
  });
  for (const name of bundledCommands(esbuild, root)) {
    await esbuild.build({
      ...BUNDLE,
      absWorkingDir: root,
      entryPoints: [path.join(root, "cli", "commands", `${name}.ts`)],
      external: ["@pulumi/*", "@kubernetes/client-node"],
      outfile: path.join(out, "cli", "commands", `${name}.js`),
      allowOverwrite: true,
    });
  }
  // The Pulumi program (index.ts and what it imports) as one file: loading some 60 modules, zod
  // and yaml one by one was a tenth of a `pulumi preview`'s CPU. The SDK and providers stay
  // outside (one SDK instance, shared with @pulumi/kubernetes), esbuild too (a native binary).
  await esbuild.build({
    ...BUNDLE,
    absWorkingDir: root,
    entryPoints: [path.join(root, "index.ts")],
    external: ["@pulumi/*", "@kubernetes/client-node", "esbuild"],
    outfile: path.join(out, path.relative("dist", PROGRAM_BUNDLE)),
  });
}

/** esbuild's first error as `file:line:col: text` from the project folder (1-based column), else the message. */
function firstError(err, root) {
  const first = Array.isArray(err?.errors) ? err.errors[0] : undefined;
  if (!first?.location) return String(err?.message ?? err).split("\n")[0];
  const file = path.relative(root, path.resolve(root, first.location.file)).split(path.sep).join("/");
  return `${file}:${first.location.line}:${first.location.column + 1}: ${first.text}; fix the source (or restore it: \`git checkout -- ${file}\`)`;
}

/**
 * The exit table, EXIT of src/core/findings.ts, read from its source: bin/exposure.cjs and this
 * build exit before anything is compiled.
 */
function exitTable(root = path.resolve(__dirname, "..")) {
  const source = fs.readFileSync(path.join(root, "src", "core", "findings.ts"), "utf8");
  const table = /^export const EXIT = \{$([^}]*)^\}/m.exec(source)?.[1] ?? "";
  return Object.fromEntries([...table.matchAll(/^\s+([A-Z]+): (\d+),$/gm)].map(([, name, code]) => [name, Number(code)]));
}

/** How the build's one line starts when the project folder cannot be written (a read-only checkout). */
const UNWRITABLE = "cannot write dist/";

/** Builds dist/ for the sources of `root`: resolves, or rejects with one line. */
async function build(root) {
  // Before compiling: a file edited meanwhile makes the stamp stale, never the reverse.
  const sourceMeta = filesMeta(root, sourceList(root));
  const stamp = sourceStamp(root);
  const dist = path.join(root, "dist");
  const out = `${dist}.${process.pid}.tmp`;
  try {
    fs.rmSync(out, { recursive: true, force: true });
    fs.mkdirSync(out);
  } catch (err) {
    // Said before esbuild tries: it would answer with one error per file it could not write.
    throw new Error(`${UNWRITABLE} in ${root} (${err.code ?? err.message}): build it where the project folder is writable (npm run build)`);
  }
  try {
    await buildInto(root, out);
    // Renamed into place below, the files keep their sizes and times: the meta still holds.
    fs.writeFileSync(path.join(out, "build-meta.txt"), `${sourceMeta}\n\n${filesMeta(out, outputList(out))}`);
    fs.writeFileSync(path.join(out, "build-stamp.json"), `${JSON.stringify({ sources: stamp, outputs: outputStamp(out) })}\n`);
    const old = `${dist}.${process.pid}.old`;
    if (fs.existsSync(dist)) fs.renameSync(dist, old);
    fs.renameSync(out, dist);
    fs.rmSync(old, { recursive: true, force: true });
  } catch (err) {
    fs.rmSync(out, { recursive: true, force: true });
    // Another process built the same sources meanwhile (two commands started at once).
    if (staleBuild(root) === undefined && !err?.errors) return;
    throw new Error(firstError(err, root));
  }
}

/**
 * Makes dist/ fit to run, in a child process (for code that cannot wait on a promise): builds it
 * again when it is missing, older than the sources or changed since it was built. Answers
 * `{ error }` (one line) when nothing can run, `{ warning }` when the old build runs because a
 * read-only checkout cannot be rebuilt (a changed build never runs), else `{}`.
 */
function ensureBuilt(root) {
  const stale = staleBuild(root);
  if (stale === undefined) return {};
  const r = require("node:child_process").spawnSync(process.execPath, [__filename], { cwd: root, encoding: "utf8" });
  if (r.status === 0) return {};
  const why = r.stderr.trim().replace(/^build: /, "") || `the build failed (exit ${r.status})`;
  if (!why.startsWith(UNWRITABLE)) return { error: why };
  if (stale === OLDER) return { warning: `${stale} and ${why}; running the old build` };
  return { error: `${stale} and ${why}` };
}

module.exports = { build, clientNodeProblem, ensureBuilt, exitTable, PROGRAM_BUNDLE, sourceStamp, staleBuild };

if (require.main === module) {
  const root = path.resolve(__dirname, "..");
  // `prepare` (npm ci, npm install, and `npx exposure` preparing this folder again) leaves alone
  // a dist/ built from these sources: a command may be running from it. `npm run build` rebuilds.
  if (process.argv.includes("--if-stale") && staleBuild(root) === undefined) {
    process.stdout.write("build: dist/ is up to date with the sources (npm run build rebuilds it)\n");
  } else {
    build(root).catch((err) => {
      process.stderr.write(`build: ${err.message}\n`);
      process.exitCode = exitTable(root).ERROR;
    });
  }
}
