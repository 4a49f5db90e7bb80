// Small statistics helpers shared by the benchmark parts.

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * Least-squares growth exponent over every size above the smallest: the slope of
 * log(y − y0) against log(n − n0). Using all sizes, not two, keeps one noisy point from
 * deciding the verdict.
 */
export function fittedExponent(points: readonly { n: number; y: number }[]): number {
  const [base, ...rest] = points;
  if (!base) return Number.NaN;
  const xy = rest.filter((p) => p.y - base.y > 0).map((p) => [Math.log(p.n - base.n), Math.log(p.y - base.y)] as const);
  if (xy.length < 2) return Number.NaN;
  const mx = xy.reduce((a, [x]) => a + x, 0) / xy.length;
  const my = xy.reduce((a, [, y]) => a + y, 0) / xy.length;
  const num = xy.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = xy.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return num / den;
}

/** Cost of one more entry between two sizes. */
export const marginal = (a: { n: number; y: number }, b: { n: number; y: number }) => (b.y - a.y) / (b.n - a.n);

export const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;
export const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);
