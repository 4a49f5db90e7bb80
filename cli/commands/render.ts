import { parseArgs } from "node:util";
import { stringify } from "yaml";
import { readSnapshotFile } from "../../src/adapters/snapshot-file";
import type { Command } from "../context";
import { usageError } from "../context";
import { EXIT } from "../exit";

const USAGE = "exposure render --stack NAME --cluster SNAPSHOT [--contract FILE] [--format yaml|json]";

/** Runs the real program offline under Pulumi's mocks against a snapshot; prints objects, releases, outputs. */
export const renderCommand: Command = async (argv, ctx) => {
  let values: { stack?: string; cluster?: string; contract?: string; format?: string };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        stack: { type: "string", short: "s" },
        cluster: { type: "string" },
        contract: { type: "string" },
        format: { type: "string", default: "yaml" },
      },
    }));
  } catch (err) {
    throw usageError((err as Error).message, USAGE);
  }
  if (!values.stack) throw usageError("--stack is required", USAGE);
  if (!values.cluster) throw usageError("--cluster is required (a `kubectl get svc,nodes,pods,cm -A -o yaml` List)", USAGE);
  if (values.format !== "yaml" && values.format !== "json") throw usageError(`--format must be yaml or json, not '${values.format}'`, USAGE);
  // The only command that loads the Pulumi SDK, and only when it runs.
  const { render } = require("../../src/infra/render") as typeof import("../../src/infra/render");
  const result = await render({
    projectDir: ctx.projectDir,
    stack: values.stack,
    cluster: readSnapshotFile(values.cluster),
    ...(values.contract ? { contract: values.contract } : {}),
  });
  ctx.stdout(values.format === "json" ? JSON.stringify(result, null, 2) : stringify(result, { lineWidth: 0 }).trimEnd());
  return EXIT.OK;
};
