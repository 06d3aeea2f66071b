import type { HostStats, SeriesStats } from './aggregate.js';
import { FINDING_THRESHOLDS, type Finding } from './findings.js';
import type { GapTotals } from './timeline.js';

/** 10815 -> "3 h 0 min", 750 -> "12 min 30 s", 45 -> "45 s": a gap as people say it. */
export function gapDuration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h} h ${m} min`;
  return m > 0 ? `${m} min ${s} s` : `${s} s`;
}

function gapFinding(
  where: Pick<Finding, 'host' | 'task_id' | 'gpu_id' | 'gpu_uuid'>,
  who: string,
  totals: GapTotals,
  interval: number,
): Finding {
  const longest = totals.longest!;
  const seconds = Math.round((longest.to - longest.from) / 1000);
  return {
    kind: 'collection_gaps',
    ...where,
    summary: `${who} ${totals.missing} samples in ${totals.gaps} gap(s), the longest ${gapDuration(seconds)} (collected every ${Math.round(interval / 1000)} s)`,
    missing_samples: totals.missing,
    gaps: totals.gaps,
    interval_seconds: Math.round(interval / 100) / 10,
    longest_gap_seconds: seconds,
    longest_gap_from: new Date(longest.from).toISOString(),
    longest_gap_to: new Date(longest.to).toISOString(),
  };
}

/** Stretches without any row from a host's collector: every GPU missed them, reported once per host and task. */
export function hostGaps(host: HostStats, t = FINDING_THRESHOLDS): Finding | undefined {
  const { totals, interval, learnedFrom } = host.timeline;
  if (interval === undefined || learnedFrom < t.gapMinSpacings || totals.missing < t.gapMinMissing) return undefined;
  return gapFinding({ host: host.host, task_id: host.task, gpu_id: '', gpu_uuid: '' }, 'every GPU missed', totals, interval);
}

/** Stretches one GPU missed while its host's collector wrote rows for the others. */
export function collectionGaps(stats: SeriesStats, t = FINDING_THRESHOLDS): Finding | undefined {
  const { interval, learnedFrom } = stats.timeline;
  if (interval === undefined || learnedFrom < t.gapMinSpacings || stats.ownGaps.missing < t.gapMinMissing) return undefined;
  return gapFinding(
    { host: stats.host, task_id: stats.task, gpu_id: stats.gpu, gpu_uuid: stats.uuid },
    'this GPU alone missed',
    stats.ownGaps,
    interval,
  );
}
