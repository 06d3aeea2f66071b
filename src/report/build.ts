import { Aggregator, periodStart, type Period, type ReportRow } from './aggregate.js';
import { collectionGaps, hostGaps } from './collection-gaps.js';
import { errorSamples } from './errors.js';
import type { Finding } from './findings.js';
import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { readHistoryBatches, type BadFile, type HistoryFile, type OddRows } from '../csvlog/read.js';
import { sidecarName } from '../csvlog/paths.js';
import { readSidecar } from '../csvlog/sidecar.js';
import { sectionsOutOfRange } from './sidecar-ranges.js';
import { applySegment } from './segment-apply.js';
import { readSections, type ArchiveSections } from './sidecar-sections.js';
import { archiveWindow, inRange, trailFiles } from './trail-files.js';
import { idleGpu, lowUseGpu } from './idle-gpus.js';
import { imbalance } from './imbalance.js';
import { JobAccount, type IntervalOf, type JobRow } from './jobs.js';
import { memoryGrowth } from './memory-growth.js';
import { withReservations } from './reservations.js';
import { summaryByGpu, summaryByHost, summaryByTask, type SummaryRow } from './summary.js';

/** Rows per hour or day of each GPU, or the summary per host and task, per GPU, per job or per host. */
export type ReportBy = Period | 'task' | 'gpu' | 'job' | 'host';

export interface ReportQuery {
  /** Trails: each a CSV directory, or a directory of hosts' CSV directories (DIR/<host>/, as rsync gathers them). */
  csvDirs: string[];
  task?: string;
  host?: string;
  since?: number;
  until?: number;
  by: ReportBy;
  /** Read every archive's rows, sidecar or not: the report sidecars must equal (the tests, the bench). */
  rowsOnly?: boolean;
  /** The reserved-idle finding's run, HELD_IDLE_MIN_MS unless given (tests shorten it: no CLI option). */
  reservedIdleMinMs?: number;
}

export interface Report {
  by: ReportBy;
  /** Per period and GPU (`--by hour|day`); empty otherwise. */
  /** The period rows of `--by hour` or `day` (none otherwise), made anew each time they are gone through. */
  rows: Iterable<ReportRow>;
  /** Per host and task, always; per GPU and per host too. */
  summary: SummaryRow[];
  summaryByGpu: SummaryRow[];
  summaryByHost: SummaryRow[];
  /** Per job of each host and task (from the trail's `jobs` column), always. */
  jobs: JobRow[];
  findings: Finding[];
  /** The per-hour state behind it all, for the charts. */
  aggregator: Aggregator;
  /** The per-hour state behind `jobs`. */
  jobAccount: JobAccount;
  files: number;
  /** Of those, archives answered from their sidecars (not printed: the report is the same either way). */
  fromSidecars: number;
  badFiles: BadFile[];
  rowsRead: number;
  oddRows: OddRows;
  /**
   * Hosts and tasks with rows in more than one trail directory, with those directories: the same
   * trail gathered twice (its rows then count twice), or a trail that moved (its rows are apart).
   */
  sharedHosts: { host: string; task: string; trails: string[] }[];
  /** Sidecars whose numbers cannot be their archives' (out of range): their archives' rows were read instead. */
  untrustedSidecars: { file: string; why: string }[];
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
    ...series.flatMap((s) => [memoryGrowth(s), idleGpu(s), lowUseGpu(s)]),
    ...[...groups.values()].map((group) => imbalance(group.filter((s) => s.gpu !== ''))),
    ...[...aggregator.hosts.values()].map((host) => hostGaps(host)),
    ...series.flatMap((s) => [collectionGaps(s), errorSamples(s)]),
  ].filter((f): f is Finding => f !== undefined);
}

/**
 * Reads the CSV trails (live files and archives, plain and gzipped) into per-hour state and answers
 * the query: an archive outside --since/--until (by its name, trail-files.ts) is never opened, one
 * with a sidecar that still matches it adds its hours from there, and every other file is read as
 * a stream of rows. A file that cannot be read to its end is skipped and listed, never fatal.
 */
export async function buildReport(query: ReportQuery): Promise<Report | { error: string }> {
  const files: HistoryFile[] = [];
  for (const dir of query.csvDirs) {
    const found = await trailFiles(dir, query.task).catch((error: NodeJS.ErrnoException) => error);
    if (found instanceof Error) return { error: `cannot read ${dir}: ${found.code ?? found.message}` };
    files.push(...inRange(found, query.since, query.until));
  }
  const aggregator = new Aggregator();
  const jobAccount = new JobAccount();
  const reservations = new JobAccount(undefined, 'reserved');
  const oddRows: OddRows = { count: 0, examples: [] };
  const badFiles: BadFile[] = [];
  const keep = (host: string, task: string) =>
    (query.host === undefined || host === query.host) && (query.task === undefined || task === query.task);
  const within = (time: number) => (query.since === undefined || time >= query.since) && (query.until === undefined || time < query.until);
  let rowsRead = 0;
  let fromSidecars = 0;
  const trails = new TrailsOf();
  const untrustedSidecars: { file: string; why: string }[] = [];
  for (const [i, file] of files.entries()) {
    const trail = dirname(file.path);
    const read = file.archive && !query.rowsOnly ? archiveSections(files, i) : undefined;
    if (typeof read === 'string') untrustedSidecars.push({ file: join(trail, sidecarName(file.archive!.file)), why: read });
    const sections = typeof read === 'string' ? undefined : read;
    const segment = sections?.hours;
    // Wholly outside the range (the name could not tell): its rows would all have been read and left out.
    const outside =
      segment && ((query.since !== undefined && segment.last < query.since) || (query.until !== undefined && segment.first >= query.until));
    if (
      sections &&
      segment &&
      (outside || (within(segment.first) && within(segment.last) && ownHours(sections.jobs) && applySegment(aggregator, segment, keep)))
    ) {
      if (!outside) {
        jobAccount.merge(sections.jobs.only(keep));
        reservations.merge(sections.reserved.only(keep));
        for (const host of segment.hosts) if (keep(host.host, host.task)) trails.add(host.host, host.task, trail);
      }
      rowsRead += segment.rows;
      oddRows.count += segment.odd.count;
      for (const example of segment.odd.examples) if (oddRows.examples.length < 5) oddRows.examples.push(`${file.path}: ${example}`);
      fromSidecars++;
      continue;
    }
    for await (const rows of readHistoryBatches([file], oddRows, badFiles)) {
      rowsRead += rows.length;
      for (const row of rows)
        if (keep(row.host, row.task) && within(row.time)) {
          trails.add(row.host, row.task, trail);
          aggregator.add(row);
          jobAccount.add(row);
          reservations.add(row);
        }
    }
  }
  aggregator.finish();
  return reportOf(aggregator, { held: jobAccount, reserved: reservations, reservedIdleMinMs: query.reservedIdleMinMs }, query.by, {
    files: files.length,
    fromSidecars,
    badFiles,
    rowsRead,
    oddRows,
    sharedHosts: trails.shared(),
    untrustedSidecars,
  });
}

/** What a report says of where its state came from: the trail's files (none for a store). */
export type ReportSources = Pick<
  Report,
  'files' | 'fromSidecars' | 'badFiles' | 'rowsRead' | 'oddRows' | 'sharedHosts' | 'untrustedSidecars'
>;

/**
 * The report of per-hour state, however it was filled: the trail's rows and sidecars here, a
 * store's hourly answers in store/. Nothing from here on knows which.
 */
export function reportOf(
  aggregator: Aggregator,
  accounts: { held: JobAccount; reserved?: JobAccount; reservedIdleMinMs?: number },
  by: ReportBy,
  sources: ReportSources,
): Report {
  const { held: jobAccount, reserved } = accounts;
  const intervalOf: IntervalOf = (host, task, gpu, uuid) => {
    const stats = aggregator.series.get(`${host}\u0000${task}\u0000${gpu}\u0000${uuid}`);
    return stats && aggregator.intervalOf(stats);
  };
  return {
    by,
    rows: periodRowsOf(aggregator, by),
    summary: summaryByTask(aggregator),
    summaryByGpu: summaryByGpu(aggregator),
    summaryByHost: summaryByHost(aggregator),
    jobs: reserved ? withReservations(jobAccount.rows(intervalOf), reserved, intervalOf) : jobAccount.rows(intervalOf),
    findings: [
      ...findings(aggregator),
      ...jobAccount.heldIdle(intervalOf),
      ...(reserved?.heldIdle(intervalOf, accounts.reservedIdleMinMs) ?? []),
    ],
    aggregator,
    jobAccount,
    ...sources,
  };
}

/** The rows `--by hour` or `day` asks for, as an iterable that makes them again on each pass (the table takes two). */
const periodRowsOf = (aggregator: Aggregator, by: ReportBy): Iterable<ReportRow> => {
  if (by !== 'hour' && by !== 'day') return [];
  return { [Symbol.iterator]: () => aggregator.periodRows(by) };
};

/** The trail directories each host and task has rows in (a row's host and task are most often the last row's: checked first). */
class TrailsOf {
  private readonly byHost = new Map<string, { host: string; task: string; trails: Set<string> }>();
  private last?: { host: string; task: string; trail: string };

  add(host: string, task: string, trail: string): void {
    const last = this.last;
    if (last !== undefined && last.host === host && last.task === task && last.trail === trail) return;
    this.last = { host, task, trail };
    const key = `${host}\u0000${task}`;
    const entry = this.byHost.get(key) ?? { host, task, trails: new Set<string>() };
    entry.trails.add(trail);
    this.byHost.set(key, entry);
  }

  shared(): { host: string; task: string; trails: string[] }[] {
    return [...this.byHost.values()].filter((e) => e.trails.size > 1).map((e) => ({ host: e.host, task: e.task, trails: [...e.trails] }));
  }
}

/**
 * An archive's sections from its sidecar, if it has one that still matches it, of this version;
 * why not, when its numbers cannot be the archive's (sidecar-ranges.ts).
 */
function archiveSections(files: readonly HistoryFile[], i: number): ArchiveSections | string | undefined {
  const file = files[i]!;
  const sidecar = readSidecar(dirname(file.path), file.archive!.file);
  const sections = typeof sidecar === 'string' ? undefined : readSections(sidecar);
  if (sections === undefined) return undefined;
  const mtimeMs = statSync(file.path, { throwIfNoEntry: false })?.mtimeMs ?? Infinity;
  return sectionsOutOfRange(sections, archiveWindow(files, i, mtimeMs)) ?? sections;
}

/** Whether the job account's hours are this machine's local hours (not so when the archiver ran in a zone a half hour off). */
const ownHours = (jobs: JobAccount): boolean => [...jobs.hours.keys()].every((hour) => periodStart(hour, 'hour') === hour);
