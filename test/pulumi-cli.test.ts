import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pulumiFailure, pulumiNotFound, readStackOutputs, runPulumi } from "../src/adapters/pulumi-cli";

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-cli-"));
  // What the pinned CLI prints when its PostgreSQL backend refuses the password given in the URL.
  fs.writeFileSync(
    path.join(dir, "pulumi"),
    "#!/bin/sh\necho 'error: unable to open bucket postgres://team:Hunter2-secret@127.0.0.1:5432/state: failed to ping PostgreSQL: pq: password authentication failed for user \"team\" (28P01)' >&2\nexit 1\n",
    { mode: 0o755 },
  );
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("readStackOutputs", () => {
  it("passes on the CLI's error line with the backend URL's password hidden", async () => {
    const failure = readStackOutputs({ projectDir: dir, env: { ...process.env, PATH: `${dir}:${process.env.PATH}` } }, "dirqual");
    await expect(failure).rejects.toThrow(
      'pulumi stack output --stack dirqual failed: error: unable to open bucket postgres://team:****@127.0.0.1:5432/state: failed to ping PostgreSQL: pq: password authentication failed for user "team" (28P01)',
    );
    await expect(failure).rejects.not.toThrow(/Hunter2/);
  });
});

describe("readStackOutputs of a stack the backend does not have", () => {
  it("says the stack is not in this backend and what to check, with the sandbox's env hint where a sandbox runs and its backend is not selected", async () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), "pulumi-cli-project-"));
    const bin = path.join(project, "bin");
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "pulumi"), "#!/bin/sh\necho \"error: no stack named 'sandbox' found\" >&2\nexit 255\n", { mode: 0o755 });
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH}` };
    delete env.PULUMI_BACKEND_URL;
    const said =
      "pulumi stack output --stack sandbox failed: error: no stack named 'sandbox' found: the stack is not in this backend; check PULUMI_BACKEND_URL or `pulumi login`";
    try {
      await expect(readStackOutputs({ projectDir: project, env }, "sandbox")).rejects.toMatchObject({ message: said });
      fs.mkdirSync(path.join(project, ".sandbox"));
      fs.writeFileSync(path.join(project, ".sandbox/env"), "");
      const rel = path.relative(process.cwd(), path.join(project, ".sandbox/env"));
      await expect(readStackOutputs({ projectDir: project, env }, "sandbox")).rejects.toMatchObject({
        message: `${said} (a sandbox runs in this folder: run \`. ${rel}\` in this shell first; it sets PULUMI_BACKEND_URL to the sandbox's)`,
      });
      // The sandbox's backend selected: its env is loaded, no hint.
      const loaded = { ...env, PULUMI_BACKEND_URL: `file://${path.join(project, ".sandbox", "state")}` };
      await expect(readStackOutputs({ projectDir: project, env: loaded }, "sandbox")).rejects.toMatchObject({ message: said });
    } finally {
      fs.rmSync(project, { recursive: true, force: true });
    }
  });
});

describe("runPulumi", () => {
  it("answers notFound when the CLI is not on PATH, and readStackOutputs says the one missing-CLI message", async () => {
    const env = { ...process.env, PATH: dir.replace(/$/, "-empty") };
    expect(await runPulumi(["version"], { cwd: dir, env })).toEqual({ notFound: true });
    await expect(readStackOutputs({ projectDir: dir, env }, "dirqual")).rejects.toThrow(
      pulumiNotFound("pass --outputs FILE (saved `pulumi stack output --json`)"),
    );
  });

  it("hides a backend password in a failure line, whether it comes from stderr or from a diagnostic", () => {
    const stderr = "warning: x\nerror: postgres://team:Hunter2@db/state: refused\n";
    expect(pulumiFailure({ exitCode: 255, stderr })).toBe("error: postgres://team:****@db/state: refused");
    expect(pulumiFailure({ exitCode: 255, stderr }, "s3://k:Hunter2@host/b failed\nmore")).toBe("s3://k:****@host/b failed");
    expect(pulumiFailure({ exitCode: 3, stderr: "" })).toBe("exit code 3");
  });
});
