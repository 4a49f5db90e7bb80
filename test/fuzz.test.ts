// Property-based fuzzing (fast-check) of the inputs anyone can feed: the contract loader, the
// snapshot reader (and the verdicts computed from what it accepts), the portal's request
// handling, the admission policy generated from what the contract and settings accept, the file
// names completion offers as words, and Secret values in the .env template. Bounded in runs and time so `npm test` stays fast; a failure prints its seed and the
// shrunk input: add it to test/adversarial/cases.ts once fixed.
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import type * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { bashScript, stackNames } from "../cli/commands/completion";
import { renderEnvTemplate } from "../src/core/access";
import { admissionManifests } from "../src/core/admission";
import { ContractError, parseContract } from "../src/core/contract/parse";
import { contractSchema } from "../src/core/contract/schema";
import { UserError } from "../src/core/errors";
import { isStackName } from "../src/core/inputs";
import { SnapshotReader } from "../src/core/kube/cluster";
import { observe } from "../src/core/observe";
import { portalHandler, requestPath } from "../src/portal/server";
import { celProblems } from "./support/cel-compile";
import { TEST_CONTRACT } from "./support/command-helpers";
import { parseSettings } from "./support/fixtures";
import { MemoryCluster, portalContract, recordedCluster } from "./support/portal-fixtures";

const RUNS = { numRuns: 150, interruptAfterTimeLimit: 8_000 } as const;
const contract = parseContract(TEST_CONTRACT, "test-contract.yaml");

/** Only a UserError (a clean, documented refusal) may come out; anything else is a bug. */
function cleanly(fn: () => unknown): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    expect(err.message).not.toMatch(/\n\s+at .+:\d+:\d+/);
    expect(err.message.length).toBeLessThan(64 * 1024);
  }
}

/** YAML-ish values around the contract's and Kubernetes' field names, mostly wrong in type. */
const scalar = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom("http", "true", "80", "//x", "kube-system", "\u001b[2J"),
);
const key = fc.constantFrom(
  "version",
  "endpoints",
  "name",
  "exposed",
  "scheme",
  "service",
  "namespace",
  "port",
  "hostPort",
  "probe",
  "path",
  "timeoutSeconds",
  "expectStatus",
  "credentials",
  "secret",
  "kind",
  "metadata",
  "spec",
  "ports",
  "items",
  "status",
  "addresses",
  "selector",
  "nodePort",
  "__proto__",
);
const tree = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("map"), tie("list")),
  map: fc.dictionary(key, tie("node"), { maxKeys: 6 }),
  list: fc.array(tie("node"), { maxLength: 4 }),
})).node;

describe("fuzz: contract loader", () => {
  it("returns a contract or throws a ContractError with positions, for any text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        try {
          parseContract(text, "f.yaml");
        } catch (err) {
          expect(err).toBeInstanceOf(ContractError);
          for (const p of (err as ContractError).problems) expect(p.line).toBeGreaterThan(0);
        }
      }),
      RUNS,
    );
  });

  it("never crashes on YAML built from the contract's own keys", () => {
    fc.assert(
      fc.property(tree, fc.constantFrom(1, "1", null), (endpoints, version) => {
        const text = stringify({ version, endpoints });
        try {
          parseContract(text, "f.yaml");
        } catch (err) {
          expect(err).toBeInstanceOf(ContractError);
          // zod's raw wording ("Invalid input: expected ...") never reaches the user: every issue is described.
          expect((err as Error).message).not.toContain("Invalid input");
        }
      }),
      RUNS,
    );
  });
});

describe("fuzz: snapshot reader and the verdicts on what it accepts", () => {
  const kinds = fc.constantFrom("Service", "Node", "Pod", "EndpointSlice", "List", "ServiceList", "Secret", "ConfigMap");
  const objectLike = fc.record(
    {
      kind: kinds,
      metadata: fc.oneof(tree, fc.record({ name: fc.string({ maxLength: 8 }), namespace: fc.constantFrom("argocd", "gitea", "monitoring") })),
      spec: tree,
      status: tree,
      items: tree,
    },
    { requiredKeys: ["kind"] },
  );

  it("parses or refuses cleanly, and observe() never throws on what was accepted", () => {
    fc.assert(
      fc.property(fc.array(objectLike, { maxLength: 6 }), (objects) => {
        const text = objects.map((o) => stringify(o)).join("---\n");
        cleanly(() => {
          const reader = SnapshotReader.parse(text, "fuzz.yaml");
          const all = (reader as unknown as { objects: { kind?: string }[] }).objects;
          const ofKind = (k: string) => all.filter((o) => o.kind === k) as never[];
          observe(contract, { services: ofKind("Service"), endpointSlices: ofKind("EndpointSlice"), nodes: ofKind("Node"), pods: ofKind("Pod") });
        });
      }),
      RUNS,
    );
  });

  it("refuses any text it cannot read, cleanly", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => cleanly(() => SnapshotReader.parse(text, "fuzz.yaml"))),
      RUNS,
    );
  });
});

describe("fuzz: portal request handling", () => {
  const handler = portalHandler({ contract: portalContract(), cluster: new MemoryCluster(recordedCluster()), stack: "bench" });
  const target = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.webUrl(),
    fc.webPath(),
    fc.constantFrom("http://[zz]/", "//[", "/%", "/%zz", "http://a b/", "*", "/healthz?x=%00"),
  );

  it("requestPath never throws", () => {
    fc.assert(
      fc.property(target, (t) => {
        const p = requestPath(t);
        expect(p === undefined || p.startsWith("/")).toBe(true);
      }),
      RUNS,
    );
  });

  it("answers every request with a status, never throwing", async () => {
    await fc.assert(
      fc.asyncProperty(target, fc.constantFrom("GET", "HEAD", "POST", "DELETE", "OPTIONS"), async (url, method) => {
        const answered = new Promise<number>((resolve) => {
          let status = 0;
          const res = {
            headersSent: false,
            writeHead(s: number) {
              status = s;
              this.headersSent = true;
              return this;
            },
            end() {
              resolve(status);
            },
            destroy() {
              resolve(-1);
            },
          };
          handler({ url, method, headers: {} } as http.IncomingMessage, res as unknown as http.ServerResponse);
        });
        const status = await answered;
        expect([200, 400, 404, 405, 503]).toContain(status);
      }),
      { numRuns: 100, interruptAfterTimeLimit: 8_000 },
    );
  });
});

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fuzz-"));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

/** Characters a shell treats specially, and some that are harmless. */
const shellUnit = fc.constantFrom(
  "a",
  "B",
  "1",
  "-",
  "_",
  ".",
  " ",
  "$",
  "(",
  ")",
  "{",
  "}",
  "`",
  "'",
  '"',
  "\\",
  ";",
  "&",
  "|",
  "*",
  "?",
  "[",
  "~",
  "#",
  "!",
  "\t",
  "\n",
  "é",
);

describe("fuzz: completion word lists", () => {
  it("--list stacks offers exactly the Pulumi.<name>.yaml whose name is a stack name, whatever the folder holds", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ unit: shellUnit, minLength: 1, maxLength: 10 }), { maxLength: 6 }), (names) => {
        const dir = fs.mkdtempSync(path.join(scratch, "stacks-"));
        try {
          const created = names.filter((n) => {
            try {
              fs.writeFileSync(path.join(dir, `Pulumi.${n}.yaml`), "");
              return true;
            } catch {
              return false; // a name the file system refuses
            }
          });
          expect(stackNames(dir)).toEqual(created.filter(isStackName).sort());
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 100, interruptAfterTimeLimit: 8_000 },
    );
  });

  it("the bash script runs none of the words it is given and offers only plain words starting with what was typed", () => {
    const words = fc.sample(fc.string({ unit: shellUnit, maxLength: 12 }), { numRuns: 200, seed: 23 }).filter((w) => !w.includes("\n"));
    const dir = fs.mkdtempSync(path.join(scratch, "complete-"));
    const bin = fs.mkdtempSync(path.join(scratch, "bin-"));
    fs.writeFileSync(path.join(scratch, "words"), `${words.join("\n")}\n`);
    fs.writeFileSync(path.join(bin, "exposure"), `#!/bin/sh\ncat '${path.join(scratch, "words")}'\n`, { mode: 0o755 });
    for (const typed of ["", "a", "$", "'"]) {
      const script = `${bashScript()}\nCOMP_WORDS=(exposure status --stack '${typed === "'" ? "'\\''" : typed}')\nCOMP_CWORD=3\n_exposure\nprintf '%s\\n' "\${COMPREPLY[@]}"`;
      const r = spawnSync("bash", ["--norc", "-c", script], { cwd: dir, encoding: "utf8", env: { PATH: `${bin}:${process.env.PATH}` } });
      expect(r.stderr).toBe("");
      const offered = r.stdout.split("\n").filter(Boolean);
      expect(offered).toEqual(words.filter((w) => /^[A-Za-z0-9_.-]+$/.test(w) && w.startsWith(typed)));
      expect(fs.readdirSync(dir)).toEqual([]);
    }
  });
});

describe("fuzz: the .env renderer with quoted templates", () => {
  it("any Secret value in any quoting is read back by bash (and python-dotenv) as written, or refused by name; sourcing runs nothing", () => {
    const lines: string[] = [];
    const expected = new Map<string, string>();
    const literal = fc.string({ unit: fc.constantFrom("a", "Z", "0", "-", "_", ":", "/", "@", " "), maxLength: 4 });
    let n = 0;
    fc.assert(
      fc.property(fc.constantFrom("'", '"', ""), literal, literal, fc.string({ unit: shellUnit, maxLength: 10 }), (quote, pre, post, secret) => {
        // Unquoted, the author's literal text must be a bare word itself.
        const [p, q] = quote === "" ? [pre.replace(/ /g, ""), post.replace(/ /g, "")] : [pre, post];
        const variable = `V${n++}`;
        const template = `${variable}=${quote}${p}{{s.password}}${q}${quote}\n`;
        const rendered = renderEnvTemplate(template, "t.env", () => ({ value: secret, source: "Secret data/pg" }), []);
        const refused = rendered.unresolved.find((u) => u.variable === variable);
        if (refused) {
          expect(refused.reason).toContain("Secret data/pg");
          // Never shown (shorter strings may occur in the fixed wording by chance).
          if (secret.length >= 6) expect(rendered.text).not.toContain(secret);
        } else expected.set(variable, `${p}${secret}${q}`);
        lines.push(rendered.text.trimEnd());
      }),
      { numRuns: 300 },
    );
    expect(expected.size).toBeGreaterThan(50);
    const cwd = fs.mkdtempSync(path.join(scratch, "env-"));
    const file = path.join(cwd, "generated.env");
    fs.writeFileSync(file, `${lines.join("\n")}\n`);
    const names = [...expected.keys()];
    const out = execFileSync("bash", ["--norc", "-c", `set -a; source ./generated.env; for v in ${names.join(" ")}; do printf '%s\\0' "\${!v}"; done`], {
      cwd,
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    });
    expect(fs.readdirSync(cwd)).toEqual(["generated.env"]);
    expect(out.split("\0").slice(0, -1)).toEqual([...expected.values()]);
    if (spawnSync("python3", ["-c", "import dotenv"]).status === 0) {
      const python = JSON.parse(
        execFileSync("python3", ["-c", "import dotenv, json, sys; print(json.dumps(dotenv.dotenv_values(sys.argv[1])))", file], { encoding: "utf8" }),
      ) as Record<string, string>;
      expect(names.map((v) => python[v])).toEqual([...expected.values()]);
    }
  });
});

describe("fuzz: the admission policy generated from whatever the contract and settings accept", () => {
  // Any UTF-16 unit (lone surrogates included), and the characters label and name rules are about.
  const unit = fc.oneof(
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    fc.constantFrom("a", "Z", "0", "-", "_", ".", "/", "*", ":", '"', "\\", "'"),
  );
  const text = fc.string({ unit, maxLength: 20 });
  const labels = fc.dictionary(
    fc.oneof(text, fc.constantFrom("app", "app.kubernetes.io/name", "example.com/x")),
    fc.oneof(text, fc.constantFrom("", "agent", "a.b_c-d")),
    {
      maxKeys: 3,
    },
  );
  const port = fc.oneof(fc.integer({ min: -2, max: 70000 }), fc.constantFrom(1, 65535, 2 ** 53, 1e20));
  const hostPortPattern = fc.oneof(
    text,
    fc
      .tuple(
        fc.constantFrom("kube-system", "tools", "a"),
        fc.constantFrom("cilium-*", "pod", "x.y-*", "*"),
        fc.oneof(port.map(String), fc.constantFrom("08", "99999999999999999999")),
      )
      .map(([ns, pod, p]) => `${ns}/${pod}:${p}`),
  );

  it("every expression of every policy it generates compiles", async () => {
    await fc.assert(
      fc.asyncProperty(
        labels,
        port,
        fc.array(hostPortPattern, { maxLength: 3 }),
        fc.array(text, { maxLength: 2 }),
        async (podSelector, hostPort, hostPorts, services) => {
          const contract = contractSchema.safeParse({
            version: 1,
            endpoints: [
              { name: "ui", exposed: true, service: { namespace: "ns", name: "svc", port: "http" } },
              { name: "agent", exposed: true, hostPort: { namespace: "tools", port: hostPort, podSelector } },
            ],
          });
          let settings: ReturnType<typeof parseSettings>;
          try {
            settings = parseSettings(
              { "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }), "ui-exposure:allowlist": JSON.stringify({ hostPorts, services }) },
              "Pulumi.fuzz.yaml",
            );
          } catch (err) {
            expect(err).toBeInstanceOf(UserError);
            return;
          }
          if (!contract.success) return;
          const m = admissionManifests({
            stack: "fuzz",
            contract: contract.data,
            selected: ["ui", "agent"],
            allowlist: settings.allowlist,
            mode: "deny",
            failurePolicy: "Ignore",
            contractFile: "contract/endpoints.yaml",
          });
          expect(await celProblems(m.policy.spec)).toEqual([]);
        },
      ),
      { numRuns: 120, interruptAfterTimeLimit: 10_000 },
    );
  });
});
