import { stringify } from "yaml";
import { readSnapshotFile } from "../../src/adapters/snapshot-file";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { RenderDocument } from "../../src/core/json-api";
import { printableValue } from "../../src/core/text";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { SPECS } from "../specs";

const SPEC = SPECS.render;

export const command: Command<"render"> = async ({ values }, ctx) => {
  if (!values.stack) throw usageError(SPEC, "--stack is required");
  if (!values.cluster) throw usageError(SPEC, "--cluster is required (a `kubectl get svc,nodes,pods,cm,endpointslices -A -o yaml` List)");
  if (values.format !== undefined && values.format !== "yaml" && values.format !== "json") {
    throw usageError(SPEC, `--format must be yaml or json, not '${printableValue(String(values.format))}'`);
  }
  // --format json is the older spelling of --json (kept so existing scripts keep working).
  if (values.json && values.format === "yaml") throw usageError(SPEC, "--json and --format yaml contradict each other");
  // The only command that loads the Pulumi SDK, and only when it runs.
  const { render } = require("../../components/render") as typeof import("../../components/render");
  const result = await render({
    projectDir: ctx.projectDir,
    stack: values.stack,
    cluster: readSnapshotFile(values.cluster),
    ...(values.contract ? { contract: values.contract } : {}),
  });
  if (values.json || values.format === "json") printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "Render", ...result } satisfies RenderDocument);
  else ctx.stdout(stringify(result, { lineWidth: 0 }).trimEnd());
  return EXIT.OK;
};
