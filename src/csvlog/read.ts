import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import { CSV_HEADER, csvColumnOf, JOBS_COLUMN, RESERVED_COLUMN, type IdentityColumn } from './columns.js';
import { parseJobsCell, parseReservedCell, type RowJobs, type RowReserved } from './jobs-cell.js';
import { liveTask, parseArchiveName } from './paths.js';

/** One row of the CSV trail, read back. Values in nvidia-smi's units; absent when the cell was empty. */
export interface HistoryRow {
  /** Milliseconds since the epoch (the row's own zone offset applied). */
  time: number;
  host: string;
  task: string;
  gpu: string;
  uuid: string;
  status: string;
  utilization?: number;
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
  powerW?: number;
  temperatureC?: number;
  /** Who held the GPU (the `jobs` column); absent where the row does not say (an older file, processes not read). */
  jobs?: RowJobs;
  /** Who reserved the GPU (the `reserved` column), running on it or not; absent where the row does not say. */
  reserved?: RowReserved;
}

/** A history file, in the order its rows were written relative to the others. */
export interface HistoryFile {
  path: string;
  task: string;
  /** An archive's name and day (YYYYMMDD, the day it was rotated or, by older versions, of its first row); absent for a live file. */
  archive?: { file: string; day: string };
  /** Read as gzip or not whatever `path` ends in (a path of /proc/self/fd, to an archive held open); by its suffix otherwise. */
  gzip?: boolean;
}

/** The live <task>.csv files and their archives in `dir`, oldest data first (archives by day and counter, live last). */
export async function historyFiles(dir: string, task?: string): Promise<HistoryFile[]> {
  const entries = await readdir(dir);
  const present = new Set(entries);
  const archives = entries
    .map(parseArchiveName)
    // NAME.csv.gz beside NAME.csv: a compression stopped between its rename and the removal of the
    // plain file; the same rows twice, so the plain one (whole: it was never written after) alone.
    .filter((a) => a !== undefined && (task === undefined || a.task === task) && !(a.gzip && present.has(a.file.slice(0, -'.gz'.length))))
    .sort((a, b) => a!.task.localeCompare(b!.task) || a!.day.localeCompare(b!.day) || a!.counter - b!.counter)
    .map((a) => ({ path: join(dir, a!.file), task: a!.task, archive: { file: a!.file, day: a!.day } }));
  const live = entries
    .map((file) => ({ file, task: liveTask(file) }))
    .filter((f): f is { file: string; task: string } => f.task !== undefined && (task === undefined || f.task === task))
    .map((f) => ({ path: join(dir, f.file), task: f.task }));
  return [...archives, ...live];
}

/** Longest line taken as a row (a real one is ~200 bytes): a file without newlines must not fill memory. */
const MAX_LINE = 64 * 1024;

/** One line of a file; `tooLong` when it was cut at MAX_LINE (its rest dropped unread into memory). */
export interface Line {
  text: string;
  tooLong: boolean;
}

/**
 * Lines of a byte stream, a chunk's worth at a time, pulled as the consumer asks (the stream's own
 * async iterator, so at most a chunk is read ahead and memory stays flat however slow the
 * aggregation); CRLF taken as LF.
 */
export async function* splitLines(chunks: AsyncIterable<Buffer>, maxLine = MAX_LINE): AsyncGenerator<Line[]> {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  let tooLong = false;
  const done = (text: string): Line => {
    const line = tooLong || !text.endsWith('\r') ? text : text.slice(0, -1);
    // A line may end in the chunk it grew too long in, before the check on what is left over below.
    return line.length > maxLine ? { text: line.slice(0, maxLine), tooLong: true } : { text: line, tooLong };
  };
  for await (const chunk of chunks) {
    const text = decoder.write(chunk);
    const lines: Line[] = [];
    let start = 0;
    for (let end = text.indexOf('\n'); end !== -1; end = text.indexOf('\n', start)) {
      lines.push(done(tooLong ? partial : partial + text.slice(start, end)));
      partial = '';
      tooLong = false;
      start = end + 1;
    }
    if (!tooLong) partial += text.slice(start);
    if (partial.length > maxLine) {
      partial = partial.slice(0, maxLine);
      tooLong = true;
    }
    if (lines.length) yield lines;
  }
  const rest = tooLong ? partial : partial + decoder.end();
  if (rest !== '') yield [done(rest)];
}

/** The bytes of a file, gunzipped when it is gzip (by default, when it ends in .gz), as a stream read on demand. */
function fileChunks(path: string, gzip = path.endsWith('.gz')): AsyncIterable<Buffer> {
  const raw = createReadStream(path);
  if (!gzip) return raw;
  const gunzip = createGunzip();
  raw.on('error', (error) => gunzip.destroy(error));
  return raw.pipe(gunzip);
}

/** A history file that could not be read to its end: why, and how many rows it gave before that. */
export interface BadFile {
  file: string;
  error: string;
  rows_read: number;
}

/** Why a file stopped, for people; undefined for an error that is not about the file (a bug: rethrown). */
function fileError(error: NodeJS.ErrnoException): string | undefined {
  if (error.code === 'Z_BUF_ERROR') return `truncated gzip (${error.message})`;
  if (error.code === 'Z_DATA_ERROR') return `corrupt, or not gzip (${error.message})`;
  if (typeof error.code === 'string' && /^(E[A-Z]+|Z_[A-Z_]+)$/.test(error.code)) return error.code;
  return undefined;
}

/** RFC 4180 cells of one record; `undefined` while a quoted cell is still open (it continues on the next line). */
export function csvCells(record: string): string[] | undefined {
  if (!record.includes('"')) return record.split(',');
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < record.length; i++) {
    const c = record[i]!;
    if (quoted) {
      if (c === '"' && record[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
    } else cell += c;
  }
  if (quoted) return undefined;
  cells.push(cell);
  return cells;
}

const num = (text: string | undefined): number | undefined => {
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
};

/** Digits a cell may have for decimalAt's exact path: its integer stays below 2^53. */
const EXACT_DIGITS = 15;

/**
 * The number in `text` from `from` to `to`, as `num` reads that cell, without cutting it out: a
 * trail's cells are plain decimals (617.81), and their digits as one integer divided once by a
 * power of ten is the correctly rounded double (both exact below 2^53 and 10^22), which is what
 * Number() gives. Anything else (a sign, an exponent, [N/A], too many digits) goes through num.
 */
export function decimalAt(text: string, from: number, to: number): number | undefined {
  if (to - from > EXACT_DIGITS) return num(text.slice(from, to));
  let digits = 0;
  let value = 0;
  let scale = 1;
  let dot = false;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      value = value * 10 + (c - 48);
      digits++;
      if (dot) scale *= 10;
    } else if (c === 46 && !dot) dot = true;
    else return num(text.slice(from, to));
  }
  if (digits === 0) return num(text.slice(from, to));
  return scale === 1 ? value : value / scale;
}

/**
 * The cells of one record, found once and cut out only when asked for: a report of a fleet reads
 * millions of rows, of whose cells it needs most but not all, and most only as numbers. Reused
 * from row to row; a record with a quote goes through csvCells.
 */
class RecordCells {
  private record = '';
  private quoted: string[] | undefined;
  /** Where each cell ends (the comma after it, or the record's end); cell k starts after ends[k - 1]. */
  private ends: number[] = [];
  count = 0;

  /** Takes a record; false while a quoted cell is still open (it continues on the next line). */
  read(record: string): boolean {
    this.record = record;
    if (record.includes('"')) {
      this.quoted = csvCells(record);
      this.count = this.quoted?.length ?? 0;
      return this.quoted !== undefined;
    }
    this.quoted = undefined;
    let n = 0;
    for (let at = record.indexOf(','); at !== -1; at = record.indexOf(',', at + 1)) this.ends[n++] = at;
    this.ends[n++] = record.length;
    this.count = n;
    return true;
  }

  /** No cells (a record too long to look into). */
  clear(): void {
    this.record = '';
    this.quoted = undefined;
    this.count = 0;
  }

  /** Cell k's text; undefined past the last cell (k -1: a column the header lacks). */
  text(k: number): string | undefined {
    if (k < 0 || k >= this.count) return undefined;
    if (this.quoted) return this.quoted[k];
    return this.record.slice(k === 0 ? 0 : this.ends[k - 1]! + 1, this.ends[k]);
  }

  /** Cell k as a number, as num reads it. */
  number(k: number): number | undefined {
    if (k < 0 || k >= this.count) return undefined;
    if (this.quoted) return num(this.quoted[k]);
    return decimalAt(this.record, k === 0 ? 0 : this.ends[k - 1]! + 1, this.ends[k]!);
  }

  /** Every cell (a header). */
  all(): string[] {
    return Array.from({ length: this.count }, (_, k) => this.text(k)!);
  }
}

// ISO 8601 with a zone: 2026-11-29T18:22:01.209+08:00 (Z accepted).
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Why rows were skipped, with the first example of each. */
export interface OddRows {
  count: number;
  examples: string[];
}

/**
 * Every row of the files, in file order: header lines anywhere are taken as headers (columns found by
 * name, so files with more columns read too), rows that do not fit are counted and skipped. A file
 * that cannot be read to its end (truncated or corrupt gzip, unreadable) is listed in `badFiles` with
 * the rows it gave until then, which are kept: the next file is read all the same.
 */
export async function* readHistory(files: readonly HistoryFile[], odd: OddRows, badFiles: BadFile[] = []): AsyncGenerator<HistoryRow> {
  for await (const rows of readHistoryBatches(files, odd, badFiles)) yield* rows;
}

/**
 * readHistory's rows a chunk's worth at a time (about 300 rows of 64 KiB): what a reader of
 * millions of rows takes, since an async generator pays a turn of the event loop per value.
 */
export async function* readHistoryBatches(
  files: readonly HistoryFile[],
  odd: OddRows,
  badFiles: BadFile[] = [],
): AsyncGenerator<HistoryRow[]> {
  const skip = (file: string, why: string, line: string) => {
    odd.count++;
    if (odd.examples.length < 5) odd.examples.push(`${file}: ${why}: ${line.slice(0, 100)}`);
  };
  for (const file of files) {
    let rows = 0;
    const parse = rowParser(file.path, skip);
    try {
      for await (const lines of splitLines(fileChunks(file.path, file.gzip))) {
        const batch: HistoryRow[] = [];
        for (const line of lines) {
          const row = parse(line);
          if (row) batch.push(row);
        }
        rows += batch.length;
        if (batch.length > 0) yield batch;
      }
      parse(undefined);
    } catch (error) {
      const why = fileError(error as NodeJS.ErrnoException);
      if (why === undefined) throw error;
      badFiles.push({ file: file.path, error: why, rows_read: rows });
    }
  }
}

/** The value columns a HistoryRow holds, named by the field table (a renamed column cannot leave the reader behind). */
const VALUE_COLUMNS = {
  utilization: csvColumnOf('utilization.gpu'),
  memoryUsedMiB: csvColumnOf('memory.used'),
  memoryTotalMiB: csvColumnOf('memory.total'),
  powerW: csvColumnOf('power.draw'),
  temperatureC: csvColumnOf('temperature.gpu'),
};

/** Lines of one file -> rows, one at a time (`undefined` at the end of the file); odd lines go to `skip`. */
function rowParser(
  path: string,
  skip: (file: string, why: string, line: string) => void,
): (line: Line | undefined) => HistoryRow | undefined {
  let columns = new Map(CSV_HEADER.map((name, i) => [name, i]));
  // Where each column this reader takes is, found once per header rather than once per cell.
  const at = () => {
    const index = (name: string) => columns.get(name) ?? -1;
    const identity = (name: IdentityColumn) => index(name);
    return {
      time: identity('time'),
      host: identity('host'),
      task: identity('task_id'),
      gpu: identity('gpu_id'),
      uuid: identity('gpu_uuid'),
      status: identity('status'),
      utilization: index(VALUE_COLUMNS.utilization),
      memoryUsedMiB: index(VALUE_COLUMNS.memoryUsedMiB),
      memoryTotalMiB: index(VALUE_COLUMNS.memoryTotalMiB),
      powerW: index(VALUE_COLUMNS.powerW),
      temperatureC: index(VALUE_COLUMNS.temperatureC),
      jobs: index(JOBS_COLUMN),
      reserved: index(RESERVED_COLUMN),
    };
  };
  let index = at();
  // The GPUs of one sample share its time: checked and parsed once.
  let lastTimeText: string | undefined;
  let lastTime = 0;
  let pending = '';
  const cells = new RecordCells();
  return (line) => {
    if (line === undefined) {
      if (pending) skip(path, 'quoted cell never closed', pending);
      return undefined;
    }
    if (line.tooLong) {
      skip(path, `line longer than ${MAX_LINE} bytes`, line.text);
      pending = '';
      return undefined;
    }
    const record = pending ? `${pending}\n${line.text}` : line.text;
    // A quoted cell left open must not gather the rest of the file: past MAX_LINE it is an odd row.
    if (record.length > MAX_LINE) cells.clear();
    else if (!cells.read(record)) {
      pending = record;
      return undefined;
    }
    pending = '';
    if (record === '') return undefined;
    if (cells.text(0) === CSV_HEADER[0]) {
      columns = new Map(cells.all().map((name, i) => [name, i]));
      index = at();
      return undefined;
    }
    const timeText = cells.text(index.time) ?? '';
    // A file begun before the jobs column keeps its header, and rows appended to it follow that
    // header (src/csvlog/append.ts): its jobs are not known.
    const jobsText = cells.text(index.jobs);
    if (cells.count < columns.size || (timeText !== lastTimeText && !TIME.test(timeText))) {
      skip(path, cells.count < columns.size ? `${cells.count} cells, header has ${columns.size}` : 'no ISO 8601 time with zone', record);
      return undefined;
    }
    if (timeText !== lastTimeText) {
      lastTimeText = timeText;
      lastTime = Date.parse(timeText);
    }
    const row: HistoryRow = {
      time: lastTime,
      host: cells.text(index.host) ?? '',
      task: cells.text(index.task) ?? '',
      gpu: cells.text(index.gpu) ?? '',
      uuid: cells.text(index.uuid) ?? '',
      status: cells.text(index.status) ?? '',
      utilization: cells.number(index.utilization),
      memoryUsedMiB: cells.number(index.memoryUsedMiB),
      memoryTotalMiB: cells.number(index.memoryTotalMiB),
      powerW: cells.number(index.powerW),
      temperatureC: cells.number(index.temperatureC),
    };
    if (jobsText) row.jobs = parseJobsCell(jobsText);
    const reservedText = cells.text(index.reserved);
    if (reservedText) row.reserved = parseReservedCell(reservedText);
    return row;
  };
}
