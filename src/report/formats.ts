import { csvLine, localIsoTime } from '../csvlog/columns.js';
import type { ReportRow } from './aggregate.js';
import type { Report } from './build.js';
import { SUMMARY_COLUMNS, type SummaryRow } from './summary.js';
import { jobCells, JOB_COLUMNS, jobLines } from './job-formats.js';

export const REPORT_COLUMNS = [
  'period',
  'host',
  'task_id',
  'gpu_id',
  'gpu_uuid',
  'samples',
  'error_samples',
  'avg_utilization_percent',
  'max_memory_used_mib',
  'avg_power_draw_w',
  'max_temperature_c',
] as const;

const periodCells = (row: ReportRow): string[] =>
  REPORT_COLUMNS.map((column) => (column === 'period' ? localIsoTime(new Date(row.period)) : String(row[column] ?? '')));

/** The summary's columns for `--by task` (no GPU columns), `--by gpu`, or `--by host` (no task either). */
const summaryColumns = (by: 'task' | 'gpu' | 'host') =>
  SUMMARY_COLUMNS.filter((c) => by === 'gpu' || (c !== 'gpu_id' && c !== 'gpu_uuid' && (by === 'task' || c !== 'task_id')));

/** The summary rows `--by task|gpu|host` asks for. */
const summaryRows = (report: Report, by: 'task' | 'gpu' | 'host') =>
  by === 'gpu' ? report.summaryByGpu : by === 'host' ? report.summaryByHost.map(({ task_id: _, ...row }) => row) : report.summary;

/**
 * Rows rendered a batch at a time: a year's report by hour is 70,080 rows (27 MB of JSON), written
 * as it is made rather than held whole, once as text and again as its bytes.
 */
const ROWS_PER_PIECE = 1000;

function* inPieces<T>(items: Iterable<T>, render: (item: T, index: number) => string): Generator<string> {
  let piece = '';
  let index = 0;
  for (const item of items) {
    piece += render(item, index);
    if (++index % ROWS_PER_PIECE === 0) {
      yield piece;
      piece = '';
    }
  }
  if (piece !== '') yield piece;
}

/** What `--by` asks for, as CSV: per period and GPU, or the summary per host and task, per GPU, or per host. */
export function* reportCsvPieces(report: Report): Generator<string> {
  if (report.by === 'job') {
    yield csvLine([...JOB_COLUMNS]);
    yield* inPieces(report.jobs, (row) => csvLine(jobCells(row)));
  } else if (report.by === 'hour' || report.by === 'day') {
    yield csvLine([...REPORT_COLUMNS]);
    yield* inPieces(report.rows, (row) => csvLine(periodCells(row)));
  } else {
    const columns = summaryColumns(report.by);
    const rows: Partial<SummaryRow>[] = summaryRows(report, report.by);
    yield csvLine(columns);
    yield* inPieces(rows, (row) => csvLine(columns.map((c) => String(row[c] ?? ''))));
  }
}

/** Stands for the rows in the JSON document made around them; `by`, which comes before, is one of a few words. */
const ROWS_PLACE = '\u0000rows\u0000';

/**
 * Everything, snake_case: `rows` is what `--by` asks for, `summary` is always per host and task.
 * The text of JSON.stringify(body, null, 2), with the rows made a batch at a time.
 */
export function* reportJsonPieces(report: Report): Generator<string> {
  const rows: Iterable<object> =
    report.by === 'hour' || report.by === 'day' ? report.rows : report.by === 'job' ? report.jobs : summaryRows(report, report.by);
  const asJson =
    report.by === 'hour' || report.by === 'day'
      ? (row: object) => ({ ...row, period: localIsoTime(new Date((row as ReportRow).period)) })
      : (row: object) => row;
  const body = {
    by: report.by,
    rows: ROWS_PLACE,
    summary: report.summary,
    findings: report.findings,
    files: report.files,
    bad_files: report.badFiles,
    rows_read: report.rowsRead,
    odd_rows: report.oddRows,
  };
  const text = JSON.stringify(body, null, 2);
  const place = JSON.stringify(ROWS_PLACE);
  const at = text.indexOf(place);
  yield text.slice(0, at);
  // An element of `rows` is two levels deep: each of its lines indented four spaces more.
  let any = false;
  yield* inPieces(rows, (row, i) => {
    any = true;
    return `${i ? ',\n' : '[\n'}    ${JSON.stringify(asJson(row), null, 2).replaceAll('\n', '\n    ')}`;
  });
  yield `${any ? '\n  ]' : '[]'}${text.slice(at + place.length)}\n`;
}

/** Right-aligned numbers from the fourth column on, padded to the widest cell. */
function aligned(header: string[], body: string[][], textColumns: number): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i >= textColumns ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...body.map(line)];
}

const fixed = (x: number | undefined, digits: number) => (x === undefined ? '' : x.toFixed(digits));

function summaryLines(rows: SummaryRow[], byGpu: boolean, byHost = false): string[] {
  const header = [
    'host',
    ...(byHost ? [] : ['task']),
    ...(byGpu ? ['gpu'] : []),
    'gpus',
    'GPU-h',
    'busy %',
    'idle+mem h',
    'kWh',
    'missed GPU-h',
    'peak mem MiB',
    'errors',
  ];
  const body = rows.map((r) => [
    r.host,
    ...(byHost ? [] : [r.task_id]),
    ...(byGpu ? [r.gpu_id ?? ''] : []),
    String(r.gpus),
    fixed(r.gpu_hours, 2),
    fixed(r.busy_percent, 1),
    fixed(r.idle_with_memory_hours, 2),
    fixed(r.energy_kwh, 3),
    fixed(r.missed_gpu_hours, 2),
    r.peak_memory_used_mib === undefined ? '' : String(Math.round(r.peak_memory_used_mib)),
    String(r.error_samples),
  ]);
  return aligned(header, body, (byHost ? 1 : 2) + (byGpu ? 1 : 0));
}

const PERIOD_HEADER = ['period', 'host', 'task', 'gpu', 'samples', 'errors', 'util %', 'max mem MiB', 'power W', 'max °C'];

const periodRowCells = (row: ReportRow): string[] => [
  localIsoTime(new Date(row.period)).replace(/:00\.000/, ''),
  row.host,
  row.task_id,
  row.gpu_id,
  String(row.samples),
  String(row.error_samples),
  fixed(row.avg_utilization_percent, 1),
  row.max_memory_used_mib === undefined ? '' : String(Math.round(row.max_memory_used_mib)),
  fixed(row.avg_power_draw_w, 1),
  row.max_temperature_c === undefined ? '' : String(row.max_temperature_c),
];

/** `aligned` over the period rows, without holding every row's cells: widths first, then the lines a batch at a time. */
function* periodLinePieces(rows: Iterable<ReportRow>): Generator<string> {
  const widths = PERIOD_HEADER.map((h) => h.length);
  for (const row of rows) {
    const cells = periodRowCells(row);
    for (let i = 0; i < cells.length; i++) widths[i] = Math.max(widths[i]!, cells[i]!.length);
  }
  const line = (r: string[]) =>
    r
      .map((c, i) => (i >= 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  yield line(PERIOD_HEADER);
  yield* inPieces(rows, (row) => `\n${line(periodRowCells(row))}`);
}

/**
 * Aligned columns for a terminal: findings, the summary per host and task, then what `--by` asks for;
 * without `periodRows`, the hour or day rows are counted, not listed.
 */
export function* reportTablePieces(report: Report, { periodRows = true } = {}): Generator<string> {
  const found = report.findings.length
    ? report.findings.map(
        (f) => `  ${f.kind.padEnd(15)} ${f.host}${f.task_id ? `/${f.task_id}` : ''}${f.gpu_id ? ` GPU ${f.gpu_id}` : ''}: ${f.summary}`,
      )
    : ['  none'];
  yield `findings:\n${found.join('\n')}\n\nsummary:\n${summaryLines(report.summary, false).join('\n')}\n`;
  if ((report.by === 'hour' || report.by === 'day') && !periodRows) {
    let count = 0;
    for (const _row of report.rows) count++;
    if (count > 0) yield `\n${count} rows by ${report.by} not listed: --by ${report.by} lists them (--by gpu or --by job sums them up)\n`;
  } else if (report.by === 'hour' || report.by === 'day') {
    yield '\n';
    yield* periodLinePieces(report.rows);
    yield '\n';
  } else if (report.by !== 'task') {
    const lines =
      report.by === 'gpu'
        ? summaryLines(report.summaryByGpu, true)
        : report.by === 'job'
          ? ['jobs:', ...jobLines(report.jobs, aligned)]
          : summaryLines(report.summaryByHost, false, true);
    yield `\n${lines.join('\n')}\n`;
  }
  if (report.oddRows.count) yield `\n${report.oddRows.count} rows skipped (could not be read), e.g. ${report.oddRows.examples[0]}\n`;
}
