import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeDemoHistory } from '../report/demo.js';
import { reportHtml } from '../report/html/page.js';
import { buildReport, type Report, type ReportBy, type ReportQuery } from '../report/build.js';
import { storeClient } from '../report/store/client.js';
import { heapTidier } from '../report/store/garbage.js';
import { buildStoreReport } from '../report/store/store-report.js';
import { storeAccessOf } from './report-store.js';
import { outIntoTrail } from '../report/trail-files.js';
import { reportCsvPieces, reportJsonPieces, reportTablePieces } from '../report/formats.js';
import { isDemoHost } from '../csvlog/columns.js';
import { parseDuration } from './duration.js';
import { writePieces } from './write-pieces.js';
import { taskNameProblem } from './task-name.js';
import { writeNamedOutput } from '../publish/named-output.js';
import { describeFileError, isFileError } from '../files/safe-fs.js';
import { reportArgsProblem } from './arg-checks.js';
import type { ArgsOf } from './option-types.js';
import type { REPORT_OPTIONS } from './options.js';

const REPORT_BY: readonly ReportBy[] = ['hour', 'day', 'task', 'gpu', 'job', 'host'];
const isReportBy = (by: string): by is ReportBy => (REPORT_BY as readonly string[]).includes(by);

export type ReportArgs = ArgsOf<typeof REPORT_OPTIONS>;

/**
 * "2026-11-28T00:00:00+01:00", "2026-11-28" (local midnight), or a span back from now ("24h", "7d").
 * A time starts with its date, and a date that is no day of the calendar (2026-13-45, 2026-02-30)
 * is refused: JavaScript's Date would roll it over into another month.
 */
export function parseWhen(text: string, now: number): number | undefined {
  const ago = /^\d/.test(text) && !text.includes('-') ? parseDuration(text) : undefined;
  if (ago !== undefined) return now - ago;
  const date = /^(\d{4})-(\d{2})-(\d{2})(?=$|[T ])/.exec(text);
  if (!date) return undefined;
  const [year, month, day] = [+date[1]!, +date[2]!, +date[3]!];
  // Day 0 of the next month is this month's last day.
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  if (text.length === 10) return new Date(year, month - 1, day).getTime();
  const time = Date.parse(text);
  return Number.isNaN(time) ? undefined : time;
}

const isTerminal = (stream: NodeJS.WritableStream): boolean => (stream as { isTTY?: boolean }).isTTY === true;

/** `gpu-textfile report`: answers from the CSV history. */
export async function runReport(
  args: ReportArgs,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream; env?: Readonly<Record<string, string | undefined>> } = {
    out: process.stdout,
    err: process.stderr,
  },
): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  const now = Date.now();
  const since = args.since === undefined ? undefined : parseWhen(args.since, now);
  const until = args.until === undefined ? undefined : parseWhen(args.until, now);
  if ((args.since !== undefined && since === undefined) || (args.until !== undefined && until === undefined)) {
    say('--since and --until take a time (2026-11-28T06:00:00+01:00, 2026-11-28) or a span back from now (24h, 7d)');
    return 2;
  }
  const by = args.by ?? 'hour';
  if (!isReportBy(by)) {
    say(
      '--by must be hour or day (rows per period and GPU), task, gpu, job or host (the summary per host and task, per GPU, per job or per host)',
    );
    return 2;
  }
  if (!['table', 'csv', 'json', 'html'].includes(args.format)) {
    say('--format must be table, csv, json or html');
    return 2;
  }
  const taskProblem = args.task === undefined ? undefined : taskNameProblem(args.task);
  if (taskProblem) {
    say(taskProblem);
    return 2;
  }
  const csvDirs = args.csvDir ?? [];
  if (args.prometheus !== undefined) {
    if (csvDirs.length > 0 || args.demo) {
      say('--prometheus reports from the store: leave out --csv-dir and --demo');
      return 2;
    }
    return reportFromStore({ ...args, prometheus: args.prometheus }, { since, until, now }, io);
  }
  if ((csvDirs.length === 0) === !args.demo) {
    say(
      args.demo ? '--demo writes a trail of its own: leave out --csv-dir' : 'name the trail: --csv-dir DIR (or --demo for a generated one)',
    );
    return 2;
  }
  const query: Omit<ReportQuery, 'csvDirs'> = { task: args.task, host: args.host, since, until, by };
  if (!args.demo) return reportOn(csvDirs, query, args, io);
  // The generated trail is the report's own: removed when it is done, whatever happened.
  const dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-demo-'));
  // A reader gone (`report --demo | head`) ends the process at once (src/launch/main.ts): the finally
  // below would not run, and a week's trail would stay behind.
  const onExit = () => rmSync(dir, { recursive: true, force: true });
  process.once('exit', onExit);
  try {
    const rows = writeDemoHistory(dir, now);
    say(`demo: ${rows} generated rows of a 4-GPU host (not this host), in a temporary directory removed afterwards`);
    return await reportOn([dir], query, args, io);
  } finally {
    process.off('exit', onExit);
    await rm(dir, { recursive: true, force: true });
  }
}

/** The report on the trails in `csvDirs`, printed or written to --out. Returns the exit status. */
async function reportOn(
  csvDirs: string[],
  query: Omit<ReportQuery, 'csvDirs'>,
  args: ReportArgs,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream },
): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  const problem = await reportArgsProblem({ csvDirs }, query.since, query.until);
  if (problem) {
    say(problem);
    return 2;
  }
  const clash = args.out === undefined ? undefined : await outIntoTrail(args.out, csvDirs);
  if (clash) {
    say(clash);
    return 2;
  }
  const report = await buildReport({ csvDirs, ...query });
  if ('error' in report) {
    say(report.error);
    return 1;
  }
  return printReport(
    report,
    `GPU report: ${args.demo ? 'demo (generated)' : csvDirs.join(', ')}`,
    args,
    io,
    `no samples in ${csvDirs.join(', ')} match`,
  );
}

/** With --prometheus and no --since: the last week, a span any store keeps. */
const STORE_DEFAULT_SPAN_MS = 7 * 24 * 3_600_000;

/** The report from the store --prometheus names: its access checked, the report built, printed. */
async function reportFromStore(
  args: ReportArgs & { prometheus: string },
  span: { since?: number; until?: number; now: number },
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream; env?: Readonly<Record<string, string | undefined>> },
): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  const access = storeAccessOf(args, io.env ?? process.env);
  if ('problem' in access) {
    say(access.problem);
    return 2;
  }
  const until = span.until ?? span.now;
  const since = span.since ?? until - STORE_DEFAULT_SPAN_MS;
  if (since >= until) {
    say(
      `--since (${new Date(since).toISOString()}) is not before --until (${new Date(until).toISOString()}): no time is left to report on`,
    );
    return 2;
  }
  const report = await buildStoreReport(
    storeClient(access.access),
    {
      hostLabel: access.hostLabel,
      host: args.host,
      task: args.task,
      since,
      until,
      by: (args.by ?? 'hour') as ReportBy,
      concurrency: access.concurrency,
    },
    say,
    { tidyHeap: heapTidier() },
  );
  if ('error' in report) {
    say(report.error);
    return 1;
  }
  return printReport(
    report,
    `GPU report: ${access.access.url.origin}${access.access.url.pathname.replace(/\/$/, '')}`,
    args,
    io,
    'no samples match',
  );
}

/** The report printed, or written to --out. Returns the exit status. */
async function printReport(
  report: Report,
  heading: string,
  args: ReportArgs,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream },
  nothing: string,
): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  // A file that cannot be read to its end costs its rows, not the report: say which, go on, exit 0.
  for (const bad of report.badFiles) say(`skipped ${bad.file}: ${bad.error}, after ${bad.rows_read} rows`);
  for (const { file, why } of report.untrustedSidecars) say(`${file} not trusted (${why}): its archive's rows were read instead`);
  for (const { host, task, trails } of report.sharedHosts)
    say(`host ${host}, task ${task} has rows in ${trails.join(' and ')}: if one is a copy of the other, its rows count twice`);
  for (const host of new Set([...report.aggregator.series.values()].map((series) => series.host)))
    if (isDemoHost(host)) say(`host ${host} is demo data (written by --source demo: recorded GPUs, not this host's)`);
  const title = `${heading}${args.task ? `, task ${args.task}` : ''}${args.host ? `, host ${args.host}` : ''}`;
  // Made a piece at a time and written as made: a year by hour is tens of MB of text.
  const pieces =
    args.format === 'json'
      ? reportJsonPieces(report)
      : args.format === 'csv'
        ? reportCsvPieces(report)
        : args.format === 'html'
          ? [reportHtml(report, title)]
          : // On a terminal the answer comes first: a week of a fleet by hour is tens of thousands of
            // rows, which scroll the findings away. They are counted, and listed when --by asks.
            reportTablePieces(report, { periodRows: args.by !== undefined || args.out !== undefined || !isTerminal(io.out) });
  if (args.out) {
    // A path the user names: replaced whole (a reader sees the old report or the new), never
    // written through a link another user planted (src/publish/named-output.ts).
    try {
      writeNamedOutput(args.out, pieces);
    } catch (error) {
      if (!isFileError(error)) throw error;
      say(`cannot write ${args.out}: ${describeFileError(error)}`);
      return 1;
    }
  } else await writePieces(io.out, pieces);
  if (report.aggregator.series.size === 0) say(nothing);
  return 0;
}
