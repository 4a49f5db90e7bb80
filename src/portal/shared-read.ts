// One cluster read shared by every page load: a NodePort anyone can GET must not turn each load into a full LIST (10 MB on a 5,000-Service cluster). Loads
// during a read join it; a finished read (or its failure) is reused until `intervalMs` after it started: at most one set of LISTs per interval.

export class SharedRead<T> {
  /** Reads started, for tests and the benchmark. */
  reads = 0;
  private current: { startedAt: number; settled: boolean; promise: Promise<{ value: T; at: Date }> } | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly intervalMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The round's value, and when its read finished. */
  get() {
    const now = this.clock();
    const round = this.current;
    if (round && (!round.settled || now - round.startedAt < this.intervalMs)) return round.promise;
    this.reads++;
    const next: NonNullable<typeof round> = {
      startedAt: now,
      settled: false,
      // A failure is shared too: an unreachable API server is not hammered by every reload.
      promise: this.read()
        .then((value) => ({ value, at: new Date(this.clock()) }))
        .finally(() => {
          next.settled = true;
        }),
    };
    // Joiners attach their own handlers; this one only keeps an unobserved failure quiet.
    next.promise.catch(() => undefined);
    this.current = next;
    return next.promise;
  }
}
