import * as fs from "node:fs";
import * as path from "node:path";
import { UserError } from "../src/core/errors";

/** What every command receives: where the project is, and how to print. */
export interface CommandContext {
  projectDir: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export type Command = (argv: string[], ctx: CommandContext) => Promise<number>;

/** The project folder: the nearest folder above the working directory holding Pulumi.yaml (else this package). */
export function findProjectDir(start = process.cwd()): string {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "Pulumi.yaml"))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(__dirname, "..");
  }
}

export function usageError(message: string, usage: string): UserError {
  return new UserError(`${message}\nusage: ${usage}`, 2);
}
