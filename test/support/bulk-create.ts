// Creates many objects in a test's API server quickly: a fixed number of kept-alive TLS
// connections, each request's body serialised once, the answer's body read and dropped.
// @kubernetes/client-node makes a new https.Agent for every request (so a new connection and TLS
// handshake, and the CA parsed again, each time) and maps every answer onto its model classes:
// for thousands of objects that, not the API server, is where the time went.
import * as https from "node:https";

type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});

export interface BulkTarget {
  /** The collection's path, e.g. `/api/v1/namespaces/tenant/services`. */
  path: string;
  /** The object's JSON, as the API server should receive it. */
  body: string;
}

/**
 * POSTs `n` objects (`make(i)` for i in [0, n)) through `concurrency` connections, each created
 * object answered 201. The first refusal stops the rest and is thrown with the API server's words.
 */
export async function bulkCreate(lib: ClientNode, kubeconfig: string, n: number, make: (i: number) => BulkTarget, concurrency = 32): Promise<void> {
  const kc = new lib.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const server = new URL(kc.getCurrentCluster()?.server ?? "");
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const agent = new https.Agent({ keepAlive: true, maxSockets: concurrency, ca: options.ca, cert: options.cert, key: options.key });
  const headers = { ...(options.headers as Record<string, string> | undefined), "content-type": "application/json", accept: "application/json" };
  const post = (target: BulkTarget) =>
    new Promise<void>((resolve, reject) => {
      const req = https.request(
        {
          agent,
          method: "POST",
          hostname: server.hostname,
          port: server.port,
          path: target.path,
          headers: { ...headers, "content-length": Buffer.byteLength(target.body) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          const refused = res.statusCode !== 201;
          res.on("data", (c: Buffer) => {
            if (refused) chunks.push(c);
          });
          res.on("end", () =>
            refused ? reject(new Error(`POST ${target.path}: HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString("utf8").slice(0, 2000)}`)) : resolve(),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(target.body);
    });
  let next = 0;
  let failed = false;
  try {
    await Promise.all(
      Array.from({ length: Math.min(concurrency, n) }, async () => {
        while (!failed && next < n) {
          const i = next++;
          try {
            await post(make(i));
          } catch (err) {
            failed = true;
            throw err;
          }
        }
      }),
    );
  } finally {
    agent.destroy();
  }
}
