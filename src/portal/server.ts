// The portal's HTTP server: node:http only, so the same code runs on the operator's machine
// (`exposure portal`) and bundled into a stock Node.js image in the cluster.
import * as http from "node:http";
import { isIP } from "node:net";
import { UserError } from "../core/errors";
import { EXIT } from "../core/findings";
import { renderErrorPage, renderPage } from "../core/portal/html";
import { observePortal, type PortalError, type PortalSource } from "../core/portal/view";

export interface PortalOptions extends PortalSource {
  /** One line per failed page load (the cluster error); default: nothing. */
  log?: (line: string) => void;
}

const COMMON_HEADERS = {
  // Every load must read the cluster again: no browser or proxy may serve an old page.
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
} as const;

// No script and no asset from outside, enforced by the browser too.
const HTML_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function send(req: http.IncomingMessage, res: http.ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}) {
  res.writeHead(status, { ...COMMON_HEADERS, "Content-Type": type, "Content-Length": String(Buffer.byteLength(body)), ...extra });
  res.end(req.method === "HEAD" ? undefined : body);
}

const HTML = "text/html; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";

/**
 * GET /            the page (HTML, server-side)
 * GET /api/entries the same data as JSON
 * GET /healthz     "ok" for probes, without touching the cluster (a cluster outage must not
 *                  restart the portal: it is exactly when the portal should say so)
 */
export function portalHandler(opts: PortalOptions): http.RequestListener {
  return (req, res) => {
    // Published on a NodePort without login: no request may end the process. Whatever throws
    // while routing is answered 500 (and logged); the server goes on.
    try {
      route(opts, req, res);
    } catch (err) {
      opts.log?.(`${req.method} -> 500: ${(err as Error).stack ?? String(err)}`);
      if (!res.headersSent) send(req, res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    }
  };
}

/** The path of a request target, or undefined when it is not one (`http://[zz]/`, `//[`...). */
export function requestPath(target: string | undefined): string | undefined {
  if (target === undefined || target.length > MAX_TARGET_LENGTH) return undefined;
  try {
    const url = new URL(target, "http://portal.invalid");
    // `a:` or `mailto:x` in absolute form has an opaque path: not a request for this server.
    return (url.protocol === "http:" || url.protocol === "https:") && url.pathname.startsWith("/") ? url.pathname : undefined;
  } catch {
    return undefined;
  }
}

/** Longer request targets are refused (Node itself caps the whole header block at 16 KiB). */
export const MAX_TARGET_LENGTH = 2048;

function route(opts: PortalOptions, req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = requestPath(req.url);
  if (path === undefined) {
    send(req, res, 400, "text/plain; charset=utf-8", "bad request: the request target is not a URL path\n");
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    send(req, res, 405, "text/plain; charset=utf-8", "method not allowed\n", { Allow: "GET, HEAD" });
    return;
  }
  if (path === "/healthz") {
    send(req, res, 200, "text/plain; charset=utf-8", "ok\n");
    return;
  }
  if (path !== "/" && path !== "/api/entries") {
    send(req, res, 404, "text/plain; charset=utf-8", "not found: the portal serves /, /api/entries and /healthz\n");
    return;
  }
  const json = path === "/api/entries";
  observePortal(opts)
    .then(
      (view) => {
        if (json) send(req, res, 200, JSON_TYPE, `${JSON.stringify(view, null, 2)}\n`);
        else send(req, res, 200, HTML, renderPage(view), { "Content-Security-Policy": HTML_CSP });
      },
      (err: unknown) => {
        // A cluster error (UserError from the reader) is 503: the portal works, its data source does not.
        // Anything else is a bug: 500, with the stack trace in the log only.
        const known = err instanceof UserError;
        const status = known ? 503 : 500;
        const message = known ? err.message : "internal error while observing the cluster (see the portal's log)";
        opts.log?.(`${req.method} ${path} -> ${status}: ${known ? err.message : ((err as Error).stack ?? String(err))}`);
        const error: PortalError = {
          error: message,
          generatedAt: (opts.now?.() ?? new Date()).toISOString(),
          source: opts.cluster.source,
          ...(opts.stack ? { stack: opts.stack } : {}),
        };
        if (json) send(req, res, status, JSON_TYPE, `${JSON.stringify(error, null, 2)}\n`);
        else send(req, res, status, HTML, renderErrorPage(error), { "Content-Security-Policy": HTML_CSP });
      },
    )
    // A failure while answering (the client went away) must not become an unhandled rejection.
    .catch((err: unknown) => opts.log?.(`${req.method} ${path}: ${(err as Error).message}`));
}

export function createPortalServer(opts: PortalOptions): http.Server {
  const server = http.createServer(portalHandler(opts));
  // A browser's idle keep-alive connection must not delay a clean stop.
  server.keepAliveTimeout = 5_000;
  return server;
}

export interface ListenAddress {
  host: string;
  port: number;
}

/** Parses `HOST:PORT` (`[::1]:8080` for IPv6); port 0 picks a free one. */
export function parseListen(text: string): ListenAddress {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !host || !Number.isInteger(port) || port > 65535) {
    throw new UserError(`--listen must be HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), not '${text}'`, EXIT.INVALID);
  }
  if (m[1] && isIP(host) !== 6) throw new UserError(`--listen: '${host}' is not an IPv6 address`, EXIT.INVALID);
  return { host, port };
}

export const urlOf = (host: string, port: number) => `http://${host.includes(":") ? `[${host}]` : host}:${port}/`;

export interface RunningPortal {
  server: http.Server;
  /** The address actually bound (the port is real even when 0 was asked). */
  url: string;
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens, rejects with a readable error (port in use...). */
export function startPortal(opts: PortalOptions, listen: ListenAddress): Promise<RunningPortal> {
  const server = createPortalServer(opts);
  return new Promise((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      const why = err.code === "EADDRINUSE" ? "the port is in use" : err.code === "EADDRNOTAVAIL" ? "no such local address" : err.message;
      reject(new UserError(`cannot listen on ${listen.host}:${listen.port}: ${why}`));
    });
    server.listen(listen.port, listen.host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : listen.port;
      resolve({
        server,
        url: urlOf(listen.host, port),
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
            // A page load still waiting on the cluster gets a few seconds, not the reader's full timeout.
            setTimeout(() => server.closeAllConnections(), 3_000).unref();
          }),
      });
    });
  });
}
