// A fake Kubernetes API server on loopback: answers each list path with a canned body (or never
// answers), and counts the connections it holds, so a test can prove nothing stays open.
import * as fs from "node:fs";
import * as http from "node:http";
import type * as net from "node:net";
import * as path from "node:path";

/** "endless": a 200 whose JSON body never ends (a list whose items keep coming), sent as fast as the client reads. */
export type FakeAnswer =
  | { status?: number; body: unknown; raw?: false; headers?: Record<string, string> }
  | { status?: number; body: string; raw: true; headers?: Record<string, string> }
  | "hang"
  | "endless";

/** Streams `{"kind":"List","items":[{...},{...},...` until the client goes away. */
export function streamEndlessList(res: http.ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json" });
  const item = Buffer.from(`${JSON.stringify({ metadata: { name: "x".repeat(200), namespace: "endless" }, spec: { ports: [{ port: 80 }] } })},`.repeat(256));
  let open = true;
  res.on("close", () => {
    open = false;
  });
  res.write('{"kind":"List","apiVersion":"v1","metadata":{},"items":[');
  const pump = () => {
    while (open && res.write(item)) {
      // until the socket's buffer is full
    }
    if (open) res.once("drain", pump);
  };
  pump();
}

export interface FakeApi {
  url: string;
  /** A kubeconfig (content) pointing at this server without TLS. */
  kubeconfig: string;
  /** Connections currently open on the server side. */
  openConnections(): Promise<number>;
  requests: string[];
  close(): Promise<void>;
}

/**
 * `answers`: URL path (without query) -> answer, or answers given in turn (the last one repeats);
 * a namespaced list path not given is the cluster-wide list's items of that namespace; other
 * paths answer `otherwise`, by default 404 with a Status.
 */
export async function startFakeApi(answers: Record<string, FakeAnswer | FakeAnswer[]>, opts: { otherwise?: FakeAnswer } = {}): Promise<FakeApi> {
  const served = new Map<string, number>();
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    requests.push(path);
    // A namespaced list not given itself: the cluster-wide answer given, its items filtered to that namespace.
    const scoped = /^(.*)\/namespaces\/([^/]+)(\/[^/]+)$/.exec(path);
    const wide = scoped && !(path in answers) ? answers[`${scoped[1]}${scoped[3]}`] : undefined;
    const items = wide && typeof wide === "object" && !Array.isArray(wide) && !wide.raw ? (wide.body as { items?: unknown } | null)?.items : undefined;
    const given = Array.isArray(items)
      ? { ...(wide as object), body: { ...(wide as { body: object }).body, items: items.filter((o) => o?.metadata?.namespace === scoped?.[2]) } }
      : (wide ?? answers[path]);
    const turn = served.get(path) ?? 0;
    served.set(path, turn + 1);
    const answer = (Array.isArray(given) ? given[Math.min(turn, given.length - 1)] : given) ?? opts.otherwise;
    if (answer === "hang") return; // accepted, never answered
    if (answer === "endless") return streamEndlessList(res);
    if (!answer) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code: 404, reason: "NotFound" }));
      return;
    }
    res.writeHead(answer.status ?? 200, { "content-type": "application/json", ...answer.headers });
    res.end(answer.raw ? answer.body : JSON.stringify(answer.body));
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    kubeconfig: fakeKubeconfig(url),
    openConnections: () => new Promise((resolve) => server.getConnections((_e, n) => resolve(n))),
    requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The one kubeconfig (content) of the tests: a single context (`context`, current), the API server at `url` with a token; its certificate not verified unless
 * `insecure` is false.
 */
export const fakeKubeconfig = (url: string, { context = "fake", insecure = true }: { context?: string; insecure?: boolean } = {}) => `apiVersion: v1
kind: Config
clusters: [{ name: ${context}, cluster: { server: "${url}"${insecure ? ", insecure-skip-tls-verify: true" : ""} } }]
users: [{ name: u, user: { token: fake-token } }]
contexts: [{ name: ${context}, context: { cluster: ${context}, user: u } }]
current-context: ${context}
`;

/** `dir`/kubeconfig (0600) for the API server on 127.0.0.1:`port`; returns its path. */
export function writeKubeconfig(dir: string, port: number): string {
  const file = path.join(dir, "kubeconfig");
  fs.writeFileSync(file, fakeKubeconfig(`http://127.0.0.1:${port}`), { mode: 0o600 });
  return file;
}

/** A List answer holding `items`. */
export const list = (kind: string, items: unknown): FakeAnswer => ({ body: { kind, apiVersion: "v1", metadata: { resourceVersion: "1" }, items } });

/**
 * An API server on loopback that lists as the real one does: `limit` and `continue` (an opaque
 * token), `labelSelector` (`k=v`, `k in (a,b)`), namespaced paths; each request's path and query
 * are recorded, and the bytes of every answer summed.
 */
export async function startPagingApi(
  collections: Record<string, { kind: string; items: { metadata: { namespace?: string; labels?: Record<string, string> } }[] }>,
) {
  const queries: string[] = [];
  const stats = { sent: 0, largest: 0 };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    queries.push(`${url.pathname}${url.search}`);
    const ns = /^(.*)\/namespaces\/([^/]+)(\/[^/]+)$/.exec(url.pathname);
    const collection = collections[ns ? `${ns[1]}${ns[3]}` : url.pathname];
    if (!collection) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"kind":"Status","code":404}');
      return;
    }
    const selector = url.searchParams.get("labelSelector") ?? "";
    const inSet = /^([^ ]+) in \(([^)]*)\)$/.exec(selector);
    const matches = (labels: Record<string, string> = {}) =>
      !selector ||
      (inSet
        ? (inSet[2] as string).split(",").includes(labels[inSet[1] as string] ?? "\u0000")
        : labels[selector.split("=")[0] as string] === selector.split("=")[1]);
    const all = collection.items.filter((o) => (!ns || o.metadata.namespace === ns[2]) && matches(o.metadata.labels));
    const start = Number(url.searchParams.get("continue") || 0);
    const limit = Number(url.searchParams.get("limit") || 0) || all.length;
    const page = all.slice(start, start + limit);
    const next = start + page.length < all.length ? String(start + page.length) : undefined;
    const body = Buffer.from(
      JSON.stringify({ kind: collection.kind, apiVersion: "v1", metadata: { resourceVersion: "1", ...(next ? { continue: next } : {}) }, items: page }),
    );
    stats.sent += body.length;
    stats.largest = Math.max(stats.largest, body.length);
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    kubeconfig: fakeKubeconfig(url),
    queries,
    stats,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
