import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { parseContract } from "../src/core/contract/parse";
import { DRIFT_CODES, nodeProblem, observe } from "../src/core/observe";
import { healthyCluster, snapshot } from "./support/command-helpers";
import { node } from "./support/fixtures";

describe("nodeProblem: a published URL whose node is no longer the right one", () => {
  const nodes = [node("w1", "10.0.0.5", false), node("w2", "10.0.0.6")];
  const chosen = { name: "w2", address: "10.0.0.6", pinned: false };
  it("says the URLs move when the published node is not Ready any more", () => {
    expect(nodeProblem(chosen, nodes, "http://10.0.0.5:31358", "http://10.0.0.6:31358")).toBe(
      "the published URL http://10.0.0.5:31358 uses 10.0.0.5, but node w1 is not Ready: the URLs move to w2 10.0.0.6 (http://10.0.0.6:31358); pulumi up publishes them",
    );
  });
  // The contract's schemes include postgresql and tcp: their URLs move with the node as an http one does.
  it("says the URLs move for an entry of any scheme, not only http(s)", () => {
    expect(nodeProblem(chosen, nodes, "postgresql://10.0.0.5:31432", "postgresql://10.0.0.6:31432")).toBe(
      "the published URL postgresql://10.0.0.5:31432 uses 10.0.0.5, but node w1 is not Ready: the URLs move to w2 10.0.0.6 (postgresql://10.0.0.6:31432); pulumi up publishes them",
    );
    expect(nodeProblem(chosen, nodes, "tcp://[fd00::9]:31000", undefined)).toBe(
      "the published URL tcp://[fd00::9]:31000 uses fd00::9, but no node has address fd00::9 any more: the URLs move to w2 10.0.0.6; pulumi up publishes them",
    );
  });
  it("is silent when the published URL still uses the chosen node, or nothing was published", () => {
    expect(nodeProblem(chosen, nodes, "http://10.0.0.6:30001", "http://10.0.0.6:31358")).toBeUndefined();
    expect(nodeProblem(chosen, nodes, undefined, "http://10.0.0.6:31358")).toBeUndefined();
  });
  it("reports a pinned address whose node is not Ready (the URLs cannot move)", () => {
    expect(nodeProblem({ name: "w1", address: "10.0.0.5", pinned: true }, nodes, undefined, undefined)).toBe("node w1 (pinned address 10.0.0.5) is not Ready");
    expect(nodeProblem({ name: "(pinned)", address: "10.0.0.9", pinned: true }, nodes, undefined, undefined)).toBeUndefined();
  });
  it("handles IPv6 URLs", () => {
    expect(
      nodeProblem({ name: "v6", address: "fd00::6", pinned: false }, [node("v6", "fd00::6")], "http://[fd00::6]:31000", "http://[fd00::6]:31000"),
    ).toBeUndefined();
  });
});

describe("DRIFT_CODES: every reason of a verdict has a stable code", () => {
  it("each code is documented in docs/commands.md", () => {
    const docs = fs.readFileSync(path.join(__dirname, "..", "docs", "commands.md"), "utf8");
    for (const code of DRIFT_CODES) expect(docs, code).toContain(`\`${code}\``);
  });
});

describe("zero nodes never gives MATCH", () => {
  it("an entry without a URL is never MATCH", () => {
    const objects = healthyCluster().filter((o) => (o as { kind?: string }).kind !== "Node");
    const contract = parseContract(
      "version: 1\nendpoints:\n  - { name: argocd, exposed: true, service: { namespace: argocd, name: argocd-server, port: http } }\n",
      "c.yaml",
    );
    const s = snapshot(objects);
    const o = observe(contract, {
      services: objects.filter((x) => (x as { kind?: string }).kind === "Service") as never,
      endpointSlices: objects.filter((x) => (x as { kind?: string }).kind === "EndpointSlice") as never,
      nodes: [],
      pods: [],
    });
    expect(s).toBeDefined();
    expect(o.entries[0]?.url).toBeUndefined();
    expect(o.entries[0]?.verdict).not.toBe("MATCH");
    expect(o.entries[0]?.reasons.join(" ")).toContain("no node address");
  });
});
