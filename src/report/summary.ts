import { localIsoTime } from '../csvlog/columns.js';
import { compareGpuIds, HOUR, type Aggregator, type SeriesStats } from './aggregate.js';

/** The fleet questions of one host and task (or one GPU of it): how much was used, idle, drawn, lost. */
export interface SummaryRow {
  host: string;
  task_id: string;
  gpu_id?: string;
  gpu_uuid?: string;
  gpus: number;
  first_sample: string;
  last_sample: string;
  samples: number;
  error_samples: number;
  /** Good samples x the collection interval: the time the GPUs were seen. */
  gpu_hours?: number;
  /** Average utilization over the good samples: the share of that time a kernel ran. */
  busy_percent?: number;
  /** Good samples under the idle utilization while the idle memory was held, as time. */
  idle_with_memory_hours?: number;
  /** Power x time over the good samples with a power reading; gaps and failed samples add nothing. */
  energy_kwh?: number;
  /** Samples lost in gaps, as GPU time. */
  missed_gpu_hours?: number;
  peak_memory_used_mib?: number;
}

/** The sums of one or more GPUs; times in ms, weighted by each GPU's own interval. */
interface Sums {
  gpus: Set<string>;
  first: number;
  last: number;
  samples: number;
  errors: number;
  intervalKnown: boolean;
  okMs: number;
  utilMs: number;
  utilWeightMs: number;
  idleMs: number;
  energyWms: number;
  missedMs: number;
  peak?: number;
}

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

function sumsOf(aggregator: Aggregator, stats: SeriesStats): Sums {
  const interval = aggregator.intervalOf(stats) ?? 0;
  const sums: Sums = {
    gpus: new Set(stats.gpu === '' ? [] : [stats.uuid || stats.gpu]),
    first: stats.timeline.firstTime ?? Number.NaN,
    last: stats.timeline.lastTime ?? Number.NaN,
    samples: 0,
    errors: 0,
    intervalKnown: interval > 0,
    okMs: 0,
    utilMs: 0,
    utilWeightMs: 0,
    idleMs: 0,
    energyWms: 0,
    missedMs: stats.timeline.totals.missing * interval,
  };
  for (const b of stats.hourly.values()) {
    sums.samples += b.samples;
    sums.errors += b.errors;
    sums.okMs += (b.samples - b.errors) * interval;
    sums.utilMs += (b.utilMilliSum / 1000) * interval;
    sums.utilWeightMs += b.utilN * interval;
    sums.idleMs += b.idleHeld * interval;
    sums.energyWms += (b.powerMwSum / 1000) * interval;
    if (b.memMax !== undefined) sums.peak = Math.max(sums.peak ?? -Infinity, b.memMax);
  }
  return sums;
}

function add(a: Sums, b: Sums): Sums {
  return {
    gpus: new Set([...a.gpus, ...b.gpus]),
    first: Math.min(a.first, b.first),
    last: Math.max(a.last, b.last),
    samples: a.samples + b.samples,
    errors: a.errors + b.errors,
    intervalKnown: a.intervalKnown || b.intervalKnown,
    okMs: a.okMs + b.okMs,
    utilMs: a.utilMs + b.utilMs,
    utilWeightMs: a.utilWeightMs + b.utilWeightMs,
    idleMs: a.idleMs + b.idleMs,
    energyWms: a.energyWms + b.energyWms,
    missedMs: a.missedMs + b.missedMs,
    peak: a.peak === undefined ? b.peak : b.peak === undefined ? a.peak : Math.max(a.peak, b.peak),
  };
}

function row(where: Pick<SummaryRow, 'host' | 'task_id' | 'gpu_id' | 'gpu_uuid'>, s: Sums): SummaryRow {
  return {
    ...where,
    gpus: s.gpus.size,
    first_sample: localIsoTime(new Date(s.first)),
    last_sample: localIsoTime(new Date(s.last)),
    samples: s.samples,
    error_samples: s.errors,
    ...(s.intervalKnown
      ? {
          gpu_hours: round(s.okMs / HOUR, 2),
          ...(s.utilWeightMs > 0 ? { busy_percent: round(s.utilMs / s.utilWeightMs, 1) } : {}),
          idle_with_memory_hours: round(s.idleMs / HOUR, 2),
          energy_kwh: round(s.energyWms / HOUR / 1000, 3),
          missed_gpu_hours: round(s.missedMs / HOUR, 2),
        }
      : {}),
    ...(s.peak !== undefined ? { peak_memory_used_mib: s.peak } : {}),
  };
}

const order = (a: SummaryRow, b: SummaryRow) =>
  a.host.localeCompare(b.host) ||
  a.task_id.localeCompare(b.task_id) ||
  // A row without a GPU (a failure before any GPU was known) first.
  (a.gpu_id === undefined ? 0 : compareGpuIds(a.gpu_id || '-1', (b.gpu_id ?? '') || '-1'));

/** One row per GPU of each host and task. */
export function summaryByGpu(aggregator: Aggregator): SummaryRow[] {
  return [...aggregator.series.values()]
    .map((stats) => row({ host: stats.host, task_id: stats.task, gpu_id: stats.gpu, gpu_uuid: stats.uuid }, sumsOf(aggregator, stats)))
    .sort(order);
}

/** One row per group of GPUs, summed (busy share weighted by time, peak memory the highest GPU's). */
function summaryBy(aggregator: Aggregator, byTask: boolean): SummaryRow[] {
  const groups = new Map<string, { host: string; task: string; sums: Sums }>();
  for (const stats of aggregator.series.values()) {
    const key = byTask ? `${stats.host}\u0000${stats.task}` : stats.host;
    const sums = sumsOf(aggregator, stats);
    const group = groups.get(key);
    groups.set(key, { host: stats.host, task: byTask ? stats.task : '', sums: group ? add(group.sums, sums) : sums });
  }
  return [...groups.values()].map((g) => row({ host: g.host, task_id: g.task }, g.sums)).sort(order);
}

/** One row per host and task, its GPUs summed. */
export const summaryByTask = (aggregator: Aggregator): SummaryRow[] => summaryBy(aggregator, true);

/**
 * One row per host, its tasks summed (a fleet's view: `--by host`); task_id is empty. A GPU seen
 * under two tasks counts once in `gpus`; its hours add up.
 */
export const summaryByHost = (aggregator: Aggregator): SummaryRow[] => summaryBy(aggregator, false);

export const SUMMARY_COLUMNS = [
  'host',
  'task_id',
  'gpu_id',
  'gpu_uuid',
  'gpus',
  'first_sample',
  'last_sample',
  'samples',
  'error_samples',
  'gpu_hours',
  'busy_percent',
  'idle_with_memory_hours',
  'energy_kwh',
  'missed_gpu_hours',
  'peak_memory_used_mib',
] as const;
