// One cluster read shared by every page load: a NodePort anyone can GET must not turn each load into a full LIST (10 MB on a 5,000-Service cluster). Loads
// during a read join it; a finished read (or its failure) is reused until `intervalMs` after it started: at most one set of LISTs per interval.

export interface SharedValue<T> {
  value: T;
  /** When the read finished. */
  at: Date;
}

interface Round<T> {
  startedAt: number;
  settled: boolean;
  promise: Promise<SharedValue<T>>;
}

export class SharedRead<T> {
  /** Reads started, for tests and the benchmark. */
  reads = 0;
  private current: Round<T> | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly intervalMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  get(): Promise<SharedValue<T>> {
    const now = this.clock();
    const round = this.current;
    if (round && (!round.settled || now - round.startedAt < this.intervalMs)) return round.promise;
    this.reads++;
    const next: Round<T> = {
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
