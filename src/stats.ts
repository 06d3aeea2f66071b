/** Small statistics shared by the report and pulse, defined once so that they cannot disagree. */

/**
 * The median: the middle value, or the mean of the two middle values for an even count (the
 * conventional one; taking the upper middle biases spacings and peaks upward); undefined when empty.
 */
export function median(xs: readonly number[]): number | undefined {
  if (xs.length === 0) return undefined;
  const values = Float64Array.from(xs);
  const mid = Math.floor(values.length / 2);
  // Selection needs every pair ordered, and NaN is not: such input is sorted instead.
  if (values.some(Number.isNaN)) {
    values.sort();
    return values.length % 2 ? values[mid]! : (values[mid - 1]! + values[mid]!) / 2;
  }
  // Selected in place, not sorted: the report takes the median of 80,000 slopes per GPU for its
  // memory fit, and a fleet has hundreds of GPUs.
  selectNth(values, mid);
  if (values.length % 2) return values[mid]!;
  // Everything before mid is at most values[mid] now: the lower middle value is the largest of them.
  let lower = values[0]!;
  for (let i = 1; i < mid; i++) if (values[i]! > lower) lower = values[i]!;
  return (lower + values[mid]!) / 2;
}

/**
 * Reorders `values` so that values[k] is what it would be sorted, with nothing larger before it
 * and nothing smaller after (Hoare's selection, the median of three as pivot: expected linear time).
 */
function selectNth(values: Float64Array, k: number): void {
  let lo = 0;
  let hi = values.length - 1;
  while (lo < hi) {
    const a = values[lo]!;
    const b = values[(lo + hi) >> 1]!;
    const c = values[hi]!;
    const pivot = Math.max(Math.min(a, b), Math.min(Math.max(a, b), c));
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const swap = values[i]!;
        values[i++] = values[j]!;
        values[j--] = swap;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
}

/** The arithmetic mean; NaN when empty. */
export const mean = (xs: readonly number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);
