import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../cli/main";
import { loadContractFile } from "../src/adapters/contract-file";
import { readStackOutputs } from "../src/adapters/pulumi-cli";
import { ContractError, parseContract } from "../src/core/contract/parse";
import { SnapshotReader } from "../src/core/kube/cluster";
import { contractError } from "./support/fixtures";

const projectDir = path.resolve(__dirname, "..");

function problemsOf(text: string): string[] {
  try {
    parseContract(text, "c.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ContractError);
    return (err as Error).message.split("\n").slice(1);
  }
  throw new Error("expected the contract to be rejected");
}

const ok = (extra = "") => `version: 1
endpoints:
  - name: argocd
    exposed: true
    service: { namespace: argocd, name: argocd-server, port: http }
${extra}`;

describe("contract", () => {
  it("loads the committed example: 11 endpoints, 8 exposed, ports never declared", () => {
    const c = loadContractFile(path.join(projectDir, "contract/endpoints.example.yaml"));
    expect(c.endpoints).toHaveLength(11);
    expect(c.endpoints.filter((e) => e.exposed).map((e) => e.name)).toEqual([
      "argocd",
      "grafana",
      "gitea",
      "dagster",
      "mlflow",
      "marquez-web",
      "k8s-dashboard",
      "portal",
    ]);
    expect(c.endpoints.find((e) => e.name === "grafana")?.service).toEqual({
      namespace: "monitoring",
      name: "kube-prometheus-stack-grafana",
      port: "http-web",
    });
    expect(c.endpoints.find((e) => e.name === "postgres")).toMatchObject({ exposed: false, scheme: "postgresql" });
  });

  it("nesting deeper than 100 levels is one problem, not hundreds of unclosed brackets (found by an outside tester)", () => {
    for (const text of [`version: 1\nendpoints: ${"[".repeat(5000)}\n`, `version: 1\nendpoints: ${"[".repeat(5000)}${"]".repeat(5000)}\n`]) {
      const problems = problemsOf(text);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^c\.yaml:2:\d+: \(yaml\): nested more than 100 levels deep: flatten the document$/);
    }
  });

  it("applies defaults: exposed false, scheme http", () => {
    const c = parseContract("version: 1\nendpoints:\n  - name: registry\n    service: { namespace: registry, name: registry, port: 5000 }\n", "c.yaml");
    expect(c.endpoints[0]).toEqual({ name: "registry", exposed: false, scheme: "http", service: { namespace: "registry", name: "registry", port: 5000 } });
  });

  it("rejects the legacy ui_hostname with what to do instead", () => {
    expect(problemsOf(ok("    ui_hostname: argocd.cluster.lan"))).toEqual([
      "c.yaml:6:5: endpoints[0].ui_hostname: legacy key: UIs are no longer published under a hostname; set 'exposed: true' (the URL becomes http://<node IP>:<nodePort>)",
    ]);
  });

  it("rejects the legacy ui_nodeport: ports are allocated and observed", () => {
    expect(problemsOf(ok("    ui_nodeport: 30080"))).toEqual([
      "c.yaml:6:5: endpoints[0].ui_nodeport: legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'",
    ]);
  });

  it("rejects a nodePort at any depth", () => {
    const text =
      "version: 1\nendpoints:\n  - name: argocd\n    exposed: true\n    service: { namespace: argocd, name: argocd-server, port: http, nodePort: 30080 }\n";
    expect(problemsOf(text)).toEqual([
      "c.yaml:5:68: endpoints[0].service.nodePort: a nodePort is never written in the contract: Kubernetes allocates it (30000-32767) and ui-exposure reads it back; remove it",
    ]);
  });

  it("rejects unknown keys (typos) by name", () => {
    expect(problemsOf(ok("    exposd: true"))).toEqual(["c.yaml:6:5: endpoints[0].exposd: unknown key 'exposd'"]);
    expect(problemsOf(`${ok()}extra: 1\n`)).toEqual(["c.yaml:6:1: extra: unknown key 'extra'"]);
  });

  it("rejects duplicate names, pointing at the second", () => {
    const text = `${ok()}  - name: argocd\n    service: { namespace: argocd, name: other, port: 80 }\n`;
    expect(problemsOf(text)).toEqual(["c.yaml:6:11: endpoints[1].name: duplicate name 'argocd' (first at endpoints[0])"]);
  });

  it("rejects names that are not DNS labels, and names too long for '<name>-nodeport'", () => {
    expect(problemsOf(ok("  - name: Grafana_UI\n    service: { namespace: monitoring, name: grafana, port: 80 }"))).toEqual([
      "c.yaml:6:11: endpoints[1].name: entry name must be a DNS label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, found a string (\"Grafana_UI\")",
    ]);
    const long = "a".repeat(55);
    expect(problemsOf(ok(`  - name: ${long}\n    service: { namespace: x, name: y, port: 80 }`))).toEqual([
      "c.yaml:6:11: endpoints[1].name: entry name must be at most 54 characters (our Service is '<name>-nodeport'), found 55 characters",
    ]);
  });

  it("rejects bad namespaces and port numbers", () => {
    const text = "version: 1\nendpoints:\n  - name: a\n    service: { namespace: Data, name: pg, port: 70000 }\n";
    expect(problemsOf(text)).toEqual([
      "c.yaml:4:27: endpoints[0].service.namespace: namespace must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit, found a string (\"Data\")",
      "c.yaml:4:49: endpoints[0].service.port: port number must be between 1 and 65535, found a number (70000)",
    ]);
  });

  it("rejects hostPorts out of range or declared twice", () => {
    const text = `${ok()}  - name: agent-a
    exposed: true
    hostPort: { namespace: lineage, port: 8090 }
  - name: agent-b
    exposed: true
    hostPort: { namespace: lineage, port: 8090 }
  - name: agent-c
    exposed: true
    hostPort: { namespace: lineage, port: 0 }
`;
    expect(problemsOf(text)).toEqual([
      "c.yaml:11:43: endpoints[2].hostPort.port: hostPort 8090 is already declared by 'agent-a': each hostPort may be declared once",
      "c.yaml:14:43: endpoints[3].hostPort.port: hostPort must be between 1 and 65535, found a number (0)",
    ]);
  });

  it("requires a service or a hostPort, not both, and http(s) for exposed entries", () => {
    const text = `version: 1
endpoints:
  - name: nothing
    exposed: true
  - name: both
    exposed: true
    service: { namespace: a, name: b, port: 80 }
    hostPort: { namespace: a, port: 8080 }
  - name: pg
    exposed: true
    scheme: postgresql
    service: { namespace: data, name: postgres, port: 5432 }
`;
    expect(problemsOf(text)).toEqual([
      "c.yaml:3:5: endpoints[0].service: missing: name the existing Service ({namespace, name, port}) or, for an in-house brick, a 'hostPort'",
      "c.yaml:8:15: endpoints[1].hostPort: declare either 'service' (NodePort exposure) or 'hostPort', not both",
      "c.yaml:11:13: endpoints[2].scheme: an exposed UI is served over http or https, not 'postgresql'",
    ]);
  });

  it("says what was expected and what was found, never zod's own wording, one problem per field (found by a tester)", () => {
    const entry = (extra: string, service = "    service: { namespace: a, name: b, port: http }\n") =>
      `version: 1\nendpoints:\n  - name: argocd\n    exposed: true\n${service}${extra}`;
    const cases: [string, string][] = [
      [entry("    scheme: ftp\n"), `c.yaml:6:13: endpoints[0].scheme: expected 'http', 'https', 'postgresql' or 'tcp', found a string ("ftp")`],
      [
        entry("    probe: { expectStatus: [999] }\n"),
        "c.yaml:6:29: endpoints[0].probe.expectStatus[0]: expected an HTTP status between 100 and 599, found a number (999)",
      ],
      [
        entry("    probe: { expectStatus: [-1] }\n"),
        "c.yaml:6:29: endpoints[0].probe.expectStatus[0]: expected an HTTP status between 100 and 599, found a number (-1)",
      ],
      [entry("    probe: { expectStatus: [] }\n"), "c.yaml:6:28: endpoints[0].probe.expectStatus: must list at least one status (omit it for any 2xx or 3xx)"],
      [
        entry("    probe: { timeoutSeconds: 0 }\n"),
        "c.yaml:6:30: endpoints[0].probe.timeoutSeconds: expected a number of seconds above 0 and at most 120, found a number (0)",
      ],
      [
        entry("    probe: { timeoutSeconds: 500 }\n"),
        "c.yaml:6:30: endpoints[0].probe.timeoutSeconds: expected a number of seconds above 0 and at most 120, found a number (500)",
      ],
      [
        entry("    credentials: [{ label: '', secret: { namespace: a, name: b }, passwordKey: p }]\n"),
        "c.yaml:6:28: endpoints[0].credentials[0].label: must not be empty",
      ],
      [
        entry("", "    service: { namespace: a, name: b, port: 99999999999999999999 }\n"),
        "c.yaml:5:45: endpoints[0].service.port: port number must be between 1 and 65535, found a number (100000000000000000000)",
      ],
      [
        entry("", "    hostPort: { namespace: a, port: 1e400 }\n"),
        "c.yaml:5:37: endpoints[0].hostPort.port: expected a finite number, found a number out of range (Infinity)",
      ],
      [
        // A boolean field holding an infinite number: the type it wants, not "a finite number" (a second outside tester).
        "version: 1\nendpoints:\n  - name: argocd\n    exposed: 1e400\n    service: { namespace: a, name: b, port: http }\n",
        "c.yaml:4:14: endpoints[0].exposed: expected a boolean, found a number out of range (Infinity)",
      ],
    ];
    for (const [text, expected] of cases) expect(problemsOf(text)).toEqual([expected]);
  });

  it("never shows the text of a file that is not a contract (a passphrase, a token): only its type and size (found by an outside tester)", () => {
    const secret = "q8Zt3LmW2ZPSRbE9uuYbYqdsQrnqS4GJ_q";
    expect(problemsOf(`${secret}\n`)).toEqual([
      `c.yaml:1:1: (document): expected a map (version, endpoints), found a string of ${secret.length} characters (not shown: is this the contract file?)`,
    ]);
    expect(problemsOf("PASSWORD=hunter2\nTOKEN=abc\n").join("\n")).not.toContain("hunter2");
    expect(problemsOf("42\n")).toEqual(["c.yaml:1:1: (document): expected a map, found a number (42)"]);
  });

  it("keeps each problem on one line when the file name holds a line break (found by an outside tester)", () => {
    let message = "";
    try {
      parseContract("version: 1\nendpoints: [\n", "e\u001b]0;T\u0007\nnl.yaml");
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.split("\n")).toEqual([
      "invalid contract e\\x1b]0;T\\x07\\x0anl.yaml (1 problem):",
      expect.stringMatching(/^e\\x1b\]0;T\\x07\\x0anl\.yaml:3:1: \(yaml\): /),
    ]);
  });

  it("reports every problem at once, sorted by position, with a count", () => {
    const text = "version: 2\nendpoints:\n  - name: A\n    ui_hostname: x\n    service: { namespace: a, name: b, port: http }\n";
    expect(() => parseContract(text, "c.yaml")).toThrow(
      [
        "invalid contract c.yaml (3 problems):",
        "c.yaml:1:10: version: version must be 1, found a number (2)",
        "c.yaml:3:11: endpoints[0].name: entry name must be a DNS label: lowercase letters, digits and '-', starting with a letter and ending with a letter or digit, found a string (\"A\")",
        "c.yaml:4:5: endpoints[0].ui_hostname: legacy key: UIs are no longer published under a hostname; set 'exposed: true' (the URL becomes http://<node IP>:<nodePort>)",
      ].join("\n"),
    );
  });

  it("reports YAML syntax errors and duplicate keys with their position", () => {
    expect(problemsOf("version: 1\nendpoints: [\n")[0]).toMatch(/^c\.yaml:\d+:\d+: \(yaml\): /);
    expect(problemsOf("version: 1\nversion: 1\nendpoints: []\n")).toEqual(["c.yaml:2:1: (yaml): duplicate key 'version': map keys must be unique"]);
    expect(problemsOf(`${ok()}    exposed: false\n`)).toEqual(["c.yaml:6:5: (yaml): duplicate key 'exposed': map keys must be unique"]);
  });

  it("names a missing file and what to do", () => {
    expect(() => loadContractFile("/nonexistent/endpoints.yaml", "contract/endpoints.yaml")).toThrow(
      "contract file not found: contract/endpoints.yaml (copy contract/endpoints.example.yaml to contract/endpoints.yaml, or set ui-exposure:contract)",
    );
  });
});

describe("exposure check", () => {
  function runCheck(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    return main(["check", ...args], { projectDir, stdout: (t) => out.push(t), stderr: (t) => err.push(t) }).then((code) => ({ code, out, err }));
  }

  it("exits 0 on the example contract (the default when contract/endpoints.yaml is absent)", async () => {
    const { code, out, err } = await runCheck([path.join(projectDir, "contract/endpoints.example.yaml")]);
    expect(code).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toMatch(
      /: valid: 11 endpoints, 8 exposed \(8 NodePort, 0 hostPort\): argocd, grafana, gitea, dagster, mlflow, marquez-web, k8s-dashboard, portal$/,
    );
  });

  it("exits 2 with every problem on one line each, no stack trace", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "check-"));
    const file = path.join(dir, "bad.yaml");
    fs.writeFileSync(file, ok("    ui_nodeport: 30080\n    exposd: true"));
    const { code, out, err } = await runCheck([file]);
    expect(code).toBe(2);
    expect(out).toEqual([]);
    const lines = err.join("\n").split("\n");
    expect(lines[0]).toMatch(/^exposure check: invalid contract .*bad\.yaml \(2 problems\):$/);
    expect(lines.slice(1).map((l) => l.replace(/^.*bad\.yaml/, "bad.yaml"))).toEqual([
      "bad.yaml:6:5: endpoints[0].ui_nodeport: legacy key: nodePorts are now allocated by Kubernetes and observed, never declared; remove it and set 'exposed: true'",
      "bad.yaml:7:5: endpoints[0].exposd: unknown key 'exposd'",
    ]);
    expect(err.join("\n")).not.toMatch(/\n\s+at /);
  });

  it("exits 2 on bad usage", async () => {
    const { code, err } = await runCheck(["a.yaml", "b.yaml"]);
    expect(code).toBe(2);
    expect(err).toEqual([
      "exposure check: check takes at most one contract file\nusage: exposure check [CONTRACT] [--json]\n(`exposure check --help` describes every flag)",
    ]);
  });
});

describe("a wrong type says what was expected and what was found", () => {
  it("names the expected and found types at the field's line, and still reports the entry's other problems", () => {
    const message = contractError(`version: 1
endpoints:
  - name: 123
    exposed: "true"
    scheme: postgresql
    probe: { timeoutSeconds: "5" }
`);
    expect(message).toContain("c.yaml:3:11: endpoints[0].name: expected a string, found a number (123)");
    expect(message).toContain('c.yaml:4:14: endpoints[0].exposed: expected a boolean, found a string ("true")');
    expect(message).toContain('endpoints[0].probe.timeoutSeconds: expected a number, found a string ("5")');
    expect(message).not.toContain("required field is missing");
    // The entry's other problem (no service nor hostPort) is not hidden by the type errors.
    expect(message).toContain("endpoints[0].service: missing");
  });

  it("still says 'missing' for a field that is absent", () => {
    expect(contractError("endpoints:\n  - name: a\n    service: { namespace: a, name: a, port: http }\n")).toContain("version: required field is missing");
  });
});

const ALIAS_BOMB = `a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
`;

describe("hostile YAML and malformed snapshots are clean errors with a position", () => {
  it("refuses an alias bomb in a contract with a position", () => {
    const message = contractError(`version: 1\n${ALIAS_BOMB}endpoints: []\n`);
    expect(message).toMatch(/^invalid contract c\.yaml \(1 problem\):\nc\.yaml:3:\d+: \(yaml\): Excessive alias count/);
  });

  it("refuses an alias bomb in a snapshot", () => {
    expect(() => SnapshotReader.parse(`kind: List\nitems: []\n${ALIAS_BOMB}`, "snap.yaml")).toThrow(
      /^snap\.yaml:1:1: cluster snapshot refused: Excessive alias count/,
    );
  });

  it.each([
    ["an object without metadata", "kind: Service\nspec: {}\n", "snap.yaml:1:1: metadata: required field is missing"],
    [
      "ports as a string",
      "kind: Service\nmetadata: {name: a, namespace: b}\nspec:\n  ports: '80'\n",
      'snap.yaml:4:10: spec.ports: expected an array, found a string ("80")',
    ],
    ["a null port", "kind: Service\nmetadata: {name: a}\nspec:\n  ports: [null]\n", "snap.yaml:4:11: spec.ports[0]: expected a map, found null"],
    [
      "addresses as a string",
      "kind: Node\nmetadata: {name: n}\nstatus: {addresses: '1.2.3.4'}\n",
      'snap.yaml:3:21: status.addresses: expected an array, found a string ("1.2.3.4")',
    ],
    ["items: null", "kind: List\nitems: null\n", "snap.yaml:2:8: items: expected an array, found null"],
    ["a null item", "kind: ServiceList\nitems:\n  - null\n", "snap.yaml:3:5: items[0]: expected a Kubernetes object (a map), found null"],
    [
      "a List item without metadata.name (at the item's metadata, not the List's first line)",
      "kind: List\nitems:\n  - kind: Service\n    metadata: {namespace: b}\n    spec: {}\n",
      "snap.yaml:4:15: items[0].metadata.name: required field is missing",
    ],
    ["a bare array", "- kind: Service\n  metadata: {name: a}\n", "snap.yaml:1:1: (object): expected a Kubernetes object or a List, found an array"],
  ])("refuses a snapshot with %s", (_name, text, fragment) => {
    expect(() => SnapshotReader.parse(text, "snap.yaml")).toThrow(fragment);
  });

  it("refuses --outputs holding null, a list or a number", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "outputs-"));
    try {
      const cases: [string, string][] = [
        ["null", "null"],
        ["[1]", "an array"],
        ["3", "a number (3)"],
      ];
      for (const [text, found] of cases) {
        const file = path.join(dir, "o.json");
        fs.writeFileSync(file, text);
        await expect(readStackOutputs({ projectDir: dir, env: {} }, "bench", file)).rejects.toThrow(`${file}: expected a map of stack outputs, found ${found}`);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
