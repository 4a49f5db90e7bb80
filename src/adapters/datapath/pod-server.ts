// The process of one data-path pod, run inside the pod's network namespace:
//   node pod-server.ts POD CERT KEY PORT[/tls]...
// Every listener answers every request with 200 and the pod's name, so a request sent to a
// published URL shows which pod the Kubernetes data path delivered it to. CERT and KEY (PEM, or
// `-`) are the self-signed pair of the https listeners.
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import { EXIT } from "../../core/findings";

export interface PodListener {
  port: number;
  tls: boolean;
}

/** `8080` → http, `8443/tls` → https; undefined when malformed. */
export function parseListener(arg: string): PodListener | undefined {
  const m = /^(\d{1,5})(\/tls)?$/.exec(arg);
  const port = Number(m?.[1]);
  if (!m || port < 1 || port > 65535) return undefined;
  return { port, tls: m[2] !== undefined };
}

export const listenerArg = (l: PodListener) => `${l.port}${l.tls ? "/tls" : ""}`;

/** The body every request gets: the pod's name and a newline. */
export const podAnswer = (pod: string) => `${pod}\n`;

export async function servePod(pod: string, listeners: readonly PodListener[], tls?: { cert: Buffer; key: Buffer }): Promise<void> {
  const handler: http.RequestListener = (req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/plain", "x-pod": pod, connection: "close" }).end(podAnswer(pod));
  };
  await Promise.all(
    listeners.map((l) => {
      if (l.tls && !tls) throw new Error(`port ${l.port}/tls: no certificate given`);
      const server = l.tls && tls ? https.createServer(tls, handler) : http.createServer(handler);
      return new Promise<void>((resolve, reject) => {
        server.once("error", (err) => reject(new Error(`${pod}: cannot listen on port ${l.port}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
        // All addresses of the pod's own namespace (its eth0 and loopback), as a container's server does.
        server.listen(l.port, "0.0.0.0", () => resolve());
      });
    }),
  );
}

if (require.main === module) {
  const [pod, cert, key, ...ports] = process.argv.slice(2);
  const listeners = ports.map(parseListener);
  if (!pod || !cert || !key || listeners.length === 0 || listeners.some((l) => l === undefined)) {
    process.stderr.write("usage: pod-server.ts POD CERT|- KEY|- PORT[/tls]...\n");
    process.exit(EXIT.INVALID);
  }
  const tls = cert !== "-" && key !== "-" ? { cert: fs.readFileSync(cert), key: fs.readFileSync(key) } : undefined;
  servePod(pod, listeners as PodListener[], tls).then(
    () => process.stdout.write(`${pod}: serving ${ports.join(" ")}\n`),
    (err: Error) => {
      process.stderr.write(`${err.message}\n`);
      process.exit(EXIT.ERROR);
    },
  );
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(EXIT.OK));
}
