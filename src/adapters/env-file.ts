// Writing `.env.cluster.local`: a file of credentials in clear text, so it is written 0600
// and never where git would pick it up.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { UserError } from "../core/errors";

/** Name of the generated file; the data repository's .gitignore lists it. */
export const ENV_FILE_NAME = ".env.cluster.local";

/** Default location: the atlas repository checked out next to this project. */
export function defaultEnvFile(projectDir: string, env: NodeJS.ProcessEnv): string {
  const configured = env.EXPOSURE_ENV_FILE;
  return configured ? path.resolve(configured) : path.resolve(projectDir, "..", "atlas", ENV_FILE_NAME);
}

type GitResult = { code: number; stdout: string } | { missing: true };

function git(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile("git", args, { cwd, env, timeout: 10_000 }, (err, stdout) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      if (e?.code === "ENOENT") resolve({ missing: true });
      else resolve({ code: typeof e?.code === "number" ? e.code : e ? 1 : 0, stdout: String(stdout) });
    });
  });
}

/** The nearest folder at or above `dir` holding `.git` (used only when git itself is missing). */
function findGitDir(dir: string): string | undefined {
  for (let d = dir; ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, ".git"))) return d;
    if (path.dirname(d) === d) return undefined;
  }
}

/**
 * Refuses a path git would track: inside a work tree, the file must be ignored
 * (`git check-ignore`; a file already tracked counts as not ignored).
 */
export async function assertGitIgnores(file: string, env: NodeJS.ProcessEnv): Promise<void> {
  const dir = path.dirname(file);
  const top = await git(["rev-parse", "--show-toplevel"], dir, env);
  if ("missing" in top) {
    const repo = findGitDir(dir);
    if (repo) throw new UserError(`refusing to write ${file}: it is inside the git repository ${repo} and git is not installed to check that it is ignored`);
    return;
  }
  if (top.code !== 0) return; // not a work tree: nothing can commit it by accident
  const root = top.stdout.trim();
  const tracked = await git(["ls-files", "--error-unmatch", "--", file], dir, env);
  if (!("missing" in tracked) && tracked.code === 0) {
    throw new UserError(`refusing to write ${file}: git tracks it in ${root}; \`git rm --cached\` it and add '${path.basename(file)}' to ${root}/.gitignore`);
  }
  const ignored = await git(["check-ignore", "-q", "--", file], dir, env);
  if ("missing" in ignored || ignored.code !== 0) {
    throw new UserError(
      `refusing to write ${file}: it is inside the git work tree ${root} and git does not ignore it; add '${path.basename(file)}' to ${root}/.gitignore or pass another --dotenv`,
    );
  }
}

/**
 * Writes `text` to `file` with mode 0600, whatever the umask and whatever the mode of a
 * file already there: a fresh 0600 file is written next to it and renamed over it (atomic,
 * and a symlink at `file` is replaced, not followed).
 */
export function writePrivateFile(file: string, text: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  let fd: number | undefined;
  try {
    fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tmp, file);
  } catch (err) {
    if (fd !== undefined) fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw new UserError(`cannot write ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}
