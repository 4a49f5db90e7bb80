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
 * other paths answer `otherwise`, by default 404 with a Status.
 */
export async function startFakeApi(answers: Record<string, FakeAnswer | FakeAnswer[]>, opts: { otherwise?: FakeAnswer } = {}): Promise<FakeApi> {
  const served = new Map<string, number>();
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    requests.push(path);
    const given = answers[path];
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

/** A kubeconfig (content): context `fake`, the API server at `url` without TLS. */
export const fakeKubeconfig = (url: string) => `apiVersion: v1
kind: Config
clusters: [{ name: fake, cluster: { server: "${url}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: fake-token } }]
contexts: [{ name: fake, context: { cluster: fake, user: u } }]
current-context: fake
`;

/** `dir`/kubeconfig (0600) for the API server on 127.0.0.1:`port`; returns its path. */
export function writeKubeconfig(dir: string, port: number): string {
  const file = path.join(dir, "kubeconfig");
  fs.writeFileSync(file, fakeKubeconfig(`http://127.0.0.1:${port}`), { mode: 0o600 });
  return file;
}

/** A List answer holding `items`. */
export const list = (kind: string, items: unknown): FakeAnswer => ({ body: { kind, apiVersion: "v1", metadata: { resourceVersion: "1" }, items } });
