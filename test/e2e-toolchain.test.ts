// scripts/e2e-toolchain.sh against a cache of its own (every stage present, so nothing is built).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";

const script = path.join(__dirname, "..", "scripts", "e2e-toolchain.sh");

describe("e2e-toolchain.sh", () => {
  it("a build of other stages (E2E_ONLY) leaves a stale language host in place: runs in progress use it, and only its own stage rebuilds it", () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-toolchain-"));
    try {
      const env = { ...process.env, UI_EXPOSURE_TOOLS_CACHE: cache };
      const bin = spawnSync("bash", [script, "bin"], { env, encoding: "utf8" }).stdout.trim();
      fs.mkdirSync(path.join(bin, "prov"), { recursive: true });
      for (const f of ["pulumi", "pulumi-language-nodejs", "prov/pulumi-resource-kubernetes"])
        fs.writeFileSync(path.join(bin, f), "#!/bin/sh\n", { mode: 0o755 });
      fs.writeFileSync(path.join(bin, ".pulumi-language-nodejs.sum"), "stale\n");
      const run = spawnSync("bash", [script], { env: { ...env, E2E_ONLY: "k8sprov" }, encoding: "utf8", timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(fs.existsSync(path.join(bin, "pulumi-language-nodejs"))).toBe(true);
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
