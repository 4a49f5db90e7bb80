// Defect 4 of issue 12: `up` must fail before the first resource when the portal bundle
// cannot be built (everything that can fail fails first), under Pulumi's mocks.
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { describe, expect, it, vi } from "vitest";
import { UserError } from "../src/core/errors";
import { SnapshotReader } from "../src/core/kube/cluster";
import { declareStack } from "../src/infra/program";
import { readyNode } from "./portal-fixtures";

vi.mock("../src/adapters/portal-bundle", () => ({
  bundlePortalServer: () => {
    throw new UserError("cannot bundle the portal server (src/portal/main.ts): test failure");
  },
}));

const projectDir = path.resolve(__dirname, "..");

describe("4. nothing is registered when the portal bundle fails", () => {
  it("fails before the Cilium component (or anything else) is declared", async () => {
    const registered: string[] = [];
    await pulumi.runtime.setMocks(
      {
        newResource: (args) => {
          registered.push(`${args.type} ${args.name}`);
          return { id: `${args.name}-id`, state: args.inputs };
        },
        call: () => ({}),
      },
      "ui-exposure",
      "test",
      false,
    );
    const cluster = new SnapshotReader([
      readyNode("bench", "127.0.0.2"),
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "argocd-server", namespace: "argocd" },
        spec: { selector: { app: "argocd" }, ports: [{ name: "http", port: 80, targetPort: 8080 }] },
      },
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cilium-config", namespace: "kube-system" }, data: { "kube-proxy-replacement": "true" } },
    ]);
    await expect(
      declareStack({
        projectDir,
        stack: "test",
        config: {
          "kubernetes:context": "test",
          "ui-exposure:contract": path.join(projectDir, "contract", "endpoints.example.yaml"),
          "ui-exposure:entries": JSON.stringify(["argocd"]),
          "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }),
          "ui-exposure:portal": JSON.stringify({ enabled: true }),
        },
        cluster,
      }),
    ).rejects.toThrow("cannot bundle the portal server");
    // Registrations are RPCs: wait until every one started by the program has reached the mocks.
    await pulumi.runtime.disconnect();
    expect(registered).toEqual([]);
  });
});
