// A comment or a doc that names a file of this project names one that exists: a path in
// README.md, docs/, the product code, the scripts, bench/, the policy pack or the tests (`src/core/plan.ts`,
// `docs/commands.md`; `dist/...` and the pack's `policy-pack/dist/...` excepted: built) must resolve from the project folder.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const projectDir = path.resolve(__dirname, "..");
const ROOTS = ["src", "components", "cli", "bin", "scripts", "test", "docs", "bench", "policy-pack"];
const SCANNED = /\.(ts|cjs|mts|md|yaml)$/;
/** `src/core/plan.ts`, `docs/`, `test/e2e/` ...: a project folder, then a file with an extension or a folder with a slash. */
const PATH = new RegExp(`(?<![\\w./@$}-])((?:${ROOTS.join("|")})/(?:[\\w.-]+/)*(?:[\\w-]+\\.(?:ts|cjs|mts|js|md|yaml|sh|json)\\b|(?=[\\s\`'")|:,;]|$)))`, "g");

function scannedFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(projectDir, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    // The policy pack's own dependencies and build.
    if (entry.name === "node_modules" || entry.name === "dist") continue;
    if (entry.isDirectory()) out.push(...scannedFiles(rel));
    else if (SCANNED.test(entry.name)) out.push(rel);
  }
  return out;
}

/** A Markdown link to a file, relative to the document: `[x](../src/core/plan.ts#L3)`. */
const LINK = /\]\((?![a-z]+:|#)([^)\s#]+)/g;

/** The policy pack's build and dependencies, there only once `npm ci --prefix policy-pack` ran. */
const BUILT = /^policy-pack\/(dist|node_modules)\//;

/** Every project path named in `text` that does not exist, as `file:line: path`. */
function missingPaths(file: string, text: string, exists: (p: string) => boolean): string[] {
  const missing: string[] = [];
  text.split("\n").forEach((line, i) => {
    const named = [...line.matchAll(PATH)].map((m) => m[1] as string);
    if (file.endsWith(".md")) named.push(...[...line.matchAll(LINK)].map((m) => path.posix.join(path.posix.dirname(file), m[1] as string)));
    for (const p of named) if (!BUILT.test(p) && !exists(p)) missing.push(`${file}:${i + 1}: ${p}`);
  });
  return missing;
}

const onDisk = (p: string) => fs.existsSync(path.join(projectDir, p));

describe("file references", () => {
  it("every project file named in the docs, comments and messages exists", () => {
    const files = ["README.md", "index.ts", "Pulumi.yaml", ...ROOTS.flatMap(scannedFiles)].filter((f) => f !== "test/file-references.test.ts");
    const missing = files.flatMap((f) => missingPaths(f, fs.readFileSync(path.join(projectDir, f), "utf8"), onDisk));
    expect(missing).toEqual([]);
  });

  it("finds a path that does not exist, and only those", () => {
    const text = "// planned by src/core/plan.ts (was src/plan.ts); see `docs/cilium.md` and src/cilium/\nhttps://example.org/src/x.ts and $HOME/bin/x.sh";
    expect(missingPaths("a.ts", text, onDisk)).toEqual(["a.ts:1: src/plan.ts", "a.ts:1: src/cilium/"]);
    expect(missingPaths("docs/a.md", "[plan](../src/core/plan.ts#L1), [old](../src/plan.ts), [web](https://x/y.md)", onDisk)).toEqual([
      "docs/a.md:1: src/plan.ts",
    ]);
    // Built or installed by `npm ci --prefix policy-pack`, absent from a clone until then (the README's commands do not run it).
    expect(missingPaths("docs/a.md", "bundled into policy-pack/dist/index.js from policy-pack/node_modules/", () => false)).toEqual([]);
  });
});
