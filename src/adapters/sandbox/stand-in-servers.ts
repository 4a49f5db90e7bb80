// The data path a node provides with Cilium (kube-proxy replacement): each published URL
// `<node IP>:<nodePort>` answers like the UI behind it. Run as its own process by `sandbox up`
// (`node --import tsx stand-in-servers.ts <folder>/stand-ins.json`) and left running.
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";

export interface StandIn {
  entry: string;
  url: string;
  /** The contract's probe path and the first expected status (default `/` and 200). */
  probePath: string;
  probeStatus: number;
}

export interface StandInFile {
  standIns: StandIn[];
  /** PEM key and certificate for https entries (the sandbox API server's self-signed pair). */
  tls?: { keyFile: string; certFile: string };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** What the stand-in of one entry answers: the probe path with the expected status, a page elsewhere. */
export function answer(s: StandIn, path: string): { status: number; body: string } {
  const pathname = path.split("?")[0] ?? "/";
  if (pathname === s.probePath) return { status: s.probeStatus, body: `${s.entry}: ok\n` };
  return {
    status: 200,
    body: `<!doctype html><title>${escapeHtml(s.entry)} (sandbox stand-in)</title><h1>${escapeHtml(s.entry)}</h1><p>Stand-in UI served at ${escapeHtml(s.url)} by exposure sandbox.</p>\n`,
  };
}

export async function serveStandIns(file: StandInFile): Promise<void> {
  const tls = file.tls ? { key: fs.readFileSync(file.tls.keyFile), cert: fs.readFileSync(file.tls.certFile) } : undefined;
  await Promise.all(
    file.standIns.map((s) => {
      const url = new URL(s.url);
      const handler: http.RequestListener = (req, res) => {
        const { status, body } = answer(s, req.url ?? "/");
        res.writeHead(status, { "content-type": body.startsWith("<!doctype") ? "text/html; charset=utf-8" : "text/plain" }).end(body);
      };
      const server = url.protocol === "https:" && tls ? https.createServer(tls, handler) : http.createServer(handler);
      return new Promise<void>((resolve, reject) => {
        server.once("error", (err) => reject(new Error(`${s.entry}: cannot listen on ${url.host}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
        server.listen(Number(url.port), url.hostname.replace(/^\[|\]$/g, ""), () => resolve());
      });
    }),
  );
}

if (require.main === module) {
  const [fileArg] = process.argv.slice(2);
  if (!fileArg) {
    process.stderr.write("usage: stand-in-servers.ts FOLDER/stand-ins.json\n");
    process.exit(2);
  }
  const file = JSON.parse(fs.readFileSync(fileArg, "utf8")) as StandInFile;
  serveStandIns(file).then(
    () => process.stdout.write(`serving ${file.standIns.length} stand-in UI(s)\n`),
    (err: Error) => {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    },
  );
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(0));
}
