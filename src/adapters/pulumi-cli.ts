import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describeValue } from "../core/contract/parse";
import { parseJson, UserError } from "../core/errors";
import { redactUrlPasswords } from "../core/text";
import { jsonRefusal, lineCounterOf, placeIn, SMALL_YAML_VALUES } from "../core/yaml";
import { FILE_LIMITS, readBoundedText } from "./bounded-file";

/** What running a program (the Pulumi CLI, git) gave: its exit code and output, or that it is not installed. */
export type PulumiRun = { exitCode: number; stdout: string; stderr: string } | { notFound: true };
type RunOptions = { cwd: string; env: NodeJS.ProcessEnv; signal?: AbortSignal; timeoutMs?: number };
/** Runs `pulumi ARGS` (`pulumi` on the PATH of `env`, or the sandbox's toolchain); never rejects. `signal` stops it (its answer is no longer needed). */
export type PulumiRunner = (args: string[], opts: RunOptions & { pulumi?: string }) => Promise<PulumiRun>;

/** A refresh of a big stack can take minutes; past this the CLI is stopped and the run reported as failed. */
const DEFAULT_TIMEOUT_MS = 10 * 60_000;

/** How the commands and the sandbox run the Pulumi CLI (drift's preview, the stack outputs, the sandbox's `up`); the sandbox's toolchain check reads `pulumi version` itself. */
export const runPulumi: PulumiRunner = (args, { pulumi = "pulumi", ...opts }) =>
  runProgram(pulumi, args, { ...opts, env: { ...opts.env, PULUMI_SKIP_UPDATE_CHECK: "true" } });

/** Runs `program ARGS` (found on the PATH of `opts.env`); never rejects. */
export const runProgram = (program: string, args: string[], opts: RunOptions): Promise<PulumiRun> =>
  new Promise((resolve) => {
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    execFile(
      program,
      args,
      { cwd: opts.cwd, env: opts.env, timeout: timeoutMs, maxBuffer: 256 * 1024 * 1024, ...(opts.signal ? { signal: opts.signal } : {}) },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { code?: number | string; killed?: boolean }) | null;
        if (e?.code === "ENOENT") resolve({ notFound: true });
        else if (e?.killed) resolve({ exitCode: -1, stdout, stderr: `${stderr}\ntimed out after ${timeoutMs / 1000} seconds` });
        else resolve({ exitCode: typeof e?.code === "number" ? e.code : e ? 1 : 0, stdout, stderr });
      },
    );
  });

/** The one message for a missing CLI; `instead` says what works without it, when something does. */
export const pulumiNotFound = (instead?: string) => `the pulumi CLI is not on PATH; install it${instead ? `, or ${instead}` : ""}`;

/** readStackOutputs found no Pulumi CLI: its message names `--outputs FILE`, which only some commands take. */
export class PulumiNotFoundError extends UserError {}

/** Where a sandbox runs while `variable` is not the sandbox's (`isTheSandboxs` of its folder): the hint to load its environment, ` (a sandbox runs ...)`. */
export function sandboxEnvHint(projectDir: string, variable: string, isTheSandboxs: (folder: string) => boolean): string | undefined {
  const folder = path.join(projectDir, ".sandbox");
  if (!fs.existsSync(path.join(folder, "env")) || isTheSandboxs(folder)) return undefined;
  const rel = path.relative(process.cwd(), path.join(folder, "env")) || ".sandbox/env";
  return ` (a sandbox runs in this folder: run \`. ${rel}\` in this shell first; it sets ${variable} to the sandbox's)`;
}

// Why the CLI failed, in one line: `detail` when the caller has a better one (a JSON diagnostic), else stderr's last line. The CLI prints its backend URL
// whole in errors, so a password in a URL is hidden here, for every caller.
export function pulumiFailure(run: { exitCode: number; stderr: string }, detail?: string): string {
  return redactUrlPasswords((detail ?? lastLine(run.stderr) ?? `exit code ${run.exitCode}`).trim().split("\n")[0] ?? "");
}

/** The last line of a program's output that is not blank, trimmed. */
export function lastLine(output: string): string | undefined {
  const lines = output.split("\n").filter((l) => l.trim());
  return lines[lines.length - 1]?.trim();
}

/** The stack outputs of the last `up`: from a saved `pulumi stack output --json` or the Pulumi CLI; secrets stay masked (no command needs them). */
export async function readStackOutputs(
  ctx: { projectDir: string; env: NodeJS.ProcessEnv; pulumi?: string },
  stack: string,
  outputsFile?: string,
): Promise<Record<string, unknown>> {
  let text: string;
  if (outputsFile) {
    text = readBoundedText(outputsFile, "outputs file", FILE_LIMITS.outputs);
  } else {
    const options = { cwd: ctx.projectDir, env: ctx.env, timeoutMs: 60_000, ...(ctx.pulumi ? { pulumi: ctx.pulumi } : {}) };
    const result = await runPulumi(["stack", "output", "--json", "--stack", stack], options);
    if ("notFound" in result) throw new PulumiNotFoundError(pulumiNotFound("pass --outputs FILE (saved `pulumi stack output --json`)"));
    if (result.exitCode !== 0) {
      // Pulumi's "no stack named 'X' found" says nothing of which backend it asked: most often not the stack's own (PULUMI_BACKEND_URL unset, the sandbox's env
      // not loaded).
      const notInBackend = /\bno stack named '[^']*' found\b/.test(result.stderr)
        ? `: the stack is not in this backend; check PULUMI_BACKEND_URL or \`pulumi login\`${sandboxEnvHint(ctx.projectDir, "PULUMI_BACKEND_URL", (folder) => ctx.env.PULUMI_BACKEND_URL === `file://${path.join(folder, "state")}`) ?? ""}`
        : "";
      throw new UserError(`pulumi stack output --stack ${stack} failed: ${pulumiFailure(result)}${notInBackend}`);
    }
    text = result.stdout;
  }
  const refused = jsonRefusal(text, SMALL_YAML_VALUES);
  if (refused) {
    const where = placeIn(lineCounterOf(text), outputsFile ?? "pulumi stack output", refused.offset);
    throw new UserError(`${where}: refused: ${refused.message}; save \`pulumi stack output --json\` again`);
  }
  const outputs = parseJson(text, `${outputsFile ?? "pulumi stack output"}: not JSON`);
  // `null`, a list or a number is not a set of outputs (a pipeline saved the wrong thing).
  if (outputs === null || typeof outputs !== "object" || Array.isArray(outputs)) {
    throw new UserError(`${outputsFile ?? "pulumi stack output"}: expected a map of stack outputs, found ${describeValue(outputs)}`);
  }
  return outputs as Record<string, unknown>;
}

/** How commands read the outputs of the last `up` (tests replace it). */
export type ReadOutputs = typeof readStackOutputs;
