import type { Collection, GpuSample } from '../collection.js';

// The daemon mode's rules that are plain arithmetic on what it saw (src/collect/daemon-loop.ts applies them).

/** Restart delays after the stream breaks: from one interval (at least 1 s), doubling up to a minute. */
export const backoffMs = (intervalMs: number, failures: number): number =>
  Math.min(60_000, Math.max(1000, intervalMs) * 2 ** Math.max(0, failures - 1));

/**
 * What one sample of the daemon mode cost, in seconds: from the moment the source took it (its
 * earliest row's takenAt: nvidia-smi's query start) to the collection, so the query and our own
 * work; without takenAt, our own work from the batch's first row.
 */
export function sampleSeconds(batch: { samples: readonly GpuSample[]; startedAt: number }, now: number): number {
  const taken = batch.samples.flatMap((sample) => (sample.takenAt === undefined ? [] : [sample.takenAt]));
  const from = taken.length > 0 ? Math.min(...taken) : batch.startedAt;
  return Math.max(0, now - from) / 1000;
}

/** Whether a collection names a GPU that did not answer (nvidia_gpu_up 0): while others did, or every GPU the last good run knew. */
export const hasLostGpu = (collection: Collection): boolean => collection.down.some((gpu) => gpu.reason === 'gpu_lost');
