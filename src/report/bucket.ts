import type { HistoryRow } from '../csvlog/read.js';
import { FINDING_THRESHOLDS } from './findings.js';

/** What the samples of one hour (or a run of hours) of one GPU add up to. */
export interface Bucket {
  samples: number;
  errors: number;
  /** Utilization summed in thousandths of a percent: whole numbers, so sums of parts equal the sum of rows. */
  utilMilliSum: number;
  utilN: number;
  memMax?: number;
  memTotal?: number;
  /** Power summed in milliwatts, whole numbers for the same reason (a sidecar's hours add up exactly). */
  powerMwSum: number;
  powerN: number;
  tempMax?: number;
  /** Samples under the idle utilization while holding the idle memory (FINDING_THRESHOLDS). */
  idleHeld: number;
  /** Milliseconds of this hour inside a gap of this series. */
  missingMs: number;
}

/**
 * Every field in the literal, the optional ones undefined: a field added later goes to a property
 * array of its own, and a report keeps a bucket per GPU and hour (230,000 at 40 hosts x 8 GPUs x
 * 30 days, where those arrays were 9 MB of the 70 MB alive: a heap snapshot).
 */
export const emptyBucket = (): Bucket => ({
  samples: 0,
  errors: 0,
  utilMilliSum: 0,
  utilN: 0,
  memMax: undefined,
  memTotal: undefined,
  powerMwSum: 0,
  powerN: 0,
  tempMax: undefined,
  idleHeld: 0,
  missingMs: 0,
});

const maxOf = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));

/** `from` added into `into`. */
export function mergeBucket(into: Bucket, from: Bucket): void {
  into.samples += from.samples;
  into.errors += from.errors;
  into.utilMilliSum += from.utilMilliSum;
  into.utilN += from.utilN;
  into.memMax = maxOf(into.memMax, from.memMax);
  into.memTotal = from.memTotal ?? into.memTotal;
  into.powerMwSum += from.powerMwSum;
  into.powerN += from.powerN;
  into.tempMax = maxOf(into.tempMax, from.tempMax);
  into.idleHeld += from.idleHeld;
  into.missingMs += from.missingMs;
}

/** One row of a GPU's trail added into the bucket of its hour. */
export function addRow(bucket: Bucket, row: HistoryRow, t = FINDING_THRESHOLDS): void {
  bucket.samples++;
  if (row.status !== 'ok') {
    bucket.errors++;
    return;
  }
  if (row.utilization !== undefined) {
    bucket.utilMilliSum += Math.round(row.utilization * 1000);
    bucket.utilN++;
    if (row.utilization < t.idleMaxUtilization && (row.memoryUsedMiB ?? 0) >= t.idleMinMemoryMib) bucket.idleHeld++;
  }
  bucket.memMax = maxOf(bucket.memMax, row.memoryUsedMiB);
  if (row.memoryTotalMiB !== undefined) bucket.memTotal = row.memoryTotalMiB;
  if (row.powerW !== undefined) {
    bucket.powerMwSum += Math.round(row.powerW * 1000);
    bucket.powerN++;
  }
  bucket.tempMax = maxOf(bucket.tempMax, row.temperatureC);
}

/** Average utilization of a bucket (%), if any sample had one. */
export const avgUtilization = (b: Bucket): number | undefined => (b.utilN ? b.utilMilliSum / 1000 / b.utilN : undefined);

/** Average power of a bucket (W), if any sample had one. */
export const avgPower = (b: Bucket): number | undefined => (b.powerN ? b.powerMwSum / 1000 / b.powerN : undefined);
