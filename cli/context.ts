import * as fs from "node:fs";
import * as path from "node:path";

/** What every command receives: where the project is, and how to print. */
export interface CommandContext {
  projectDir: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export type Command = (argv: string[], ctx: CommandContext) => Promise<number>;

export const printJson = (ctx: CommandContext, doc: object) => ctx.stdout(JSON.stringify(doc, null, 2));

/** This package's folder (the one holding package.json), from the sources or from dist/. */
function packageDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(__dirname, "..");
  }
}

export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageDir(), "package.json"), "utf8")) as { version: string }).version;
}

/** The project folder: the nearest folder above the working directory holding Pulumi.yaml (else this package). */
export function findProjectDir(start = process.cwd()): string {
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "Pulumi.yaml"))) return dir;
    if (path.dirname(dir) === dir) return packageDir();
  }
}
