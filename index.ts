// Entry point of the Pulumi program: settings and contract in, components built, outputs out.
// Everything else lives in src/ (pure, tested without mocks) and components/.
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { asRunError, declareStack } from "./src/infra/program";

// Pulumi.yaml's folder: this file's, or its parent when it runs compiled, as dist/index.js.
const projectDir = fs.existsSync(path.join(__dirname, "Pulumi.yaml")) ? __dirname : path.dirname(__dirname);

export = async () => declareStack({ projectDir, stack: pulumi.getStack(), config: pulumi.runtime.allConfig() }).catch(asRunError);
