import { closeSync, constants, fstatSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { Collection, GpuSample } from '../collection.js';
import { CSV_FIELDS, CSV_HEADER, csvLine, IDENTITY_COLUMNS, localIsoTime } from './columns.js';
import { jobsOnGpu } from '../host/job.js';
import { jobsCell, reservedCell } from './jobs-cell.js';
import { reservedOnGpu } from '../host/reservation.js';
import { isLockError, withFileLock } from '../locks/file-lock.js';
import { describeFileError, isFileError, openNoFollow, pinDir, showPinned, writeAll, type PinnedDir } from '../files/safe-fs.js';
import { FILE_STEPS, type FileSteps } from '../files/file-steps.js';
import { csvLockName, csvPath, endsLikeArchive, liveName } from './paths.js';

export const TASK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

interface RowContext {
  time: string;
  host: string;
  task: string;
  /** Cells after the field columns, the same on every row of this sample (`run`'s step and marks). */
  extra?: readonly string[];
}

/** Columns after the field columns (`run`'s step and marks), with this sample's cells. */
export interface ExtraColumns {
  header: readonly string[];
  cells: readonly string[];
}

const shownOrEmpty = (sample: GpuSample, query: string): string => {
  const reading = sample.readings.get(query);
  return reading?.kind === 'number' ? reading.shown : reading?.kind === 'text' ? reading.text : '';
};

// The field columns and the jobs column, empty: a failed or lost GPU's row says nothing of either.
const emptyValues = (): string[] => [...CSV_FIELDS.map(() => ''), '', ''];

/**
 * A collection -> CSV lines: one per GPU. Values stay in nvidia-smi's units; a missing value is an
 * empty cell, never 0. The jobs cell names the jobs whose processes were on the GPU, or is empty when
 * the processes were not read. A failed collection still leaves a line per GPU (or one line when no GPU is
 * known) whose status is the failure reason and whose values are empty.
 */
export function csvRows(collection: Collection, context: RowContext, knownGpus: readonly { gpu: string; uuid: string }[]): string[] {
  return csvRowCells(collection, context, knownGpus).map(csvLine);
}

/** csvRows' cells, one array per row, in the order of this version's header. */
function csvRowCells(collection: Collection, context: RowContext, knownGpus: readonly { gpu: string; uuid: string }[]): string[][] {
  const head = (gpu: string, uuid: string, name: string, status: string) => [
    context.time,
    context.host,
    context.task,
    gpu,
    uuid,
    name,
    status,
  ];
  const extra = context.extra ?? [];
  const failure = collection.health.failure;
  if (failure) {
    const gpus = knownGpus.length > 0 ? knownGpus : [{ gpu: '', uuid: '' }];
    return gpus.map((gpu) => [...head(gpu.gpu, gpu.uuid, '', failure.reason), ...emptyValues(), ...extra]);
  }
  return [
    ...collection.samples.map((sample) => [
      ...head(sample.gpu, sample.uuid, shownOrEmpty(sample, 'name'), 'ok'),
      ...CSV_FIELDS.map((field) => shownOrEmpty(sample, field.query)),
      jobsCell(collection.processes && jobsOnGpu(collection.processes.apps, sample.uuid)),
      reservedCell(collection.processes?.reservations && reservedOnGpu(collection.processes.reservations, sample)),
      ...extra,
    ]),
    ...collection.down.map((gpu) => [...head(gpu.gpu, gpu.uuid, '', gpu.reason), ...emptyValues(), ...extra]),
  ];
}

/** The one line a failed append returns: `write_failed`, where, why, and that the file kept no part of it. */
const writeFailed = (path: string, why: string): string => `write_failed: ${path}: ${why}; no row of this sample was kept`;

/**
 * Appends `lines` to NAME in a pinned directory as one write on an O_APPEND descriptor: never
 * through a link (openNoFollow refuses symlinks, hard links and non-files), on a fresh line when
 * the file does not end in one (a crash mid-write), and all or nothing: a failed or short write
 * (ENOSPC) is cut back off, so the file never keeps a partial row for the next one to run into.
 * Returns the one-line reason when it could not. Called under the lock the archiver takes too.
 */
function appendWhole(
  dir: PinnedDir,
  name: string,
  rows: readonly string[][],
  header: readonly string[],
  steps: FileSteps,
): string | undefined {
  const shown = join(dir.path, name);
  let fd: number;
  try {
    // O_RDWR, not O_WRONLY: the last byte is read to see whether the file ends on a fresh line.
    fd = openNoFollow(dir, name, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT, 0o644);
  } catch (error) {
    if (!isFileError(error)) throw error;
    return writeFailed(shown, describeFileError(error));
  }
  try {
    const size = fstatSync(fd).size;
    const lines = laidOutFor(size === 0 ? undefined : headerOf(fd, size), header, rows);
    const chunk = (size === 0 ? csvLine(header) : endsInNewline(fd, size) ? '' : '\n') + lines;
    try {
      writeAll(fd, chunk, steps);
      return undefined;
    } catch (error) {
      // Only a failed file operation is write_failed; a bug propagates (and the lock is released on the way out).
      if (!isFileError(error)) throw error;
      return writeFailed(shown, `${describeFileError(error)}${cutBack(fd, size, steps)}`);
    }
  } finally {
    closeSync(fd);
  }
}

/** A header line is this long at most (about 600 bytes today): a longer first line is not one of ours. */
const MAX_HEADER_BYTES = 16 * 1024;

/** The file's first line as header cells, if it is one of ours (it names the identity columns first). */
function headerOf(fd: number, size: number): string[] | undefined {
  const head = Buffer.alloc(Math.min(size, MAX_HEADER_BYTES));
  const text = head.toString('utf8', 0, readSync(fd, head, 0, head.length, 0));
  const end = text.indexOf('\n');
  const names = end < 0 ? [] : text.slice(0, end).split(',');
  return IDENTITY_COLUMNS.every((name, i) => names[i] === name) ? names : undefined;
}

/**
 * Rows as lines in the layout of the file they go to. A file begun by an older version keeps its
 * header until it is archived, so its rows follow that header, by column name: a column it lacks
 * (the jobs column, after an upgrade) starts with the next file, and `run`'s step and marks stay
 * under their names. Every row of a file then has its header's cells, which any CSV reader needs
 * (DuckDB refuses a row longer than its header). A first line that is not our header is left as
 * it is, and rows are written in this version's layout.
 */
function laidOutFor(fileHeader: readonly string[] | undefined, header: readonly string[], rows: readonly string[][]): string {
  if (!fileHeader || (fileHeader.length === header.length && fileHeader.every((name, i) => name === header[i]))) {
    return rows.map(csvLine).join('');
  }
  const from = fileHeader.map((name) => header.indexOf(name));
  return rows.map((cells) => csvLine(from.map((i) => (i < 0 ? '' : cells[i]!)))).join('');
}

const endsInNewline = (fd: number, size: number): boolean => {
  const last = Buffer.alloc(1);
  return readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a;
};

/**
 * Truncates back to `size` after a failed write. Only when the file grew: had someone else
 * truncated it meanwhile (logrotate's copytruncate does not take our lock), ftruncate to the old
 * size would fill it with NUL bytes. Returns '' or what went wrong, for the message.
 */
function cutBack(fd: number, size: number, steps: FileSteps): string {
  try {
    if (fstatSync(fd).size > size) steps.truncate(fd, size);
    return '';
  } catch (error) {
    if (!isFileError(error)) throw error;
    return ` (and cutting the partial row back off failed: ${describeFileError(error)})`;
  }
}

/**
 * Appends one sample to <dir>/<task>.csv (see appendWhole), under the lock the archiver takes too.
 * Writes the header first when the file is new or empty (also right after someone truncated it).
 * Returns the one-line reason when it could not.
 */
export async function appendCsvSample(
  dir: string,
  task: string,
  collection: Collection,
  options: { host: string; now: Date; knownGpus?: readonly { gpu: string; uuid: string }[]; extra?: ExtraColumns },
  steps: FileSteps = FILE_STEPS,
): Promise<string | undefined> {
  if (!TASK_NAME.test(task)) return `--task: "${task}" must be letters, digits, '.', '_' or '-'`;
  // NAME-YYYYMMDD[-N] is how archives are named: such a live file would be taken for one.
  if (endsLikeArchive(task)) return `--task: "${task}" must not end in -YYYYMMDD, the archives' suffix`;
  const context = { time: localIsoTime(options.now), host: options.host, task, extra: options.extra?.cells };
  const rows = csvRowCells(collection, context, options.knownGpus ?? []);
  const header = options.extra ? [...CSV_HEADER, ...options.extra.header] : CSV_HEADER;
  if (rows.length === 0) return undefined;
  let pinned: PinnedDir;
  try {
    pinned = pinDir(dir, { create: true });
  } catch (error) {
    if (!isFileError(error)) throw error;
    return writeFailed(csvPath(dir, task), `cannot open the CSV directory: ${describeFileError(error)}`);
  }
  try {
    // The lock too is named through the pinned directory: a directory swapped for a link cannot send it elsewhere.
    const result = await withFileLock(
      { dir: pinned, name: csvLockName(task) },
      5000,
      async () => appendWhole(pinned, liveName(task), rows, header, steps),
      steps,
    );
    return isLockError(result) ? writeFailed(csvPath(dir, task), showPinned(pinned, result.lockError)) : result;
  } finally {
    pinned.close();
  }
}
