// Entry point of the Pulumi program: settings and contract in, components built, outputs out.
// Everything else lives in src/ (pure, tested without mocks) and components/.
import * as pulumi from "@pulumi/pulumi";
import { asRunError, declareStack } from "./src/infra/program";

export = async () => declareStack({ projectDir: __dirname, stack: pulumi.getStack(), config: pulumi.runtime.allConfig() }).catch(asRunError);
