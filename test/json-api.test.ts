// Every `--json` document carries apiVersion and kind (src/core/json-api.ts), whatever the outcome.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccessCommand } from "../cli/commands/access";
import { createDriftCommand } from "../cli/commands/drift";
import { createProbeCommand } from "../cli/commands/probe";
import { createStatusCommand } from "../cli/commands/status";
import type { Command } from "../cli/context";
import type { CommandName } from "../cli/specs";
import { JSON_API_VERSION } from "../src/core/findings";
import { capture, closedPort, healthyCluster, makeProject, runCommand, snapshot, stackFile, type TestProject } from "./support/command-helpers";

let project: TestProject;
let stateDir: string;
beforeAll(() => {
  project = makeProject({ bench: stackFile() });
  stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-json-state-"));
});
afterAll(() => {
  project.remove();
  fs.rmSync(stateDir, { recursive: true, force: true });
});

async function json<N extends CommandName>(name: N, command: Command<N>, argv: string[]) {
  const c = capture(project.dir, { EXPOSURE_STATE_DIR: stateDir });
  const code = await runCommand(name, command, [...argv, "--json"], c);
  return { code, doc: JSON.parse(c.out.join("\n")) as { apiVersion: string; kind: string } };
}

describe("--json documents", () => {
  it("status, drift, probe, access and access --stop carry apiVersion and their kind", async () => {
    const cluster = snapshot(healthyCluster());
    const connect = async () => cluster;
    const outputs = path.join(project.dir, "outputs.json");
    fs.writeFileSync(outputs, JSON.stringify({ urls: { argocd: `http://127.0.0.1:${await closedPort()}` } }));
    const runs = [
      ["Status", await json("status", createStatusCommand({ connect, readOutputs: async () => ({}) }), ["--stack", "bench"])],
      ["Drift", await json("drift", createDriftCommand({ connect }), ["--stack", "bench", "--skip-preview"])],
      ["Probe", await json("probe", createProbeCommand(), ["--outputs", outputs, "--timeout", "2"])],
      ["Access", await json("access", createAccessCommand({ connect }), ["--stack", "bench", "--no-dotenv"])],
      ["AccessStop", await json("access", createAccessCommand({ connect }), ["--stack", "bench", "--stop"])],
    ] as const;
    for (const [kind, r] of runs) {
      expect(r.doc.apiVersion, kind).toBe(JSON_API_VERSION);
      expect(r.doc.kind).toBe(kind);
    }
    // A failed probe still prints its document (exit 4): scripts read both.
    expect(runs[2][1].code).toBe(4);
  });
});
