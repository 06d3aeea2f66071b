import { hourlyPoints, HOUR, type SeriesStats } from './aggregate.js';
import { FINDING_THRESHOLDS, type Finding } from './findings.js';
import { median } from '../stats.js';

/**
 * Theil-Sen: the median of all pairwise slopes, and the median intercept, robust to spikes; and R²
 * against the line for reference (the trend's consistency is kendallTau's, asked first).
 */
function robustLine(points: readonly { x: number; y: number }[]): { slope: number; intercept: number; r2: number } {
  const slopes: number[] = [];
  for (let i = 0; i < points.length; i++) {
    for (let j = i + 1; j < points.length; j++) {
      const dx = points[j]!.x - points[i]!.x;
      if (dx !== 0) slopes.push((points[j]!.y - points[i]!.y) / dx);
    }
  }
  const slope = median(slopes) ?? 0;
  const intercept = median(points.map((p) => p.y - slope * p.x)) ?? Number.NaN;
  const meanY = points.reduce((a, p) => a + p.y, 0) / points.length;
  const total = points.reduce((a, p) => a + (p.y - meanY) ** 2, 0);
  const residual = points.reduce((a, p) => a + (p.y - (intercept + slope * p.x)) ** 2, 0);
  return { slope, intercept, r2: total === 0 ? 0 : 1 - residual / total };
}

/** Kendall's tau: the share of pairs of points rising minus the share falling; 0 for fewer than two. */
function kendallTau(points: readonly { x: number; y: number }[]): number {
  let concordance = 0;
  for (let i = 0; i < points.length; i++)
    for (let j = i + 1; j < points.length; j++)
      concordance += Math.sign(points[j]!.x - points[i]!.x) * Math.sign(points[j]!.y - points[i]!.y);
  const pairs = (points.length * (points.length - 1)) / 2;
  return pairs ? concordance / pairs : 0;
}

/** At most this many points go into the pairwise fit: its pairs grow with the square (a year of hours is 38 M). */
const MAX_FIT_POINTS = 400;

/** Consecutive points binned to at most MAX_FIT_POINTS: each bin's mean time and median value. */
export function binned(points: readonly { x: number; y: number }[], max = MAX_FIT_POINTS): { x: number; y: number }[] {
  if (points.length <= max) return [...points];
  const size = Math.ceil(points.length / max);
  const bins: { x: number; y: number }[] = [];
  for (let i = 0; i < points.length; i += size) {
    const bin = points.slice(i, i + size);
    bins.push({ x: bin.reduce((a, p) => a + p.x, 0) / bin.length, y: median(bin.map((p) => p.y))! });
  }
  return bins;
}

/** Steady growth of memory used: the leak that shows as 6000 MiB on Monday and 10200 MiB on Thursday. */
export function memoryGrowth(stats: SeriesStats, t = FINDING_THRESHOLDS): Finding | undefined {
  const points = hourlyPoints(stats).flatMap((p) => (p.memoryMiB === undefined ? [] : [{ x: p.hour / HOUR, y: p.memoryMiB }]));
  if (points.length < t.growthMinHours) return undefined;
  const spanHours = points[points.length - 1]!.x - points[0]!.x;
  if (spanHours < t.growthMinHours) return undefined;
  const fitted = binned(points);
  // Most GPUs' memory holds steady (tau near 0): the trend's consistency, one pass over the pairs,
  // settles those before the fit sorts out a median of every pair's slope.
  const tau = kendallTau(fitted);
  if (tau < t.growthMinTau) return undefined;
  const { slope, intercept, r2 } = robustLine(fitted);
  const mibPerDay = slope * 24;
  const growth = slope * spanHours;
  if (mibPerDay < t.growthMinMibPerDay || growth < t.growthMinTotalMib || tau < t.growthMinTau) return undefined;
  const start = intercept + slope * points[0]!.x;
  const end = intercept + slope * points[points.length - 1]!.x;
  return {
    kind: 'memory_growth',
    host: stats.host,
    task_id: stats.task,
    gpu_id: stats.gpu,
    gpu_uuid: stats.uuid,
    summary: `memory used grows ${Math.round(mibPerDay)} MiB a day, ${tau >= 0.8 ? 'steadily' : 'with ups and downs'} (${Math.round(start)} to ${Math.round(end)} MiB over ${Math.round(spanHours)} h): a leak?`,
    mib_per_day: Math.round(mibPerDay),
    fit_tau: Math.round(tau * 1000) / 1000,
    fit_r2: Math.round(r2 * 1000) / 1000,
    hours: Math.round(spanHours),
    from_mib: Math.round(start),
    to_mib: Math.round(end),
  };
}
