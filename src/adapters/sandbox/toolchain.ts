// The binaries the sandbox runs: the e2e toolchain (same cache as `npm run e2e`), built from Go
// modules the first time, and optionally a `pulumi` CLI already on PATH.
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

/** Build stages of scripts/e2e-toolchain.sh, in order, with the cold times measured on 2 cores (docs/e2e-toolchain.md). */
export const STAGES: readonly { name: string; binary: string; expectedSeconds: number }[] = [
  { name: "pulumi", binary: "pulumi", expectedSeconds: 432 },
  { name: "langhost", binary: "pulumi-language-nodejs", expectedSeconds: 17 },
  { name: "k8sprov", binary: "prov/pulumi-resource-kubernetes", expectedSeconds: 1299 },
  { name: "kube-apiserver", binary: "kube-apiserver", expectedSeconds: 638 },
  { name: "etcd", binary: "etcd", expectedSeconds: 18 },
  { name: "kube-controller-manager", binary: "kube-controller-manager", expectedSeconds: 204 },
  { name: "kube-scheduler", binary: "kube-scheduler", expectedSeconds: 120 },
];

/** Built too where the sandbox can run its data path (root: network namespaces); measured with the rest built. */
export const KUBE_PROXY_STAGE = { name: "kube-proxy", binary: "kube-proxy", expectedSeconds: 31 } as const;

/** Built too for `sandbox up --monitoring` (an optional stage of the script; measured cold: docs/e2e-toolchain.md). */
export const PROMETHEUS_STAGE = { name: "prometheus", binary: "prometheus", expectedSeconds: 1133 } as const;

/** The oldest pulumi CLI the project works with (the SDK pinned in package.json). */
export const MIN_PULUMI = [3, 248, 0] as const;

export function toolchainBinDir(projectDir: string): string {
  const out = execFileSync(path.join(projectDir, "scripts/e2e-toolchain.sh"), ["bin"], { encoding: "utf8" }).trim().split("\n");
  return out[out.length - 1] ?? "";
}

export function missingStages(bin: string, stages = STAGES): typeof STAGES {
  return stages.filter((s) => !fs.existsSync(path.join(bin, s.binary)));
}

/** `pulumi version` output such as `v3.250.1` → [3, 250, 1]; undefined when unparsable. */
export function parsePulumiVersion(text: string): [number, number, number] | undefined {
  const m = /v?(\d+)\.(\d+)\.(\d+)/.exec(text.trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export function atLeast(v: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    const a = v[i] ?? 0;
    const b = min[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/** A `pulumi` on PATH that is recent enough, with its version; undefined otherwise. */
export function pulumiOnPath(env: NodeJS.ProcessEnv): { file: string; version: string } | undefined {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, "pulumi");
    if (!fs.existsSync(file)) continue;
    try {
      const out = execFileSync(file, ["version"], { encoding: "utf8", env: { ...env, PULUMI_SKIP_UPDATE_CHECK: "true" }, timeout: 20_000 });
      const v = parsePulumiVersion(out);
      if (v && atLeast(v, MIN_PULUMI)) return { file, version: out.trim() };
    } catch {
      // not runnable: ignore it
    }
    return undefined;
  }
  return undefined;
}

const minutes = (s: number) => (s >= 90 ? `${Math.round(s / 60)} min` : `${s} s`);

/**
 * Builds the missing stages with scripts/e2e-toolchain.sh, saying first how long it should take
 * and then, per stage, its expected and elapsed time (the script's own log goes to `logFile`).
 */
export async function buildToolchain(projectDir: string, stages: typeof STAGES, say: (line: string) => void, logFile: string): Promise<void> {
  const total = stages.reduce((n, s) => n + s.expectedSeconds, 0);
  say(
    `toolchain: building ${stages.map((s) => s.name).join(", ")} from Go modules: expect about ${minutes(total)} on 2 cores (measured cold: 43.5 min for all; about 13 GB of disk). Only the first run builds; log: ${logFile}`,
  );
  const t0 = Date.now();
  const log = fs.openSync(logFile, "a");
  const child = spawn(path.join(projectDir, "scripts/e2e-toolchain.sh"), [], {
    cwd: projectDir,
    env: { ...process.env, E2E_ONLY: stages.map((s) => s.name).join(" ") },
    stdio: ["ignore", log, "pipe"],
  });
  let stageStart = Date.now();
  let buffer = "";
  child.stderr?.on("data", (d: Buffer) => {
    fs.writeSync(log, d);
    buffer += d.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      const started = /\] build (\S+) \.\.\./.exec(line);
      const built = /\] built (\S+) in (\d+)s/.exec(line);
      if (started?.[1]) {
        stageStart = Date.now();
        const expected = stages.find((s) => s.name === started[1])?.expectedSeconds;
        say(
          `toolchain: building ${started[1]} (expected ${expected ? minutes(expected) : "?"}; ${minutes(Math.round((Date.now() - t0) / 1000))} elapsed so far)`,
        );
      } else if (built?.[1]) {
        say(
          `toolchain: built ${built[1]} in ${minutes(Math.round((Date.now() - stageStart) / 1000))} (total ${minutes(Math.round((Date.now() - t0) / 1000))})`,
        );
      }
    }
  });
  const heartbeat = setInterval(() => say(`toolchain: still building (${minutes(Math.round((Date.now() - t0) / 1000))} elapsed)`), 120_000);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(heartbeat);
  fs.closeSync(log);
  if (code !== 0) throw new Error(`the toolchain build failed (exit ${code}); see ${logFile}`);
}
