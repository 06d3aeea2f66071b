import type { HistoryRow } from './history.js';

export type Period = 'hour' | 'day';

/** One row of the report: a period of one GPU of one host and task. */
export interface ReportRow {
  period: number;
  host: string;
  task_id: string;
  gpu_id: string;
  gpu_uuid: string;
  samples: number;
  error_samples: number;
  avg_utilization_percent?: number;
  max_memory_used_mib?: number;
  avg_power_draw_w?: number;
  max_temperature_c?: number;
}

interface Bucket {
  samples: number;
  errors: number;
  utilSum: number;
  utilN: number;
  memMax?: number;
  memTotal?: number;
  powerSum: number;
  powerN: number;
  tempMax?: number;
}

/** Everything the findings need about one GPU of one host and task, in bounded memory. */
export interface SeriesStats {
  host: string;
  task: string;
  gpu: string;
  uuid: string;
  hourly: Map<number, Bucket>;
  errorsByReason: Map<string, number>;
  /** First deltas between samples, to learn the collection interval; then gaps measured against it. */
  firstDeltas: number[];
  minDelta: number;
  lastTime?: number;
  gaps: { from: number; to: number }[];
  totalDeltas: number;
}

const HOUR = 3_600_000;

/** Start of the local hour or day holding `time` (the reporting machine's zone). */
export function periodStart(time: number, period: Period): number {
  const d = new Date(time);
  if (period === 'day') return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  d.setMinutes(0, 0, 0);
  return d.getTime();
}

const add = (bucket: Bucket, row: HistoryRow) => {
  bucket.samples++;
  if (row.status !== 'ok') {
    bucket.errors++;
    return;
  }
  if (row.utilization !== undefined) {
    bucket.utilSum += row.utilization;
    bucket.utilN++;
  }
  if (row.memoryUsedMiB !== undefined) bucket.memMax = Math.max(bucket.memMax ?? -Infinity, row.memoryUsedMiB);
  if (row.memoryTotalMiB !== undefined) bucket.memTotal = row.memoryTotalMiB;
  if (row.powerW !== undefined) {
    bucket.powerSum += row.powerW;
    bucket.powerN++;
  }
  if (row.temperatureC !== undefined) bucket.tempMax = Math.max(bucket.tempMax ?? -Infinity, row.temperatureC);
};

const emptyBucket = (): Bucket => ({ samples: 0, errors: 0, utilSum: 0, utilN: 0, powerSum: 0, powerN: 0 });

/** Rows -> report rows per period and per-GPU statistics, in one pass. */
export class Aggregator {
  readonly periods = new Map<string, { key: Omit<ReportRow, 'samples' | 'error_samples'>; bucket: Bucket }>();
  readonly series = new Map<string, SeriesStats>();

  constructor(private readonly period: Period) {}

  add(row: HistoryRow): void {
    const id = `${row.host}\u0000${row.task}\u0000${row.gpu}\u0000${row.uuid}`;
    const start = periodStart(row.time, this.period);
    const periodKey = `${start}\u0000${id}`;
    let entry = this.periods.get(periodKey);
    if (!entry) {
      entry = { key: { period: start, host: row.host, task_id: row.task, gpu_id: row.gpu, gpu_uuid: row.uuid }, bucket: emptyBucket() };
      this.periods.set(periodKey, entry);
    }
    add(entry.bucket, row);

    let stats = this.series.get(id);
    if (!stats) {
      stats = { host: row.host, task: row.task, gpu: row.gpu, uuid: row.uuid, hourly: new Map(), errorsByReason: new Map(), firstDeltas: [], minDelta: Infinity, gaps: [], totalDeltas: 0 };
      this.series.set(id, stats);
    }
    const hour = periodStart(row.time, 'hour');
    let bucket = stats.hourly.get(hour);
    if (!bucket) stats.hourly.set(hour, (bucket = emptyBucket()));
    add(bucket, row);
    if (row.status !== 'ok') stats.errorsByReason.set(row.status, (stats.errorsByReason.get(row.status) ?? 0) + 1);
    if (stats.lastTime !== undefined && row.time > stats.lastTime) {
      const delta = row.time - stats.lastTime;
      stats.totalDeltas++;
      if (stats.firstDeltas.length < 64) stats.firstDeltas.push(delta);
      stats.minDelta = Math.min(stats.minDelta, delta);
      // Candidate gaps are kept if much longer than the shortest interval seen so far; the
      // findings judge them against the learned interval.
      if (delta > 2 * stats.minDelta) stats.gaps.push({ from: stats.lastTime, to: row.time });
    }
    if (stats.lastTime === undefined || row.time > stats.lastTime) stats.lastTime = row.time;
  }

  /** Report rows, by period, host, task and GPU. */
  rows(): ReportRow[] {
    const round = (x: number) => Math.round(x * 100) / 100;
    return [...this.periods.values()]
      .map(({ key, bucket }) => ({
        ...key,
        samples: bucket.samples,
        error_samples: bucket.errors,
        ...(bucket.utilN ? { avg_utilization_percent: round(bucket.utilSum / bucket.utilN) } : {}),
        ...(bucket.memMax !== undefined ? { max_memory_used_mib: bucket.memMax } : {}),
        ...(bucket.powerN ? { avg_power_draw_w: round(bucket.powerSum / bucket.powerN) } : {}),
        ...(bucket.tempMax !== undefined ? { max_temperature_c: bucket.tempMax } : {}),
      }))
      .sort((a, b) => a.period - b.period || a.host.localeCompare(b.host) || a.task_id.localeCompare(b.task_id) || Number(a.gpu_id) - Number(b.gpu_id));
  }
}

/** Hourly points of one series, oldest first: average utilization and peak memory. */
export function hourlyPoints(stats: SeriesStats): { hour: number; utilization?: number; memoryMiB?: number; memoryTotalMiB?: number; samples: number }[] {
  return [...stats.hourly.entries()]
    .sort(([a], [b]) => a - b)
    .map(([hour, b]) => ({
      hour,
      samples: b.samples,
      ...(b.utilN ? { utilization: b.utilSum / b.utilN } : {}),
      ...(b.memMax !== undefined ? { memoryMiB: b.memMax } : {}),
      ...(b.memTotal !== undefined ? { memoryTotalMiB: b.memTotal } : {}),
    }));
}

export { HOUR };
