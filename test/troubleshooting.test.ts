// docs/troubleshooting.md has a row for every reason status, drift, probe, sandbox status and
// `up` can print: the codes and reasons are listed from the code (new ones need a row), and
// each sample line the code prints matches a row's symptom.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { NETWORK_ERRORS } from "../src/adapters/http-probe";
import { DRIFT_CODES } from "../src/core/observe";
import { entryService, ownershipProblem, publishedByAnotherStack, takeoverRefusal, upRefusals } from "../src/core/ownership";
import { type NodePortPlan, portToKeep } from "../src/core/plan";
import { service } from "./support/fixtures";

const root = path.resolve(__dirname, "..");
const doc = fs.readFileSync(path.join(root, "docs/troubleshooting.md"), "utf8");
const rows = doc.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| you see") && !l.startsWith("|---"));

/** Every `finding("code", ...)` of the product code. */
function findingCodes(): string[] {
  const files = (dir: string): string[] =>
    fs
      .readdirSync(path.join(root, dir), { withFileTypes: true })
      .flatMap((d) => (d.isDirectory() ? files(path.join(dir, d.name)) : d.name.endsWith(".ts") ? [path.join(dir, d.name)] : []));
  const codes = ["src", "cli", "components"]
    .flatMap(files)
    .flatMap((f) => [...fs.readFileSync(path.join(root, f), "utf8").matchAll(/\bfinding\("([a-z-]+)"/g)].map((m) => m[1] as string));
  return [...new Set([...DRIFT_CODES, ...codes])].sort();
}

/** A row's symptoms (the backticked texts of its first cell) as patterns: `<word>` one value, `...` (and its spaces) anything. */
const patterns = rows.flatMap((r) =>
  [...(r.split(" | ")[0] ?? "").matchAll(/`([^`]+)`/g)].map(
    (m) =>
      new RegExp(
        `^${(m[1] as string)
          .replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          .replace(/<[A-Za-z]+>/g, ".+?")
          .replace(/ ?\\\.\\\.\\\. ?/g, ".*")}`,
      ),
  ),
);
const rowFor = (line: string) => patterns.find((p) => p.test(line));

describe("docs/troubleshooting.md", () => {
  it("has a row for every finding code the commands can print", () => {
    const codes = findingCodes();
    expect(codes.length).toBeGreaterThan(25);
    expect(codes.filter((c) => !rows.some((r) => r.includes(`\`${c}\``)))).toEqual([]);
  });

  it("has a row matching every probe failure and every refusal or fix line of up, status and probe", () => {
    const svc = service("gitea", "gitea-nodeport", { ports: [{ name: "http", port: 3000, nodePort: 31000 }], selector: { app: "gitea", tier: "frontend" } });
    svc.metadata.uid = "u2";
    const plan = { entry: "gitea", namespace: "gitea", serviceName: "gitea-nodeport" };
    const gitea: NodePortPlan = {
      ...plan,
      kind: "nodePort",
      scheme: "http",
      mirrors: "gitea-http",
      selector: { app: "gitea" },
      portName: "http",
      port: 3000,
      targetPort: 3000,
      protocol: "TCP",
    };
    const refusals = (uid: string) =>
      upRefusals([gitea], new Map([["gitea/gitea-nodeport", svc]]), { gitea: { uid } }, undefined, {
        services: new Map(),
        configMaps: new Map(),
        guard: new Set(),
      });
    const lines = [
      ...Object.values(NETWORK_ERRORS),
      "malformed HTTP answer (HPE_INVALID_CHUNK_SIZE)",
      "no answer within 3s",
      "expected 200, got 500",
      takeoverRefusal(entryService(plan), "bench"),
      ...refusals("u1"),
      ...refusals("u2"),
      publishedByAnotherStack(plan, "bench", "dirqual"),
      (portToKeep(plan, 31000, [service("tools", "thief", { ports: [{ name: "http", port: 80, nodePort: 31000 }] })]) as { note: string }).note,
      ownershipProblem(svc, undefined) as string,
      ownershipProblem(svc, { uid: "u1", service: "gitea-nodeport" }) as string,
    ];
    expect(lines.filter((l) => !rowFor(l))).toEqual([]);
  });
});
