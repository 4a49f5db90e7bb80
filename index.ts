// Entry point of the Pulumi program: settings and contract in, components built, outputs out.
// The program itself is components/program.ts (declareStack); the pure parts it plans with
// live in src/core and are tested without mocks.
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { asRunError, declareStack } from "./components/program";

/**
 * Pulumi.yaml's folder: this file's when it runs from the sources, else the closest above it
 * (compiled, it runs as dist/bundles/program/stack-program.cjs; scripts/build.cjs).
 */
function findProjectDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "Pulumi.yaml"))) return dir;
    if (path.dirname(dir) === dir) return __dirname;
  }
}
const projectDir = findProjectDir();

export = async () => declareStack({ projectDir, stack: pulumi.getStack(), config: pulumi.runtime.allConfig() }).catch(asRunError);
