// scripts/e2e-toolchain.sh, run against a fake `go` (one that, like the real one, cannot work
// in a deleted directory) and a throw-away cache: which stages run, where, and what they touch.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const SCRIPT = path.resolve(__dirname, "../scripts/e2e-toolchain.sh");
const KEY = "pulumi-3.248.0_k8sprov-4.25.0_k8s-1.37.2_etcd-3.7.3";
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

// The go subcommands the prometheus and cilium stages use; `build -o OUT` writes an executable
// (making OUT's folder, as go build does).
const FAKE_GO = `#!/bin/bash
/bin/pwd -P >/dev/null 2>&1 || { echo "go: cannot determine current directory: getwd: no such file or directory" >&2; exit 1; }
case "$1 $2" in
  "mod init") touch go.mod ;;
  "mod download") printf '{\\n\\t"Path": "x",\\n\\t"Dir": "%s",\\n}\\n' "$FAKE_MODULE" ;;
  "build "*) while [[ $# -gt 0 && "$1" != -o ]]; do shift; done; mkdir -p "$(dirname "$2")"; printf '#!/bin/sh\\n' > "$2"; chmod +x "$2" ;;
esac
exit 0
`;

function sandbox() {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-toolchain-test-"));
  dirs.push(d);
  fs.mkdirSync(path.join(d, "path"));
  fs.writeFileSync(path.join(d, "path/go"), FAKE_GO, { mode: 0o755 });
  const mod = path.join(d, "module");
  for (const sub of ["bpf", "install/kubernetes/cilium", "pkg/k8s/apis/cilium.io/client/crds/v2"]) fs.mkdirSync(path.join(mod, sub), { recursive: true });
  const bin = path.join(d, "cache", KEY, "bin");
  const run = (only: string) =>
    spawnSync("bash", [SCRIPT], {
      encoding: "utf8",
      cwd: d,
      env: {
        ...process.env,
        PATH: `${path.join(d, "path")}:${process.env.PATH}`,
        UI_EXPOSURE_TOOLS_CACHE: path.join(d, "cache"),
        E2E_ONLY: only,
        FAKE_MODULE: mod,
      },
      timeout: 60_000,
    });
  return { bin, run };
}

describe("e2e-toolchain.sh", () => {
  it("builds the Cilium stage after a cold Prometheus stage, whose work folder is gone by then (each stage starts in the cache's work folder)", () => {
    const { bin, run } = sandbox();
    const r = run("prometheus cilium");
    expect(r.stderr).not.toContain("getwd");
    expect(r.status, r.stderr).toBe(0);
    for (const b of ["promtool", "prometheus", "cilium-agent", "cilium-dbg", "cilium-cni", "cilium-health-responder"])
      expect(fs.existsSync(path.join(bin, b)), b).toBe(true);
  });

  it("E2E_ONLY naming one stage leaves every other stage's binary alone, even one its stamp calls stale", () => {
    const { bin, run } = sandbox();
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(bin, "pulumi-language-nodejs"), "#!/bin/sh\n", { mode: 0o755 });
    fs.writeFileSync(path.join(bin, ".pulumi-language-nodejs.sum"), "stale\n");
    const r = run("cilium");
    expect(r.status, r.stderr).toBe(0);
    expect(fs.existsSync(path.join(bin, "pulumi-language-nodejs"))).toBe(true);
    expect(fs.existsSync(path.join(bin, "cilium-agent"))).toBe(true);
  });
  it("a build of other stages (E2E_ONLY) leaves a stale language host in place: runs in progress use it, and only its own stage rebuilds it", () => {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-toolchain-"));
    try {
      const env = { ...process.env, UI_EXPOSURE_TOOLS_CACHE: cache };
      const bin = spawnSync("bash", [SCRIPT, "bin"], { env, encoding: "utf8" }).stdout.trim();
      fs.mkdirSync(path.join(bin, "prov"), { recursive: true });
      for (const f of ["pulumi", "pulumi-language-nodejs", "prov/pulumi-resource-kubernetes"])
        fs.writeFileSync(path.join(bin, f), "#!/bin/sh\n", { mode: 0o755 });
      fs.writeFileSync(path.join(bin, ".pulumi-language-nodejs.sum"), "stale\n");
      const run = spawnSync("bash", [SCRIPT], { env: { ...env, E2E_ONLY: "k8sprov" }, encoding: "utf8", timeout: 60_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(fs.existsSync(path.join(bin, "pulumi-language-nodejs"))).toBe(true);
    } finally {
      fs.rmSync(cache, { recursive: true, force: true });
    }
  });
});
