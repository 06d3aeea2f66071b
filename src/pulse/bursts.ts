import type { SeriesSample } from '../sources/nvidia-smi/series-csv.js';
import { median } from '../stats.js';

/** Runs of samples above near-zero utilization, separated by near-zero gaps: how a job that waits on its input looks. */
export interface Bursts {
  /** Runs that begin in the recording (a run already going at the first sample counts). */
  count: number;
  /** Median time from one run's start to the next (ms); absent under two runs. */
  spacingMs?: number;
  /** Median of each run's highest utilization (%); absent without runs. */
  peakMedian?: number;
}

/**
 * Finds the bursts in one GPU's samples. nvidia-smi refreshes utilization.gpu about every 200 ms on
 * an H200 (at -lms 100 each value shows twice), and a burst shorter than that reads as a fraction of
 * its height, so a burst is any run above `nearZero`, not above the "busy" line.
 */
export function findBursts(samples: readonly SeriesSample[], nearZero: number): Bursts {
  const starts: number[] = [];
  const peaks: number[] = [];
  samples.forEach((s, i) => {
    if (s.utilization <= nearZero) return;
    if (i === 0 || samples[i - 1]!.utilization <= nearZero) {
      starts.push(s.time);
      peaks.push(s.utilization);
    } else peaks[peaks.length - 1] = Math.max(peaks[peaks.length - 1]!, s.utilization);
  });
  const spacingMs = median(starts.slice(1).map((t, i) => t - starts[i]!));
  const peakMedian = median(peaks);
  return { count: starts.length, ...(spacingMs !== undefined ? { spacingMs } : {}), ...(peakMedian !== undefined ? { peakMedian } : {}) };
}
