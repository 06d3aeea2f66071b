import type { SeriesStats } from './aggregate.js';
import { FINDING_THRESHOLDS, type Finding } from './findings.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** Missing samples: stretches much longer than the collection interval learned from the data. */
export function collectionGaps(stats: SeriesStats, t = FINDING_THRESHOLDS): Finding | undefined {
  if (stats.firstDeltas.length < 3) return undefined;
  const interval = median(stats.firstDeltas);
  const gaps = stats.gaps.filter((g) => g.to - g.from > t.gapIntervals * interval);
  const missing = gaps.reduce((a, g) => a + Math.round((g.to - g.from) / interval) - 1, 0);
  if (missing < t.gapMinMissing) return undefined;
  const longest = gaps.reduce((a, b) => (b.to - b.from > a.to - a.from ? b : a));
  return {
    kind: 'collection_gaps',
    host: stats.host,
    task_id: stats.task,
    gpu_id: stats.gpu,
    gpu_uuid: stats.uuid,
    summary: `${missing} samples missing in ${gaps.length} gap(s), the longest ${Math.round((longest.to - longest.from) / 1000)} s (collected every ${Math.round(interval / 1000)} s)`,
    missing_samples: missing,
    gaps: gaps.length,
    interval_seconds: Math.round(interval / 100) / 10,
    longest_gap_seconds: Math.round((longest.to - longest.from) / 1000),
    longest_gap_from: new Date(longest.from).toISOString(),
    longest_gap_to: new Date(longest.to).toISOString(),
  };
}
