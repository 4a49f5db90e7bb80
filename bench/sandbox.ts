// The warm sandbox (toolchain built, dependencies installed): `exposure sandbox up` until its URLs
// answer, next to its floor measured in the same run, the loopback control plane alone
// (scripts/e2e-cluster.sh start with the scheduler). It runs in this folder, so it skips when a
// sandbox already runs here; each round ends with `sandbox down`.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { median, ms, table } from "./stats";

/** `rounds` timed rounds after one that is not counted (it fills caches). */
export async function measureSandbox(opts: { projectDir: string; rounds: number; log: (m: string) => void }) {
  const cwd = opts.projectDir;
  if (fs.existsSync(path.join(cwd, ".sandbox"))) throw new Error("a sandbox runs in this folder: npm run exposure -- sandbox down first");
  const run = (command: string, args: string[], env: NodeJS.ProcessEnv = process.env) => {
    const t0 = performance.now();
    const r = spawnSync(command, args, { cwd, encoding: "utf8", env, maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`${[command, ...args].join(" ")} failed: ${(r.stderr || r.stdout).trim().split("\n").slice(-3).join(" ")}`);
    return { ms: performance.now() - t0, stdout: r.stdout };
  };
  const exposure = (action: string) => run(process.execPath, [path.join(cwd, "bin/exposure.cjs"), "sandbox", action]);
  const upMs: number[] = [];
  const controlPlaneMs: number[] = [];
  for (let i = 0; i <= opts.rounds; i++) {
    opts.log(`sandbox: round ${i}/${opts.rounds}${i === 0 ? " (not counted)" : ""}`);
    const up = exposure("up");
    exposure("down");
    const start = run("bash", ["scripts/e2e-cluster.sh", "start"], { ...process.env, E2E_SCHEDULER: "1" });
    const dir = /^E2E_DIR=(.+)$/m.exec(start.stdout)?.[1];
    if (dir) run("bash", ["scripts/e2e-cluster.sh", "stop", dir]);
    if (i === 0) continue;
    upMs.push(up.ms);
    controlPlaneMs.push(start.ms);
  }
  return { upMs, controlPlaneMs, medianUpMs: median(upMs), medianControlPlaneMs: median(controlPlaneMs) };
}

export function sandboxMarkdown(r: Awaited<ReturnType<typeof measureSandbox>>): string[] {
  return [
    "`npm run sandbox` to working URLs, the toolchain built and the dependencies installed, next to its floor: the loopback control plane alone.",
    table(
      ["measure", "median ms", "runs (ms)", "ratio to the floor"],
      [
        ["sandbox up", ms(r.medianUpMs), r.upMs.map(ms).join(", "), (r.medianUpMs / r.medianControlPlaneMs).toFixed(1)],
        ["floor: control plane start", ms(r.medianControlPlaneMs), r.controlPlaneMs.map(ms).join(", "), "1.0"],
      ],
    ),
  ];
}
