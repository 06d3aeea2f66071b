import { HOUR } from '../aggregate.js';
import { avgPower, avgUtilization, emptyBucket, mergeBucket, type Bucket } from '../bucket.js';

/** The charts' time axis: `n` buckets of `step` ms from `x0` (a local hour start). */
export interface Grid {
  x0: number;
  step: number;
  n: number;
}

/** At most this many buckets per chart: a year of hours is drawn in 12-hour buckets. */
const MAX_BUCKETS = 800;

/** A grid over the hours from `first` to `last` (both local hour starts), in 1 to 168-hour buckets. */
export function gridFor(first: number, last: number): Grid {
  const hours = Math.round((last - first) / HOUR) + 1;
  const stepHours = [1, 2, 3, 6, 12, 24, 48, 168].find((s) => hours / s <= MAX_BUCKETS) ?? 168;
  return { x0: first, step: stepHours * HOUR, n: Math.ceil(hours / stepHours) };
}

const indexOf = (grid: Grid, time: number) => Math.floor((time - grid.x0) / grid.step);

/** Hourly buckets merged onto the grid; undefined where no row fell. */
export function onGrid(hourly: ReadonlyMap<number, Bucket>, grid: Grid): (Bucket | undefined)[] {
  const out: (Bucket | undefined)[] = Array.from({ length: grid.n }, () => undefined);
  for (const [hour, bucket] of hourly) {
    const i = indexOf(grid, hour);
    if (i < 0 || i >= grid.n) continue;
    mergeBucket((out[i] ??= emptyBucket()), bucket);
  }
  return out;
}

/** Per grid bucket, the share of it in a gap: a bucket without rows between the first and last is all gap. */
export function gapShares(buckets: readonly ({ missingMs: number; samples: number } | undefined)[], grid: Grid): number[] {
  const first = buckets.findIndex((b) => b !== undefined);
  if (first === -1) return buckets.map(() => 0);
  const last = buckets.length - 1 - [...buckets].reverse().findIndex((b) => b !== undefined);
  return buckets.map((b, i) => (i < first || i > last ? 0 : b === undefined || b.samples === 0 ? 1 : Math.min(1, b.missingMs / grid.step)));
}

/** Per grid bucket, the share of its samples that failed. */
export const errorShares = (buckets: readonly (Bucket | undefined)[]): number[] =>
  buckets.map((b) => (b?.samples ? b.errors / b.samples : 0));

/** The value a chart plots per bucket, or undefined (no good sample: the line breaks). */
export const values = (buckets: readonly (Bucket | undefined)[], value: (b: Bucket) => number | undefined): (number | undefined)[] =>
  buckets.map((b) => (b === undefined ? undefined : value(b)));

export const utilization = (b: Bucket) => avgUtilization(b);
export const memoryGiB = (b: Bucket) => (b.memMax === undefined ? undefined : b.memMax / 1024);
export const power = (b: Bucket) => avgPower(b);
