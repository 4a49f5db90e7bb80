import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// bin/exposure.cjs runs the TypeScript sources when dist/ is missing or older than them (an
// operator who just edited a file). That path once crashed every command: the lazy import()
// of each command module was not hooked by tsx/cjs.
const projectDir = path.resolve(__dirname, "..");
let copy: string;

beforeAll(() => {
  copy = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-bin-"));
  for (const d of ["bin", "cli", "src", "components", "contract"]) fs.cpSync(path.join(projectDir, d), path.join(copy, d), { recursive: true });
  for (const f of ["package.json", "tsconfig.json", "Pulumi.yaml", "Pulumi.bench.yaml"]) fs.copyFileSync(path.join(projectDir, f), path.join(copy, f));
  fs.symlinkSync(path.join(projectDir, "node_modules"), path.join(copy, "node_modules"));
  // No dist/: the fallback is the only way to run.
});
afterAll(() => fs.rmSync(copy, { recursive: true, force: true }));

describe("bin/exposure.cjs without a build", () => {
  it("runs a command from the sources (its module loaded lazily), with the command's exit code", () => {
    const ok = spawnSync(process.execPath, [path.join(copy, "bin/exposure.cjs"), "check"], { cwd: copy, encoding: "utf8", timeout: 60_000 });
    expect(ok.stderr).toBe("");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("contract/endpoints.example.yaml: valid");

    const usage = spawnSync(process.execPath, [path.join(copy, "bin/exposure.cjs"), "check", "--nope"], { cwd: copy, encoding: "utf8", timeout: 60_000 });
    expect(usage.status).toBe(2);
    expect(usage.stderr).not.toContain("    at ");
  });
});
