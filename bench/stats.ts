// Small statistics helpers shared by the benchmark parts.

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/**
 * Growth exponent k of y - y0 = c·(n - n0)^k between two sizes (1 = linear, 2 = quadratic).
 * The smallest size (n0, y0) is subtracted first: a fixed start-up cost would otherwise make
 * any curve look sub-linear.
 */
export function growthExponent(base: { n: number; y: number }, a: { n: number; y: number }, b: { n: number; y: number }): number {
  const ya = a.y - base.y;
  const yb = b.y - base.y;
  if (ya <= 0 || yb <= 0) return Number.NaN;
  return Math.log(yb / ya) / Math.log((b.n - base.n) / (a.n - base.n));
}

/** Cost of one more entry between two sizes. */
export const marginal = (a: { n: number; y: number }, b: { n: number; y: number }) => (b.y - a.y) / (b.n - a.n);

export const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;
export const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);
