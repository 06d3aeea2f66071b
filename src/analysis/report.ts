import { localIsoTime, csvLine } from '../csvlog/columns.js';
import { Aggregator, type Period, type ReportRow, type SeriesStats } from './aggregate.js';
import { collectionGaps } from './collection-gaps.js';
import { errorSamples } from './errors.js';
import type { Finding } from './findings.js';
import { historyFiles, readHistory, type OddRows } from './history.js';
import { idleGpu } from './idle-gpus.js';
import { imbalance } from './imbalance.js';
import { memoryGrowth } from './memory-growth.js';

export interface ReportQuery {
  csvDir: string;
  task?: string;
  host?: string;
  since?: number;
  until?: number;
  by: Period;
}

export interface Report {
  rows: ReportRow[];
  findings: Finding[];
  files: number;
  rowsRead: number;
  oddRows: OddRows;
}

/** Every finding over the per-GPU statistics. */
export function findings(series: readonly SeriesStats[]): Finding[] {
  const groups = new Map<string, SeriesStats[]>();
  for (const stats of series) {
    const key = `${stats.host}\u0000${stats.task}`;
    groups.set(key, [...(groups.get(key) ?? []), stats]);
  }
  return [
    ...series.flatMap((s) => [memoryGrowth(s), idleGpu(s)]),
    ...[...groups.values()].map((group) => imbalance(group.filter((s) => s.gpu !== ''))),
    ...series.flatMap((s) => [collectionGaps(s), errorSamples(s)]),
  ].filter((f): f is Finding => f !== undefined);
}

/** Reads the CSV trail (live files and archives, plain and gzipped) as streams and answers the query. */
export async function buildReport(query: ReportQuery): Promise<Report | { error: string }> {
  const files = await historyFiles(query.csvDir, query.task).catch((error: NodeJS.ErrnoException) => error);
  if (files instanceof Error) return { error: `cannot read ${query.csvDir}: ${files.code ?? files.message}` };
  const aggregator = new Aggregator(query.by);
  const oddRows: OddRows = { count: 0, examples: [] };
  let rowsRead = 0;
  try {
    for await (const row of readHistory(files, oddRows)) {
      rowsRead++;
      if (query.host !== undefined && row.host !== query.host) continue;
      if (query.task !== undefined && row.task !== query.task) continue;
      if (query.since !== undefined && row.time < query.since) continue;
      if (query.until !== undefined && row.time >= query.until) continue;
      aggregator.add(row);
    }
  } catch (error) {
    return { error: `cannot read the history: ${(error as Error).message}` };
  }
  return { rows: aggregator.rows(), findings: findings([...aggregator.series.values()]), files: files.length, rowsRead, oddRows };
}

export const REPORT_COLUMNS = [
  'period', 'host', 'task_id', 'gpu_id', 'gpu_uuid', 'samples', 'error_samples',
  'avg_utilization_percent', 'max_memory_used_mib', 'avg_power_draw_w', 'max_temperature_c',
] as const;

const cells = (row: ReportRow): string[] =>
  REPORT_COLUMNS.map((column) => (column === 'period' ? localIsoTime(new Date(row.period)) : String(row[column] ?? '')));

export const reportCsv = (report: Report): string => [csvLine([...REPORT_COLUMNS]), ...report.rows.map((row) => csvLine(cells(row)))].join('');

export const reportJson = (report: Report): string =>
  `${JSON.stringify({ rows: report.rows.map((row) => ({ ...row, period: localIsoTime(new Date(row.period)) })), findings: report.findings, files: report.files, rows_read: report.rowsRead, odd_rows: report.oddRows }, null, 2)}\n`;

/** Aligned columns for a terminal, findings first. */
export function reportTable(report: Report): string {
  const header = ['period', 'host', 'task', 'gpu', 'samples', 'errors', 'util %', 'max mem MiB', 'power W', 'max °C'];
  const body = report.rows.map((row) => [
    localIsoTime(new Date(row.period)).replace(/:00\.000/, ''),
    row.host,
    row.task_id,
    row.gpu_id,
    String(row.samples),
    String(row.error_samples),
    row.avg_utilization_percent?.toFixed(1) ?? '',
    row.max_memory_used_mib === undefined ? '' : String(Math.round(row.max_memory_used_mib)),
    row.avg_power_draw_w?.toFixed(1) ?? '',
    row.max_temperature_c === undefined ? '' : String(row.max_temperature_c),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i >= 4 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd();
  const found = report.findings.length
    ? report.findings.map((f) => `  ${f.kind.padEnd(15)} ${f.host}${f.task_id ? `/${f.task_id}` : ''}${f.gpu_id ? ` GPU ${f.gpu_id}` : ''}: ${f.summary}`)
    : ['  none'];
  const odd = report.oddRows.count ? [`\n${report.oddRows.count} rows skipped (could not be read), e.g. ${report.oddRows.examples[0]}`] : [];
  return `findings:\n${found.join('\n')}\n\n${[line(header), ...body.map(line)].join('\n')}\n${odd.join('')}${odd.length ? '\n' : ''}`;
}
