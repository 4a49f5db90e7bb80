// The portal's HTTP server: node:http only, so the same code runs in `exposure portal` and bundled into a stock Node.js image in the cluster.
import * as http from "node:http";
import { isIP } from "node:net";
import { Gauge, Registry } from "prom-client";
import { PROBE_USER_AGENT } from "../adapters/http-probe";
import { auditExposure, readExposureObjects, type UndeclaredExposure } from "../core/audit";
import { entryName } from "../core/contract/schema";
import { UserError } from "../core/errors";
import { EXIT, JSON_API_VERSION } from "../core/findings";
import { decimalNumber } from "../core/inputs";
import type { PortalEntriesDocument, PortalEntryDocument, PortalErrorDocument, PortalStacksDocument } from "../core/json-api";
import { METRICS_PATH, type MetricFamily, type MetricsInput, metricFamilies } from "../core/monitoring";
import { failureCause, observeStack, type PublishedEndpoints, type StackObservation, usersUrl } from "../core/observe";
import { PENDING_NODE_PORT } from "../core/plan";
import { type PageOptions, renderErrorPage, renderPage, renderStacksPage, type StackSection } from "../core/portal/html";
import { buildPortalView, type PortalError, type PortalSource, type PortalView, UNDECLARED_SHOWN, wantedEntries } from "../core/portal/view";
import type { Allowlist } from "../core/settings";
import { DEFAULT_REACHABILITY, ReachabilityCache, type ReachabilityOptions } from "./reachability";
import { SharedRead } from "./shared-read";

export interface PortalOptions extends PortalSource {
  /** One line per failed page load (the cluster error); default: nothing. */
  log?: (line: string) => void;
  /** Page loads within this many ms of a cluster read reuse it (default 2 s; 0: only loads during a read). Env: PORTAL_READ_INTERVAL_SECONDS. */
  readIntervalMs?: number;
  /** The portal's own probes of the published URLs (default: on, 15 s cache; env PORTAL_PROBE=off). */
  reachability?: Partial<ReachabilityOptions>;
  /** What the last `up` published, read with each cluster read (undefined: only names are checked): verdicts as `exposure status`'s. Wins over `published`. */
  readPublished?: (opts?: { fresh?: boolean }) => Promise<PublishedEndpoints | undefined>;
  /** With it the portal runs `exposure drift`'s audit (every Service and Pod, at most once per `auditIntervalMs`) for the undeclared count. */
  audit?: { allowlist: Allowlist };
  /** Shown in /metrics' build info. */
  version?: string;
  /** How long the audit's cluster-wide lists are reused (default 5 min). Env: PORTAL_AUDIT_INTERVAL_SECONDS. */
  auditIntervalMs?: number;
  /** How long a scrape waits for a read before it answers with the last values (default 5 s, under Prometheus's 10 s: stale data, never "portal down"). */
  metricsWaitMs?: number;
  /** Several stacks: how long a page waits for this stack's read before showing its last rows as stale (default STACK_WAIT_MS). */
  readWaitMs?: number;
}

export const DEFAULT_READ_INTERVAL_MS = 2_000;
// The audit lists every Service and Pod (tens of MiB on a large cluster): at most every 5 min (or the read interval); UIExposureUndeclared waits 15 min.
export const DEFAULT_AUDIT_INTERVAL_MS = 300_000;
export const STACK_WAIT_MS = 5_000;

function seconds(env: NodeJS.ProcessEnv, name: string, max: number): number | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  const value = decimalNumber(raw);
  if (!Number.isFinite(value) || value > max) throw new UserError(`${name} must be a number of seconds between 0 and ${max}, not '${raw}'`, EXIT.INVALID);
  return value * 1000;
}

/** The environment knobs shared by `exposure portal` and the in-cluster portal. */
export function portalTuningFromEnv(env: NodeJS.ProcessEnv): Pick<PortalOptions, "readIntervalMs" | "reachability" | "auditIntervalMs"> {
  const probe = env.PORTAL_PROBE;
  if (probe && probe !== "on" && probe !== "off") throw new UserError(`PORTAL_PROBE must be 'on' or 'off', not '${probe}'`, EXIT.INVALID);
  const cacheMs = seconds(env, "PORTAL_PROBE_CACHE_SECONDS", 3600);
  return {
    readIntervalMs: seconds(env, "PORTAL_READ_INTERVAL_SECONDS", 300),
    auditIntervalMs: seconds(env, "PORTAL_AUDIT_INTERVAL_SECONDS", 3600),
    reachability: { enabled: probe !== "off", ...(cacheMs !== undefined ? { cacheMs } : {}) },
  };
}

/** `?refresh=N` asks for a meta refresh every N seconds, N clamped to 5-3600 (any number of digits); anything else: none. */
export function refreshOf(search: URLSearchParams): PageOptions {
  const raw = search.get("refresh");
  if (raw === null || !/^\d+$/.test(raw)) return {};
  // Past 4 digits it is above 3600 whatever it is (and Number() of 400 digits is Infinity).
  return { refreshSeconds: raw.length > 4 ? 3600 : Math.min(3600, Math.max(5, Number(raw))) };
}

/** The state page loads share: one cluster read per interval, one probe round at a time. */
export class PortalObserver {
  readonly clusterReads: SharedRead<StackObservation<{ proven?: PublishedEndpoints }, undefined>>;
  readonly reachability: ReachabilityCache;
  readonly auditReads: SharedRead<{ count: number; shown: UndeclaredExposure[] }> | undefined;
  /** The last view computed from a successful read, for /metrics and the page of several stacks while reads fail. */
  private lastGood: { view: PortalView; observedAt: Date } | undefined;
  /** The audit's last good count, whether its last round read the cluster, when one last did. */
  private audit: MetricsInput["audit"];
  private auditFailureLogged: Promise<unknown> | undefined;
  /** What the page says of undeclared exposure: the last audit round's. */
  private undeclared: PortalView["undeclared"];

  constructor(readonly opts: PortalOptions & { stack: string }) {
    const wanted = wantedEntries(opts);
    const wantedNames = wanted.map((e) => e.name);
    const readPublished = opts.readPublished ?? (async () => opts.published);
    const { audit, cluster } = opts;
    const connect = "connect" in cluster ? () => cluster.connect() : async () => cluster;
    // Only the count and the first few are kept: the cluster-wide lists are garbage as soon as they are computed.
    this.auditReads = audit
      ? new SharedRead(
          async () => {
            const [exposing, published] = await Promise.all([connect().then(readExposureObjects), readPublished()]);
            const { undeclared } = auditExposure({ contract: opts.contract, selected: wantedNames, allowlist: audit.allowlist, ...exposing, published });
            return { count: undeclared.length, shown: undeclared.slice(0, UNDECLARED_SHOWN) };
          },
          Math.max(opts.auditIntervalMs ?? DEFAULT_AUDIT_INTERVAL_MS, opts.readIntervalMs ?? DEFAULT_READ_INTERVAL_MS),
        )
      : undefined;
    const freshFor = new Set<string>();
    const stack = { contract: opts.contract, selected: opts.selected ?? "all", nodeAddress: opts.nodeAddress };
    this.clusterReads = new SharedRead(
      () =>
        observeStack(stack, {
          connect,
          published: () => readPublished().then((proven) => (proven ? { proven } : {})),
          entries: wanted,
          // A Service named as the outputs say whose uid they do not know is most often one an `up` has just re-created, while the outputs read earlier lag
          // it: before anything is said of it, they are read again at once (once per such uid: one re-created by hand stays what it is).
          recheck: (uids) => {
            const unknown = uids.filter((uid) => !freshFor.has(uid));
            for (const uid of unknown) freshFor.add(uid);
            return unknown.length ? readPublished({ fresh: true }).then((proven) => (proven ? { proven } : {})) : undefined;
          },
        }),
      opts.readIntervalMs ?? DEFAULT_READ_INTERVAL_MS,
    );
    this.reachability = new ReachabilityCache({ ...DEFAULT_REACHABILITY, ...opts.reachability });
  }

  // The verdicts of one cluster read are computed once, not per load (observe() walks every Service).
  private lastBase: { cluster: object; view: PortalView; urls: Map<string, string> } | undefined;

  /** `waitForProbes: false` for a probe of the portal itself: waiting would wait on itself. */
  async view(opts: { waitForProbes?: boolean } = {}): Promise<PortalView> {
    // The audit's round (shared with /metrics) lists the whole cluster: a load waits for it 1 s at most after its own read, else shows the last round's.
    const audit = this.auditReads?.get().then(
      (r) => r.value,
      (err: unknown) => ({ unread: (err as Error).message }),
    );
    audit?.then((u) => {
      this.undeclared = u;
    });
    const { value: read, at } = await this.clusterReads.get();
    let timer: NodeJS.Timeout | undefined;
    if (audit) await Promise.race([audit, new Promise((resolve) => (timer = setTimeout(resolve, 1000)))]).finally(() => clearTimeout(timer));
    const undeclared = this.undeclared;
    const generatedAt = this.opts.now?.() ?? new Date();
    if (this.lastBase?.cluster !== read) {
      const view = buildPortalView(
        { ...this.opts, published: read.published.proven, source: read.source },
        read.cluster,
        { observedAt: this.opts.now ? generatedAt : at, generatedAt },
        { enabled: this.reachability.opts.enabled, cacheSeconds: Math.round(this.reachability.opts.cacheMs / 1000) },
        read.observation,
      );
      // The URL users have answers or not: the published one where the live one differs.
      const probed = view.entries.map((e) => [e.name, e.exposed ? usersUrl(e) : undefined] as const);
      const urls = new Map(probed.filter((p): p is readonly [string, string] => /^https?:\/\//.test(p[1] ?? "") && !p[1]?.includes(PENDING_NODE_PORT)));
      this.lastBase = { cluster: read, view, urls };
    }
    const base = this.lastBase;
    const byEntry = await this.reachability.answers(this.reachability.targets(base.urls, this.opts.contract), { wait: opts.waitForProbes !== false });
    const view: PortalView = {
      ...base.view,
      ...(undeclared ? { undeclared } : {}),
      generatedAt: generatedAt.toISOString(),
      entries: base.view.entries.map((e) => {
        const reachability = byEntry.get(e.name);
        if (!reachability) return e;
        // A failure says why where the observation tells, as `exposure probe` does.
        const cause = reachability.error ? failureCause(e, reachability.error) : undefined;
        return { ...e, reachability: cause ? { ...reachability, error: cause } : reachability };
      }),
    };
    this.lastGood = { view, observedAt: at };
    return view;
  }

  /** One scrape's input: it joins the page loads' read, never adds one. While reads fail, the last good values keep their old timestamp (the stale alert). */
  async metricsInput(): Promise<MetricsInput> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.opts.metricsWaitMs ?? 5_000);
    });
    const within = <T>(p: Promise<T>) => Promise.race([p.catch(() => undefined), deadline]);
    try {
      // A failed or late read leaves the last good values (and their old timestamp) in place.
      await within(this.view());
      const audit = this.auditReads?.get();
      // Said once per failed round (a round's failure is shared for the audit interval).
      audit?.catch((err: unknown) => {
        if (this.auditFailureLogged === audit) return;
        this.auditFailureLogged = audit;
        this.opts.log?.(`/metrics: the audit could not read the cluster (${(err as Error).message}); ui_exposure_undeclared_exposures keeps its last value`);
      });
      // A round still in flight at the deadline changes nothing; an ended one says whether it read the cluster.
      const [round] = audit ? ((await within(Promise.allSettled([audit]))) ?? []) : [];
      if (round?.status === "fulfilled") this.audit = { undeclared: round.value.value.count, ok: true, lastSuccessAt: round.value.at };
      else if (round) this.audit = { ...this.audit, ok: false };
    } finally {
      clearTimeout(timer);
    }
    const { stack, version = "unknown", cluster } = this.opts;
    return { ...this.lastGood, audit: this.auditReads && (this.audit ?? {}), version, stack, cluster: cluster.name ?? "" };
  }

  /** This stack's section: its view, or its last good one (stale) with why the read failed or is late. A hung cluster costs the others nothing. */
  async section(log: PortalOptions["log"]): Promise<StackSection> {
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.opts.readWaitMs ?? STACK_WAIT_MS;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UserError(`no answer within ${waitMs / 1000} s`)), waitMs);
    });
    const section = { stack: this.opts.stack, source: this.opts.cluster.source };
    try {
      return { ...section, view: await Promise.race([this.view(), late]) };
    } catch (err) {
      const error = err instanceof UserError ? err.message : "internal error while observing the cluster (see the portal's log)";
      log?.(`stack ${this.opts.stack}: ${err instanceof UserError ? err.message : ((err as Error).stack ?? String(err))}`);
      return { ...section, ...(this.lastGood ? { view: this.lastGood.view } : {}), error };
    } finally {
      clearTimeout(timer);
    }
  }
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

const TEXT = "text/plain; charset=utf-8";
const JSON_TYPE = "application/json; charset=utf-8";
const sendHtml = (req: http.IncomingMessage, res: http.ServerResponse, status: number, html: string) =>
  send(req, res, status, "text/html; charset=utf-8", html, { "Content-Security-Policy": HTML_CSP });
const sendJson = (req: http.IncomingMessage, res: http.ServerResponse, status: number, doc: object) =>
  send(req, res, status, JSON_TYPE, `${JSON.stringify(doc, null, 2)}\n`);

/** The path of a request target, or undefined when it is not one (`http://[zz]/`, `//[`...). */
export function requestPath(target: string | undefined): string | undefined {
  return requestTarget(target)?.pathname;
}

function requestTarget(target: string | undefined): URL | undefined {
  if (target === undefined || target.length > MAX_TARGET_LENGTH) return undefined;
  try {
    // An origin-form target is a path: `//metrics` names the path //metrics, not a host `metrics`.
    const url = new URL(target.startsWith("/") ? `http://portal.invalid${target}` : target);
    // `a:` or `mailto:x` in absolute form has an opaque path: not a request for this server.
    return (url.protocol === "http:" || url.protocol === "https:") && url.pathname.startsWith("/") ? url : undefined;
  } catch {
    return undefined;
  }
}

/** Longer request targets are refused (Node itself caps the whole header block at 16 KiB). */
export const MAX_TARGET_LENGTH = 2048;

/** One stack's page and JSON API: /, /api/entries, /api/entries/<name> (of several stacks: below /api/stacks/<stack>). */
function serveStack(observer: PortalObserver, req: http.IncomingMessage, res: http.ServerResponse, requested: URL): void {
  const { opts } = observer;
  const path = requested.pathname;
  // /api/entries/<name>: one entry (the page links each row to it).
  const one = /^\/api\/entries\/([^/]+)$/.exec(path);
  const entry = one ? safeDecode(one[1] as string) : undefined;
  const json = path !== "/";
  const page = refreshOf(requested.searchParams);
  if (one && (entry === undefined || !entryName.safeParse(entry).success))
    send(req, res, 404, JSON_TYPE, `${JSON.stringify({ error: "not an entry name" })}\n`);
  else if (path !== "/" && path !== "/api/entries" && !one)
    send(req, res, 404, TEXT, "not found: the portal serves /, /api/entries, /api/entries/<name>, /metrics and /healthz\n");
  // The portal's own probe (its entry's probe path is the page) must not wait for the round it is part of.
  else
    observer
      .view({ waitForProbes: req.headers["user-agent"] !== PROBE_USER_AGENT })
      .then(
        (view) => {
          if (entry !== undefined) {
            const found = view.entries.find((e) => e.name === entry);
            if (!found) send(req, res, 404, JSON_TYPE, `${JSON.stringify({ error: `no entry '${entry}' in the contract` })}\n`);
            else {
              const { entries: _all, summary: _summary, problems: _problems, undeclared: _undeclared, ...context } = view;
              sendJson(req, res, 200, { apiVersion: JSON_API_VERSION, kind: "PortalEntry", ...context, entry: found } satisfies PortalEntryDocument);
            }
          } else if (json) sendJson(req, res, 200, { apiVersion: JSON_API_VERSION, kind: "PortalEntries", ...view } satisfies PortalEntriesDocument);
          else sendHtml(req, res, 200, renderPage(view, page));
        },
        (err: unknown) => {
          // A cluster error (UserError) is 503: the portal works, its data source does not. Anything else is a bug: 500, the stack trace in the log only.
          const known = err instanceof UserError;
          const status = known ? 503 : 500;
          opts.log?.(`${req.method} ${path} -> ${status}: ${known ? err.message : ((err as Error).stack ?? String(err))}`);
          const error: PortalError = {
            error: known ? err.message : "internal error while observing the cluster (see the portal's log)",
            generatedAt: (opts.now?.() ?? new Date()).toISOString(),
            source: opts.cluster.source,
            ...(opts.stack ? { stack: opts.stack } : {}),
          };
          if (json) sendJson(req, res, status, { apiVersion: JSON_API_VERSION, kind: "PortalError", ...error } satisfies PortalErrorDocument);
          else sendHtml(req, res, status, renderErrorPage(error, page));
        },
      )
      // A failure while answering (the client went away) must not become an unhandled rejection.
      .catch((err: unknown) => opts.log?.(`${req.method} ${path}: ${(err as Error).message}`));
}

// /metrics, written by prom-client from the samples src/core/monitoring.ts computes. A registry per scrape: an entry that leaves the stack's selection leaves
// no series behind, and nothing is global to the process.
export async function renderMetrics(families: readonly MetricFamily[]): Promise<string> {
  const registry = new Registry();
  // A family without samples is left out: an unlabelled prom-client gauge never set would read 0.
  for (const f of families.filter((x) => x.samples.length > 0)) {
    const labelNames = [...new Set(f.samples.flatMap((s) => Object.keys(s.labels)))];
    const gauge = new Gauge({ name: f.name, help: f.help, labelNames, registers: [registry] });
    for (const s of f.samples) gauge.set(s.labels, s.value);
  }
  return registry.metrics();
}

/** One router for one stack or several (routes: docs/portal.md). /healthz never reads a cluster: an outage must show on the page, not restart the pod. */
export function portalHandler(first: PortalOptions, more: readonly PortalOptions[] = []): http.RequestListener {
  // One observer per stack (its reads, schedule, timeout and probe cache; nothing shared): a hung cluster delays no other.
  const stacks = [first, ...more].map((o) => new PortalObserver({ ...o, stack: o.stack ?? "" }));
  const several = more.length > 0;
  const byName = new Map(stacks.map((s) => [s.opts.stack, s]));
  return (req, res) => {
    const requested = requestTarget(req.url);
    const path = requested?.pathname ?? "";
    const text = (status: number, body: string, extra?: Record<string, string>) => send(req, res, status, TEXT, body, extra);
    const fail = (err: unknown, cut = false) => {
      first.log?.(`${cut ? req.method : `${req.method} ${path}`} -> 500: ${(err as Error).stack ?? String(err)}`);
      if (!res.headersSent) text(500, "internal error\n");
      else if (cut) res.destroy();
    };
    // Published on a NodePort without login: no request may end the process. Whatever throws while routing is answered 500 (and logged); the server goes on.
    try {
      const one = several ? /^\/api\/stacks\/([^/]+)(\/entries(?:\/[^/]+)?)$/.exec(path) : null;
      const stack = one ? byName.get(safeDecode(one[1] as string) ?? "") : undefined;
      if (requested === undefined) text(400, "bad request: the request target is not a URL path\n");
      else if (req.method !== "GET" && req.method !== "HEAD") text(405, "method not allowed\n", { Allow: "GET, HEAD" });
      else if (path === "/healthz") text(200, "ok\n");
      // All at once: each waits for its own read at most metricsWaitMs, whatever the others do.
      else if (path === METRICS_PATH)
        Promise.all(stacks.map((s) => s.metricsInput()))
          .then((inputs) => renderMetrics(metricFamilies(inputs)))
          .then((text) => send(req, res, 200, Registry.PROMETHEUS_CONTENT_TYPE, text))
          .catch(fail);
      else if (!several) serveStack(stacks[0] as PortalObserver, req, res, requested);
      else if (stack && one) serveStack(stack, req, res, new URL(`/api${one[2]}${requested.search}`, requested));
      else if (path === "/" || path === "/api/stacks") {
        const only = requested.searchParams.get("stack") ?? undefined;
        if (only !== undefined && !byName.has(only)) text(404, "not found: no such stack in this portal\n");
        else
          Promise.all(stacks.map((s) => s.section(first.log)))
            .then((sections) => {
              const now = new Date();
              const doc: PortalStacksDocument = { apiVersion: JSON_API_VERSION, kind: "PortalStacks", generatedAt: now.toISOString(), stacks: sections };
              if (path === "/") sendHtml(req, res, 200, renderStacksPage(sections, now, { ...refreshOf(requested.searchParams), ...(only ? { only } : {}) }));
              else sendJson(req, res, 200, doc);
            })
            .catch(fail);
      } else text(404, "not found: this portal of several stacks serves /, /api/stacks, /api/stacks/<stack>/entries[/<name>], /metrics and /healthz\n");
    } catch (err) {
      // One stack: a response already begun is cut rather than left hanging.
      fail(err, !several);
    }
  };
}

const safeDecode = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
};

/** Parses `HOST:PORT` (`[::1]:8080` for IPv6); port 0 picks a free one. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !host || !Number.isInteger(port) || port > 65535)
    throw new UserError(`--listen must be HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), not '${text}'`, EXIT.INVALID);
  if (m[1] && isIP(host) !== 6) throw new UserError(`--listen: '${host}' is not an IPv6 address`, EXIT.INVALID);
  return { host, port };
}

export interface RunningPortal {
  server: http.Server;
  /** The address actually bound (the port is real even when 0 was asked). */
  url: string;
  close(): Promise<void>;
}

/** Starts the server; resolves once it listens, rejects with a readable error (port in use...). `more`: the other stacks (`--stack a --stack b`). */
export async function startPortal(first: PortalOptions, listen: { host: string; port: number }, more: readonly PortalOptions[] = []): Promise<RunningPortal> {
  // PORTAL_PROBE / PORTAL_PROBE_CACHE_SECONDS / PORTAL_READ_INTERVAL_SECONDS apply to both front ends; explicit options win.
  const tuning = portalTuningFromEnv(process.env);
  const tuned = (given: PortalOptions): PortalOptions => ({ ...tuning, ...given, reachability: { ...tuning.reachability, ...given.reachability } });
  const server = http.createServer(portalHandler(tuned(first), more.map(tuned)));
  // Node hands CONNECT to a "connect" listener and, without one, closes the socket unanswered: answer it like any other method the portal does not serve.
  server.on("connect", (req, socket) => {
    first.log?.(`${req.method} -> 405`);
    const body = "method not allowed\n";
    const headers = { Allow: "GET, HEAD", "Content-Type": TEXT, "Content-Length": body.length, ...COMMON_HEADERS, Connection: "close" };
    const fields = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.on("error", () => {});
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\n${fields.join("")}\r\n${body}`);
  });
  // A browser's idle keep-alive connection must not delay a clean stop.
  server.keepAliveTimeout = 5_000;

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
        url: `http://${listen.host.includes(":") ? `[${listen.host}]` : listen.host}:${port}/`,
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
