import { LABEL_NAME } from '../exposition/escape.js';
import { TIMESTAMPED_FORMATS, type TimestampedFormat } from '../exposition/timestamped.js';
import { exportText, newExportTally, type ExportPlan } from '../export/export.js';
import { ownLabelNames } from '../metrics/metrics-catalog.js';
import { writeNamedOutputStream } from '../publish/named-output.js';
import { inRange, outIntoTrail, trailFiles } from '../report/trail-files.js';
import { describeFileError, isFileError } from '../files/safe-fs.js';
import type { HistoryFile } from '../csvlog/read.js';
import { reportArgsProblem } from './arg-checks.js';
import { parseLabels } from './collect.js';
import { parseWhen } from './report.js';
import { taskNameProblem } from './task-name.js';
import { writePieces } from './write-pieces.js';
import type { ArgsOf } from './option-types.js';
import type { EXPORT_OPTIONS } from './options.js';

export type ExportArgs = ArgsOf<typeof EXPORT_OPTIONS>;

/** The options -> the plan's settings (the files are found afterwards), or the one line that says what is wrong (exit 2). */
export function parseExportArgs(args: ExportArgs, now: number): Omit<ExportPlan, 'files'> | string {
  const since = args.since === undefined ? undefined : parseWhen(args.since, now);
  const until = args.until === undefined ? now : parseWhen(args.until, now);
  if ((args.since !== undefined && since === undefined) || until === undefined)
    return '--since and --until take a time (2026-11-28T06:00:00+01:00, 2026-11-28) or a span back from now (24h, 7d)';
  const format = TIMESTAMPED_FORMATS.find((f) => f === args.format);
  if (!format) return `--format: "${args.format}" must be openmetrics (promtool) or prometheus (VictoriaMetrics' import)`;
  const taskProblem = args.task === undefined ? undefined : taskNameProblem(args.task);
  if (taskProblem) return taskProblem;
  // Every label name the series carry already (the textfile's own, and task): the host's label may be none of them.
  const own = new Set([...ownLabelNames(), 'task']);
  if (!LABEL_NAME.test(args.hostLabel) || args.hostLabel.startsWith('__'))
    return `--host-label: "${args.hostLabel}" is not a valid label name`;
  if (own.has(args.hostLabel)) return `--host-label: "${args.hostLabel}" is a label gpu-textfile sets itself`;
  const labels = parseLabels(args.label);
  if (typeof labels === 'string') return labels;
  const clash = labels.find(([key]) => key === args.hostLabel || key === 'task');
  if (clash) return `--label: "${clash[0]}" is a label export sets itself (the host's, or the task's)`;
  return { format: format as TimestampedFormat, since, until, host: args.host, task: args.task, hostLabel: args.hostLabel, labels };
}

/** `gpu-textfile export`: the CSV trail as timestamped samples, to stdout or --out. Returns the exit status. */
export async function runExport(
  args: ExportArgs,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream } = { out: process.stdout, err: process.stderr },
): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  const settings = parseExportArgs(args, Date.now());
  if (typeof settings === 'string') {
    say(settings);
    return 2;
  }
  const problem = await reportArgsProblem({ csvDirs: args.csvDir }, settings.since, settings.until);
  if (problem) {
    say(problem);
    return 2;
  }
  // Written by rename, --out over a trail's file would replace its rows (the export read from them).
  const clash = args.out === undefined ? undefined : await outIntoTrail(args.out, args.csvDir);
  if (clash) {
    say(clash);
    return 2;
  }
  const files: HistoryFile[] = [];
  for (const dir of args.csvDir) {
    const found = await trailFiles(dir, settings.task).catch((error: NodeJS.ErrnoException) => error);
    if (found instanceof Error) {
      say(`cannot read --csv-dir ${dir}: ${describeFileError(found)}`);
      return 1;
    }
    files.push(...inRange(found, settings.since, settings.until));
  }
  const tally = newExportTally();
  const text = exportText({ ...settings, files }, tally);
  try {
    if (args.out) await writeNamedOutputStream(args.out, text);
    else await writePieces(io.out, text);
  } catch (error) {
    if (!isFileError(error)) throw error;
    say(`cannot write ${args.out ?? 'stdout'}: ${describeFileError(error)}`);
    return 1;
  }
  // A file that cannot be read to its end costs its rows, not the export: said, as report says it.
  for (const bad of tally.badFiles) say(`skipped ${bad.file}: ${bad.error}, after ${bad.rows_read} rows`);
  if (tally.odd.count > 0) say(`skipped ${tally.odd.count} rows that could not be read, e.g. ${tally.odd.examples[0]}`);
  if (tally.outOfOrder > 0)
    say(
      `left out ${tally.outOfOrder} samples not after the one before them of their host and task (a clock set back, or a trail given twice)`,
    );
  say(`exported ${tally.rows} rows (${tally.collections} collections) as ${tally.samples} samples`);
  return 0;
}
