import { HOUR, periodStart } from '../aggregate.js';
import { reportOf, type Report, type ReportBy } from '../build.js';
import { describeOutcome, type StoreClient, type StoreOutcome } from './client.js';
import { StoreHours } from './fill.js';
import {
  matchers,
  METRIC,
  presenceMatchers,
  recordedMatchers,
  markerProbe,
  type RecordedRules,
  recordedRules,
  storeQueries,
  type StoreQuery,
  type StoreSubject,
} from './queries.js';

// `report --prometheus URL`: the report's questions asked of a store, window by window, their
// answers made into the same per-hour state the trail's rows make (fill.ts), and the report made
// from it as from a trail (build.ts's reportOf). Any answer that is not whole ends it with one line:
// a report with a window missing would look whole.

/** What the store is asked about (which recording rules it keeps, the report finds out). */
export interface StoreReportQuery extends StoreSubject {
  since: number;
  until: number;
  by: ReportBy;
  /** Requests in flight at once. */
  concurrency: number;
}

/** What the report may do to the process: tidy its heap as answers and GPUs are done (garbage.ts). */
export interface StoreReportRuntime {
  tidyHeap?: () => void;
}

/** Steps in one range query: under Prometheus's 11,000 points per series. */
export const MAX_STEPS = 10_000;
/**
 * Points in one answer, about: a range query's steps are cut so that its series (each GPU's, as the
 * store's series API counted them) times its steps stay near this (a day at least). At 40 hosts x 8
 * GPUs a month in one answer was 230,000 points, 7 MB of JSON and four times that parsed, with
 * `--prometheus-concurrency` of them in flight, each living long enough to be promoted to V8's old
 * generation: the report's peak memory was 700 MiB. At 10,000 an answer is parsed and let go young
 * (bench/report-store-client.mjs: 225 MiB, and less CPU, for 31 requests per question instead of 1).
 */
export const POINTS_PER_ANSWER = 10_000;
/** Up to this span the hosts' collection times are read raw (a short --since): exact gaps and interval. */
const RAW_SPAN_MS = 6 * HOUR;

/** A window of the report: one local hour, or the part of one inside --since/--until, evaluated at `end - 1`. */
interface Window {
  start: number;
  end: number;
}

/** The report's windows: each local hour from --since to --until, the first and last cut to them. */
export function windowsOf(since: number, until: number): { whole: Window[]; partial: Window[] } {
  const whole: Window[] = [];
  const partial: Window[] = [];
  for (let hour = periodStart(since, 'hour'); hour < until; hour = periodStart(hour + HOUR + 1, 'hour')) {
    const w = { start: Math.max(hour, since), end: Math.min(hour + HOUR, until) };
    (w.start === hour && w.end === hour + HOUR ? whole : partial).push(w);
  }
  return { whole, partial };
}

/**
 * Whole hours as range queries: runs of consecutive hours, at most `maxSteps` (MAX_STEPS) each; a
 * window whose start is in `breaks` begins a new one (where the questions change, rulesFrom).
 */
export function rangeChunks(
  whole: readonly Window[],
  maxSteps = MAX_STEPS,
  breaks: ReadonlySet<number> = new Set(),
): { start: number; end: number; steps: number }[] {
  const chunks: { start: number; end: number; steps: number }[] = [];
  const limit = Math.min(MAX_STEPS, Math.max(1, maxSteps));
  for (const w of whole) {
    const last = chunks[chunks.length - 1];
    if (last && last.end + HOUR === w.end - 1 && last.steps < limit && !breaks.has(w.start)) {
      last.end = w.end - 1;
      last.steps++;
    } else chunks.push({ start: w.end - 1, end: w.end - 1, steps: 1 });
  }
  return chunks;
}

/** From which window start each rule set the store has is read (absent: not read at all). */
export type RulesFrom = Partial<Record<keyof RecordedRules, number>>;

/** Which rule sets hold for a window starting at `start` (or a chunk evaluated first at `start`). */
export const rulesAt = (from: RulesFrom, start: number): RecordedRules => ({
  idle: from.idle !== undefined && start >= from.idle,
  holders: from.holders !== undefined && start >= from.holders,
});

/**
 * From which window each rule set the store has can be read. Rules hold only from when they were
 * loaded (or backfilled): an hour before that has none of their series, and read as if it had, it
 * would count no idle time, no job's utilization or power, no free GPU. So the first window with
 * the set's marker is found by halving the windows (an instant query over one window each: a
 * year's range takes 14), the hour before --since included; the set is read from the window after
 * it (the first may be covered in part, unless the hour before was too), and the hours before are
 * asked with the subqueries. Assumes a set once loaded stays: an hour it missed later reads as idle.
 */
export async function rulesFrom(
  probe: (set: keyof RecordedRules, w: Window) => Promise<boolean | Failure>,
  present: RecordedRules,
  windows: readonly Window[],
): Promise<RulesFrom | Failure> {
  const from: RulesFrom = {};
  if (windows.length === 0) return from;
  const first = windows[0]!;
  // Index -1: the hour before the first window.
  const at = (i: number): Window => (i < 0 ? { start: first.start - HOUR, end: first.start } : windows[i]!);
  for (const set of ['idle', 'holders'] as const) {
    if (!present[set]) continue;
    let [lo, hi] = [-1, windows.length];
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const covered = await probe(set, at(mid));
      if (typeof covered !== 'boolean') return covered;
      if (covered) hi = mid;
      else lo = mid + 1;
    }
    if (lo < 0) from[set] = first.start;
    else if (lo + 1 < windows.length) from[set] = windows[lo + 1]!.start;
  }
  return from;
}

/** Runs `tasks` with at most `limit` at once; stops starting new ones once one failed. */
async function pooled<T>(tasks: (() => Promise<T | undefined>)[], limit: number): Promise<T | undefined> {
  let next = 0;
  let failed: T | undefined;
  const worker = async () => {
    while (next < tasks.length && failed === undefined) {
      const outcome = await tasks[next++]!();
      if (outcome !== undefined) failed ??= outcome;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker));
  return failed;
}

type Failure = Exclude<StoreOutcome<unknown>, { kind: 'ok' }>;

/** The report from a store, or the one line saying why there is none; `warn` hears the store's warnings. */
export async function buildStoreReport(
  client: StoreClient,
  query: StoreReportQuery,
  warn: (line: string) => void,
  runtime: StoreReportRuntime = {},
): Promise<Report | { error: string }> {
  const tidyHeap = runtime.tidyHeap ?? (() => {});
  const warned = new Set<string>();
  const noted = <T>(outcome: StoreOutcome<T>): StoreOutcome<T> => {
    if (outcome.kind === 'ok')
      for (const w of outcome.warnings)
        if (!warned.has(w)) {
          warned.add(w);
          warn(`the store warns: ${w}`);
        }
    return outcome;
  };
  const present = noted(await client.series(presenceMatchers(query), query.since, query.until));
  if (present.kind !== 'ok') return { error: describeOutcome(present) };
  if (present.data.length === 0)
    return {
      error: `the store has no ${METRIC.success} or ${METRIC.up} series${query.host ? ` of ${query.hostLabel}="${query.host}"` : ''}${query.task ? ` of task ${query.task}` : ''} between ${new Date(query.since).toISOString()} and ${new Date(query.until).toISOString()} (looked for ${presenceMatchers(query).join(', ')})`,
    };
  const recorded = noted(await client.series(recordedMatchers(query), query.since, query.until));
  if (recorded.kind !== 'ok') return { error: describeOutcome(recorded) };
  const { whole, partial } = windowsOf(query.since, query.until);
  const windows = [...whole, ...partial].sort((a, b) => a.start - b.start);
  const from = await rulesFrom(
    async (set, w) => {
      const outcome = noted(await client.query(markerProbe(query, set, w.end - w.start), w.end - 1));
      return outcome.kind === 'ok' ? outcome.data.length > 0 : outcome;
    },
    recordedRules(recorded.data),
    windows,
  );
  if ('kind' in from) return { error: describeOutcome(from) };
  // The questions as the rules that hold for a window ask them: by name, for each combination.
  const asked = new Map<string, Map<string, StoreQuery>>();
  const questionAt = (name: string, start: number): StoreQuery => {
    const recorded = rulesAt(from, start);
    const key = `${recorded.idle} ${recorded.holders}`;
    let byName = asked.get(key);
    if (!byName) asked.set(key, (byName = new Map(storeQueries({ ...query, recorded }).map((q) => [q.name, q]))));
    return byName.get(name)!;
  };

  const hours = new StoreHours(query.hostLabel);
  const breaks = new Set(Object.values(from));
  const chunks = rangeChunks(whole, Math.max(24, Math.floor(POINTS_PER_ANSWER / present.data.length)), breaks);
  const ask = (q: StoreQuery, stepMs: () => number): (() => Promise<Failure | undefined>)[] => [
    ...chunks.map((c) => async () => {
      const expr = questionAt(q.name, c.start).expr(HOUR, stepMs());
      const outcome = noted(await client.queryRange(expr, c.start, c.end, HOUR));
      if (outcome.kind !== 'ok') return outcome;
      // The points of one answer fall at the same few times: each time's local hour is worked out once.
      const hourOf = new Map<number, number>();
      for (const s of outcome.data) {
        const take = hours.sink(q.name, q.target, s.labels);
        for (const [t, v] of s.points) {
          let hour = hourOf.get(t);
          if (hour === undefined) hourOf.set(t, (hour = periodStart(t, 'hour')));
          take(hour, v);
        }
      }
      tidyHeap();
      return undefined;
    }),
    ...partial.map((w) => async () => {
      const outcome = noted(await client.query(questionAt(q.name, w.start).expr(w.end - w.start, stepMs()), w.end - 1));
      if (outcome.kind !== 'ok') return outcome;
      const hour = periodStart(w.end - 1, 'hour');
      for (const s of outcome.data) {
        const take = hours.sink(q.name, q.target, s.labels);
        for (const [, v] of s.points) take(hour, v);
      }
      return undefined;
    }),
  ];
  const queries = storeQueries({ ...query, recorded: { idle: false, holders: false } });
  const [first, rest] = [queries.filter((q) => q.name === 'host_samples'), queries.filter((q) => q.name !== 'host_samples')];
  const rawTimes = async (): Promise<Failure | undefined> => {
    if (query.until - query.since > RAW_SPAN_MS) return undefined;
    const expr = `${METRIC.success}{${matchers(query)}}[${query.until - query.since}ms]`;
    const outcome = noted(await client.query(expr, query.until - 1));
    if (outcome.kind !== 'ok') return outcome;
    for (const s of outcome.data)
      hours.takeTimes(
        s.labels,
        s.points.map(([t]) => t),
      );
    return undefined;
  };
  const failedFirst = await pooled([...first.flatMap((q) => ask(q, () => HOUR)), rawTimes], query.concurrency);
  if (failedFirst) return { error: describeOutcome(failedFirst) };
  // Subqueries re-sample at the shortest collection interval seen: each collection once.
  const intervals = [...hours.intervals().values()];
  const step = Math.max(1000, Math.min(...intervals, 60_000));
  const failed = await pooled(
    rest.flatMap((q) => ask(q, () => step)),
    query.concurrency,
  );
  if (failed) return { error: describeOutcome(failed) };
  const { aggregator, jobAccount, reservedAccount } = hours.fill(tidyHeap);
  return reportOf(aggregator, { held: jobAccount, reserved: reservedAccount }, query.by, {
    files: 0,
    fromSidecars: 0,
    badFiles: [],
    rowsRead: 0,
    oddRows: { count: 0, examples: [] },
    sharedHosts: [],
    untrustedSidecars: [],
  });
}
