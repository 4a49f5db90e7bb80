// Whether each published UI answers, from the portal's side: `exposure probe`'s probe (src/adapters/http-probe.ts), in rounds that page loads share. One
// round at most is in flight; answers are reused for `cacheMs`; a load waits only for a URL never answered (first load, a port that changed).
import { type HttpGet, httpGet, type ProbeResult, type ProbeTarget, probeAll, probeTargets } from "../adapters/http-probe";
import type { Contract } from "../core/contract/schema";
import type { Reachability } from "../core/portal/view";

export interface ReachabilityOptions {
  /** Off: no request leaves the portal except to the API server. */
  enabled: boolean;
  cacheMs: number;
  /** Per-URL timeout when the contract declares none (default 3 s); a contract's own is capped at 10 s. */
  timeoutMs: number;
  concurrency: number;
  get?: HttpGet;
}

export const DEFAULT_REACHABILITY: ReachabilityOptions = { enabled: true, cacheMs: 15_000, timeoutMs: 3_000, concurrency: 8 };
const MAX_TIMEOUT_MS = 10_000;

const keyOf = (t: ProbeTarget) => `${t.url} ${t.path} ${t.expectStatus?.join(",") ?? ""}`;

export function toReachability(r: ProbeResult, checkedAt: Date): Reachability {
  return {
    ok: r.ok,
    status: r.status ?? null,
    latencyMs: r.latencyMs,
    error: r.error ?? null,
    checkedAt: checkedAt.toISOString(),
    url: r.url,
    expected: r.expected,
    ...(r.url.startsWith("https:") ? { tlsVerified: false as const } : {}),
    ...(r.location ? { location: r.location } : {}),
  };
}

export class ReachabilityCache {
  /** Probe rounds run, for tests and the benchmark. */
  rounds = 0;
  private readonly known = new Map<string, { key: string; at: number; reachability: Reachability }>();
  private inFlight: Promise<void> | undefined;

  constructor(
    readonly opts: ReachabilityOptions,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The probe target of each published URL, as `exposure probe` builds it, within the portal's longest wait. */
  targets(urls: ReadonlyMap<string, string>, contract: Contract): ProbeTarget[] {
    return probeTargets(Object.fromEntries(urls), contract, this.opts.timeoutMs).map((t) => ({ ...t, timeoutMs: Math.min(t.timeoutMs, MAX_TIMEOUT_MS) }));
  }

  /** The answers for these targets: fresh ones, or stale ones while a round refreshes them. */
  async answers(targets: readonly ProbeTarget[], opts: { wait?: boolean } = {}): Promise<Map<string, Reachability>> {
    if (!this.opts.enabled || targets.length === 0) return new Map();
    const answered = (t: ProbeTarget) => this.known.get(t.name)?.key === keyOf(t);
    const fresh = (t: ProbeTarget) => answered(t) && this.clock() - (this.known.get(t.name)?.at ?? 0) < this.opts.cacheMs;
    if (!targets.every(fresh)) this.startRound(targets);
    // Wait only for URLs never probed; a round started for older URLs is followed by one for these.
    for (let i = 0; i < 2 && opts.wait !== false && !targets.every(answered) && this.inFlight; i++) {
      await this.inFlight;
      if (!targets.every(answered)) this.startRound(targets);
    }
    return new Map(targets.filter(answered).map((t) => [t.name, this.known.get(t.name)?.reachability as Reachability]));
  }

  private startRound(targets: readonly ProbeTarget[]) {
    if (this.inFlight) return;
    this.rounds++;
    const names = new Set(targets.map((t) => t.name));
    this.inFlight = probeAll(targets, { concurrency: this.opts.concurrency, get: this.opts.get ?? httpGet })
      .then((results) => {
        const at = this.clock();
        for (const [i, t] of targets.entries())
          this.known.set(t.name, { key: keyOf(t), at, reachability: toReachability(results[i] as ProbeResult, new Date(at)) });
        // Entries no longer published are forgotten: memory stays bounded by the contract.
        for (const name of this.known.keys()) if (!names.has(name)) this.known.delete(name);
      })
      .catch(() => undefined)
      .finally(() => {
        this.inFlight = undefined;
      });
  }
}
