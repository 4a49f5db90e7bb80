// Runs the adversarial corpus (test/adversarial/cases.ts). Every row checks its exit code and
// message fragment, plus the invariant: no crash, no stack trace, bounded memory, and nothing
// changed on disk (these commands exist to read, not to write). Work is bounded by counts and
// sizes (the largest input's refusal is checked at the very value past the limit); the per-case
// timeout is only a backstop against a hang, far above any case's work on a loaded machine.
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createDriftCommand } from "../cli/commands/drift";
import { createStatusCommand } from "../cli/commands/status";
import { main } from "../cli/main";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { readSnapshotFile } from "../src/adapters/snapshot-file";
import { renderEnvTemplate } from "../src/core/access";
import { type RunningPortal, startPortal } from "../src/portal/server";
import {
  API_CASES,
  CONTRACT_CASES,
  ENV_TEMPLATE_CASES,
  FLAG_CASES,
  KUBECONFIG_CASES,
  OUTPUTS_CASES,
  PORTAL_CASES,
  SANDBOX_STATE_CASES,
  SETTINGS_CASES,
  SNAPSHOT_CASES,
  STACK_FILE_NAME_CASES,
  STACK_FILE_TEXT_CASES,
  WORKLOAD_CASES,
} from "./adversarial/cases";
import { type Captured, capture, healthyCluster, makeProject, runCommand, snapshot, stackFile, type TestProject } from "./support/command-helpers";
import { list, startFakeApi } from "./support/fake-api";
import { MemoryCluster, portalContract, recordedCluster } from "./support/portal-fixtures";
import { rawRequest } from "./support/raw-request";

const CASE_TIMEOUT_MS = 120_000;
/** Heap growth allowed for one case: far above what a clean refusal needs, far below a runaway. */
const MAX_HEAP_GROWTH = 256 * 2 ** 20;

let project: TestProject;
let inputs: string;
beforeAll(() => {
  project = makeProject({
    bench: stackFile({ "ui-exposure:entries": ["argocd"] }),
    ...Object.fromEntries(SETTINGS_CASES.map((c, i) => [`settings${i}`, stackFile({ "ui-exposure:entries": ["argocd"], ...c.config })])),
  });
  for (const [i, c] of STACK_FILE_TEXT_CASES.entries()) fs.writeFileSync(path.join(project.dir, `Pulumi.stacktext${i}.yaml`), c.text);
  inputs = fs.mkdtempSync(path.join(project.dir, "..", "adversarial-inputs-"));
});
afterAll(() => {
  project.remove();
  fs.rmSync(inputs, { recursive: true, force: true });
});

/** Every file under `dir` with its size and mtime: what "nothing changed on disk" compares. */
function diskState(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const s = fs.statSync(p);
        out.push(`${p} ${s.size} ${s.mtimeMs}`);
      }
    }
  };
  walk(dir);
  return out.sort();
}

let counter = 0;
function inputFile(content: string): string {
  const file = path.join(inputs, `input-${counter++}`);
  fs.writeFileSync(file, content);
  return file;
}

/** Runs `body`, then checks the invariant on what it printed and on the project folder. */
async function invariant(body: (c: Captured) => Promise<number>): Promise<{ code: number; text: string }> {
  const before = diskState(project.dir);
  const heap = process.memoryUsage().heapUsed;
  const c = capture(project.dir, { EXPOSURE_STATE_DIR: path.join(project.dir, ".state") });
  const code = await body(c);
  const text = c.all();
  expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/); // a stack trace
  expect(text).not.toMatch(/internal error|TypeError|ReferenceError|RangeError/);
  expect(diskState(project.dir)).toEqual(before);
  expect(process.memoryUsage().heapUsed - heap).toBeLessThan(MAX_HEAP_GROWTH);
  return { code, text };
}

describe("adversarial corpus: contracts (exposure check FILE)", () => {
  it.each(CONTRACT_CASES)("$name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ contract, exit, fragment }) => {
    const file = inputFile(contract);
    const r = await invariant((c) => main(["check", file], c.ctx));
    expect(r.text).toContain(fragment);
    expect(r.code).toBe(exit);
  });
});

describe("adversarial corpus: stack files, as settings or as text (exposure status --stack on a Pulumi.<stack>.yaml holding them)", () => {
  it.each([...SETTINGS_CASES.map((c, i) => ({ ...c, stack: `settings${i}` })), ...STACK_FILE_TEXT_CASES.map((c, i) => ({ ...c, stack: `stacktext${i}` }))])(
    "$name -> exit $exit",
    { timeout: CASE_TIMEOUT_MS },
    async ({ stack, exit, fragment }) => {
      const status = createStatusCommand({ connect: async () => snapshot(healthyCluster()), readOutputs: async () => ({}) });
      const r = await invariant((c) => runCommand("status", status, ["--stack", stack], c));
      expect(r.text).toContain(fragment);
      expect(r.code).toBe(exit);
    },
  );
});

describe("adversarial corpus: cluster snapshots (exposure status with a snapshot file)", () => {
  it.each(SNAPSHOT_CASES)("$name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ snapshot: text, exit, fragment }) => {
    const file = inputFile(text);
    const status = createStatusCommand({ connect: async () => readSnapshotFile(file), readOutputs: async () => ({}) });
    const r = await invariant((c) => runCommand("status", status, ["--stack", "bench"], c));
    expect(r.text).toContain(fragment);
    expect(r.code).toBe(exit);
  });
});

describe("adversarial corpus: kubeconfigs (exposure status through a kubeconfig file holding this text)", () => {
  it.each(KUBECONFIG_CASES)("$name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ text, exit, fragment }) => {
    const file = inputFile(text);
    const status = createStatusCommand({
      connect: (_opened, timeoutMs) => LiveClusterReader.connect({ kubeconfig: file, timeoutMs }),
      readOutputs: async () => ({}),
    });
    const r = await invariant((c) => runCommand("status", status, ["--stack", "bench"], c));
    expect(r.text).toContain(fragment);
    expect(r.code).toBe(exit);
  });
});

describe("adversarial corpus: workloads read back for what deny would refuse (exposure drift --skip-preview)", () => {
  it.each(WORKLOAD_CASES)("$name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ objects, exit, fragment }) => {
    const drift = createDriftCommand({
      connect: async () => snapshot(healthyCluster(objects)),
      runPulumi: async () => ({ notFound: true }),
      readOutputs: async () => ({ endpoints: { argocd: { service: "argocd-nodeport", nodePort: 31001 } } }),
    });
    const r = await invariant((c) => runCommand("drift", drift, ["--stack", "bench", "--skip-preview"], c));
    expect(r.text).toContain(fragment);
    expect(r.code).toBe(exit);
  });
});

describe("adversarial corpus: API answers (exposure status against a fake API server on loopback)", () => {
  it.each(API_CASES)("$name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ services, timeoutSeconds, exit, fragment }) => {
    const api = await startFakeApi({
      // Where `status --stack bench` (entry argocd) reads its Services.
      "/api/v1/namespaces/argocd/services": services,
      "/api/v1/nodes": list("NodeList", []),
      "/apis/discovery.k8s.io/v1/endpointslices": list("EndpointSliceList", []),
    });
    try {
      const status = createStatusCommand({
        connect: (_opened, timeoutMs) => LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs }),
        readOutputs: async () => ({}),
      });
      const r = await invariant((c) => runCommand("status", status, ["--stack", "bench", "--timeout", String(timeoutSeconds ?? 0.5)], c));
      expect(r.text).toContain(fragment);
      expect(r.text).not.toContain("secret-looking-body");
      expect(r.code).toBe(exit);
    } finally {
      await api.close();
    }
  });
});

describe("adversarial corpus: HTTP requests to the portal", () => {
  let portal: RunningPortal;
  let port: number;
  const logged: string[] = [];
  beforeAll(async () => {
    portal = await startPortal(
      { contract: portalContract(), cluster: new MemoryCluster(recordedCluster()), stack: "bench", log: (l) => logged.push(l) },
      { host: "127.0.0.1", port: 0 },
    );
    port = Number(new URL(portal.url).port);
  });
  afterAll(() => portal.close());

  it.each(PORTAL_CASES)("$name -> $status, and the portal keeps serving", { timeout: CASE_TIMEOUT_MS }, async ({ request, status, fragment }) => {
    const answer = await rawRequest(port, request, { closeAfterMs: 3000, close: "destroy", onError: "resolve" });
    expect(answer.split("\r\n")[0]).toMatch(new RegExp(`^HTTP/1\\.[01] ${status} `));
    if (fragment !== undefined) expect(answer).toContain(fragment);
    expect(answer).not.toMatch(/\n\s+at .+:\d+:\d+/);
    expect((await fetch(new URL("/healthz", portal.url))).status).toBe(200);
    expect(logged.filter((l) => l.includes("-> 500"))).toEqual([]);
  });
});

describe("adversarial corpus: flags and files on the command line", () => {
  it.each(FLAG_CASES)("$name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ argv, exit, fragment }) => {
    const r = await invariant((c) => main(argv, c.ctx));
    expect(r.text).toContain(fragment);
    expect(r.code).toBe(exit);
  });

  it.each(OUTPUTS_CASES)("--outputs holding $name -> exit $exit", { timeout: CASE_TIMEOUT_MS }, async ({ outputs, liveUid, exit, fragment }) => {
    const file = inputFile(outputs);
    const withUid = (o: unknown) => {
      const meta = (o as { metadata?: { name?: string } }).metadata;
      return liveUid && meta?.name === "argocd-nodeport" ? { ...(o as object), metadata: { ...meta, uid: liveUid } } : o;
    };
    const status = createStatusCommand({ connect: async () => snapshot(healthyCluster().map(withUid)) });
    const r = await invariant((c) => runCommand("status", status, ["--stack", "bench", "--outputs", file], c));
    expect(r.text).toContain(fragment);
    expect(r.code).toBe(exit);
    // A published value is one cell: it never starts a line of its own, nor makes one endless.
    expect(r.text).not.toMatch(/^forged/m);
    expect(Math.max(...r.text.split("\n").map((l) => l.length))).toBeLessThan(2000);
  });
});

describe("adversarial corpus: sandbox state files (exposure sandbox status, then down)", () => {
  it.each(SANDBOX_STATE_CASES)("$name -> status exit 1, down signals nothing", { timeout: CASE_TIMEOUT_MS }, async ({ state, fragment }) => {
    const dir = fs.mkdtempSync(path.join(inputs, "sandbox-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    fs.mkdirSync(path.join(dir, ".sandbox"));
    fs.writeFileSync(path.join(dir, ".sandbox", "sandbox.json"), state);
    const realKill = process.kill.bind(process);
    const signals: number[] = [];
    // Nothing but signal 0 (is it alive?) may reach a pid read from this file.
    vi.spyOn(process, "kill").mockImplementation((pid: number, signal?: string | number) => {
      if (signal === 0) return realKill(pid, 0);
      signals.push(pid);
      return true;
    });
    try {
      const status = capture(dir);
      expect(await main(["sandbox", "status"], status.ctx)).toBe(1);
      expect(status.all()).toContain(fragment);
      const down = capture(dir);
      expect(await main(["sandbox", "down"], down.ctx)).toBe(0);
      expect(down.all()).toContain(fragment);
      expect(down.all()).not.toMatch(/internal error|\n\s+at .+:\d+:\d+/);
      expect(signals).toEqual([]);
    } finally {
      vi.restoreAllMocks();
    }
  });
});

describe("adversarial corpus: stack file names (exposure completion --list stacks)", () => {
  it.each(STACK_FILE_NAME_CASES)("$name is not offered", { timeout: CASE_TIMEOUT_MS }, async ({ file }) => {
    const dir = fs.mkdtempSync(path.join(inputs, "stacks-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    fs.writeFileSync(path.join(dir, "Pulumi.bench.yaml"), "config: {}\n");
    fs.writeFileSync(path.join(dir, file), "config: {}\n");
    const c = capture(dir);
    expect(await main(["completion", "--list", "stacks"], c.ctx)).toBe(0);
    expect(c.out).toEqual(["bench"]);
  });
});

describe("adversarial corpus: Secret values inside a .env template's quotes", () => {
  it.each(ENV_TEMPLATE_CASES)("$name -> refused by name", ({ line, secret, fragment }) => {
    const rendered = renderEnvTemplate(`${line}\n`, "t.env", () => ({ value: secret, source: "Secret data/pg" }), []);
    const variable = line.slice(0, line.indexOf("="));
    expect(rendered.unresolved).toHaveLength(1);
    expect(rendered.unresolved[0]?.variable).toBe(variable);
    expect(rendered.unresolved[0]?.reason).toContain(`the value of {{pg.password}} (Secret data/pg) ${fragment}`);
    expect(rendered.text).not.toContain(secret);
    expect(rendered.text).toMatch(new RegExp(`^# ${variable}= \\(not written: `, "m"));
  });
});
