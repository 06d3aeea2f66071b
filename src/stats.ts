/** Small statistics shared by the report and pulse, defined once so that they cannot disagree. */

/**
 * The median: the middle value, or the mean of the two middle values for an even count (the
 * conventional one; taking the upper middle biases spacings and peaks upward); undefined when empty.
 */
export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The arithmetic mean; NaN when empty. */
export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
