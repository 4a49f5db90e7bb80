// The adversarial corpus: one row per hostile or broken input, with the exit code and a fragment
// of the one message the user must get. test/adversarial.test.ts runs every row and checks the
// invariant on top: no crash, no stack trace, no hang, bounded memory, nothing changed on disk.
// Add a row for every new defect found; keep inputs small and loopback-only.
import type { FakeAnswer } from "../support/fake-api";

const VALID_ENTRY = "  - name: argocd\n    exposed: true\n    service: { namespace: argocd, name: argocd-server, port: http }\n";

const bomb = (levels: number) => {
  const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i <= levels; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(",")}]`,
    );
  return `${lines.join("\n")}\n`;
};

/** `exposure check FILE` on this content. */
export interface ContractCase {
  name: string;
  contract: string;
  exit: number;
  fragment: string;
}

export const CONTRACT_CASES: ContractCase[] = [
  { name: "empty file", contract: "", exit: 2, fragment: "(document)" },
  { name: "a scalar document", contract: "42\n", exit: 2, fragment: "(document)" },
  { name: "a bare list", contract: "- a\n- b\n", exit: 2, fragment: "(document)" },
  { name: "YAML syntax error", contract: "version: 1\nendpoints: [\n", exit: 2, fragment: "(yaml)" },
  { name: "duplicate keys", contract: "version: 1\nversion: 1\nendpoints: []\n", exit: 2, fragment: "(yaml)" },
  { name: "alias bomb", contract: `version: 1\n${bomb(6)}endpoints:\n${VALID_ENTRY}`, exit: 2, fragment: "Excessive alias count" },
  { name: "endpoints: null", contract: "version: 1\nendpoints: null\n", exit: 2, fragment: "endpoints: expected an array, found null" },
  { name: "endpoints as a map", contract: "version: 1\nendpoints: {a: 1}\n", exit: 2, fragment: "endpoints: expected an array, found a map" },
  { name: "a null entry", contract: "version: 1\nendpoints:\n  - null\n", exit: 2, fragment: "endpoints[0]: expected a map, found null" },
  {
    name: "exposed as a string",
    contract: 'version: 1\nendpoints:\n  - name: a\n    exposed: "true"\n    service: {namespace: a, name: a, port: http}\n',
    exit: 2,
    fragment: 'expected a boolean, found a string ("true")',
  },
  {
    name: "name as a number",
    contract: "version: 1\nendpoints:\n  - name: 123\n    service: {namespace: a, name: a, port: http}\n",
    exit: 2,
    fragment: "endpoints[0].name: expected a string, found a number (123)",
  },
  {
    name: "port 0",
    contract: "version: 1\nendpoints:\n  - name: a\n    service: {namespace: a, name: a, port: 0}\n",
    exit: 2,
    fragment: "endpoints[0].service.port",
  },
  {
    name: "port as a float",
    contract: "version: 1\nendpoints:\n  - name: a\n    service: {namespace: a, name: a, port: 80.5}\n",
    exit: 2,
    fragment: "endpoints[0].service.port",
  },
  {
    name: "namespace with a slash",
    contract: "version: 1\nendpoints:\n  - name: a\n    service: {namespace: ../x, name: a, port: http}\n",
    exit: 2,
    fragment: "namespace must be a DNS label",
  },
  {
    name: "probe path naming another host",
    contract: `version: 1\nendpoints:\n${VALID_ENTRY}    probe: {path: "//evil.example:80/x"}\n`,
    exit: 2,
    fragment: "must not start with '//'",
  },
  {
    name: "probe path as a URL",
    contract: `version: 1\nendpoints:\n${VALID_ENTRY}    probe: {path: "http://evil.example/"}\n`,
    exit: 2,
    fragment: "must start with '/'",
  },
  { name: "probe path with a backslash", contract: `version: 1\nendpoints:\n${VALID_ENTRY}    probe: {path: "/\\\\evil"}\n`, exit: 2, fragment: "backslash" },
  {
    name: "probe path with a control character",
    contract: `version: 1\nendpoints:\n${VALID_ENTRY}    probe: {path: "/a\\u001bb"}\n`,
    exit: 2,
    fragment: "printable ASCII",
  },
  {
    name: "timeoutSeconds as a string",
    contract: `version: 1\nendpoints:\n${VALID_ENTRY}    probe: {timeoutSeconds: "5"}\n`,
    exit: 2,
    fragment: 'expected a number, found a string ("5")',
  },
  {
    name: "timeoutSeconds 1e9",
    contract: `version: 1\nendpoints:\n${VALID_ENTRY}    probe: {timeoutSeconds: 1e9}\n`,
    exit: 2,
    fragment: "probe.timeoutSeconds",
  },
  {
    name: "a legacy nodePort",
    contract: `version: 1\nendpoints:\n${VALID_ENTRY}    nodePort: 30080\n`,
    exit: 2,
    fragment: "a nodePort is never written in the contract",
  },
  { name: "__proto__ key", contract: `version: 1\nendpoints:\n${VALID_ENTRY}    __proto__: {exposed: false}\n`, exit: 2, fragment: "unknown key '__proto__'" },
  {
    name: "a very long name",
    contract: `version: 1\nendpoints:\n  - name: ${"a".repeat(5000)}\n    service: {namespace: a, name: a, port: http}\n`,
    exit: 2,
    fragment: "entry name must be at most",
  },
  {
    name: "too many entries",
    contract: `version: 1\nendpoints:\n${Array.from({ length: 1001 }, (_, i) => `  - {name: e${i}, service: {namespace: a, name: a, port: 1}}`).join("\n")}\n`,
    exit: 2,
    fragment: "a contract declares at most 1000",
  },
  {
    name: "many invalid entries",
    contract: `version: 1\nendpoints:\n${Array.from({ length: 900 }, (_, i) => `  - {name: E${i}}`).join("\n")}\n`,
    exit: 2,
    fragment: "more problems (fix these first)",
  },
  {
    name: "a podSelector value holding a lone surrogate (issue 23 #4: no CEL literal holds it)",
    contract: 'version: 1\nendpoints:\n  - name: agent\n    exposed: true\n    hostPort: {namespace: tools, port: 8090, podSelector: {app: "\\uD800"}}\n',
    exit: 2,
    fragment: 'label value "\\ud800" must be empty or at most 63 characters',
  },
  {
    name: "a podSelector key the API server refuses (issue 23 #4)",
    contract: 'version: 1\nendpoints:\n  - name: agent\n    exposed: true\n    hostPort: {namespace: tools, port: 8090, podSelector: {"a b": x}}\n',
    exit: 2,
    fragment: 'label key "a b": its name must be',
  },
  { name: "binary garbage", contract: "\u0000\u0001\u0002\u00ff\ufffe", exit: 2, fragment: "holds a NUL byte (line 1): it is not a text file" },
  {
    name: "1 MiB of unclosed brackets (issue 28 #6: the parser peaked near 1 GB)",
    contract: `version: 1\nendpoints: ${"[".repeat(2 ** 20 - 64)}`,
    exit: 2,
    fragment: ":2:112: (yaml): nested more than 100 levels deep: flatten the document",
  },
  {
    name: "blocks nested 150 deep",
    contract: `version: 1\nendpoints:\n${Array.from({ length: 150 }, (_, i) => `${" ".repeat(i + 1)}k:`).join("\n")}\n`,
    exit: 2,
    fragment: "(yaml): nested more than 100 levels deep",
  },
  {
    name: "200,000 tiny values",
    contract: `version: 1\nx: [${"1,".repeat(200_000)}]\n`,
    exit: 2,
    fragment: "(yaml): more than 100000 values: too large to read",
  },
];

/** `exposure status --stack bench` against this snapshot file (read by the snapshot adapter). */
export interface SnapshotCase {
  name: string;
  snapshot: string;
  exit: number;
  fragment: string;
}

export const SNAPSHOT_CASES: SnapshotCase[] = [
  { name: "alias bomb", snapshot: `kind: List\nitems: []\n${bomb(6)}`, exit: 1, fragment: "Excessive alias count" },
  {
    name: "6 MiB of unclosed brackets (issue 28 #6: 4.3 GB, then V8 aborted)",
    snapshot: `kind: List\nitems: ${"[".repeat(6 * 2 ** 20)}`,
    exit: 1,
    fragment: ":2:108: cluster snapshot refused: nested more than 100 levels deep: flatten the document",
  },
  {
    name: "a second document of 1.1 million tiny values",
    snapshot: `kind: List\nitems: []\n---\n- [${"1,".repeat(1_100_000)}]\n`,
    exit: 1,
    // Where it was refused: value 1,000,001 (the 999,993rd of this list, after the 8 values before it), not the end of the text: reading stops at the count.
    fragment: ":4:1999988: cluster snapshot refused: more than 1000000 values: too large to read",
  },
  { name: "YAML syntax error", snapshot: "kind: List\nitems: [\n", exit: 1, fragment: "is not valid YAML" },
  { name: "a Service without metadata", snapshot: "kind: Service\nspec: {}\n", exit: 1, fragment: "metadata: required field is missing" },
  {
    name: "ports as a string",
    snapshot: "kind: Service\nmetadata: {name: a, namespace: b}\nspec: {ports: '80'}\n",
    exit: 1,
    fragment: "spec.ports: expected an array",
  },
  {
    name: "a null port",
    snapshot: "kind: Service\nmetadata: {name: a}\nspec: {ports: [null]}\n",
    exit: 1,
    fragment: "spec.ports[0]: expected a map, found null",
  },
  {
    name: "node addresses as a string",
    snapshot: "kind: Node\nmetadata: {name: n}\nstatus: {addresses: x}\n",
    exit: 1,
    fragment: "status.addresses: expected an array",
  },
  { name: "items: null", snapshot: "kind: List\nitems: null\n", exit: 1, fragment: "items: expected an array, found null" },
  { name: "a null item", snapshot: "kind: ServiceList\nitems: [null]\n", exit: 1, fragment: "items[0]: expected a Kubernetes object" },
  { name: "a bare array", snapshot: "- kind: Node\n  metadata: {name: n}\n", exit: 1, fragment: "found an array" },
  {
    name: "labels that are not strings",
    snapshot: "kind: Pod\nmetadata: {name: p, labels: {a: {b: c}}}\n",
    exit: 1,
    fragment: "metadata.labels.a: expected a string, found a map",
  },
  {
    name: "externalIPs as a string (what the model reads is checked, not skipped)",
    snapshot: "kind: Service\nmetadata: {name: a}\nspec: {type: ClusterIP, externalIPs: 10.0.0.1}\n",
    exit: 1,
    fragment: "spec.externalIPs: expected an array, found a string",
  },
  {
    name: "a snapshot pod's hostNetwork as a string",
    snapshot: "kind: Pod\nmetadata: {name: p}\nspec: {hostNetwork: 'yes'}\n",
    exit: 1,
    fragment: "spec.hostNetwork: expected a boolean, found a string",
  },
  {
    name: "a selector as a list",
    snapshot: "kind: Service\nmetadata: {name: a}\nspec: {selector: [x]}\n",
    exit: 1,
    fragment: "spec.selector: expected a map, found an array",
  },
  {
    name: "a node whose address is a URL",
    snapshot:
      "kind: Node\nmetadata: {name: n}\nstatus:\n  addresses: [{type: InternalIP, address: 'evil.example/x?'}]\n  conditions: [{type: Ready, status: 'True'}]\n",
    exit: 3,
    fragment: "is not an IP address",
  },
  {
    name: "a node with an IPv6 zone",
    snapshot:
      "kind: Node\nmetadata: {name: n}\nstatus:\n  addresses: [{type: InternalIP, address: 'fe80::1%eth0'}]\n  conditions: [{type: Ready, status: 'True'}]\n",
    exit: 3,
    fragment: "is not an IP address",
  },
  {
    name: "a Ready node whose InternalIP is not an IP, next to a good one (issue 23 #7)",
    snapshot:
      "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n  status:\n    addresses: [{type: InternalIP, address: 10.0.0.5}]\n    conditions: [{type: Ready, status: 'True'}]\n- kind: Node\n  metadata: {name: z}\n  status:\n    addresses: [{type: InternalIP, address: 'evil.example/x?'}]\n    conditions: [{type: Ready, status: 'True'}]\n",
    exit: 3,
    fragment: 'node z is Ready but its InternalIP "evil.example/x?" is not an IP address',
  },
  { name: "no node at all", snapshot: "kind: List\nitems: []\n", exit: 3, fragment: "no Ready node" },
];

/** `exposure status --stack bench` against a fake API server answering `/api/v1/services` with this. */
export interface ApiCase {
  name: string;
  services: FakeAnswer;
  /** status --timeout (default 0.5 s). */
  timeoutSeconds?: number;
  exit: number;
  fragment: string;
}

const serviceList = (items: unknown): FakeAnswer => ({ body: { kind: "ServiceList", apiVersion: "v1", metadata: {}, items } });

export const API_CASES: ApiCase[] = [
  { name: "items: null", services: serviceList(null), exit: 1, fragment: "items: expected an array, found null" },
  { name: "a bare array", services: { body: [] }, exit: 1, fragment: "found an array" },
  { name: "no items", services: { body: { kind: "ServiceList" } }, exit: 1, fragment: "items: expected an array, found nothing" },
  { name: "a null item", services: serviceList([null]), exit: 1, fragment: "items[0]: expected a Kubernetes object" },
  { name: "an item without metadata", services: serviceList([{ spec: {} }]), exit: 1, fragment: "items[0].metadata: required field is missing" },
  {
    name: "ports as a string",
    services: serviceList([{ metadata: { name: "a" }, spec: { ports: "80" } }]),
    exit: 1,
    fragment: "items[0].spec.ports: expected an array",
  },
  {
    name: "nodePort as a string",
    services: serviceList([{ metadata: { name: "a" }, spec: { ports: [{ port: 80, nodePort: "31000" }] } }]),
    exit: 1,
    fragment: "nodePort: expected a number",
  },
  { name: "not JSON", services: { raw: true, body: "<html>proxy error</html>" }, exit: 1, fragment: "not JSON" },
  { name: "JSON null", services: { raw: true, body: "null" }, exit: 1, fragment: "found null" },
  { name: "HTTP 500 with a body", services: { status: 500, raw: true, body: "secret-looking-body" }, exit: 1, fragment: "failed with HTTP 500" },
  { name: "HTTP 401", services: { status: 401, body: {} }, exit: 1, fragment: "(401)" },
  { name: "HTTP 403", services: { status: 403, body: {} }, exit: 1, fragment: "(403)" },
  {
    name: "HTTP 429 on every try (tried again within the timeout, then one line)",
    services: { status: 429, headers: { "retry-after": "0" }, body: {} },
    exit: 1,
    fragment: "answered services in namespace argocd with HTTP 429 (too many requests)",
  },
  { name: "never answers", services: "hang", exit: 1, fragment: "did not answer services in namespace argocd within 0.5s" },
  // Issue 23 #6, issue 34 #3: each page is bounded, asked again smaller, down to one object (peak RSS: test/kube-live-memory.test.ts).
  {
    name: "an endless JSON body",
    services: "endless",
    timeoutSeconds: 10,
    exit: 1,
    fragment: "answered services in namespace argocd with one object larger than 4 MiB: refused",
  },
];

/** A raw HTTP request to the portal, and the status line it must get (the server keeps serving). */
export interface PortalCase {
  name: string;
  request: string;
  status: number;
  /** A fragment the answer must hold, when the status alone does not tell. */
  fragment?: string;
}

const get = (target: string, extra = "") => `GET ${target} HTTP/1.1\r\nHost: portal\r\n${extra}Connection: close\r\n\r\n`;

export const PORTAL_CASES: PortalCase[] = [
  { name: "an absolute target with a bad host", request: get("http://[zz]/"), status: 400 },
  { name: "an unterminated IPv6 host", request: get("http://[::1"), status: 400 },
  { name: "a target starting with // (a path, not a host)", request: get("//["), status: 404 },
  { name: "//metrics (served the page: issue 34)", request: get("//metrics"), status: 404, fragment: "not found: the portal serves /" },
  { name: "an absolute target with another scheme (found by fuzzing)", request: get("A:"), status: 400 },
  { name: "a very long target", request: get(`/${"a".repeat(4000)}`), status: 400 },
  { name: "a path with encoded traversal", request: get("/%2e%2e/%2e%2e/etc/passwd"), status: 404 },
  { name: "a query string on /", request: get("/?<script>=1"), status: 200 },
  { name: "a POST", request: "POST / HTTP/1.1\r\nHost: portal\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc", status: 405 },
  { name: "an unknown method", request: "BREW / HTTP/1.1\r\nHost: portal\r\nConnection: close\r\n\r\n", status: 400 },
  { name: "no Host header", request: "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", status: 400 },
  { name: "HTTP/1.0", request: "GET /healthz HTTP/1.0\r\n\r\n", status: 200 },
  { name: "a header with a control character", request: get("/", "X-A: a\u0001b\r\n"), status: 400 },
  { name: "garbage", request: "\u0000\u0001\u0002\r\n\r\n", status: 400 },
  { name: "a huge header", request: get("/", `X-Big: ${"a".repeat(20_000)}\r\n`), status: 431 },
  {
    name: "CONNECT (used to get no answer at all; issue 23)",
    request: "CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n",
    status: 405,
    fragment: "\r\nAllow: GET, HEAD\r\n",
  },
  {
    name: "a huge ?refresh= (clamped, not ignored)",
    request: get(`/?refresh=${"9".repeat(40)}`),
    status: 200,
    fragment: '<meta http-equiv="refresh" content="3600">',
  },
];

/** `exposure ARGV...` in a project with a `bench` stack: flags and files named on the command line. */
export interface FlagCase {
  name: string;
  argv: string[];
  exit: number;
  fragment: string;
}

export const FLAG_CASES: FlagCase[] = [
  { name: "no command", argv: [], exit: 2, fragment: "usage: exposure" },
  { name: "an unknown command", argv: ["explode"], exit: 2, fragment: "unknown command 'explode'" },
  { name: "a stack that is a path", argv: ["status", "--stack", "/../../etc/x"], exit: 2, fragment: "--stack must be a stack name" },
  { name: "a stack with a newline", argv: ["status", "--stack", "bench\nx"], exit: 2, fragment: "--stack must be a stack name" },
  { name: "an unknown stack", argv: ["status", "--stack", "nope"], exit: 1, fragment: "unknown stack 'nope'" },
  { name: "--timeout 1e9", argv: ["status", "--stack", "bench", "--timeout", "1e9"], exit: 2, fragment: "at most 600 seconds" },
  { name: "--timeout -1", argv: ["status", "--stack", "bench", "--timeout=-1"], exit: 2, fragment: "positive number of seconds" },
  { name: "--timeout 0.01", argv: ["status", "--stack", "bench", "--timeout", "0.01"], exit: 2, fragment: "at least 0.1 seconds" },
  { name: "--timeout NaN", argv: ["status", "--stack", "bench", "--timeout", "NaN"], exit: 2, fragment: "positive number of seconds" },
  { name: "--timeout Infinity", argv: ["probe", "--stack", "bench", "--timeout", "Infinity"], exit: 2, fragment: "positive number of seconds" },
  { name: "an unknown flag", argv: ["status", "--stack", "bench", "--bogus"], exit: 2, fragment: "--bogus" },
  { name: "check on a folder", argv: ["check", "/"], exit: 2, fragment: "it is a folder" },
  { name: "check on /dev/zero", argv: ["check", "/dev/zero"], exit: 2, fragment: "it is a device" },
  { name: "check on a missing file", argv: ["check", "/nonexistent/contract.yaml"], exit: 2, fragment: "contract file not found" },
  { name: "access --stop with a path stack", argv: ["access", "--stack", "../x", "--stop"], exit: 2, fragment: "--stack must be a stack name" },
  {
    name: "access --forward with a path as the Lima instance (issue 28 #10: ssh -F read that folder's config)",
    argv: ["access", "--stack", "bench", "--forward", "--no-dotenv", "--lima-instance", "../../evil"],
    exit: 2,
    fragment: "--lima-instance must be a Lima instance name",
  },
  { name: "kubectl's -o json (issue 23)", argv: ["status", "--stack", "bench", "-o", "json"], exit: 2, fragment: "for JSON output, use --json" },
  { name: "completion for a shell it does not support (issue 23)", argv: ["completion", "fish"], exit: 2, fragment: "no completion for 'fish': bash or zsh" },
  { name: "version with an argument", argv: ["version", "--json"], exit: 2, fragment: "exposure version: takes nothing" },
  { name: "a single-value flag given twice", argv: ["drift", "--stack", "dirqual", "--stack", "bench"], exit: 2, fragment: "--stack given twice" },
  { name: "a single-value flag given twice, short and long", argv: ["drift", "-s", "dirqual", "--stack=bench"], exit: 2, fragment: "--stack given twice" },
  { name: "--timeout in hexadecimal", argv: ["status", "--stack", "bench", "--timeout", "0x10"], exit: 2, fragment: "positive number of seconds" },
  { name: "--timeout in binary", argv: ["status", "--stack", "bench", "--timeout", "0b1"], exit: 2, fragment: "positive number of seconds" },
  { name: "--concurrency in hexadecimal", argv: ["probe", "--stack", "bench", "--concurrency", "0x10"], exit: 2, fragment: "--concurrency must be" },
  {
    name: "--concurrency beyond its bound",
    argv: ["probe", "--stack", "bench", "--concurrency", "1000000"],
    exit: 2,
    fragment: "--concurrency must be at most",
  },
  {
    name: "check on a path with ./ and .. (named as typed; issue 23)",
    argv: ["check", "./nonexistent/../x.yaml"],
    exit: 2,
    fragment: "contract file not found: ./nonexistent/../x.yaml (",
  },
];

/** `exposure status --stack bench --outputs FILE` with this content (cluster healthy). */
export interface OutputsCase {
  name: string;
  outputs: string;
  /** The uid of the live argocd-nodeport Service (none by default). */
  liveUid?: string;
  exit: number;
  fragment: string;
}

export const OUTPUTS_CASES: OutputsCase[] = [
  { name: "null", outputs: "null", exit: 1, fragment: "expected a map of stack outputs, found null" },
  { name: "a list", outputs: "[]", exit: 1, fragment: "found an array" },
  { name: "a string", outputs: '"x"', exit: 1, fragment: "found a string" },
  { name: "not JSON", outputs: "{", exit: 1, fragment: "not JSON" },
  // Issue 23 #8: what the last up published decides verdicts (status and the portal alike): read back, so checked.
  {
    name: "a published nodePort that is not a port",
    outputs: '{"endpoints":{"argocd":{"nodePort":"31000"}}}',
    exit: 1,
    fragment: "endpoints.argocd.nodePort: expected a number",
  },
  { name: "published endpoints as a list", outputs: '{"endpoints":[]}', exit: 1, fragment: "endpoints: expected a map" },
  {
    name: "a line break in a published url (issue 28 #11: it forged a table row)",
    outputs: JSON.stringify({
      endpoints: {
        argocd: { service: "argocd-nodeport", nodePort: 31001, url: "http://127.0.0.9:31001\nforged    nodePort  x  1  31001  http://evil/  MATCH" },
      },
    }),
    exit: 3,
    fragment: "http://127.0.0.9:31001\\x0aforged",
  },
  {
    name: "a 15 MiB published uid (issue 28 #11: it became a 15 MiB line)",
    outputs: JSON.stringify({ endpoints: { argocd: { service: "argocd-nodeport", nodePort: 31001, uid: `u${"x".repeat(15 * 2 ** 20)}` } } }),
    liveUid: "0d1b8f9e-1111-2222-3333-000000000001",
    exit: 3,
    fragment: "... (15728641 characters)",
  },
  // Issue 34 #7: bounded in depth and values as the YAML readers are, before anything is built
  // (16 MiB of nested arrays took 0.9 GB and 8 s to parse).
  {
    name: "16 MiB of nested arrays (issue 34 #7)",
    outputs: `{"x":${"[".repeat(8_000_000)}${"]".repeat(8_000_000)}}`,
    exit: 1,
    fragment: ":1:105: refused: nested more than 100 levels deep; save `pulumi stack output --json` again",
  },
  {
    name: "5 million values (issue 34 #7)",
    outputs: `{"endpoints":{},\n"x":[${"{},".repeat(5_000_000)}{}]}`,
    exit: 1,
    fragment: ":2:149997: refused: more than 100000 values; save `pulumi stack output --json` again",
  },
];

/**
 * `.sandbox/sandbox.json` holding this (hand-edited, truncated, another version's): `sandbox
 * status` exits 1 naming what it ignored, `sandbox down` exits 0 and signals no process.
 */
export interface SandboxStateCase {
  name: string;
  state: string;
  fragment: string;
}

export const SANDBOX_STATE_CASES: SandboxStateCase[] = [
  {
    name: "pid -1 with no command line (kill(-1) is every process; issue 23)",
    state: '{"processes":[{"role":"portal","pid":-1}]}',
    fragment: "processes[0]: pid -1 is not a process id",
  },
  { name: "pid 0 (the process group)", state: '{"processes":[{"role":"portal","pid":0,"cmdline":"x","startTime":"1"}]}', fragment: "pid 0 is not" },
  { name: "pid 1 (init)", state: '{"processes":[{"role":"portal","pid":1,"cmdline":"/sbin/init","startTime":"1"}]}', fragment: "pid 1 is not" },
  { name: "no start time (an older version's file)", state: '{"processes":[{"role":"portal","pid":4242,"cmdline":"x"}]}', fragment: "no start time recorded" },
  { name: "pid as a string", state: '{"processes":[{"role":"portal","pid":"4242","cmdline":"x","startTime":"1"}]}', fragment: 'pid "4242" is not' },
  { name: "truncated JSON", state: '{"processes":[{"role":"portal","pid":42', fragment: "not JSON (truncated or hand-edited)" },
  { name: "a portal URL off this machine", state: '{"processes":[],"portal":"http://192.0.2.1/"}', fragment: "portal: not a loopback" },
];

/**
 * A `Pulumi.<name>.yaml` checked out in the project: `exposure completion --list stacks` (what the
 * shell scripts ask on Tab) must not offer it, so no shell ever sees its name as a word.
 */
export const STACK_FILE_NAME_CASES: { name: string; file: string }[] = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell word, not a template
  { name: "a command substitution (issue 23)", file: "Pulumi.$(touch${IFS}X).yaml" },
  { name: "backticks", file: "Pulumi.`touch X`.yaml" },
  { name: "a semicolon", file: "Pulumi.a;touch X.yaml" },
  { name: "a glob", file: "Pulumi.*.yaml" },
  { name: "a newline", file: "Pulumi.a\nb.yaml" },
  { name: "a dot-dot name", file: "Pulumi....yaml" },
];

/**
 * A `.env` template line with a Secret value put inside the author's quotes: the value is either
 * inert there or the line is refused by name (never showing the value).
 */
export interface EnvTemplateCase {
  name: string;
  line: string;
  secret: string;
  fragment: string;
}

export const ENV_TEMPLATE_CASES: EnvTemplateCase[] = [
  { name: "a quote closing single quotes (issue 23)", line: "A='{{pg.password}}'", secret: "x'; touch PWNED; '", fragment: "holds a ' (it would end" },
  { name: "a command substitution in double quotes", line: 'B="{{pg.password}}"', secret: "$(touch PWNED)", fragment: 'holds one of " \\ $ `' },
  { name: "a backtick in double quotes", line: 'B="{{pg.password}}"', secret: "`touch PWNED`", fragment: 'holds one of " \\ $ `' },
  { name: "a newline in single quotes", line: "A='{{pg.password}}'", secret: "a\ntouch PWNED", fragment: "holds a newline" },
  { name: "a trailing backslash in single quotes", line: "A='x{{pg.password}}'", secret: "a\\", fragment: "holds a backslash before" },
  // biome-ignore lint/suspicious/noTemplateCurlyInString: python-dotenv's variable syntax, not a template
  { name: "a ${VAR} in single quotes", line: "A='{{pg.password}}'", secret: "$" + "{HOME}", fragment: "holds '${'" },
];

/** `exposure status --stack <case>` where the stack file holds these settings (nothing is read from a cluster). */
export interface SettingsCase {
  name: string;
  /** Stack config keys, merged over a valid stack file. */
  config: Record<string, unknown>;
  exit: number;
  fragment: string;
}

export const SETTINGS_CASES: SettingsCase[] = [
  {
    name: "an allowlist hostPort beyond int64 (issue 23 #4: the policy would not compile)",
    config: { "ui-exposure:allowlist": { hostPorts: ["kube-system/cilium-envoy-*:99999999999999999999"] } },
    exit: 1,
    fragment: "ui-exposure:allowlist.hostPorts[0]: must end with a port number between 1 and 65535",
  },
  {
    name: "an allowlist hostPort 0 (issue 23 #4)",
    config: { "ui-exposure:allowlist": { hostPorts: ["tools/debug-pod:0"] } },
    exit: 1,
    fragment: "must end with a port number between 1 and 65535",
  },
  {
    name: "an allowlist hostPort 65536 (issue 23 #4)",
    config: { "ui-exposure:allowlist": { hostPorts: ["tools/debug-pod:65536"] } },
    exit: 1,
    fragment: "must end with a port number between 1 and 65535",
  },
];

SETTINGS_CASES.push(
  {
    name: "an allowlist item { match, reason } with a bad pattern",
    config: { "ui-exposure:allowlist": { hostPorts: [{ match: "cilium-envoy:9964", reason: "the CNI" }] } },
    exit: 1,
    fragment: "ui-exposure:allowlist.hostPorts[0].match: must be 'namespace/pod-name-or-prefix*:port'",
  },
  {
    name: "an allowlist item { match, reason } with an empty reason",
    config: { "ui-exposure:allowlist": { services: [{ match: "argocd/cilium-gateway-*", reason: "" }] } },
    exit: 1,
    fragment: "ui-exposure:allowlist.services[0].reason: must say why it is allowed",
  },
  {
    name: "an allowlist item with an unknown key",
    config: { "ui-exposure:allowlist": { hostPorts: [{ match: "kube-system/cilium-envoy-*:9964", reason: "the CNI", port: 9964 }] } },
    exit: 1,
    fragment: "ui-exposure:allowlist.hostPorts[0]: unknown key 'port'",
  },
  {
    name: "an allowlist item that is a list",
    config: { "ui-exposure:allowlist": { hostPorts: [["kube-system/cilium-envoy-*:9964"]] } },
    exit: 1,
    fragment: "ui-exposure:allowlist.hostPorts[0]: expected a pattern (a string) or { match, reason }, found an array",
  },
  {
    name: "an allowlist of 501 hostPort items (past the guard's bounded work: a cost error would admit)",
    config: { "ui-exposure:allowlist": { hostPorts: Array.from({ length: 501 }, (_, i) => `other-${i}/agent-${i}-*:${1000 + i}`) } },
    exit: 1,
    fragment: "ui-exposure:allowlist.hostPorts: holds more than 500 items or 40,000 characters, the most the exposure guard checks within its bounded work",
  },
);

/**
 * `exposure drift --stack bench --skip-preview` on a healthy cluster holding these workloads too:
 * they are read back unvalidated (any group's list call, or a snapshot) for what deny would refuse.
 * The corpus's bench stack publishes argocd only, so the healthy cluster alone gives 3 refusals
 * (exit 3): a malformed workload adds none, a real undeclared hostPort one.
 */
export interface WorkloadCase {
  name: string;
  objects: unknown[];
  exit: number;
  fragment: string;
}

const daemonSet = (spec: unknown) => ({ apiVersion: "apps/v1", kind: "DaemonSet", metadata: { name: "agent", namespace: "tools" }, spec });
const REFUSE = "exposure guard in deny mode would refuse, of what exists now (each object created again):";

export const WORKLOAD_CASES: WorkloadCase[] = [
  { name: "containers as a number", objects: [daemonSet({ template: { spec: { containers: 5 } } })], exit: 3, fragment: `${REFUSE} 3\n` },
  { name: "containers as a string", objects: [daemonSet({ template: { spec: { containers: "abc" } } })], exit: 3, fragment: `${REFUSE} 3\n` },
  {
    name: "a null container and null ports",
    objects: [daemonSet({ template: { spec: { containers: [null, { ports: null }] } } })],
    exit: 3,
    fragment: `${REFUSE} 3\n`,
  },
  {
    name: "no spec at all",
    objects: [daemonSet(undefined), { apiVersion: "batch/v1", kind: "CronJob", metadata: { name: "c", namespace: "t" } }],
    exit: 3,
    fragment: `${REFUSE} 3\n`,
  },
  {
    name: "a hostPort as a string, a float, 0, -1, beyond 65535",
    objects: [
      daemonSet({
        template: { spec: { containers: [{ ports: [{ hostPort: "80" }, { hostPort: 80.5 }, { hostPort: 0 }, { hostPort: -1 }, { hostPort: 70000 }] }] } },
      }),
    ],
    exit: 3,
    fragment: `${REFUSE} 3\n`,
  },
  {
    name: "hostNetwork as a string",
    objects: [daemonSet({ template: { spec: { hostNetwork: "true", containers: [{ ports: [{ containerPort: 9100 }] }] } } })],
    exit: 3,
    fragment: `${REFUSE} 3\n`,
  },
  {
    name: "labels that are not strings",
    objects: [daemonSet({ template: { metadata: { labels: { a: { b: 1 } } }, spec: { containers: [{ ports: [{ containerPort: 1, hostPort: 7000 }] }] } } })],
    exit: 3,
    fragment: `${REFUSE} 4\n`,
  },
  {
    name: "a name that is not a string",
    objects: [
      { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: 7 }, spec: { template: { spec: { containers: [{ ports: [{ hostPort: 1 }] }] } } } },
    ],
    exit: 3,
    fragment: `${REFUSE} 3\n`,
  },
  {
    name: "40 containerPorts and no host port: opens nothing, checked in one cheap pass",
    objects: [daemonSet({ template: { spec: { containers: [{ name: "c", ports: Array.from({ length: 40 }, (_, i) => ({ containerPort: 8000 + i })) }] } } })],
    exit: 3,
    fragment: `${REFUSE} 3\n`,
  },
  {
    name: "33 containerPorts on the host network: too large to check",
    objects: [
      daemonSet({
        template: { spec: { hostNetwork: true, containers: [{ name: "c", ports: Array.from({ length: 33 }, (_, i) => ({ containerPort: 8000 + i })) }] } },
      }),
    ],
    exit: 3,
    fragment: `${REFUSE} 4\n`,
  },
  {
    name: "a hostPort only an init container declares (counted: the guard refuses it)",
    objects: [
      daemonSet({ template: { spec: { initContainers: [{ name: "i", ports: [{ containerPort: 80, hostPort: 29654 }] }], containers: [{ name: "c" }] } } }),
    ],
    exit: 3,
    fragment: `${REFUSE} 4\n`,
  },
  {
    name: "a real undeclared hostPort on a host-network template",
    objects: [daemonSet({ template: { spec: { hostNetwork: true, containers: [{ name: "c", ports: [{ containerPort: 29653 }] }] } } })],
    exit: 3,
    fragment: `${REFUSE} 4\n`,
  },
];

/** A `Pulumi.<stack>.yaml` holding this text: `exposure status --stack <it>` (issue 28 #6). */
export const STACK_FILE_TEXT_CASES: { name: string; text: string; exit: number; fragment: string }[] = [
  {
    name: "1 MiB of unclosed brackets",
    text: `config:\n  ui-exposure:entries: ${"[".repeat(2 ** 20 - 64)}`,
    exit: 1,
    fragment: ":2:124: stack file refused: nested more than 100 levels deep: flatten the document",
  },
  { name: "200,000 tiny values", text: `config:\n  x: [${"1,".repeat(200_000)}]\n`, exit: 1, fragment: "stack file refused: more than 100000 values" },
];

/** A kubeconfig holding this text, read for `exposure status` (issue 28 #6). */
export const KUBECONFIG_CASES: { name: string; text: string; exit: number; fragment: string }[] = [
  {
    name: "6 MiB of unclosed brackets",
    text: `apiVersion: v1\nclusters: ${"[".repeat(6 * 2 ** 20)}`,
    exit: 1,
    fragment: ":2:111: kubeconfig refused: nested more than 100 levels deep: flatten the document",
  },
  { name: "2.2 million tiny values", text: `apiVersion: v1\nclusters: [${"1,".repeat(2_200_000)}]\n`, exit: 1, fragment: "kubeconfig refused: more than" },
];
