// Entry point of the Pulumi program: the engine's inputs (the live cluster, this stack's own record) chosen here, the
// program itself is components/program.ts (read, decide in src/core/stack-plan.ts, declare).
import * as pulumi from "@pulumi/pulumi";
import { engineInputs } from "./components/engine";
import { asRunError, declareStack } from "./components/program";

// The engine names the project's folder (Pulumi.yaml's), not the working directory (the folder of `main`).
export = async () =>
  declareStack({ projectDir: pulumi.runtime.getRootDirectory(), stack: pulumi.getStack(), config: pulumi.runtime.allConfig(), ...engineInputs() }).catch(
    asRunError,
  );
