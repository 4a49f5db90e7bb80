import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describeValue } from "../core/contract/parse";
import { UserError } from "../core/errors";
import { redactUrlPasswords } from "../core/text";
import { FILE_LIMITS, readBoundedText } from "./bounded-file";

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
    text = readBoundedText(outputsFile, "outputs file", FILE_LIMITS.outputs);
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
      // The CLI's errors can carry the backend URL whole, password included.
      throw new UserError(`pulumi stack output --stack ${stack} failed: ${redactUrlPasswords((e.stderr ?? e.message).trim().split("\n").pop() ?? "")}`);
    }
  }
  let outputs: unknown;
  try {
    outputs = JSON.parse(text);
  } catch {
    throw new UserError(`${outputsFile ?? "pulumi stack output"}: not JSON`);
  }
  // `null`, a list or a number is not a set of outputs (a pipeline saved the wrong thing).
  if (outputs === null || typeof outputs !== "object" || Array.isArray(outputs)) {
    throw new UserError(`${outputsFile ?? "pulumi stack output"}: expected a map of stack outputs, found ${describeValue(outputs)}`);
  }
  return outputs as Record<string, unknown>;
}
