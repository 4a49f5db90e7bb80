import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "../cli/main";
import { JSON_API_VERSION } from "../src/core/findings";
import type { CheckDocument } from "../src/core/json-api";
import { capture } from "./support/command-helpers";

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-check-"));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function check(...argv: string[]) {
  const c = capture(dir);
  const code = await main(["check", ...argv], c.ctx);
  return { code, out: c.out.join("\n"), err: c.err.join("\n") };
}

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

describe("exposure check --json", () => {
  it("a valid contract: apiVersion, kind, the counts, no finding, exit 0", async () => {
    const file = write(
      "ok.yaml",
      "version: 1\nendpoints:\n  - name: argocd\n    exposed: true\n    service: { namespace: argocd, name: argocd-server, port: http }\n",
    );
    const r = await check(file, "--json");
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out) as CheckDocument;
    expect(doc).toMatchObject({ apiVersion: JSON_API_VERSION, kind: "ContractCheck", valid: true, endpoints: 1, exposed: ["argocd"], findings: [] });
  });

  it("an invalid contract: every problem as a finding at file:line:col, nothing on stderr, exit 2", async () => {
    const file = write(
      "bad.yaml",
      "version: 1\nendpoints:\n  - name: argocd\n    exposed: true\n    service: { namespace: argocd, name: argocd-server, port: http }\n    ui_nodeport: 30080\n    exposd: true\n",
    );
    const r = await check(file, "--json");
    expect(r.code).toBe(2);
    expect(r.err).toBe("");
    const doc = JSON.parse(r.out) as CheckDocument;
    // As typed (issue 23, item 9): the absolute path given.
    const shown = file;
    expect(doc).toEqual({
      apiVersion: JSON_API_VERSION,
      kind: "ContractCheck",
      file: shown,
      valid: false,
      findings: [
        {
          code: "contract-invalid",
          severity: "invalid",
          subject: `${shown}:6:5`,
          message:
            "endpoints[0].ui_nodeport: legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'",
        },
        { code: "contract-invalid", severity: "invalid", subject: `${shown}:7:5`, message: "endpoints[0].exposd: unknown key 'exposd'" },
      ],
    });
  });

  it("YAML syntax errors and a missing file are findings too", async () => {
    const syntax = JSON.parse((await check(write("syntax.yaml", "version: 1\nendpoints: [\n"), "--json")).out) as CheckDocument;
    expect(syntax.findings.map((f) => [f.code, f.severity])).toEqual([["contract-yaml-syntax", "invalid"]]);
    expect(syntax.findings[0]?.subject).toMatch(/syntax\.yaml:\d+:\d+$/);
    const missing = await check(path.join(dir, "nope.yaml"), "--json");
    expect(missing.code).toBe(2);
    const doc = JSON.parse(missing.out) as CheckDocument;
    expect(doc.findings.map((f) => f.code)).toEqual(["contract-unreadable"]);
    expect(doc.findings[0]?.message).toContain("contract file not found");
  });

  it("without --json the problems stay one line each on stderr", async () => {
    const r = await check(path.join(dir, "bad.yaml"));
    expect(r.code).toBe(2);
    expect(r.out).toBe("");
    expect(r.err.split("\n")[0]).toMatch(/^exposure check: invalid contract .*bad\.yaml \(2 problems\):$/);
  });
});

describe("exposure check", () => {
  it("names the contract as it was typed, valid or not, with --json or not (issue 23, item 9)", async () => {
    const ok = write("typed.yaml", "version: 1\nendpoints:\n  - name: pg\n    service: { namespace: data, name: postgres, port: 5432 }\n");
    const bad = write("typed-bad.yaml", "version: 1\nendpoints:\n  - name: 5\n");
    // An absolute path, and a relative one with ./ and .. in it (from the working directory).
    const relative = (file: string) => `./${path.join(path.relative(process.cwd(), dir), "..", path.basename(dir), path.basename(file))}`;
    for (const typed of [ok, relative(ok)]) {
      expect((await check(typed)).out).toBe(`${typed}: valid: 1 endpoint, 0 exposed (0 NodePort, 0 hostPort)`);
      expect((JSON.parse((await check(typed, "--json")).out) as CheckDocument).file).toBe(typed);
    }
    for (const typed of [bad, relative(bad)]) {
      const r = await check(typed);
      expect(r.err).toContain(`\n${typed}:3:11: endpoints[0].name: expected a string, found a number (5)`);
      const doc = JSON.parse((await check(typed, "--json")).out) as CheckDocument;
      expect(doc.file).toBe(typed);
      expect(doc.findings.map((f) => f.subject)).toEqual([`${typed}:3:5`, `${typed}:3:11`]);
    }
  });

  it("one endpoint, none exposed: singular, and no list after the counts (found by a tester)", async () => {
    const file = write("one.yaml", "version: 1\nendpoints:\n  - name: pg\n    service: { namespace: data, name: postgres, port: 5432 }\n");
    const r = await check(file);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/one\.yaml: valid: 1 endpoint, 0 exposed \(0 NodePort, 0 hostPort\)$/);
  });
});
