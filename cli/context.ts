import * as fs from "node:fs";
import * as path from "node:path";
import { findUp } from "../src/adapters/bounded-file";
import type { CommandArgs } from "./flags";
import type { CommandName, SPECS } from "./specs";

/** What every command receives: where the project is, and how to print. */
export interface CommandContext {
  projectDir: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

/** A command: its options, parsed once from its flag table by cli/main.ts (parseCommandLine). */
export type Command<N extends CommandName> = (args: CommandArgs<(typeof SPECS)[N]>, ctx: CommandContext) => Promise<number>;

export const printJson = (ctx: CommandContext, doc: object) => ctx.stdout(JSON.stringify(doc, null, 2));

/** This package's folder, from the sources or from dist/. */
const packageDir = () => findUp(__dirname, "package.json") ?? path.resolve(__dirname, "..");

export function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(path.join(packageDir(), "package.json"), "utf8")) as { version: string }).version;
}

/** The project folder: the nearest folder above the working directory holding Pulumi.yaml (else this package). */
export const findProjectDir = (start = process.cwd()): string => findUp(start, "Pulumi.yaml") ?? packageDir();
