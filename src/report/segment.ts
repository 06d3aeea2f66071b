import type { HistoryRow, OddRows } from '../csvlog/read.js';
import { median } from '../stats.js';
import { Aggregator, hostRan, type HostStats, type SeriesStats } from './aggregate.js';
import type { Bucket } from './bucket.js';
import { FINDING_THRESHOLDS } from './findings.js';
import type { Gap } from './timeline.js';

/**
 * The report's per-hour state of one archive's rows (the sidecar's `hours` section): what the
 * Aggregator would hold after reading them, less what depends on rows before or after them (the
 * collection interval, the gaps), which segment-apply.ts works out when it adds the segment to a
 * report, exactly as reading the rows would have.
 */

/** The section's version: a sidecar with another one is read from its rows. */
export const HOURS_VERSION = 1;

/** Spacings kept in full at a chain's start: what the interval is learned from (Timeline's 64). */
export const HEAD = 64;
/** Wide spacings kept at most per chain; a chain with more (a collector that changed its interval) leaves the archive to its rows. */
const MAX_WIDE = 4096;

/**
 * A series' (or a host's) sample times in one archive: the first HEAD + 1 in full, then only the
 * spacings longer than gapIntervals x `floor` (half the median of the first HEAD spacings), which
 * are all that can be gaps for any interval of at least `floor`.
 */
export interface Chain {
  times: number[];
  /** Indices of head spacings (times[i] to times[i + 1]) during which the host wrote other rows. */
  ran: number[];
  wide: { gap: Gap; ran: boolean }[];
  /** All spacings of the chain (times.length - 1 of them are in `times`). */
  spacings: number;
  floor?: number;
  last: number;
  previous?: number;
  /** For a GPU's chain: the host wrote rows in this archive before this GPU's first one. */
  ranAtStart: boolean;
}

/** One GPU's hours in one archive. */
export interface SeriesSegment {
  host: string;
  task: string;
  gpu: string;
  uuid: string;
  /** Hour starts (epoch ms) and their buckets (missingMs left at 0: gaps are worked out when added). */
  hours: [number, Bucket][];
  errors: [string, number][];
  chain: Chain;
}

/** One host's collector in one archive. */
export interface HostSegment {
  host: string;
  task: string;
  hours: [number, number][];
  chain: Chain;
}

/** The per-hour state of one archive. */
export interface HoursSegment {
  rows: number;
  odd: OddRows;
  /** Earliest and latest sample time. */
  first: number;
  last: number;
  hosts: HostSegment[];
  series: SeriesSegment[];
}

/** The thresholds the per-hour state depends on: a sidecar made under others is read from its rows. */
const thresholdsKey = (t = FINDING_THRESHOLDS) => [t.idleMaxUtilization, t.idleMinMemoryMib, t.gapIntervals];

/** Records a Timeline's spacings as a Chain. */
class ChainRecorder {
  readonly chain: Chain;
  overflow = false;

  constructor(
    start: number,
    ranAtStart: boolean,
    private readonly gapIntervals: number,
  ) {
    this.chain = { times: [start], ran: [], wide: [], spacings: 0, last: start, ranAtStart };
  }

  spacing(gap: Gap, ran: boolean): void {
    const chain = this.chain;
    const i = chain.spacings++;
    if (i < HEAD) {
      chain.times.push(gap.to);
      if (ran) chain.ran.push(i);
      if (i === HEAD - 1) chain.floor = median(chain.times.slice(1).map((t, j) => t - chain.times[j]!))! / 2;
    } else if (gap.to - gap.from > this.gapIntervals * chain.floor!) {
      if (chain.wide.length >= MAX_WIDE) this.overflow = true;
      else chain.wide.push({ gap, ran });
    }
  }
}

/** An Aggregator that also records each chain, for one archive's rows. */
class RecordingAggregator extends Aggregator {
  readonly chains = new Map<SeriesStats | HostStats, ChainRecorder>();
  ordered = true;

  override add(row: HistoryRow): void {
    const last = this.hosts.get(`${row.host}\u0000${row.task}`)?.timeline.lastTime;
    if (last !== undefined && row.time < last) this.ordered = false;
    super.add(row);
  }

  override hostFor(row: Pick<HistoryRow, 'host' | 'task'>): HostStats {
    const had = this.hosts.size;
    const host = super.hostFor(row);
    if (this.hosts.size > had) this.watch(host, host.timeline, (row as HistoryRow).time, false);
    return host;
  }

  override seriesFor(row: Pick<HistoryRow, 'host' | 'task' | 'gpu' | 'uuid'>): SeriesStats {
    const had = this.series.size;
    const stats = super.seriesFor(row);
    if (this.series.size > had) {
      const time = (row as HistoryRow).time;
      const host = this.hosts.get(`${row.host}\u0000${row.task}`)!;
      this.watch(stats, stats.timeline, time, hostRan(host, { from: -Infinity, to: time }));
    }
    return stats;
  }

  private watch(
    key: SeriesStats | HostStats,
    timeline: { onSpacing?: (gap: Gap, tag: boolean) => void } | { onSpacing?: (gap: Gap, tag: undefined) => void },
    start: number,
    ranAtStart: boolean,
  ): void {
    const recorder = new ChainRecorder(start, ranAtStart, FINDING_THRESHOLDS.gapIntervals);
    this.chains.set(key, recorder);
    (timeline as { onSpacing?: (gap: Gap, tag: boolean | undefined) => void }).onSpacing = (gap, tag) =>
      recorder.spacing(gap, tag === true);
  }
}

/** A chain as it ended: its last two times from the timeline. */
function ended(recorder: ChainRecorder, timeline: { lastTime?: number; previousTime?: number }): Chain {
  return {
    ...recorder.chain,
    last: timeline.lastTime!,
    ...(timeline.previousTime !== undefined ? { previous: timeline.previousTime } : {}),
  };
}

/**
 * The per-hour state of one archive's rows, in the order they were written; undefined when it
 * cannot stand for them (rows out of time order, or a chain with too many wide spacings): the
 * report then reads the rows.
 */
export async function segmentOf(batches: AsyncIterable<HistoryRow[]>, odd: OddRows): Promise<HoursSegment | undefined> {
  const aggregator = new RecordingAggregator();
  let count = 0;
  let first = Infinity;
  let last = -Infinity;
  for await (const rows of batches) {
    for (const row of rows) {
      count++;
      first = Math.min(first, row.time);
      last = Math.max(last, row.time);
      aggregator.add(row);
    }
  }
  if (!aggregator.ordered || [...aggregator.chains.values()].some((r) => r.overflow)) return undefined;
  return {
    rows: count,
    odd,
    first,
    last,
    hosts: [...aggregator.hosts.values()].map((host) => ({
      host: host.host,
      task: host.task,
      hours: [...host.hourly].map(([hour, h]) => [hour, h.samples]),
      chain: ended(aggregator.chains.get(host)!, host.timeline),
    })),
    series: [...aggregator.series.values()].map((stats) => ({
      host: stats.host,
      task: stats.task,
      gpu: stats.gpu,
      uuid: stats.uuid,
      hours: [...stats.hourly].map(([hour, b]): [number, Bucket] => [hour, { ...b, missingMs: 0 }]),
      errors: [...stats.errorsByReason],
      chain: ended(aggregator.chains.get(stats)!, stats.timeline),
    })),
  };
}

/** Bucket fields in the order a sidecar lists them. */
const BUCKET_FIELDS = [
  'samples',
  'errors',
  'utilMilliSum',
  'utilN',
  'memMax',
  'memTotal',
  'powerMwSum',
  'powerN',
  'tempMax',
  'idleHeld',
] as const;
const OPTIONAL_FIELDS = new Set<string>(['memMax', 'memTotal', 'tempMax']);

const chainJson = (c: Chain) => ({
  times: c.times,
  ran: c.ran,
  wide: c.wide.map(({ gap, ran }) => [gap.from, gap.to, ran ? 1 : 0]),
  spacings: c.spacings,
  floor: c.floor ?? null,
  last: c.last,
  previous: c.previous ?? null,
  ran_at_start: c.ranAtStart,
});

/** The segment as the sidecar's `hours` section (plain JSON data; buckets by column). */
export function segmentToJson(segment: HoursSegment): unknown {
  return {
    version: HOURS_VERSION,
    thresholds: thresholdsKey(),
    rows: segment.rows,
    odd_rows: segment.odd,
    first: segment.first,
    last: segment.last,
    hosts: segment.hosts.map((h) => ({
      host: h.host,
      task: h.task,
      hours: h.hours.map(([hour]) => hour),
      samples: h.hours.map(([, n]) => n),
      chain: chainJson(h.chain),
    })),
    series: segment.series.map((s) => ({
      host: s.host,
      task: s.task,
      gpu: s.gpu,
      uuid: s.uuid,
      hours: s.hours.map(([hour]) => hour),
      ...Object.fromEntries(BUCKET_FIELDS.map((f) => [f, s.hours.map(([, b]) => b[f] ?? null)])),
      error_reasons: s.errors,
      chain: chainJson(s.chain),
    })),
  };
}

/** A thrown value for a section that does not have the shape it should: caught in segmentFromJson alone. */
class Shape extends Error {}

type Json = Record<string, unknown>;
const object = (v: unknown): Json => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Shape();
  return v as Json;
};
const num = (v: unknown): number => {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Shape();
  return v;
};
const str = (v: unknown): string => {
  if (typeof v !== 'string') throw new Shape();
  return v;
};
const list = <T>(v: unknown, item: (x: unknown) => T, length?: number): T[] => {
  if (!Array.isArray(v) || (length !== undefined && v.length !== length)) throw new Shape();
  return v.map(item);
};
const orNull = (v: unknown): number | undefined => (v === null ? undefined : num(v));
/** An array of finite numbers (or nulls where `nulls`), checked where it lies: a year of them is parsed, so no copy is made. */
const numbers = (v: unknown, length?: number, nulls = false): (number | null)[] => {
  if (!Array.isArray(v) || (length !== undefined && v.length !== length)) throw new Shape();
  for (const x of v) if (!(typeof x === 'number' ? Number.isFinite(x) : nulls && x === null)) throw new Shape();
  return v as (number | null)[];
};

function chainFrom(v: unknown): Chain {
  const c = object(v);
  const times = numbers(c.times) as number[];
  const spacings = num(c.spacings);
  if (times.length === 0 || times.length !== Math.min(spacings, HEAD) + 1) throw new Shape();
  return {
    times,
    ran: numbers(c.ran) as number[],
    wide: list(c.wide, (w) => {
      const [from, to, ran] = list(w, num, 3);
      return { gap: { from: from!, to: to! }, ran: ran === 1 };
    }),
    spacings,
    floor: orNull(c.floor),
    last: num(c.last),
    previous: orNull(c.previous),
    ranAtStart: c.ran_at_start === true,
  };
}

/** The sidecar's `hours` section read back; undefined for another version, other thresholds or a wrong shape. */
export function segmentFromJson(json: unknown): HoursSegment | undefined {
  try {
    const s = object(json);
    // Compared item by item, not as JSON.stringify's text: a sidecar nested a million deep would overflow its stack.
    const thresholds = thresholdsKey();
    if (
      s.version !== HOURS_VERSION ||
      !Array.isArray(s.thresholds) ||
      s.thresholds.length !== thresholds.length ||
      !thresholds.every((t, i) => (s.thresholds as unknown[])[i] === t)
    )
      return undefined;
    const odd = object(s.odd_rows);
    return {
      rows: num(s.rows),
      odd: { count: num(odd.count), examples: list(odd.examples, str) },
      first: num(s.first),
      last: num(s.last),
      hosts: list(s.hosts, (v) => {
        const h = object(v);
        const hours = numbers(h.hours) as number[];
        const samples = numbers(h.samples, hours.length) as number[];
        return {
          host: str(h.host),
          task: str(h.task),
          hours: hours.map((hour, i): [number, number] => [hour, samples[i]!]),
          chain: chainFrom(h.chain),
        };
      }),
      series: list(s.series, (v) => {
        const g = object(v);
        const hours = numbers(g.hours) as number[];
        const columns = BUCKET_FIELDS.map((f) => numbers(g[f], hours.length, OPTIONAL_FIELDS.has(f)));
        return {
          host: str(g.host),
          task: str(g.task),
          gpu: str(g.gpu),
          uuid: str(g.uuid),
          hours: hours.map((hour, i): [number, Bucket] => {
            // Built as emptyBucket builds it (one shape for all): a year of them is kept.
            const at = (f: (typeof BUCKET_FIELDS)[number]) => columns[BUCKET_FIELDS.indexOf(f)]![i] ?? undefined;
            const bucket: Bucket = {
              samples: at('samples')!,
              errors: at('errors')!,
              utilMilliSum: at('utilMilliSum')!,
              utilN: at('utilN')!,
              memMax: at('memMax'),
              memTotal: at('memTotal'),
              powerMwSum: at('powerMwSum')!,
              powerN: at('powerN')!,
              tempMax: at('tempMax'),
              idleHeld: at('idleHeld')!,
              missingMs: 0,
            };
            return [hour, bucket];
          }),
          errors: list(g.error_reasons, (e) => {
            const [reason, count] = list(e, (x) => x, 2);
            return [str(reason), num(count)] as [string, number];
          }),
          chain: chainFrom(g.chain),
        };
      }),
    };
  } catch (error) {
    if (error instanceof Shape) return undefined;
    throw error;
  }
}
