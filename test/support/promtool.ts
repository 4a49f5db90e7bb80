// promtool, built from the Prometheus Go module by the e2e toolchain's `prometheus` stage
// (scripts/e2e-toolchain.sh): $PROMTOOL when set, else the toolchain's bin folder. Tests that
// need it skip, saying why, where it is missing (.ci/run always builds it first).
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../..");

function toolchainBin(): string | undefined {
  const r = spawnSync("bash", [path.join(ROOT, "scripts/e2e-toolchain.sh"), "bin"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The promtool binary, or why there is none. */
export function findPromtool(): { bin: string } | { missing: string } {
  const fromEnv = process.env.PROMTOOL;
  if (fromEnv) return fs.existsSync(fromEnv) ? { bin: fromEnv } : { missing: `PROMTOOL=${fromEnv} does not exist` };
  const dir = toolchainBin();
  const bin = dir ? path.join(dir, "promtool") : undefined;
  if (bin && fs.existsSync(bin)) return { bin };
  return {
    missing: `promtool not found (PROMTOOL unset, nothing at ${bin ?? "the toolchain's bin folder"}); build it with E2E_ONLY=prometheus scripts/e2e-toolchain.sh`,
  };
}

export interface ToolRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function promtool(bin: string, args: string[], input?: string, cwd?: string): ToolRun {
  const r = spawnSync(bin, args, { encoding: "utf8", input, cwd, timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
