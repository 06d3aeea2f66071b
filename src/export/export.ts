import { readHistoryBatches, type BadFile, type HistoryFile, type HistoryRow, type OddRows } from '../csvlog/read.js';
import { isDemoHost } from '../csvlog/columns.js';
import type { MetricSample } from '../exposition/families.js';
import { familyHeader, formatEnd, seriesPrefix, timestampText, valueAt, type TimestampedFormat } from '../exposition/timestamped.js';
import { DEMO_LABEL } from '../metrics/metrics-catalog.js';
import { EXPORT_FAMILIES, type ExportFamily, type TrailSample } from './families.js';

// The CSV trail -> timestamped samples a store imports, in constant memory. Both text formats want
// each family's samples together (OpenMetrics: "MetricFamilies MUST NOT be interleaved"), while a
// trail holds every family in each row: so the trail is read once per family, each pass holding
// one collection's rows and, per host and task, the time of the last collection written. A year
// of trail is never held; reading it ten times is the price (docs/export.md has the numbers).
// Within a family the series follow the trail's own order (time by time, GPU by GPU), each
// series' samples in increasing time, as promtool and VictoriaMetrics take them.

/** What to export: the trail's files (in their order) and which of their rows, how labelled, in which format. */
export interface ExportPlan {
  files: readonly HistoryFile[];
  format: TimestampedFormat;
  /** Rows from `since` (inclusive) to `until` (exclusive), epoch ms. */
  since?: number;
  until: number;
  host?: string;
  task?: string;
  /** The label that carries the row's host: `instance` unless --host-label names another. */
  hostLabel: string;
  /** Constant labels on every series (--label), before the others. */
  labels: readonly (readonly [string, string])[];
}

/** What the export saw, filled in as it goes (the first pass counts rows; every pass counts the lines it writes). */
export interface ExportTally {
  /** Rows taken (in range, of the host and task asked for). */
  rows: number;
  /** Collections taken: the rows of one host, task and time. */
  collections: number;
  /** Collections left out because their time was not after the last one of their host and task (a clock stepped back, a trail given twice). */
  outOfOrder: number;
  /** Sample lines written, all families. */
  samples: number;
  odd: OddRows;
  badFiles: BadFile[];
}

export const newExportTally = (): ExportTally => ({
  rows: 0,
  collections: 0,
  outOfOrder: 0,
  samples: 0,
  odd: { count: 0, examples: [] },
  badFiles: [],
});

/** How much text is gathered before it is handed on: large enough that the writes are few, small enough to be nothing in memory. */
const PIECE = 64 * 1024;

/**
 * The export's text, a piece at a time: every family in turn, then the format's end. Pulled by the
 * writer, so the trail is read only as fast as the output is taken (a slow pipe holds nothing up).
 */
export async function* exportText(plan: ExportPlan, tally: ExportTally): AsyncGenerator<string> {
  for (const [pass, family] of EXPORT_FAMILIES.entries()) yield* familyText(plan, family, tally, pass === 0);
  const end = formatEnd(plan.format);
  if (end) yield end;
}

/** One family's header and samples, or nothing when the trail has none of its series. */
async function* familyText(plan: ExportPlan, exported: ExportFamily, tally: ExportTally, first: boolean): AsyncGenerator<string> {
  let text = '';
  let header = false;
  // Each series' `name{labels} `, made once per series: the GPUs of a trail are few (a job's series
  // are many, so the cache starts again when it grows).
  const prefixes = new Map<string, string>();
  // A counter's samples keep their `_total` in both formats; only OpenMetrics' TYPE line drops it.
  const name = exported.family.name;
  const lastTime = new Map<string, number>();
  const baseOf = new Map<string, MetricSample['labels']>();
  const write = (sample: TrailSample) => {
    const trail = `${sample.host}\u0000${sample.task}`;
    const last = lastTime.get(trail);
    if (last !== undefined && sample.time <= last) {
      if (first) tally.outOfOrder++;
      return;
    }
    lastTime.set(trail, sample.time);
    if (first) {
      tally.collections++;
      tally.rows += sample.rows.length;
    }
    let base = baseOf.get(trail);
    if (base === undefined) baseOf.set(trail, (base = baseLabels(plan, sample.host, sample.task)));
    const timestamp = timestampText(plan.format, sample.time);
    exported.samples(sample, base, (key, labels, value) => {
      const seriesKey = `${trail}\u0000${key}`;
      let prefix = prefixes.get(seriesKey);
      if (prefix === undefined) {
        if (prefixes.size >= 10_000) prefixes.clear();
        prefixes.set(seriesKey, (prefix = seriesPrefix(name, labels())));
      }
      if (!header) {
        text += familyHeader(plan.format, exported.family);
        header = true;
      }
      text += prefix + valueAt(value, timestamp);
      tally.samples++;
    });
  };
  const odd: OddRows = first ? tally.odd : { count: 0, examples: [] };
  const badFiles: BadFile[] = first ? tally.badFiles : [];
  let current: TrailSample | undefined;
  for await (const batch of readHistoryBatches(plan.files, odd, badFiles)) {
    for (const row of batch) {
      if (!wanted(plan, row)) continue;
      if (current && current.time === row.time && current.host === row.host && current.task === row.task) current.rows.push(row);
      else {
        if (current) write(current);
        current = { host: row.host, task: row.task, time: row.time, rows: [row] };
      }
    }
    if (text.length >= PIECE) {
      yield text;
      text = '';
    }
  }
  if (current) write(current);
  if (text) yield text;
}

const wanted = (plan: ExportPlan, row: HistoryRow): boolean =>
  row.time < plan.until &&
  (plan.since === undefined || row.time >= plan.since) &&
  (plan.host === undefined || row.host === plan.host) &&
  (plan.task === undefined || row.task === plan.task);

/** The labels every series of a host and task starts with: --label's, source="demo" for demo rows (as the textfile has it), the host, the task. */
function baseLabels(plan: ExportPlan, host: string, task: string): MetricSample['labels'] {
  return [...plan.labels, ...(isDemoHost(host) ? [DEMO_LABEL] : []), [plan.hostLabel, host], ['task', task]];
}
