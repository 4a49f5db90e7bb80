// An e2e file that a test interrupts (test/e2e/processes.e2e.ts): a control plane, then a
// `pulumi up` of the project that it waits on, as any e2e file does.
import { it } from "vitest";
import { EXAMPLE_UIS, startPlatform, THREE_NODES } from "./harness";

it("runs a pulumi up until it is interrupted", async () => {
  const { sandbox } = await startPlatform({
    nodes: THREE_NODES,
    uis: [EXAMPLE_UIS.argocd],
    stack: { "kubernetes:context": "e2e", "ui-exposure:entries": ["argocd"], "ui-exposure:cilium": { mode: "cohabit" } },
  });
  sandbox.pulumi(["up", "--yes", "--skip-preview"]);
}, 900_000);
