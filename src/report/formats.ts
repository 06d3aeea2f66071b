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

/** What `--by` asks for, as CSV: per period and GPU, or the summary per host and task, per GPU, or per host. */
export function reportCsv(report: Report): string {
  if (report.by === 'job') return [csvLine([...JOB_COLUMNS]), ...report.jobs.map((row) => csvLine(jobCells(row)))].join('');
  if (report.by === 'hour' || report.by === 'day')
    return [csvLine([...REPORT_COLUMNS]), ...report.rows.map((row) => csvLine(periodCells(row)))].join('');
  const columns = summaryColumns(report.by);
  const rows: Partial<SummaryRow>[] = summaryRows(report, report.by);
  return [csvLine(columns), ...rows.map((row) => csvLine(columns.map((c) => String(row[c] ?? ''))))].join('');
}

/** Everything, snake_case: `rows` is what `--by` asks for, `summary` is always per host and task. */
export function reportJson(report: Report): string {
  const rows =
    report.by === 'hour' || report.by === 'day'
      ? report.rows.map((row) => ({ ...row, period: localIsoTime(new Date(row.period)) }))
      : report.by === 'job'
        ? report.jobs
        : summaryRows(report, report.by);
  const body = {
    by: report.by,
    rows,
    summary: report.summary,
    findings: report.findings,
    files: report.files,
    bad_files: report.badFiles,
    rows_read: report.rowsRead,
    odd_rows: report.oddRows,
  };
  return `${JSON.stringify(body, null, 2)}\n`;
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

function periodLines(rows: ReportRow[]): string[] {
  const header = ['period', 'host', 'task', 'gpu', 'samples', 'errors', 'util %', 'max mem MiB', 'power W', 'max °C'];
  const body = rows.map((row) => [
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
  ]);
  return aligned(header, body, 4);
}

/** Aligned columns for a terminal: findings, the summary per host and task, then what `--by` asks for. */
export function reportTable(report: Report): string {
  const found = report.findings.length
    ? report.findings.map(
        (f) => `  ${f.kind.padEnd(15)} ${f.host}${f.task_id ? `/${f.task_id}` : ''}${f.gpu_id ? ` GPU ${f.gpu_id}` : ''}: ${f.summary}`,
      )
    : ['  none'];
  const rows =
    report.by === 'task'
      ? []
      : report.by === 'gpu'
        ? ['', ...summaryLines(report.summaryByGpu, true)]
        : report.by === 'job'
          ? ['', 'jobs:', ...jobLines(report.jobs, aligned)]
          : report.by === 'host'
            ? ['', ...summaryLines(report.summaryByHost, false, true)]
            : ['', ...periodLines(report.rows)];
  const odd = report.oddRows.count
    ? [`\n${report.oddRows.count} rows skipped (could not be read), e.g. ${report.oddRows.examples[0]}`]
    : [];
  return `findings:\n${found.join('\n')}\n\nsummary:\n${summaryLines(report.summary, false).join('\n')}\n${rows.join('\n')}${rows.length ? '\n' : ''}${odd.join('')}${odd.length ? '\n' : ''}`;
}
