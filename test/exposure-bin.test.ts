// bin/exposure.cjs as a script reads it: through a pipe, at the reader's pace. (build.test.ts
// covers the rebuild; this one runs the project's own dist/, so it stays fast.)
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const projectDir = path.resolve(__dirname, "..");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-bin-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs the command with its stdout a pipe that bash's reader leaves unread for `stallMs`. */
function runSlowReader(args: string[], stallMs: number): { stdout: string; code: number | null } {
  const quoted = [process.execPath, path.join(projectDir, "bin/exposure.cjs"), ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const script = `${quoted} 2>/dev/null | { sleep ${stallMs / 1000}; cat; }; exit \${PIPESTATUS[0]}`;
  const run = spawnSync("bash", ["--norc", "-c", script], { cwd: projectDir, encoding: "utf8", maxBuffer: 64 * 2 ** 20, timeout: 60_000 });
  return { stdout: run.stdout, code: run.status };
}

describe("bin/exposure.cjs", () => {
  it("writes a --json document larger than the pipe buffer in full before it exits, with the command's exit code", () => {
    // URLs that fail without any request (not http), so the document is large and quick to make.
    const urls = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`e${i}`, `file:///nothing/${i}`]));
    const outputs = path.join(dir, "outputs.json");
    fs.writeFileSync(outputs, JSON.stringify({ urls }));
    const { stdout, code } = runSlowReader(["probe", "--outputs", outputs, "--json"], 500);
    expect(stdout.length).toBeGreaterThan(256 * 1024);
    const doc = JSON.parse(stdout) as { kind: string; results: unknown[] };
    expect(doc.kind).toBe("Probe");
    expect(doc.results).toHaveLength(3000);
    expect(code).toBe(4);
  }, 60_000);

  it("exits with the command's code, without a trace, when the reader stops early (| head)", () => {
    const outputs = path.join(dir, "outputs.json");
    const quoted = [process.execPath, path.join(projectDir, "bin/exposure.cjs"), "probe", "--outputs", outputs].map((a) => `'${a}'`).join(" ");
    const run = spawnSync("bash", ["--norc", "-c", `${quoted} | head -c 100 >/dev/null; exit \${PIPESTATUS[0]}`], {
      cwd: projectDir,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(run.stderr).not.toContain("EPIPE");
    expect(run.stderr).not.toContain("    at ");
    expect(run.status).toBe(4);
  }, 60_000);

  it("exits 1 with one line when its output cannot be written (a full disk), never 0 over an empty file (found by an outside tester)", () => {
    for (const args of [["schema"], ["check", "--json"]]) {
      const full = fs.openSync("/dev/full", "w");
      try {
        const run = spawnSync(process.execPath, [path.join(projectDir, "bin/exposure.cjs"), ...args], {
          cwd: projectDir,
          encoding: "utf8",
          stdio: ["ignore", full, "pipe"],
          timeout: 60_000,
        });
        expect(run.status, args.join(" ")).toBe(1);
        expect(run.stderr.trim().split("\n"), args.join(" ")).toEqual(["exposure: cannot write the output: ENOSPC: no space left on device, write"]);
      } finally {
        fs.closeSync(full);
      }
    }
  }, 60_000);
});
