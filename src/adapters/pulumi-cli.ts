import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { promisify } from "node:util";
import { UserError } from "../core/errors";

const run = promisify(execFile);

/**
 * The stack outputs of the last `up`: from a file (`pulumi stack output --json` saved by a
 * pipeline) or from the Pulumi CLI. Secrets stay masked: no command needs them here.
 */
export async function readStackOutputs(
  ctx: { projectDir: string; env: NodeJS.ProcessEnv },
  stack: string,
  outputsFile?: string,
): Promise<Record<string, unknown>> {
  let text: string;
  if (outputsFile) {
    try {
      text = fs.readFileSync(outputsFile, "utf8");
    } catch (err) {
      throw new UserError(`cannot read outputs file ${outputsFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  } else {
    try {
      ({ stdout: text } = await run("pulumi", ["stack", "output", "--json", "--stack", stack], {
        cwd: ctx.projectDir,
        env: { ...ctx.env, PULUMI_SKIP_UPDATE_CHECK: "true" },
        timeout: 60_000,
        maxBuffer: 64 * 1024 * 1024,
      }));
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      if (e.code === "ENOENT") throw new UserError("the pulumi CLI is not on PATH; install it or pass --outputs FILE (saved `pulumi stack output --json`)");
      throw new UserError(`pulumi stack output --stack ${stack} failed: ${(e.stderr ?? e.message).trim().split("\n").pop()}`);
    }
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new UserError(`${outputsFile ?? "pulumi stack output"}: not JSON`);
  }
}
