import { HOUR, periodStart } from '../aggregate.js';
import { reportOf, type Report, type ReportBy } from '../build.js';
import { describeOutcome, type StoreClient, type StoreOutcome } from './client.js';
import { StoreHours } from './fill.js';
import {
  matchers,
  METRIC,
  presenceMatchers,
  recordedMatchers,
  coverage,
  NO_RULES,
  type RecordedRules,
  recordedRules,
  RULE_SET_NAMES,
  ruleSetsWhere,
  type RuleSet,
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
 * window whose start is in `breaks` begins a new one (where the questions change, readWindows).
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

/** A rule set is read for a window where its marker has at least this share of its source's samples. */
export const COVERED = 0.99;
/**
 * The five-minute set counts its source's samples, so an hour it covers counts them all, give or take
 * the few minutes its windows are off the clock hour: more than this share at any host (two
 * evaluations' windows over the same minutes, from a backfill and a live Prometheus) is read as not
 * covered either.
 */
export const OVER_COVERED = 1.01;

/** A rule set's coverage of a window: the least and the most of its hosts' (queries.ts, coverage). */
export interface Coverage {
  least: number;
  most: number;
}

/** Whether a window's five-minute coverage reads that set there (readWindows). */
const fiveMinuteCovered = (c: Coverage | undefined) => c !== undefined && c.least >= COVERED && c.most <= OVER_COVERED;

/**
 * The rule sets read in each whole window (by its start), from each set's coverage answers (by
 * evaluation time, a window's end less 1 ms). Rules hold only where they were evaluated: before they
 * were loaded, in a gap backfilled after they were, on a store behind a Thanos that lacks them. Read
 * there as if they held, an hour would count no idle time, no job's utilization or power, no free GPU.
 * So each set is read only in the windows its marker covers at every host (COVERED of its source's
 * samples: the evaluations and the scrapes of an hour may differ by one); the others are asked with subqueries,
 * as are the partial windows at --since and --until (no answer: not covered). Where the five-minute
 * set covers a window it answers every question there, and the others are not read.
 */
export function readWindows(
  present: RecordedRules,
  coverage: Partial<Record<RuleSet, ReadonlyMap<number, Coverage>>>,
  whole: readonly Window[],
): Map<number, RecordedRules> {
  const read = new Map<number, RecordedRules>();
  const covered = (set: RuleSet, w: Window) => present[set] && (coverage[set]?.get(w.end - 1)?.least ?? 0) >= COVERED;
  for (const w of whole)
    read.set(
      w.start,
      present.fiveMinute && fiveMinuteCovered(coverage.fiveMinute?.get(w.end - 1))
        ? { ...NO_RULES, fiveMinute: true }
        : ruleSetsWhere((set) => set !== 'fiveMinute' && covered(set, w)),
    );
  return read;
}

/**
 * A report over less than this is never read from the five-minute set: its hours are the rules'
 * windows, up to 6 minutes before the clock hour, so where it meets an hour read otherwise a few
 * minutes are counted twice or not at all; over a day at least that is under 1 % (and a short range
 * costs the store little anyway).
 */
export const FIVE_MINUTE_SPAN = 24 * HOUR;

/**
 * The whole windows the five-minute set may answer: not over a range shorter than FIVE_MINUTE_SPAN,
 * nor the first and last whole hours, which are read from every collection so that the range's own
 * edges (a peak in its last minutes, the first samples) are the trail's.
 */
export function fiveMinuteWindows<W extends Window>(since: number, until: number, whole: readonly W[]): W[] {
  return until - since < FIVE_MINUTE_SPAN ? [] : whole.slice(1, -1);
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
  // Each rule set the store has, its coverage of each whole hour: one range query per chunk. The
  // five-minute set's first: where it covers an hour the others are not read, and their coverage,
  // which counts every sample of a GPU's series, is not asked there.
  const sets = recordedRules(recorded.data);
  const coverageOf: Partial<Record<RuleSet, Map<number, Coverage>>> = {};
  const order: RuleSet[] = ['fiveMinute', ...RULE_SET_NAMES.filter((s) => s !== 'fiveMinute')];
  for (const set of order.filter((s) => sets[s])) {
    const points = new Map<number, Coverage>();
    const five = coverageOf.fiveMinute;
    const windows =
      set === 'fiveMinute'
        ? fiveMinuteWindows(query.since, query.until, whole)
        : whole.filter((w) => !fiveMinuteCovered(five?.get(w.end - 1)));
    for (const c of rangeChunks(windows)) {
      const outcome = noted(await client.queryRange(coverage(query, set, HOUR), c.start, c.end, HOUR));
      if (outcome.kind !== 'ok') return { error: describeOutcome(outcome) };
      // A host per series: the hour's coverage is its least and its most covered host's.
      for (const s of outcome.data)
        for (const [t, v] of s.points) {
          const c = points.get(t);
          if (c === undefined) points.set(t, { least: v, most: v });
          else [c.least, c.most] = [Math.min(c.least, v), Math.max(c.most, v)];
        }
    }
    coverageOf[set] = points;
  }
  const read = readWindows(sets, coverageOf, whole);
  const readAt = (start: number): RecordedRules => read.get(start) ?? NO_RULES;
  // The questions as the rules read in a window ask them: by name, for each combination.
  const asked = new Map<string, Map<string, StoreQuery>>();
  const questionAt = (name: string, start: number): StoreQuery => {
    const recorded = readAt(start);
    const key = RULE_SET_NAMES.map((set) => recorded[set]).join(' ');
    let byName = asked.get(key);
    if (!byName) asked.set(key, (byName = new Map(storeQueries({ ...query, recorded }).map((q) => [q.name, q]))));
    return byName.get(name)!;
  };
  // A chunk of range queries never spans a change of the rules read.
  const same = (a: RecordedRules, b: RecordedRules) => RULE_SET_NAMES.every((set) => a[set] === b[set]);
  const breaks = new Set(whole.filter((w, i) => i > 0 && !same(readAt(w.start), readAt(whole[i - 1]!.start))).map((w) => w.start));

  const hours = new StoreHours(
    query.hostLabel,
    [...partial, ...whole].map((w) => periodStart(w.end - 1, 'hour')).sort((a, b) => a - b),
  );
  const chunks = rangeChunks(whole, Math.max(24, Math.floor(POINTS_PER_ANSWER / present.data.length)), breaks);
  const ask = (q: StoreQuery, stepMs: () => number): (() => Promise<Failure | undefined>)[] => [
    ...chunks.map((c) => async () => {
      // The chunk's first window starts an hour before its first evaluation (its last millisecond).
      const expr = questionAt(q.name, c.start + 1 - HOUR).expr(HOUR, stepMs());
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
  const queries = storeQueries({ ...query, recorded: NO_RULES });
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
