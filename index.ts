// Entry point of the Pulumi program: settings and contract in, components built, outputs out.
// The program itself is components/program.ts (declareStack); the pure parts it plans with
// live in src/core and are tested without mocks.
import * as pulumi from "@pulumi/pulumi";
import { asRunError, declareStack } from "./components/program";

// The engine names the project's folder (Pulumi.yaml's), not the working directory (the folder of `main`).
export = async () =>
  declareStack({ projectDir: pulumi.runtime.getRootDirectory(), stack: pulumi.getStack(), config: pulumi.runtime.allConfig() }).catch(asRunError);
