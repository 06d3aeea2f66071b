import type { HistoryRow } from '../csvlog/read.js';
import { addRow, avgPower, avgUtilization, emptyBucket, mergeBucket, type Bucket } from './bucket.js';
import { countGap, emptyTotals, Timeline, type Gap, type GapTotals } from './timeline.js';

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

/** Everything the findings, summary and charts need about one GPU of one host and task, per hour. */
export interface SeriesStats {
  host: string;
  task: string;
  gpu: string;
  uuid: string;
  hourly: Map<number, Bucket>;
  errorsByReason: Map<string, number>;
  /** Tagged true when the host's collector wrote rows (for other GPUs) during the gap. */
  timeline: Timeline<boolean>;
  /** The gaps of this GPU alone: its host's collector ran meanwhile. */
  ownGaps: GapTotals;
}

/** One host's collector for one task: when it wrote any row at all, per hour. */
export interface HostStats {
  host: string;
  task: string;
  timeline: Timeline<undefined>;
  hourly: Map<number, { samples: number; missingMs: number }>;
}

export const HOUR = 3_600_000;

/** Start of the local hour or day holding `time` (the reporting machine's zone). */
export function periodStart(time: number, period: Period): number {
  const d = new Date(time);
  if (period === 'day') return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  // Back from `time` by the minutes into its local hour, not setMinutes(0): in the hour a fall-back
  // repeats (01:00-02:00 twice), setMinutes resolves 01:00 to the first of the two, so the second
  // hour had no start of its own, and a loop stepping hour by hour from it never moved on.
  return time - (d.getMinutes() * 60_000 + d.getSeconds() * 1000 + d.getMilliseconds());
}

/**
 * The unsampled part of a gap inside each local hour, added to the hours that have a bucket. The
 * sample before the gap stands for one interval after it, so the gap proper starts there.
 */
function spreadGap(hourly: Map<number, { missingMs: number }>, gap: Gap, interval: number): void {
  const from = gap.from + interval;
  for (let hour = periodStart(from, 'hour'); hour < gap.to; hour = periodStart(hour + HOUR, 'hour')) {
    const bucket = hourly.get(hour);
    if (bucket) bucket.missingMs += Math.min(gap.to, hour + HOUR) - Math.max(from, hour);
  }
}

/** A copy that owns its characters: V8 slices keep the whole 64 KiB read chunk they came from alive. */
const own = (text: string): string => Buffer.from(text, 'utf8').toString('utf8');

/** Did the host's collector write a row strictly inside the gap? Rows arrive in time order per trail. */
export function hostRan(host: HostStats, gap: Gap): boolean {
  const { lastTime, previousTime } = host.timeline;
  const before = lastTime !== undefined && lastTime < gap.to ? lastTime : previousTime;
  return before !== undefined && before > gap.from;
}

/**
 * Rows -> per-hour buckets per GPU and per host, in one pass and in memory bounded by hours x GPUs:
 * nothing is kept per row, and no string from a row is kept without being copied.
 */
export class Aggregator {
  readonly series = new Map<string, SeriesStats>();
  readonly hosts = new Map<string, HostStats>();

  /** The last minute seen and its hour: periodStart builds a Date, and a sample's GPUs share one minute. */
  private minute = Number.NaN;
  private minuteHour = 0;
  /**
   * The last row's host, and its series by GPU id: a trail's rows come a host's sample at a time,
   * so each row finds its state without a key built and hashed per row.
   */
  private lastHost?: HostStats;
  private readonly seriesOfHost = new Map<HostStats, Map<string, SeriesStats>>();

  add(row: HistoryRow): void {
    // Local hours start on whole minutes in every zone of today's tz database.
    const minute = Math.floor(row.time / 60_000);
    if (minute !== this.minute) {
      this.minute = minute;
      this.minuteHour = periodStart(row.time, 'hour');
    }
    const hour = this.minuteHour;
    let host = this.lastHost;
    if (host === undefined || host.host !== row.host || host.task !== row.task) this.lastHost = host = this.hostFor(row);
    // The hour's bucket before the timeline hears of the row, as for a GPU: a gap ending in this
    // hour counts its part of the hour (a sidecar's hours, merged before its gaps, count it too).
    const hostHour = host.hourly.get(hour) ?? { samples: 0, missingMs: 0 };
    hostHour.samples++;
    host.hourly.set(hour, hostHour);
    host.timeline.add(row.time, () => undefined);

    const stats = this.seriesOfRow(host, row);
    let bucket = stats.hourly.get(hour);
    if (!bucket) stats.hourly.set(hour, (bucket = emptyBucket()));
    addRow(bucket, row);
    if (row.status !== 'ok') {
      const count = stats.errorsByReason.get(row.status);
      stats.errorsByReason.set(count === undefined ? own(row.status) : row.status, (count ?? 0) + 1);
    }
    stats.timeline.add(row.time, (gap) => hostRan(host, gap));
  }

  /** Settles the intervals of series too short to have learned one; call once all rows are in. */
  finish(): this {
    for (const host of this.hosts.values()) host.timeline.finish();
    for (const stats of this.series.values()) stats.timeline.finish();
    return this;
  }

  /** The collection interval of a series: its own, else its host's (a GPU with one sample). */
  intervalOf(stats: SeriesStats): number | undefined {
    return stats.timeline.interval ?? this.hosts.get(`${stats.host}\u0000${stats.task}`)?.timeline.interval;
  }

  /**
   * Report rows, by period, then host, task and GPU, made as they are taken: a year by hour is
   * 70,080 rows, which kept whole were a fifth of all the report held.
   */
  *periodRows(period: Period): Generator<ReportRow> {
    const ordered = [...this.series.values()].sort(
      (a, b) => a.host.localeCompare(b.host) || a.task.localeCompare(b.task) || compareGpuIds(a.gpu, b.gpu),
    );
    // An hour's bucket is its period's (every key is the start of one of this zone's hours, a
    // sidecar's too: segment-apply.ts): merged copies would be a year's 70,000 buckets again.
    const periodsOf = ordered.map((stats) => (period === 'hour' ? stats.hourly : mergedPeriods(stats.hourly, period)));
    const starts = new Set<number>();
    for (const periods of periodsOf) for (const start of periods.keys()) starts.add(start);
    for (const start of [...starts].sort((a, b) => a - b))
      for (let i = 0; i < ordered.length; i++) {
        const bucket = periodsOf[i]!.get(start);
        if (bucket) yield reportRow(ordered[i]!, start, bucket);
      }
  }

  /** The state of one host's collector for one task, made on first use. */
  hostFor(row: Pick<HistoryRow, 'host' | 'task'>): HostStats {
    const key = `${row.host}\u0000${row.task}`;
    let host = this.hosts.get(key);
    if (!host) {
      const hourly = new Map<number, { samples: number; missingMs: number }>();
      host = {
        host: own(row.host),
        task: own(row.task),
        hourly,
        timeline: new Timeline((gap, _missing, _tag, interval) => spreadGap(hourly, gap, interval)),
      };
      this.hosts.set(own(key), host);
    }
    return host;
  }

  /** seriesFor through the host's GPUs seen last. */
  private seriesOfRow(host: HostStats, row: HistoryRow): SeriesStats {
    let byGpu = this.seriesOfHost.get(host);
    if (byGpu === undefined) this.seriesOfHost.set(host, (byGpu = new Map()));
    let stats = byGpu.get(row.gpu);
    if (stats === undefined || stats.uuid !== row.uuid) {
      stats = this.seriesFor(row);
      byGpu.set(stats.gpu, stats);
    }
    return stats;
  }

  /** The state of one GPU of one host and task, made on first use. */
  seriesFor(row: Pick<HistoryRow, 'host' | 'task' | 'gpu' | 'uuid'>): SeriesStats {
    const key = `${row.host}\u0000${row.task}\u0000${row.gpu}\u0000${row.uuid}`;
    let stats = this.series.get(key);
    if (!stats) {
      const hourly = new Map<number, Bucket>();
      const ownGaps = emptyTotals();
      const timeline = new Timeline<boolean>((gap, missing, ran, interval) => {
        spreadGap(hourly, gap, interval);
        if (ran) countGap(ownGaps, gap, missing);
      });
      stats = {
        host: own(row.host),
        task: own(row.task),
        gpu: own(row.gpu),
        uuid: own(row.uuid),
        hourly,
        errorsByReason: new Map(),
        timeline,
        ownGaps,
      };
      this.series.set(own(key), stats);
    }
    return stats;
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

/** The report row of one series' period. */
const reportRow = (stats: SeriesStats, start: number, b: Bucket): ReportRow => ({
  period: start,
  host: stats.host,
  task_id: stats.task,
  gpu_id: stats.gpu,
  gpu_uuid: stats.uuid,
  samples: b.samples,
  error_samples: b.errors,
  ...(b.utilN ? { avg_utilization_percent: round(avgUtilization(b)!) } : {}),
  ...(b.memMax !== undefined ? { max_memory_used_mib: b.memMax } : {}),
  ...(b.powerN ? { avg_power_draw_w: round(avgPower(b)!) } : {}),
  ...(b.tempMax !== undefined ? { max_temperature_c: b.tempMax } : {}),
});

/**
 * nvidia-smi's GPU indices in number order; an id that is no number (a hand-edited or foreign trail)
 * after them, by name. Number() alone is no order once one is NaN (a comparison with it says neither
 * comes first), and a sort by it could put GPU 1 before GPU 0.
 */
export function compareGpuIds(a: string, b: string): number {
  const x = Number(a);
  const y = Number(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) === Number.isNaN(y) ? a.localeCompare(b) : Number.isNaN(x) ? 1 : -1;
  return x - y;
}

/** Hourly buckets merged into the periods holding them. */
function mergedPeriods(hourly: Map<number, Bucket>, period: Period): Map<number, Bucket> {
  const periods = new Map<number, Bucket>();
  for (const [hour, bucket] of hourly) {
    const start = periodStart(hour, period);
    const into = periods.get(start) ?? emptyBucket();
    mergeBucket(into, bucket);
    periods.set(start, into);
  }
  return periods;
}

/** Hourly points of one series, oldest first: average utilization and peak memory. */
export function hourlyPoints(
  stats: SeriesStats,
): { hour: number; utilization?: number; memoryMiB?: number; memoryTotalMiB?: number; samples: number }[] {
  return [...stats.hourly.entries()]
    .sort(([a], [b]) => a - b)
    .map(([hour, b]) => ({
      hour,
      samples: b.samples,
      ...(b.utilN ? { utilization: avgUtilization(b) } : {}),
      ...(b.memMax !== undefined ? { memoryMiB: b.memMax } : {}),
      ...(b.memTotal !== undefined ? { memoryTotalMiB: b.memTotal } : {}),
    }));
}
