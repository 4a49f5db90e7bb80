import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProbeCommand, type ProbeDeps } from "../cli/commands/probe";
import { httpGet } from "../src/adapters/http-probe";
import { UserError } from "../src/core/errors";
import {
  capture,
  closedPort,
  healthyCluster,
  type LocalServer,
  makeProject,
  runCommand,
  snapshot,
  stackFile,
  startServer,
  type TestProject,
} from "./support/command-helpers";
import { slice } from "./support/fixtures";

let project: TestProject;
let healthy: LocalServer;
let failing: LocalServer;
let refused = 0;
beforeAll(async () => {
  project = makeProject({ bench: stackFile({ "ui-exposure:entries": ["argocd", "gitea"] }) });
  // argocd expects 200 on /healthz (TEST_CONTRACT); gitea has no probe: any 2xx/3xx on /.
  healthy = await startServer({ "/healthz": { status: 200 }, "/": { status: 302, location: "/user/login" } });
  failing = await startServer({ "/healthz": { status: 500 }, "/": { status: 500 } });
  refused = await closedPort();
});
afterAll(async () => {
  project.remove();
  await healthy.close();
  await failing.close();
});

function outputsFile(urls: Record<string, string> | undefined, name = "outputs.json"): string {
  const file = path.join(project.dir, name);
  fs.writeFileSync(file, JSON.stringify({ ...(urls ? { urls } : {}), node: { name: "bench", address: "127.0.0.1" } }));
  return file;
}

async function probe(argv: string[], deps: Partial<ProbeDeps> = {}) {
  const c = capture(project.dir);
  const code = await runCommand("probe", createProbeCommand(deps), argv, c);
  return { code, ...c };
}

describe("exposure probe", () => {
  it("exits 0 when every URL answers as the contract expects, with a status/latency table", async () => {
    const file = outputsFile({ argocd: healthy.url, gitea: healthy.url });
    const r = await probe(["--outputs", file]);
    expect(r.code).toBe(0);
    const text = r.out.join("\n");
    expect(text).toMatch(new RegExp(`argocd\\s+${healthy.url}/healthz\\s+200\\s+\\d+ ms\\s+ok`));
    expect(text).toMatch(new RegExp(`gitea\\s+${healthy.url}/\\s+302\\s+\\d+ ms\\s+ok \\(redirects to /user/login, not followed\\)`));
    expect(text).toContain("2 ok, 0 failed");
    expect(r.err).toEqual([]);
  });

  it("exits 4 when one URL fails (500, closed port), and --json lists every result", async () => {
    const file = outputsFile({ argocd: failing.url, gitea: `http://127.0.0.1:${refused}` });
    const r = await probe(["--outputs", file, "--json"]);
    expect(r.code).toBe(4);
    const json = JSON.parse(r.out.join("\n")) as {
      ok: boolean;
      tlsVerified: boolean;
      results: { name: string; ok: boolean; status?: number; error?: string }[];
    };
    expect(json.ok).toBe(false);
    expect(json.tlsVerified).toBe(false);
    expect(json.results.map((x) => [x.name, x.ok, x.status, x.error])).toEqual([
      ["argocd", false, 500, "expected 200, got 500"],
      ["gitea", false, undefined, "connection refused (nothing listens on that port)"],
    ]);
  });

  it("a refused URL whose Service has no ready endpoint says so, not that nothing listens (found by a new user)", async () => {
    const urls = { argocd: healthy.url, gitea: `http://127.0.0.1:${refused}` };
    const readOutputs: ProbeDeps["readOutputs"] = async () => ({ urls });
    const result = async (objects: unknown[] | "unreadable") => {
      const r = await probe(["--stack", "bench", "--json"], {
        readOutputs,
        connect: async () => {
          if (objects === "unreadable") throw new UserError("no kubeconfig");
          return snapshot(objects);
        },
      });
      expect(r.code).toBe(4);
      return (JSON.parse(r.out.join("\n")) as { results: { name: string; error?: string }[] }).results.find((x) => x.name === "gitea")?.error;
    };
    // gitea's pods are all unready: its slice holds one endpoint, not ready.
    expect(await result([...healthyCluster().filter((o) => !isSliceOf(o, "gitea-nodeport")), slice("gitea", "gitea-nodeport", [false])])).toBe(
      "connection refused: no ready endpoint behind Service gitea/gitea-nodeport (its pods are gone or not Ready)",
    );
    expect(await result(healthyCluster().filter((o) => (o as { metadata?: { name?: string } }).metadata?.name !== "gitea-nodeport"))).toBe(
      "connection refused: Service gitea/gitea-nodeport does not exist (run pulumi up)",
    );
    // Ready endpoints, or a cluster that cannot be read: the plain reason stays.
    expect(await result(healthyCluster())).toBe("connection refused (nothing listens on that port)");
    expect(await result("unreadable")).toBe("connection refused (nothing listens on that port)");
  });

  it("a selector key added to ours selects no pod: the cause is that finding with its fix, never 'not Ready' (issue 40 #5)", async () => {
    const url = `http://127.0.0.2:${refused}`;
    const readOutputs: ProbeDeps["readOutputs"] = async () => ({
      urls: { gitea: url },
      endpoints: { gitea: { nodePort: refused, url, service: "gitea-nodeport" } },
    });
    const foreignKey = healthyCluster()
      .filter((o) => !isSliceOf(o, "gitea-nodeport"))
      .map((o) => {
        const svc = o as { metadata?: { name?: string }; spec?: { selector?: Record<string, string>; ports?: object[] } };
        // Ours, on the port of the published URL (nothing listens there), with a key added to its selector.
        const ports = svc.spec?.ports?.map((p) => ({ ...p, nodePort: refused }));
        return svc.metadata?.name === "gitea-nodeport" ? { ...svc, spec: { ...svc.spec, ports, selector: { ...svc.spec?.selector, tier: "frontend" } } } : o;
      });
    const r = await probe(["--stack", "bench", "--json"], {
      readOutputs,
      connect: async () => snapshot([...foreignKey, slice("gitea", "gitea-nodeport", [])]),
    });
    expect(r.code).toBe(4);
    expect((JSON.parse(r.out.join("\n")) as { results: { name: string; error?: string }[] }).results.find((x) => x.name === "gitea")?.error).toBe(
      `connection refused: selector differs from the vendored Service gitea/gitea-http: selector key tier=frontend of gitea/gitea-nodeport was added outside this stack (traffic may go to other pods); remove it: kubectl -n gitea patch service gitea-nodeport --type=json -p '[{"op":"remove","path":"/spec/selector/tier"}]'`,
    );
  });

  it("a nodePort moved by hand: the published URL fails and the cause names both ports (found by a new user)", async () => {
    // gitea was published on a port nothing listens on; the cluster now serves it on 31002.
    const publishedUrl = `http://127.0.0.2:${refused}`;
    const readOutputs: ProbeDeps["readOutputs"] = async () => ({
      urls: { gitea: publishedUrl },
      endpoints: { gitea: { nodePort: refused, url: publishedUrl, service: "gitea-nodeport" } },
    });
    const r = await probe(["--stack", "bench", "--json"], { readOutputs, connect: async () => snapshot(healthyCluster()) });
    expect(r.code).toBe(4);
    const results = (JSON.parse(r.out.join("\n")) as { results: { name: string; url: string; error?: string }[] }).results;
    expect(results).toMatchObject([
      {
        name: "gitea",
        url: `${publishedUrl}/`,
        error: `connection refused: nodePort changed since the last up (${refused} -> 31002): the published URL ${publishedUrl} no longer reaches this Service, which now listens on http://127.0.0.2:31002; pulumi up puts ${refused} back`,
      },
    ]);
  });

  it("exits 4 on a URL that does not answer within --timeout", async () => {
    const hanging = await startServer({ "/": "hang" });
    try {
      // The server never answers: only the probe's 0.3 s timer can end it, and the FAIL line names that timer.
      const r = await probe(["--outputs", outputsFile({ gitea: hanging.url }), "--timeout", "0.3"]);
      expect(r.code).toBe(4);
      expect(r.out.join("\n")).toMatch(/gitea .* FAIL: no answer within 0\.3s/);
    } finally {
      await hanging.close();
    }
  });

  it("reads the outputs of --stack through the Pulumi CLI, with that stack's contract", async () => {
    const calls: { stack: string; file: string | undefined }[] = [];
    const readOutputs: ProbeDeps["readOutputs"] = async (_ctx, stack, file) => {
      calls.push({ stack, file });
      return { urls: { argocd: healthy.url } };
    };
    const r = await probe(["--stack", "bench"], { readOutputs });
    expect(r.code).toBe(0);
    expect(calls).toEqual([{ stack: "bench", file: undefined }]);
    expect(r.out.join("\n")).toContain(`${healthy.url}/healthz`);
  });

  it("fails with exit 1 and one line when there is nothing to probe or the outputs cannot be read", async () => {
    const empty = await probe(["--outputs", outputsFile(undefined, "no-urls.json")]);
    expect(empty.code).toBe(1);
    expect(empty.err).toEqual([`exposure probe: ${path.join(project.dir, "no-urls.json")} has no 'urls' output: has \`pulumi up\` run for it?`]);

    const noCli = await probe(["--stack", "bench"], {
      readOutputs: async () => {
        throw new UserError("the pulumi CLI is not on PATH; install it or pass --outputs FILE (saved `pulumi stack output --json`)");
      },
    });
    expect(noCli.code).toBe(1);
    expect(noCli.err).toEqual(["exposure probe: the pulumi CLI is not on PATH; install it or pass --outputs FILE (saved `pulumi stack output --json`)"]);

    const bad = path.join(project.dir, "bad.json");
    fs.writeFileSync(bad, JSON.stringify({ urls: ["http://127.0.0.1:1"] }));
    const wrongShape = await probe(["--outputs", bad]);
    expect(wrongShape.code).toBe(1);
    expect(wrongShape.err).toEqual([`exposure probe: ${bad}: the 'urls' output must map entry names to URLs`]);
  });

  it("never prints the password of a URL that carries one, in the table or --json (found by an outside tester)", async () => {
    const withPassword = healthy.url.replace("http://", "http://admin:S3cretPW@");
    const file = outputsFile({ argocd: withPassword }, "with-password.json");
    for (const argv of [
      ["--outputs", file],
      ["--outputs", file, "--json"],
    ]) {
      const r = await probe(argv);
      const text = [...r.out, ...r.err].join("\n");
      expect(text, argv.join(" ")).not.toContain("S3cretPW");
      expect(text, argv.join(" ")).toContain("admin:****@");
    }
  });

  it("a published URL with a line break stays in its own row (found by an outside tester)", async () => {
    const file = outputsFile({ gitea: `${healthy.url}\nmlflow         http://6.6.6.6:1  MATCH`, argocd: healthy.url }, "line-break.json");
    const r = await probe(["--outputs", file]);
    const table = r.out.join("\n").split("\n");
    // header, one row per entry, a blank line, the summary
    expect(table.filter((l) => l.trim() !== "")).toHaveLength(4);
    expect(table.join("\n")).toContain("\\x0amlflow");
  });

  it("an unparseable published URL is shown escaped and cut at 256 characters, in the table and --json (found by an outside tester)", async () => {
    const long = `http://127.0.0.1:1\nFAKE ROW${"z".repeat(300)}`;
    const file = outputsFile({ gitea: long }, "long-url.json");
    // The first 256 characters (27 before the z's), escaped, and the length.
    const shown = `http://127.0.0.1:1\\x0aFAKE ROW${"z".repeat(229)}... (327 characters)`;
    const r = await probe(["--outputs", file]);
    expect(r.code).toBe(4);
    const row = r.out.join("\n").split("\n")[1] ?? "";
    expect(row).toContain(`FAIL: invalid URL '${shown}'`);
    expect(row).not.toContain("z".repeat(257));
    const json = await probe(["--outputs", file, "--json"]);
    const result = (JSON.parse(json.out.join("\n")) as { results: { url: string; error: string }[] }).results[0];
    expect(result).toMatchObject({ url: shown, error: `invalid URL '${shown}'` });
  });

  it("--entry probes only the named URLs, and the exit code comes from them alone", async () => {
    const file = outputsFile({ argocd: healthy.url, gitea: failing.url });
    const requested: string[] = [];
    const get: ProbeDeps["get"] = (url, timeoutMs) => {
      requested.push(url.href);
      return httpGet(url, timeoutMs);
    };
    const ok = await probe(["--outputs", file, "--entry", "argocd", "--json"], { get });
    expect(ok.code).toBe(0);
    const json = JSON.parse(ok.out.join("\n")) as { apiVersion: string; kind: string; ok: boolean; results: { name: string; ok: boolean }[] };
    expect(json).toMatchObject({ kind: "Probe", ok: true, tlsVerified: false });
    expect(json.results.map((x) => x.name)).toEqual(["argocd"]);
    expect(requested).toEqual([`${healthy.url}/healthz`]);
    const both = await probe(["--outputs", file, "--entry", "gitea", "--entry", "argocd"]);
    expect(both.code).toBe(4);
    expect(both.out.join("\n")).toContain("1 ok, 1 failed");
  });

  it("--entry: a name that is not published is a usage error (exit 2) naming it, with a suggestion, and nothing is probed", async () => {
    const file = outputsFile({ argocd: healthy.url, gitea: healthy.url });
    const noContract = fs.mkdtempSync(path.join(project.dir, "elsewhere-"));
    const cases: [string[], string][] = [
      [["--outputs", file, "--entry", "argcd"], "--entry 'argcd': no such entry in the contract; did you mean 'argocd'?"],
      [["--outputs", file, "--entry", "grafana"], `--entry 'grafana': not in the 'urls' output of ${file}`],
      [["--outputs", file, "--entry", ""], "--entry '': an entry name cannot be empty"],
      [["--outputs", file, "--entry", "git\u009bea"], "--entry 'git\\x9bea': no such entry in the contract; did you mean 'gitea'?"],
      [["--stack", "bench", "--entry", "grafana"], "--entry 'grafana': not published by stack bench (not exposed, or not in its ui-exposure:entries)"],
      [["--stack", "bench", "--entry", "gitee"], "--entry 'gitee': no such entry in the contract; did you mean 'gitea'?"],
    ];
    for (const [argv, message] of cases) {
      let requests = 0;
      let outputsRead = 0;
      const r = await probe(argv, {
        get: async () => {
          requests++;
          return { status: 200 };
        },
        readOutputs: async (_ctx, _stack, outputs) => {
          outputsRead++;
          return JSON.parse(fs.readFileSync(outputs ?? file, "utf8")) as Record<string, unknown>;
        },
      });
      expect(r.code, argv.join(" ")).toBe(2);
      expect(r.out).toEqual([]);
      expect(r.err.join("\n").split("\n")[0]).toBe(`exposure probe: ${message}`);
      expect(requests).toBe(0);
      // A stack's own names are checked before its outputs are read.
      if (argv[0] === "--stack") expect(outputsRead).toBe(0);
    }
    // Without a contract the outputs are all there is to name.
    const c = capture(noContract);
    const code = await runCommand("probe", createProbeCommand(), ["--outputs", file, "--entry", "gitae"], c);
    expect(code).toBe(2);
    expect(c.err.join("\n")).toContain(`\nexposure probe: --entry 'gitae': not in the 'urls' output of ${file}; did you mean 'gitea'?`);
  });

  it("rejects bad usage with exit 2", async () => {
    const none = await probe([]);
    expect(none.code).toBe(2);
    expect(none.err.join("\n")).toBe(
      "exposure probe: give --stack NAME, or --outputs FILE (saved `pulumi stack output --json`)\nusage: exposure probe (--stack NAME... | --all-stacks | --outputs FILE [--contract FILE]) [--entry NAME]... [--timeout SECONDS] [--concurrency N] [--json]\n(`exposure probe --help` describes every flag)",
    );
    const zero = await probe(["--outputs", "x.json", "--concurrency", "0"]);
    expect(zero.code).toBe(2);
    expect(zero.err[0]?.split("\n")[0]).toBe("exposure probe: --concurrency must be a positive integer, not '0'");
    const both = await probe(["--stack", "bench", "--contract", "c.yaml"]);
    expect(both.code).toBe(2);
  });
});

function isSliceOf(o: unknown, service: string): boolean {
  const x = o as { kind?: string; metadata?: { labels?: Record<string, string> } };
  return x.kind === "EndpointSlice" && x.metadata?.labels?.["kubernetes.io/service-name"] === service;
}

describe("exposure probe over several stacks (issue 41)", () => {
  let two: TestProject;
  beforeAll(() => {
    two = makeProject({
      bench: stackFile({ "ui-exposure:entries": ["argocd"] }),
      prod: stackFile({ "ui-exposure:entries": ["argocd"] }),
      gone: stackFile(),
      hostile: stackFile(),
      nourls: stackFile(),
    });
  });
  afterAll(() => two.remove());
  // Both stacks publish argocd, at different URLs; `gone` has no outputs.
  const readOutputs: ProbeDeps["readOutputs"] = async (_ctx, stack) => {
    if (stack === "gone") throw new UserError("no stack named 'gone' found");
    if (stack === "hostile") return { urls: "x" };
    if (stack === "nourls") return {};
    return { urls: { argocd: stack === "bench" ? healthy.url : failing.url } };
  };

  it("one table with a STACK column, each stack's argocd its own row; a stack not read on its own line; exit the worst", async () => {
    const c = capture(two.dir);
    const deps = { readOutputs, connect: async () => snapshot(healthyCluster()) };
    const code = await runCommand("probe", createProbeCommand(deps), ["--stack", "bench", "--stack", "prod", "--stack", "gone"], c);
    const text = c.out.join("\n");
    expect(text).toMatch(/^STACK\s+ENTRY\s+URL/m);
    expect(text).toMatch(new RegExp(`^bench\\s+argocd\\s+${healthy.url}/healthz\\s+200\\s+\\d+ ms\\s+ok`, "m"));
    expect(text).toMatch(new RegExp(`^prod\\s+argocd\\s+${failing.url}/healthz\\s+500\\s+\\d+ ms\\s+FAIL: expected 200, got 500`, "m"));
    expect(text).toContain("1 ok, 1 failed, 1 stack(s) not read: gone");
    expect(c.err).toEqual(["exposure probe: stack gone: no stack named 'gone' found"]);
    expect(code).toBe(1);
    const json = capture(two.dir);
    expect(await runCommand("probe", createProbeCommand(deps), ["--stack", "bench", "--stack", "prod", "--json"], json)).toBe(4);
    const doc = JSON.parse(json.out.join("\n")) as { results: { stack: string; name: string; ok: boolean }[] };
    expect(doc.results.map((r) => [r.stack, r.name, r.ok])).toEqual([
      ["bench", "argocd", true],
      ["prod", "argocd", false],
    ]);
  });

  it("a stack's outputs that are not usable: its line names the stack once (found by an outside tester)", async () => {
    const c = capture(two.dir);
    const deps = { readOutputs, connect: async () => snapshot(healthyCluster()) };
    expect(await runCommand("probe", createProbeCommand(deps), ["--stack", "bench", "--stack", "hostile", "--stack", "nourls"], c)).toBe(1);
    expect(c.err).toEqual([
      "exposure probe: stack hostile: the 'urls' output must map entry names to URLs",
      "exposure probe: stack nourls has no 'urls' output: has `pulumi up` run for it?",
    ]);
  });
});
