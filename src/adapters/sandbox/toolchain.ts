// The binaries the sandbox runs: the e2e toolchain (same cache as `npm run e2e`), built from Go
// modules the first time, or the same versions a user already has (a `pulumi` CLI on PATH,
// envtest's binaries, the official Kubernetes server binaries, an installed provider plugin).
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
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

/** The versions scripts/e2e-toolchain.sh pins (`versions`): a binary found elsewhere must report exactly these. */
export interface PinnedVersions {
  pulumi: string;
  k8sprov: string;
  kubernetes: string;
  etcd: string;
}

export function pinnedVersions(projectDir: string): PinnedVersions {
  const out = execFileSync(path.join(projectDir, "scripts/e2e-toolchain.sh"), ["versions"], { encoding: "utf8" });
  const v = Object.fromEntries(out.split("\n").map((l) => l.split("=") as [string, string]));
  return { pulumi: v.pulumi ?? "", k8sprov: v.k8sprov ?? "", kubernetes: v.kubernetes ?? "", etcd: v.etcd ?? "" };
}

/** A binary of the user's the sandbox runs instead of building it. */
export interface Installed {
  binary: string;
  file: string;
  /** Where it was found: the variable, PATH, or the plugin folder. */
  source: string;
  version: string;
}

const ENVTEST_DEFAULT = "/usr/local/kubebuilder/bin";

/**
 * Where a stage's binary may already be, in order: envtest's per-binary variable
 * (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD), its folder (KUBEBUILDER_ASSETS, else its default
 * /usr/local/kubebuilder/bin), PATH (the official Kubernetes server binaries); for the provider,
 * the plugin Pulumi installed for the pinned version under PULUMI_HOME (default ~/.pulumi).
 */
export function candidates(binary: string, env: NodeJS.ProcessEnv, pinned: PinnedVersions): { file: string; source: string }[] {
  if (binary === "prov/pulumi-resource-kubernetes") {
    const home = env.PULUMI_HOME || path.join(env.HOME || os.homedir(), ".pulumi");
    return [{ file: path.join(home, "plugins", `resource-kubernetes-v${pinned.k8sprov}`, "pulumi-resource-kubernetes"), source: "the installed plugin" }];
  }
  const found: { file: string; source: string }[] = [];
  const variable = ({ "kube-apiserver": "TEST_ASSET_KUBE_APISERVER", etcd: "TEST_ASSET_ETCD" } as Record<string, string>)[binary];
  if (variable && env[variable]) found.push({ file: env[variable] as string, source: variable });
  if (variable) {
    found.push(
      env.KUBEBUILDER_ASSETS
        ? { file: path.join(env.KUBEBUILDER_ASSETS, binary), source: "KUBEBUILDER_ASSETS" }
        : { file: path.join(ENVTEST_DEFAULT, binary), source: "envtest's default folder" },
    );
  }
  for (const dir of (env.PATH ?? "").split(path.delimiter)) if (dir && path.isAbsolute(dir)) found.push({ file: path.join(dir, binary), source: "PATH" });
  return found;
}

/**
 * Whether a binary's `--version` output is the pinned version: `Kubernetes vX.Y.Z` for the
 * Kubernetes binaries, `etcd Version: X.Y.Z` for etcd. The provider plugin has no such flag: its
 * version is its plugin folder's, which Pulumi installed it under.
 */
export function reportedVersion(binary: string, output: string, pinned: PinnedVersions): string | undefined {
  const line = (re: RegExp) => re.exec(output)?.[1];
  if (binary === "etcd") return line(/^etcd Version: (\S+)$/m);
  if (binary.startsWith("kube-")) return line(/^Kubernetes v(\S+)$/m);
  if (binary === "prov/pulumi-resource-kubernetes") return pinned.k8sprov;
  return undefined;
}

const pinnedOf = (binary: string, pinned: PinnedVersions) =>
  binary === "etcd" ? pinned.etcd : binary === "prov/pulumi-resource-kubernetes" ? pinned.k8sprov : pinned.kubernetes;

/**
 * The stages' binaries the user already has at the pinned version (first candidate that runs and
 * reports it); `say` gets one line for each binary found at another version.
 */
export function findInstalled(stages: typeof STAGES, env: NodeJS.ProcessEnv, pinned: PinnedVersions, say: (line: string) => void): Installed[] {
  const found: Installed[] = [];
  for (const { binary } of stages) {
    for (const c of candidates(binary, env, pinned)) {
      try {
        if (!fs.statSync(c.file).isFile()) continue;
        fs.accessSync(c.file, fs.constants.X_OK);
      } catch {
        continue;
      }
      let output = "";
      if (!binary.startsWith("prov/")) {
        try {
          output = execFileSync(c.file, ["--version"], { encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "pipe"] });
        } catch (err) {
          output = String((err as { stdout?: string }).stdout ?? "");
        }
      }
      const version = reportedVersion(binary, output, pinned);
      if (version === pinnedOf(binary, pinned)) {
        found.push({ binary, file: c.file, source: c.source, version });
        break;
      }
      say(
        `toolchain: not using ${c.file} (${c.source}): it reports ${version ? `version ${version}` : "no version"}, the pinned one is ${pinnedOf(binary, pinned)}`,
      );
    }
  }
  return found;
}

/** A folder of links, one per stage's binary: the user's where found, else the toolchain's. What the sandbox runs. */
export function linkBinaries(dir: string, toolchainBin: string, stages: typeof STAGES, installed: readonly Installed[]): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "prov"), { recursive: true, mode: 0o700 });
  for (const { binary } of stages) {
    fs.symlinkSync(installed.find((i) => i.binary === binary)?.file ?? path.join(toolchainBin, binary), path.join(dir, binary));
  }
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
 * The line said when a stage starts: its place among the stages built, its own expected time,
 * and how long the whole build has run so far (never read as that stage's time).
 */
export function stageStartLine(name: string, stages: typeof STAGES, buildSeconds: number): string {
  const index = stages.findIndex((s) => s.name === name);
  const expected = stages[index]?.expectedSeconds;
  const place = index >= 0 ? `[${index + 1}/${stages.length}] ` : "";
  return `toolchain: ${place}building ${name}, expected ${expected ? minutes(expected) : "?"} (the build started ${minutes(buildSeconds)} ago)`;
}

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
        say(stageStartLine(started[1], stages, Math.round((Date.now() - t0) / 1000)));
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
