/** Small statistics shared by the report and pulse, defined once so that they cannot disagree. */

/**
 * The median: the middle value, or the mean of the two middle values for an even count (the
 * conventional one; taking the upper middle biases spacings and peaks upward); undefined when empty.
 */
export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  // A typed array sorts numerically without a comparator call per pair: the report's year-long
  // memory fit takes the median of 80,000 slopes per GPU.
  const sorted = Float64Array.from(xs).sort();
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The arithmetic mean; NaN when empty. */
export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
