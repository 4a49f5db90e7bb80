// Regression tests for the defects of the hostile-input review (issue 12), one block per defect.
// The adversarial corpus (test/adversarial/) and the fuzzing (test/fuzz.test.ts) look for the next ones.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStatusCommand } from "../cli/commands/status";
import { main } from "../cli/main";
import { FILE_LIMITS, readBoundedText } from "../src/adapters/bounded-file";
import { probeOne } from "../src/adapters/http-probe";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { startTimeOf } from "../src/adapters/own-process";
import { readStackOutputs } from "../src/adapters/pulumi-cli";
import { parseForwardRecord, stopForwards } from "../src/adapters/ssh-forward";
import { readCredentials } from "../src/core/access";
import { MAX_CONTRACT_ENTRIES, MAX_PROBLEMS_SHOWN, parseContract } from "../src/core/contract/parse";
import { UserError } from "../src/core/errors";
import { checkStackName, parseTimeoutSeconds } from "../src/core/inputs";
import { SnapshotReader } from "../src/core/kube/cluster";
import type { Service } from "../src/core/kube/types";
import { observe } from "../src/core/observe";
import { buildUrl, chooseNode, resolveExposures } from "../src/core/plan";
import { printable } from "../src/core/text";
import { type RunningPortal, startPortal } from "../src/portal/server";
import { type FakeAnswer, list, startFakeApi } from "./adversarial/fake-api";
import { capture, healthyCluster, makeProject, node, runCommand, service, snapshot, stackFile, type TestProject } from "./command-helpers";
import { MemoryCluster, portalContract, recordedCluster } from "./portal-fixtures";

const contractError = (text: string): string => {
  try {
    parseContract(text, "c.yaml");
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the contract was accepted");
};

/** Sends raw bytes to a server and resolves with everything it answers before closing. */
function rawRequest(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (d) => {
      answer += d;
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(answer));
    socket.write(bytes);
    setTimeout(() => socket.end(), 500).unref();
  });
}

describe("1. a malformed request never ends the portal", () => {
  let portal: RunningPortal;
  let port: number;
  beforeAll(async () => {
    portal = await startPortal({ contract: portalContract(), cluster: new MemoryCluster(recordedCluster()), stack: "bench" }, { host: "127.0.0.1", port: 0 });
    port = Number(new URL(portal.url).port);
  });
  afterAll(() => portal.close());

  it("answers 400 to a request target that is not a URL, and keeps serving", async () => {
    for (const target of ["http://[zz]/", "http://[::1", "//[", "http://a b/"]) {
      const answer = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).not.toContain("    at ");
    }
    const health = await fetch(new URL("/healthz", portal.url));
    expect(health.status).toBe(200);
  });
});

describe("3. a probe path is a path", () => {
  it.each([
    ["//other-host:8080/x", "must not start with '//'"],
    ["http://other-host/x", "must start with '/'"],
    ["/a\\b", "backslash"],
    ["/ok//x", "'//'"],
  ])("refuses probe.path %s in the contract", (path, fragment) => {
    const message = contractError(`version: 1
endpoints:
  - name: a
    exposed: true
    service: { namespace: a, name: a, port: http }
    probe: { path: ${JSON.stringify(path)} }
`);
    expect(message).toContain("endpoints[0].probe.path");
    expect(message).toContain(fragment);
  });

  it("never requests another host, whatever path it is given", async () => {
    const requested: string[] = [];
    const r = await probeOne({ name: "a", url: "http://127.0.0.2:31001", path: "//127.0.0.3:9/x", timeoutMs: 1000 }, async (url) => {
      requested.push(url.href);
      return { status: 200 };
    });
    expect(requested).toEqual([]);
    expect(r.ok).toBe(false);
    expect(r.error).toContain("probe path");
  });
});

describe("5. only an IP address goes into a URL", () => {
  it.each(["fe80::1%eth0", "1.2.3.4 x", "evil.example/x?", "127.0.0.1:80", " 127.0.0.1", "::ffff:1.2.3.4.5"])(
    "a node whose InternalIP is %j is not chosen, and says why",
    (address) => {
      const choice = chooseNode([node("n1", address)]);
      expect(choice).toHaveProperty("problem");
      expect((choice as { problem: string }).problem).toContain("not an IP address");
    },
  );

  it("refuses a pinned address that is not an IP (the portal reads it from its environment)", () => {
    expect(chooseNode([], "evil.example/x?")).toEqual({ problem: 'the pinned node address "evil.example/x?" is not an IP address' });
  });

  it("brackets IPv6 and refuses anything else", () => {
    expect(buildUrl("http", "fd00::1", 31000)).toBe("http://[fd00::1]:31000");
    expect(() => buildUrl("http", "evil.example/x?", 31000)).toThrow(UserError);
  });

  it("a hostPort entry on a node with a bad address gets no URL", () => {
    const contract = parseContract(
      `version: 1
endpoints:
  - name: agent
    exposed: true
    hostPort: { namespace: lineage, port: 8090 }
`,
      "c.yaml",
    );
    const o = observe(contract, {
      services: [],
      endpointSlices: [],
      nodes: [node("bench", "evil.example/x?")],
      pods: [
        {
          metadata: { name: "agent-0", namespace: "lineage" },
          spec: { nodeName: "bench", containers: [{ name: "c", ports: [{ containerPort: 8090, hostPort: 8090 }] }] },
          status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
        },
      ],
    });
    expect(o.entries[0]?.url).toBeUndefined();
    expect(o.entries[0]?.verdict).toBe("DRIFT");
  });
});

describe("8. a wrong type says what was expected and what was found", () => {
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

describe("9 and 13. flag values", () => {
  it.each(["/../../x", "../x", "a/b", "", ".", "..", "x\n", "-x", "a".repeat(200)])("a stack name is a name, not %j", (name) => {
    expect(() => checkStackName(name)).toThrow(/stack name/);
    try {
      checkStackName(name);
    } catch (err) {
      expect((err as UserError).exitCode).toBe(2);
    }
  });
  it.each(["bench", "dirqual", "org.proj-1_x"])("accepts the stack name %s", (name) => {
    expect(checkStackName(name)).toBe(name);
  });

  it("bounds --timeout and says so", () => {
    expect(() => parseTimeoutSeconds("1e9", "--timeout")).toThrow("--timeout must be at most 600 seconds, not '1e9'");
    expect(() => parseTimeoutSeconds("0", "--timeout")).toThrow("--timeout must be a positive number of seconds");
    expect(parseTimeoutSeconds("2.5", "--timeout")).toBe(2500);
    expect(parseTimeoutSeconds("600", "--timeout")).toBe(600_000);
  });

  let project: TestProject;
  beforeAll(() => {
    project = makeProject({ bench: stackFile() });
  });
  afterAll(() => project.remove());

  it("status refuses a stack path and an unbounded timeout with exit 2", async () => {
    const run = async (argv: string[]) => {
      const c = capture(project.dir);
      const code = await runCommand("status", createStatusCommand({ connect: async () => snapshot(healthyCluster()), readOutputs: async () => ({}) }), argv, c);
      return { code, text: c.all() };
    };
    const path = await run(["--stack", "/../../x"]);
    expect(path.code).toBe(2);
    expect(path.text).toContain("stack name");
    const timeout = await run(["--stack", "bench", "--timeout", "1e9"]);
    expect(timeout.code).toBe(2);
    expect(timeout.text).toContain("at most 600 seconds");
  });
});

describe("15. zero nodes never gives MATCH", () => {
  it("an entry without a URL is never MATCH", () => {
    const objects = healthyCluster().filter((o) => (o as { kind?: string }).kind !== "Node");
    const contract = parseContract(
      `version: 1
endpoints:
  - name: argocd
    exposed: true
    service: { namespace: argocd, name: argocd-server, port: http }
`,
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

describe("2, 7 and 12. the live reader against a fake API server on loopback", () => {
  it("leaves no connection open after an API server that never answers (200 page loads)", async () => {
    const api = await startFakeApi({ "/api/v1/services": "hang", "/api/v1/nodes": "hang", "/apis/discovery.k8s.io/v1/endpointslices": "hang" });
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 300 });
      const loads = Array.from({ length: 200 }, () =>
        reader.listServices().then(
          () => "answered",
          (err: Error) => err.message,
        ),
      );
      const results = await Promise.all(loads);
      expect(new Set(results)).toEqual(new Set([`cluster unreachable: ${reader.source} did not answer services within 0.3s`]));
      // Sockets still connecting when the timeout fired would show up later: give them time to.
      await new Promise((r) => setTimeout(r, 1500));
      const deadline = Date.now() + 3000;
      while ((await api.openConnections()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(await api.openConnections()).toBe(0);
    } finally {
      await api.close();
    }
  });

  it.each([
    ["items: null", list("ServiceList", null), "items: expected an array, found null"],
    ["a bare array", { body: [1, 2] }, "expected a ServiceList (a map with items), found an array"],
    ["an object without metadata", list("ServiceList", [{ spec: {} }]), "items[0].metadata: required field is missing"],
    ["a null item", list("ServiceList", [null]), "items[0]: expected a Kubernetes object (a map), found null"],
    [
      "ports as a string",
      list("ServiceList", [{ metadata: { name: "a", namespace: "b" }, spec: { ports: "80" } }]),
      'items[0].spec.ports: expected an array, found a string ("80")',
    ],
    [
      "a selector that is not a string map",
      list("ServiceList", [{ metadata: { name: "a" }, spec: { selector: ["x"] } }]),
      "items[0].spec.selector: expected a map, found an array",
    ],
    ["not JSON", { raw: true, body: "{nope" }, "with something that is not JSON"],
  ] as const)("refuses an answer with %s, cleanly", async (_name, answer, fragment) => {
    const api = await startFakeApi({ "/api/v1/services": answer as FakeAnswer });
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 2000 });
      const err = await reader.listServices().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toContain(fragment);
    } finally {
      await api.close();
    }
  });

  it("never echoes a fragment of a corrupt Secrets answer", async () => {
    const value = Buffer.from("super-secret-value").toString("base64");
    const truncated = `{"kind":"SecretList","items":[{"metadata":{"name":"s"},"data":{"password":"${value}`;
    const wrongType = { kind: "SecretList", items: [{ metadata: { name: "s" }, data: { password: value, other: 12345 } }] };
    for (const answer of [{ raw: true, body: truncated } as const, { body: wrongType }]) {
      const api = await startFakeApi({ "/api/v1/namespaces/argocd/secrets": answer });
      try {
        const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 2000 });
        const err = (await reader.listSecrets("argocd").then(
          () => undefined,
          (e: unknown) => e,
        )) as Error;
        expect(err).toBeInstanceOf(UserError);
        expect(err.message).not.toContain(value.slice(0, 8));
        expect(err.message).not.toContain("12345");
      } finally {
        await api.close();
      }
    }
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

describe("7. hostile YAML and malformed snapshots are clean errors with a position", () => {
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

describe("14. bounded input", () => {
  it("refuses what is not a regular file (check /dev/zero ends at once, exit 2)", async () => {
    const c = capture(os.tmpdir());
    const code = await main(["check", "/dev/zero"], c.ctx);
    expect(code).toBe(2);
    expect(c.all()).toMatch(/cannot read contract .*dev\/zero: it is a device; give a regular file/);
  });

  it("refuses a contract larger than the limit, without reading it", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "big-"));
    try {
      const file = path.join(dir, "c.yaml");
      fs.writeFileSync(file, `version: 1\n#${"x".repeat(FILE_LIMITS.contract)}\n`);
      expect(() => readBoundedText(file, "contract", FILE_LIMITS.contract, 2)).toThrow(/contract .* is 1\.0 MiB: larger than the 1 MiB limit/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses text that is not UTF-8 (a UTF-16 file, invalid bytes, NUL bytes), saying so (found by an outside tester)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "encoding-"));
    try {
      const utf16 = path.join(dir, "utf16.yaml");
      fs.writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("version: 1\n", "utf16le")]));
      expect(() => readBoundedText(utf16, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${utf16} is UTF-16 text: save it as UTF-8`);
      const utf32 = path.join(dir, "utf32.yaml");
      fs.writeFileSync(utf32, Buffer.from([0xff, 0xfe, 0, 0, 0x76, 0, 0, 0]));
      expect(() => readBoundedText(utf32, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${utf32} is UTF-32 text: save it as UTF-8`);
      const noBom = path.join(dir, "utf16-no-bom.yaml");
      fs.writeFileSync(noBom, Buffer.from("version: 1\n", "utf16le"));
      expect(() => readBoundedText(noBom, "contract", FILE_LIMITS.contract, 2)).toThrow(
        `contract ${noBom} looks like UTF-16 text (a NUL byte every other byte): save it as UTF-8`,
      );
      const latin1 = path.join(dir, "latin1.yaml");
      fs.writeFileSync(latin1, Buffer.from("version: 1\n# caf\xe9\n", "latin1"));
      expect(() => readBoundedText(latin1, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${latin1} is not UTF-8 text (line 2): save it as UTF-8`);
      const nul = path.join(dir, "nul.yaml");
      fs.writeFileSync(nul, "version: 1\n\u0000\n");
      expect(() => readBoundedText(nul, "contract", FILE_LIMITS.contract, 2)).toThrow(`contract ${nul} holds a NUL byte (line 2): it is not a text file`);
      // A UTF-8 byte order mark is still UTF-8 (and is not part of the text).
      const bom = path.join(dir, "bom.yaml");
      fs.writeFileSync(bom, "\ufeffversion: 1\n");
      expect(readBoundedText(bom, "contract", FILE_LIMITS.contract, 2)).toBe("version: 1\n");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses more entries than the limit in one problem", () => {
    const entries = Array.from({ length: MAX_CONTRACT_ENTRIES + 1 }, (_, i) => `  - {name: e${i}, service: {namespace: a, name: a, port: 1}}`).join("\n");
    const message = contractError(`version: 1\nendpoints:\n${entries}\n`);
    expect(message).toContain(`endpoints: ${MAX_CONTRACT_ENTRIES + 1} entries: a contract declares at most ${MAX_CONTRACT_ENTRIES}`);
  });

  it("shows at most the first problems and counts the rest", () => {
    const entries = Array.from({ length: 300 }, (_, i) => `  - {name: E${i}, exposed: yes}`).join("\n");
    const message = contractError(`version: 1\nendpoints:\n${entries}\n`);
    const lines = message.split("\n");
    expect(lines[0]).toMatch(/^invalid contract c\.yaml \(\d+ problems\):$/);
    expect(lines).toHaveLength(MAX_PROBLEMS_SHOWN + 2);
    expect(lines.at(-1)).toMatch(/^\.\.\. and \d+ more problems \(fix these first\)$/);
  });
});

describe("11. terminal escapes from the cluster are shown escaped", () => {
  let project: TestProject;
  beforeAll(() => {
    project = makeProject({ bench: stackFile({ "ui-exposure:entries": ["argocd"] }) });
  });
  afterAll(() => project.remove());

  it("escapes ESC and OSC 52 sequences in names read from the cluster", async () => {
    const hostile = "bench\u001b]52;c;ZXZpbA==\u0007\u001b[2J\u009b31m\u202e";
    const objects = healthyCluster().map((o) => ((o as { kind?: string }).kind === "Node" ? node(hostile, "127.0.0.2") : o));
    const c = capture(project.dir);
    const code = await runCommand(
      "status",
      createStatusCommand({ connect: async () => snapshot(objects), readOutputs: async () => ({}) }),
      ["--stack", "bench"],
      c,
    );
    // The outputs publish nothing, so no Service is proven ours (DRIFT, 3): what counts here is the escaping.
    expect(code).toBe(3);
    const text = c.all();
    expect(text).toContain("bench\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b31m\\u202e");
    expect([...text].some((ch) => ch !== "\n" && ch !== "\t" && printable(ch) !== ch)).toBe(false);
  });

  it("printable keeps newlines, tabs and unicode text", () => {
    expect(printable("a\tb\nc é ü 日本")).toBe("a\tb\nc é ü 日本");
  });
});

describe("12. Secret values never appear in problems", () => {
  it("says a key is not base64 without showing any of it", () => {
    const entries = parseContract(
      `version: 1
endpoints:
  - name: a
    service: { namespace: a, name: a, port: http }
    credentials:
      - label: A
        secret: { namespace: a, name: s }
        usernameKey: user
        passwordKey: password
`,
      "c.yaml",
    ).endpoints;
    const secrets = new Map([
      ["a", [{ metadata: { name: "s", namespace: "a" }, data: { user: 12345 as unknown as string, password: "!!c3VwZXItc2VjcmV0LXZhbHVl" } }]],
    ]);
    const [view] = readCredentials(entries, secrets);
    expect(view?.password).toBeUndefined();
    expect(view?.problem).toBe(
      "Secret a/s: key 'user' is not valid base64 (value not shown); Secret a/s: key 'password' is not valid base64 (value not shown)",
    );
    expect(JSON.stringify(view)).not.toMatch(/12345|c3VwZXI/);
  });
});

describe("10. the forwards' pid files are untrusted", () => {
  it("--stop deletes nothing outside the state folder and signals no process it did not start", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "forwards-"));
    const stateDir = path.join(root, "state", "forwards", "bench");
    fs.mkdirSync(stateDir, { recursive: true });
    const victim = path.join(root, "victim");
    fs.writeFileSync(`${victim}.pid.json`, "keep me");
    fs.writeFileSync(`${victim}.log`, "keep me");
    const spec = "127.0.0.1:18080:127.0.0.2:31001";
    // A process whose command line holds our -L spec, but which is not our ssh.
    const decoy = spawn("bash", ["-c", "sleep 30", "decoy", "-N", "-L", spec, "lima-bench"], { stdio: "ignore" });
    const alive = () => {
      try {
        process.kill(decoy.pid as number, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      const record = { pid: decoy.pid, localPort: 18080, remoteHost: "127.0.0.2", remotePort: 31001, scheme: "http", instance: "bench", startTime: "1" };
      fs.writeFileSync(path.join(stateDir, "a.pid.json"), JSON.stringify({ ...record, entry: "../../../victim" }));
      fs.writeFileSync(path.join(stateDir, "b.pid.json"), JSON.stringify({ ...record, entry: "b" }));
      const stopped = await stopForwards(stateDir);
      expect(stopped).toEqual([{ entry: "b", pid: decoy.pid, localPort: 18080, state: "stale" }]);
      expect(alive()).toBe(true);
      expect(fs.readFileSync(`${victim}.pid.json`, "utf8")).toBe("keep me");
      expect(fs.readFileSync(`${victim}.log`, "utf8")).toBe("keep me");
      // The invalid pid file is left alone (not ours to act on); the stale one is removed.
      expect(fs.readdirSync(stateDir).sort()).toEqual(["a.pid.json"]);
    } finally {
      decoy.kill("SIGKILL");
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it("--stop leaves an ssh with our very arguments alone when its start time is not the recorded one (a recycled pid; issue 23, defect 1)", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "forwards-"));
    const stateDir = path.join(root, "state");
    fs.mkdirSync(stateDir);
    const spec = "127.0.0.1:18080:127.0.0.2:31001";
    // Our command line exactly (a script named ssh, run by its interpreter), started by the test.
    fs.writeFileSync(path.join(root, "ssh"), "setTimeout(() => {}, 30000)\n");
    const ssh = spawn(process.execPath, [path.join(root, "ssh"), "-N", "-L", spec, "lima-bench"], { stdio: "ignore" });
    const alive = () => {
      try {
        process.kill(ssh.pid as number, 0);
        return true;
      } catch {
        return false;
      }
    };
    try {
      await new Promise((r) => setTimeout(r, 200));
      const startTime = startTimeOf(ssh.pid as number) as string;
      const record = { entry: "argocd", pid: ssh.pid, localPort: 18080, remoteHost: "127.0.0.2", remotePort: 31001, scheme: "http", instance: "bench" };
      fs.writeFileSync(path.join(stateDir, "argocd.pid.json"), JSON.stringify({ ...record, startTime: String(Number(startTime) + 1) }));
      expect(await stopForwards(stateDir)).toEqual([{ entry: "argocd", pid: ssh.pid, localPort: 18080, state: "stale" }]);
      expect(alive()).toBe(true);
      fs.writeFileSync(path.join(stateDir, "argocd.pid.json"), JSON.stringify({ ...record, startTime }));
      expect(await stopForwards(stateDir)).toEqual([{ entry: "argocd", pid: ssh.pid, localPort: 18080, state: "stopped" }]);
    } finally {
      ssh.kill("SIGKILL");
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it.each([
    ["an entry that is a path", { entry: "../x" }],
    ["an entry that differs from the file name", { entry: "other" }],
    ["pid 1", { pid: 1 }],
    ["pid -1", { pid: -1 }],
    ["pid 0", { pid: 0 }],
    ["no start time (an older file)", { startTime: undefined }],
    ["a start time that is not text", { startTime: 12 }],
    ["a remote host that is not an IP", { remoteHost: "evil.example" }],
    ["a port out of range", { localPort: 70000 }],
  ])("ignores a pid file with %s", (_name, override) => {
    const good = {
      entry: "argocd",
      pid: 4242,
      localPort: 18080,
      remoteHost: "127.0.0.2",
      remotePort: 31001,
      scheme: "http",
      instance: "bench",
      startTime: "123",
    };
    expect(parseForwardRecord("argocd.pid.json", JSON.stringify(good))).toEqual(good);
    expect(parseForwardRecord("argocd.pid.json", JSON.stringify({ ...good, ...override }))).toBeUndefined();
  });
});

describe("decisions: what cannot be published", () => {
  const contract = (namespace: string) =>
    parseContract(
      `version: 1
endpoints:
  - name: ui
    exposed: true
    service: { namespace: ${namespace}, name: ui, port: http }
`,
      "c.yaml",
    );
  const resolve = (svc: Service, opts: { allowKubeSystem?: boolean } = {}, namespace = "apps") =>
    resolveExposures(contract(namespace).endpoints, { services: [svc], nodes: [node("n", "127.0.0.2")], pods: [] }, undefined, opts);
  const problemsOf = (r: ReturnType<typeof resolveExposures>) => ("problems" in r ? r.problems.join("\n") : "");

  it("refuses a Service in kube-system unless the stack allows it", () => {
    const svc = service("kube-system", "ui", { selector: { app: "ui" } });
    expect(problemsOf(resolve(svc, {}, "kube-system"))).toContain("unless the stack sets ui-exposure:allowKubeSystem: true");
    expect(resolve(svc, { allowKubeSystem: true }, "kube-system")).toHaveProperty("plans");
  });

  it("refuses an ExternalName Service", () => {
    const svc: Service = {
      metadata: { name: "ui", namespace: "apps" },
      spec: { type: "ExternalName", externalName: "example.invalid", ports: [{ name: "http", port: 80 }] } as never,
    };
    expect(problemsOf(resolve(svc))).toContain("is of type ExternalName");
  });

  it("never publishes a UDP port as an http URL", () => {
    const svc = service("apps", "ui", { selector: { app: "ui" }, ports: [{ name: "http", port: 80, protocol: "UDP" }] });
    expect(problemsOf(resolve(svc))).toContain("is UDP: only a TCP port is published as an http URL");
  });

  it("mirrors a headless Service like any other (same pods, same target port)", () => {
    const svc = service("apps", "ui", { selector: { app: "ui" } });
    (svc.spec as { clusterIP?: string }).clusterIP = "None";
    const r = resolve(svc);
    expect("plans" in r && r.plans[0]).toMatchObject({ kind: "nodePort", selector: { app: "ui" }, targetPort: 8080 });
  });

  it("refuses a selector that is not a map of strings", () => {
    const svc = service("apps", "ui", { selector: { app: 3 as unknown as string } });
    expect(problemsOf(resolve(svc))).toContain("has a selector that is not a map of strings");
  });
});
