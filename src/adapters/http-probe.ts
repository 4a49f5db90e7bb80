import * as http from "node:http";
import * as https from "node:https";
import { type Contract, probePathProblem } from "../core/contract/schema";
import type { ProbeResultJson } from "../core/json-api";
import { PENDING_NODE_PORT } from "../core/plan";
import { PUBLISHED_TEXT_MAX } from "../core/published";
import { redactUrlPasswords, shownValue } from "../core/text";

/** One URL to request, with what the contract expects of it. */
export interface ProbeTarget {
  name: string;
  /** The published URL (`http://<node IP>:<nodePort>`), from the stack outputs. */
  url: string;
  /** Path requested on it (the contract's probe.path; default "/"). */
  path: string;
  /** Accepted statuses; undefined means any 2xx or 3xx. */
  expectStatus?: readonly number[];
  timeoutMs: number;
}

/** One probe answer: the `--json` shape of `exposure probe` and the portal's reachability. */
export type ProbeResult = ProbeResultJson;

/** Sends one GET and resolves with the status once the headers arrive; rejects with a readable reason. */
export type HttpGet = (url: URL, timeoutMs: number) => Promise<{ status: number; location?: string }>;

class ProbeFailure extends Error {}

/** The User-Agent of every probe (the portal recognises a probe of itself by it). */
export const PROBE_USER_AGENT = "exposure-probe";

export const NETWORK_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused (nothing listens on that port)",
  ECONNRESET: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found (DNS)",
  EPROTO: "TLS handshake failed (is it plain http?)",
  HPE_INVALID_CONSTANT: "not an HTTP answer",
};

/** A network error as a reason: Node's HTTP parser codes (`HPE_*`) not named above as one sentence keeping the code. */
const networkError = (err: NodeJS.ErrnoException): string =>
  NETWORK_ERRORS[err.code ?? ""] ?? (err.code?.startsWith("HPE_") ? `malformed HTTP answer (${err.code})` : (err.code ?? err.message));

// GET without following redirects (a 3xx is the answer judged) or reusing connections. Certificates are NOT verified: UIs serve self-signed ones, and the
// probe checks that the URL answers, not who.
export const httpGet: HttpGet = (url, timeoutMs) =>
  new Promise((resolve, reject) => {
    const req = (url.protocol === "https:" ? https : http).request(url, {
      agent: false,
      headers: { "user-agent": PROBE_USER_AGENT, accept: "*/*", connection: "close" },
      ...(url.protocol === "https:" ? { rejectUnauthorized: false } : {}),
    });
    const timer = setTimeout(() => req.destroy(new ProbeFailure(`no answer within ${timeoutMs / 1000}s`)), timeoutMs);
    req.on("response", (res) => {
      clearTimeout(timer);
      const location = res.headers.location;
      resolve({ status: res.statusCode ?? 0, ...(location ? { location } : {}) });
      // Only the status matters: drop the body (some UIs stream) and the connection.
      res.resume();
      req.destroy();
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(err instanceof ProbeFailure ? err : new ProbeFailure(networkError(err)));
    });
    req.end();
  });

/** A published URL not requested, escaped and cut; its password hidden first (a cut could leave part of it). */
const shownUrl = (url: string) => shownValue(redactUrlPasswords(url), PUBLISHED_TEXT_MAX);

/** Probes one target; never rejects. `now`: the clock its latency is read on (milliseconds). */
export async function probeOne(target: ProbeTarget, get: HttpGet = httpGet, now: () => number = () => performance.now()): Promise<ProbeResult> {
  const expected = target.expectStatus ? target.expectStatus.join("/") : "2xx/3xx";
  let url: URL;
  try {
    if (target.url.includes(PENDING_NODE_PORT)) throw new ProbeFailure("the stack outputs hold no allocated nodePort for it (run pulumi up)");
    const pathProblem = probePathProblem(target.path);
    if (pathProblem) throw new ProbeFailure(pathProblem);
    const base = new URL(target.url);
    url = new URL(target.path, base);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new ProbeFailure(`not an http(s) URL: ${shownUrl(target.url)}`);
    // The path may only change the path: the host and port probed are the published ones.
    if (url.host !== base.host || url.protocol !== base.protocol) throw new ProbeFailure(`probe path '${target.path}' leaves ${base.host}`);
  } catch (err) {
    const reason = err instanceof ProbeFailure ? err.message : `invalid URL '${shownUrl(target.url)}'`;
    return { name: target.name, url: shownUrl(target.url), ok: false, latencyMs: 0, expected, error: reason };
  }
  const started = now();
  try {
    const { status, location } = await get(url, target.timeoutMs);
    const latencyMs = Math.round(now() - started);
    const ok = target.expectStatus ? target.expectStatus.includes(status) : status >= 200 && status < 400;
    return {
      name: target.name,
      url: url.href,
      ok,
      status,
      latencyMs,
      expected,
      ...(location ? { location } : {}),
      ...(ok ? {} : { error: `expected ${expected}, got ${status}` }),
    };
  } catch (err) {
    return { name: target.name, url: url.href, ok: false, latencyMs: Math.round(now() - started), expected, error: (err as Error).message };
  }
}

/** Probes every target, at most `concurrency` at a time; results in the targets' order. */
export async function probeAll(targets: readonly ProbeTarget[], opts: { concurrency: number; get?: HttpGet }): Promise<ProbeResult[]> {
  const results: ProbeResult[] = new Array(targets.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < targets.length; i = next++) {
      results[i] = await probeOne(targets[i] as ProbeTarget, opts.get);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency, targets.length)) }, worker));
  return results;
}

/** The probe targets of a stack: every URL of its `urls` output, with the path, statuses and timeout its contract entry declares. */
export function probeTargets(urls: Readonly<Record<string, string>>, contract: Contract | undefined, defaultTimeoutMs: number): ProbeTarget[] {
  const declared = new Map(contract?.endpoints.map((e) => [e.name, e.probe]));
  return Object.entries(urls).map(([name, url]) => {
    const probe = declared.get(name);
    return {
      name,
      url,
      path: probe?.path ?? "/",
      ...(probe?.expectStatus ? { expectStatus: probe.expectStatus } : {}),
      timeoutMs: probe?.timeoutSeconds !== undefined ? probe.timeoutSeconds * 1000 : defaultTimeoutMs,
    };
  });
}
