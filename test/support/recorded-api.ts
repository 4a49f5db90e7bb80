// An API server on loopback over a recorded cluster (test/support/portal-fixtures.ts), answering
// every read LiveClusterReader makes as a real API server does: the core and discovery lists,
// cluster-wide or namespaced, `limit`/`continue` paging, label selectors (`k=v`, `k in (a,b)`,
// joined by commas), field selectors on metadata.name/namespace, a ConfigMap by name, Secrets,
// the built-in groups' lists (apps, batch, admissionregistration, networking: empty), the CRD groups of the
// Cilium era (not installed: 404, as on a cluster without them), API discovery and the dry-run
// create of a Service. A request it does not model (another path, group, method, query parameter
// or selector form) answers 400 and is recorded in `unanswered`: a test that drives the product's
// reads against it fails as soon as the product makes a read this fake does not answer.
//
// Run as a script (`node --import tsx test/support/recorded-api.ts`), it serves recordedCluster()
// and prints its port: the start-up bench measures the CLI against it from another process.
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { writeKubeconfig } from "./fake-api";
import { PORTAL_TEST_CONTRACT, type RecordedCluster, recordedCluster } from "./portal-fixtures";

type Item = { metadata: { name?: string; namespace?: string; labels?: Record<string, string> } };
type ListBody = { kind: string; apiVersion: string; items: Item[] };
type Answered = { status: number; body: unknown } | { unanswered: string };

/** The built-in group versions every API server serves, each listing nothing here. */
const BUILT_IN = new Map<string, string[]>([
  ["apps/v1", ["deployments", "statefulsets", "daemonsets", "replicasets"]],
  ["batch/v1", ["jobs", "cronjobs"]],
  ["admissionregistration.k8s.io/v1", ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]],
  ["networking.k8s.io/v1", ["ingresses", "ingressclasses"]],
]);
/** CRD groups the product reads when they are installed; this cluster has none of them (404, as the API server answers then). */
const ABSENT_GROUPS = new Set(["cilium.io", "gateway.networking.k8s.io"]);
const CORE = ["services", "pods", "nodes", "secrets", "configmaps"];
const LIST_PARAMS = new Set(["limit", "continue", "labelSelector", "fieldSelector"]);

/** `a=b,c in (x,y)` as tests over labels, or why this fake cannot read it. */
function parseLabelSelector(selector: string): ((labels: Record<string, string>) => boolean) | string {
  const tests: ((labels: Record<string, string>) => boolean)[] = [];
  for (const term of selector.match(/[^,(]+(\([^)]*\))?/g) ?? []) {
    const t = term.trim();
    const inSet = /^([\w./-]+) in \(([^)]*)\)$/.exec(t);
    const eq = /^([\w./-]+)==?([\w.-]*)$/.exec(t);
    if (inSet) tests.push((l) => (inSet[2] as string).split(",").includes(l[inSet[1] as string] ?? "\u0000"));
    else if (eq) tests.push((l) => l[eq[1] as string] === eq[2]);
    else return `label selector term '${t}'`;
  }
  return (labels) => tests.every((test) => test(labels));
}

/** `metadata.name=x,metadata.namespace=y` as a test, or why this fake cannot read it. */
function parseFieldSelector(selector: string): ((item: Item) => boolean) | string {
  const tests: ((item: Item) => boolean)[] = [];
  for (const term of selector.split(",")) {
    const m = /^metadata\.(name|namespace)==?(.*)$/.exec(term.trim());
    if (!m) return `field selector term '${term}'`;
    tests.push((item) => item.metadata[m[1] as "name" | "namespace"] === m[2]);
  }
  return (item) => tests.every((test) => test(item));
}

/** The whole list at `pathname` (before selectors and paging), or undefined when no list lives there. */
export function answerList(data: RecordedCluster, pathname: string): ListBody | "absent" | undefined {
  const m = /^\/(api\/v1|apis\/[^/]+\/[^/]+)(?:\/namespaces\/([^/]+))?\/([^/]+)$/.exec(pathname);
  if (!m) return undefined;
  const [, prefix, ns, plural] = m as unknown as [string, string, string | undefined, string];
  const inNs = <T extends Item>(items: T[]) => items.filter((o) => ns === undefined || o.metadata.namespace === ns);
  const list = (kind: string, apiVersion: string, items: Item[]): ListBody => ({ kind, apiVersion, items: inNs(items) });
  if (prefix === "api/v1") {
    if (plural === "services") return list("ServiceList", "v1", data.services);
    if (plural === "pods") return list("PodList", "v1", data.pods);
    if (plural === "nodes" && ns === undefined) return list("NodeList", "v1", data.nodes);
    if (plural === "secrets") return list("SecretList", "v1", []);
    return undefined;
  }
  const groupVersion = prefix.slice("apis/".length);
  if (groupVersion === "discovery.k8s.io/v1" && plural === "endpointslices") return list("EndpointSliceList", groupVersion, data.endpointSlices);
  if (BUILT_IN.get(groupVersion)?.includes(plural)) return list("List", groupVersion, []);
  if (ABSENT_GROUPS.has(groupVersion.split("/")[0] as string)) return "absent";
  return undefined;
}

const notFound = { kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 };

/** What the API server answers `method url` with over `data`. */
export function answerRead(data: RecordedCluster, method: string, url: URL): Answered {
  const p = url.pathname;
  const unknownParam = [...url.searchParams.keys()].find((k) => !LIST_PARAMS.has(k) && !(k === "dryRun" && method === "POST"));
  if (unknownParam) return { unanswered: `query parameter '${unknownParam}'` };
  if (method === "POST") {
    // The dry-run create of a Service (no admission policy here: admitted, nothing stored).
    if (url.searchParams.get("dryRun") === "All" && /^\/api\/v1\/namespaces\/[^/]+\/services$/.test(p)) return { status: 201, body: {} };
    return { unanswered: "a write" };
  }
  if (method !== "GET") return { unanswered: `method ${method}` };
  // A ConfigMap by name: this cluster has none.
  if (/^\/api\/v1\/namespaces\/[^/]+\/configmaps\/[^/]+$/.test(p)) return { status: 404, body: notFound };
  // API discovery.
  if (p === "/api/v1") return { status: 200, body: { kind: "APIResourceList", groupVersion: "v1", resources: CORE.map((name) => ({ name })) } };
  const discovery = /^\/apis\/([^/]+\/[^/]+)$/.exec(p)?.[1];
  if (discovery !== undefined) {
    const served = discovery === "discovery.k8s.io/v1" ? ["endpointslices"] : BUILT_IN.get(discovery);
    if (served) return { status: 200, body: { kind: "APIResourceList", groupVersion: discovery, resources: served.map((name) => ({ name })) } };
    if (ABSENT_GROUPS.has(discovery.split("/")[0] as string)) return { status: 404, body: notFound };
    return { unanswered: `API discovery of ${discovery}` };
  }
  const whole = answerList(data, p);
  if (whole === "absent") return { status: 404, body: notFound };
  if (!whole) return { unanswered: "path" };
  const labels = parseLabelSelector(url.searchParams.get("labelSelector") ?? "");
  if (typeof labels === "string") return { unanswered: labels };
  const fieldSelector = url.searchParams.get("fieldSelector");
  const fields = fieldSelector ? parseFieldSelector(fieldSelector) : () => true;
  if (typeof fields === "string") return { unanswered: fields };
  const all = whole.items.filter((o) => labels(o.metadata.labels ?? {}) && fields(o));
  const limitParam = url.searchParams.get("limit");
  const limit = limitParam === null ? all.length : Number(limitParam);
  if (!Number.isInteger(limit) || limit < 0) return { unanswered: `limit '${limitParam}'` };
  const start = Number(url.searchParams.get("continue") || 0);
  const page = limit === 0 ? all.slice(start) : all.slice(start, start + limit);
  const next = start + page.length < all.length ? String(start + page.length) : undefined;
  return { status: 200, body: { ...whole, metadata: { resourceVersion: "1", ...(next ? { continue: next } : {}) }, items: page } };
}

/**
 * An API server (not listening yet) answering `data` as answerRead does; `seen`: the paths asked for, `sent`: the bytes of the answers so far, `unanswered`:
 * each request it did not model ("GET /path?query: why").
 */
export function recordedApiServer(data: RecordedCluster, onUnanswered: (request: string) => void = () => {}) {
  const seen: string[] = [];
  const unanswered: string[] = [];
  const stats = { sent: 0 };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    seen.push(url.pathname);
    // The body of a POST is read (and dropped) before the answer.
    req.resume();
    req.on("end", () => {
      const answer = answerRead(data, req.method ?? "GET", url);
      if ("unanswered" in answer) {
        unanswered.push(`${req.method} ${url.pathname}${url.search}: ${answer.unanswered}`);
        onUnanswered(unanswered.at(-1) as string);
      }
      const status = "unanswered" in answer ? 400 : answer.status;
      const payload =
        "unanswered" in answer ? { kind: "Status", code: 400, message: `the recorded API server does not answer this: ${answer.unanswered}` } : answer.body;
      const body = Buffer.from(JSON.stringify(payload));
      stats.sent += body.length;
      res.writeHead(status, { "Content-Type": "application/json", "Content-Length": String(body.length) });
      res.end(body);
    });
  });
  return { server, seen, unanswered, stats };
}

/** recordedApiServer(recordedCluster()) on 127.0.0.1, an ephemeral port. */
export async function listenRecordedApi(data: RecordedCluster = recordedCluster(), onUnanswered?: (request: string) => void) {
  const api = recordedApiServer(data, onUnanswered);
  await new Promise<void>((resolve) => api.server.listen(0, "127.0.0.1", resolve));
  return { ...api, port: (api.server.address() as AddressInfo).port, close: () => new Promise<void>((resolve) => api.server.close(() => resolve())) };
}

/**
 * In `dir`, a project with one stack `bench` reading the API server on 127.0.0.1:`port` (context `fake`) with the portal tests' contract, and `outputs.json`:
 * the stack outputs of an `up` that published argocd and grafana on recordedCluster()'s nodePorts. `exposure status --stack bench --outputs outputs.json`
 * then says argocd MATCH, grafana DRIFT, gitea ABSENT.
 */
export function writeRecordedProject(dir: string, port: number): void {
  const kubeconfig = writeKubeconfig(dir, port);
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
  fs.writeFileSync(path.join(dir, "contract.yaml"), PORTAL_TEST_CONTRACT);
  fs.writeFileSync(
    path.join(dir, "Pulumi.bench.yaml"),
    `config:\n  kubernetes:kubeconfig: ${kubeconfig}\n  kubernetes:context: fake\n  ui-exposure:contract: contract.yaml\n  ui-exposure:entries: all\n  ui-exposure:cilium: { mode: cohabit }\n  ui-exposure:allowlist: { services: [], hostPorts: [] }\n`,
  );
  const url = (nodePort: number) => `http://127.0.0.2:${nodePort}`;
  fs.writeFileSync(
    path.join(dir, "outputs.json"),
    JSON.stringify({
      urls: { argocd: url(31358), grafana: url(31088) },
      endpoints: { argocd: { nodePort: 31358, url: url(31358) }, grafana: { nodePort: 31088, url: url(31088) } },
    }),
  );
}

/**
 * A tenant's fat objects next to recordedCluster(), as an outside tester made them: `services` LoadBalancer Services with
 * `allocateLoadBalancerNodePorts: false` and `ports` ports each (about 0.9 MB at 14,000), `pods` pods of one container
 * whose environment holds about `podBytes` bytes.
 */
export function withTenantLoad(data: RecordedCluster, load: { services: number; ports: number; pods: number; podBytes: number }): RecordedCluster {
  const ports = Array.from({ length: load.ports }, (_, i) => ({ name: `p${i}`, port: 1000 + i, targetPort: 1000 + i, protocol: "TCP" }));
  const env = Array.from({ length: Math.ceil(load.podBytes / 1000) }, (_, i) => ({ name: `V${i}`, value: "x".repeat(990) }));
  const meta = (name: string) => ({ name, namespace: "tenant", uid: `uid-${name}` });
  return {
    ...data,
    services: [
      ...data.services,
      ...Array.from({ length: load.services }, (_, i) => ({
        apiVersion: "v1",
        kind: "Service",
        metadata: meta(`lb-${i}`),
        spec: { type: "LoadBalancer", allocateLoadBalancerNodePorts: false, selector: { app: "x" }, ports },
      })),
    ],
    pods: [
      ...data.pods,
      ...Array.from({ length: load.pods }, (_, i) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: meta(`fat-${i}`),
        spec: { nodeName: "bench", containers: [{ name: "c", image: "x", env }] },
        status: { phase: "Running" },
      })),
    ],
  } as RecordedCluster;
}

if (require.main === module) {
  // The start-up bench's server: prints its port, serves until killed; a request it does not answer is printed on stderr.
  // RECORDED_TENANT_LOAD="services,ports,pods,podBytes" adds a tenant's fat objects (withTenantLoad).
  const load = process.env.RECORDED_TENANT_LOAD?.split(",").map(Number);
  const data = load
    ? withTenantLoad(recordedCluster(), { services: load[0] ?? 0, ports: load[1] ?? 0, pods: load[2] ?? 0, podBytes: load[3] ?? 0 })
    : recordedCluster();
  void listenRecordedApi(data, (request) => process.stderr.write(`recorded API server: not answered: ${request}\n`)).then((api) =>
    process.stdout.write(`${api.port}\n`),
  );
}
