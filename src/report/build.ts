import { Aggregator, type Period, type ReportRow } from './aggregate.js';
import { collectionGaps, hostGaps } from './collection-gaps.js';
import { errorSamples } from './errors.js';
import type { Finding } from './findings.js';
import { historyFiles, readHistory, type BadFile, type OddRows } from '../csvlog/read.js';
import { idleGpu } from './idle-gpus.js';
import { imbalance } from './imbalance.js';
import { JobAccount, type IntervalOf, type JobRow } from './jobs.js';
import { memoryGrowth } from './memory-growth.js';
import { summaryByGpu, summaryByTask, type SummaryRow } from './summary.js';

/** Rows per hour or day of each GPU, or the summary per host and task or per GPU. */
export type ReportBy = Period | 'task' | 'gpu' | 'job';

export interface ReportQuery {
  csvDir: string;
  task?: string;
  host?: string;
  since?: number;
  until?: number;
  by: ReportBy;
}

export interface Report {
  by: ReportBy;
  /** Per period and GPU (`--by hour|day`); empty otherwise. */
  rows: ReportRow[];
  /** Per host and task, always; per GPU too with `--by gpu`. */
  summary: SummaryRow[];
  summaryByGpu: SummaryRow[];
  /** Per job of each host and task (from the trail's `jobs` column), always. */
  jobs: JobRow[];
  findings: Finding[];
  /** The per-hour state behind it all, for the charts. */
  aggregator: Aggregator;
  /** The per-hour state behind `jobs`. */
  jobAccount: JobAccount;
  files: number;
  badFiles: BadFile[];
  rowsRead: number;
  oddRows: OddRows;
}

/** Every finding, one per cause: per GPU, then per host and task (imbalance, gaps every GPU shares), then per GPU again. */
export function findings(aggregator: Aggregator): Finding[] {
  const series = [...aggregator.series.values()];
  const groups = new Map<string, typeof series>();
  for (const stats of series) {
    const key = `${stats.host}\u0000${stats.task}`;
    groups.set(key, [...(groups.get(key) ?? []), stats]);
  }
  return [
    ...series.flatMap((s) => [memoryGrowth(s), idleGpu(s)]),
    ...[...groups.values()].map((group) => imbalance(group.filter((s) => s.gpu !== ''))),
    ...[...aggregator.hosts.values()].map((host) => hostGaps(host)),
    ...series.flatMap((s) => [collectionGaps(s), errorSamples(s)]),
  ].filter((f): f is Finding => f !== undefined);
}

/**
 * Reads the CSV trail (live files and archives, plain and gzipped) as streams into per-hour state and
 * answers the query. A file that cannot be read to its end is skipped and listed, never fatal.
 */
export async function buildReport(query: ReportQuery): Promise<Report | { error: string }> {
  const files = await historyFiles(query.csvDir, query.task).catch((error: NodeJS.ErrnoException) => error);
  if (files instanceof Error) return { error: `cannot read ${query.csvDir}: ${files.code ?? files.message}` };
  const aggregator = new Aggregator();
  const jobAccount = new JobAccount();
  const oddRows: OddRows = { count: 0, examples: [] };
  const badFiles: BadFile[] = [];
  let rowsRead = 0;
  for await (const row of readHistory(files, oddRows, badFiles)) {
    rowsRead++;
    if (query.host !== undefined && row.host !== query.host) continue;
    if (query.task !== undefined && row.task !== query.task) continue;
    if (query.since !== undefined && row.time < query.since) continue;
    if (query.until !== undefined && row.time >= query.until) continue;
    aggregator.add(row);
    jobAccount.add(row);
  }
  aggregator.finish();
  const intervalOf: IntervalOf = (host, task, gpu, uuid) => {
    const stats = aggregator.series.get(`${host}\u0000${task}\u0000${gpu}\u0000${uuid}`);
    return stats && aggregator.intervalOf(stats);
  };
  return {
    by: query.by,
    rows: query.by === 'hour' || query.by === 'day' ? aggregator.rows(query.by) : [],
    summary: summaryByTask(aggregator),
    summaryByGpu: summaryByGpu(aggregator),
    jobs: jobAccount.rows(intervalOf),
    findings: [...findings(aggregator), ...jobAccount.heldIdle(intervalOf)],
    aggregator,
    jobAccount,
    files: files.length,
    badFiles,
    rowsRead,
    oddRows,
  };
}
