// The unit suite does not depend on the caller's environment: run in the shell `. .sandbox/env`
// prepares (PULUMI_*, KUBECONFIG, a pulumi on PATH), or an operator's (state credentials, an
// in-cluster service account, the portal's knobs), the tests that read an environment or start
// the CLI give the results they give in a clean one. test/support/hermetic-env.ts scrubs it.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { fakeKubeconfig } from "./support/fake-api";

const projectDir = path.resolve(__dirname, "..");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hermetic-env-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The tests that start the CLI, read stack outputs, a kubeconfig or process.env. */
const SENSITIVE = [
  "test/portal-command.test.ts",
  "test/status-command.test.ts",
  "test/probe-command.test.ts",
  "test/drift-command.test.ts",
  "test/access.test.ts",
  "test/kube-live.test.ts",
  "test/cli-main.test.ts",
];

/** A shell after `. .sandbox/env`, plus what an operator's shell may hold. */
function pollutedEnv(): NodeJS.ProcessEnv {
  const bin = path.join(tmp, "bin");
  fs.mkdirSync(bin);
  // The sandbox's pulumi, pointed at the sandbox's state: it knows no other stack.
  fs.writeFileSync(path.join(bin, "pulumi"), `#!/bin/sh\necho "error: no stack named 'x' found" >&2\nexit 255\n`, { mode: 0o755 });
  const kubeconfig = path.join(tmp, "kubeconfig");
  fs.writeFileSync(kubeconfig, fakeKubeconfig("https://127.0.0.1:1", { context: "sandbox", insecure: false }));
  return {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    PULUMI_HOME: path.join(tmp, "pulumi-home"),
    PULUMI_BACKEND_URL: `file://${path.join(tmp, "state")}`,
    PULUMI_CONFIG_PASSPHRASE: "polluted",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    KUBECONFIG: kubeconfig,
    KUBERNETES_SERVICE_HOST: "127.0.0.1",
    KUBERNETES_SERVICE_PORT: "1",
    EXPOSURE_ENV_FILE: path.join(tmp, "env-file"),
    EXPOSURE_STATE_DIR: path.join(tmp, "state-dir"),
    PORTAL_PROBE: "off",
    PORTAL_LISTEN: "127.0.0.1:1",
    PGPASSFILE: path.join(tmp, "pgpass"),
    AWS_ACCESS_KEY_ID: "polluted",
  };
}

describe("the unit suite in a polluted environment", () => {
  it("passes the tests that read an environment, in the shell `. .sandbox/env` prepares", () => {
    const r = spawnSync(
      process.execPath,
      [path.join(projectDir, "node_modules/vitest/vitest.mjs"), "run", ...SENSITIVE, "--reporter=dot", `--outputFile.json=${path.join(tmp, "unit.json")}`],
      { cwd: projectDir, env: pollutedEnv(), encoding: "utf8", timeout: 600_000, maxBuffer: 64 * 2 ** 20 },
    );
    expect(r.status, `${r.stdout.slice(-6000)}\n${r.stderr.slice(-3000)}`).toBe(0);
  }, 660_000);
});
