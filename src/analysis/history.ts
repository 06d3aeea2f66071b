import { createReadStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { CSV_HEADER } from '../csvlog/columns.js';
import { liveTask, parseArchiveName } from '../csvlog/rotate.js';

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
}

/** A history file, in the order its rows were written relative to the others. */
export interface HistoryFile {
  path: string;
  task: string;
}

/** The live <task>.csv files and their archives in `dir`, oldest data first (archives by day and counter, live last). */
export async function historyFiles(dir: string, task?: string): Promise<HistoryFile[]> {
  const entries = await readdir(dir);
  const archives = entries
    .map(parseArchiveName)
    .filter((a) => a !== undefined && (task === undefined || a.task === task))
    .sort((a, b) => a!.task.localeCompare(b!.task) || a!.day.localeCompare(b!.day) || a!.counter - b!.counter)
    .map((a) => ({ path: join(dir, a!.file), task: a!.task }));
  const live = entries
    .map((file) => ({ file, task: liveTask(file) }))
    .filter((f): f is { file: string; task: string } => f.task !== undefined && (task === undefined || f.task === task))
    .map((f) => ({ path: join(dir, f.file), task: f.task }));
  return [...archives, ...live];
}

/** Lines of a file, gunzipped when it ends in .gz, as a stream. */
function lines(path: string): AsyncIterable<string> {
  const raw = createReadStream(path);
  const input = path.endsWith('.gz') ? raw.pipe(createGunzip()) : raw;
  raw.on('error', (error) => input.destroy(error));
  return createInterface({ input, crlfDelay: Infinity });
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

// ISO 8601 with a zone: 2026-11-29T18:22:01.209+08:00 (Z accepted).
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Why rows were skipped, with the first example of each. */
export interface OddRows {
  count: number;
  examples: string[];
}

/**
 * Every row of the files, in file order: header lines anywhere are taken as headers (columns found by
 * name, so files with more columns read too), rows that do not fit are counted and skipped.
 */
export async function* readHistory(files: readonly HistoryFile[], odd: OddRows): AsyncGenerator<HistoryRow> {
  const skip = (file: string, why: string, line: string) => {
    odd.count++;
    if (odd.examples.length < 5) odd.examples.push(`${file}: ${why}: ${line.slice(0, 100)}`);
  };
  for (const file of files) {
    let columns = new Map(CSV_HEADER.map((name, i) => [name, i]));
    let pending = '';
    for await (const line of lines(file.path)) {
      const record = pending ? `${pending}\n${line}` : line;
      const cells = csvCells(record);
      if (!cells) {
        pending = record;
        continue;
      }
      pending = '';
      if (record === '') continue;
      if (cells[0] === 'time') {
        columns = new Map(cells.map((name, i) => [name, i]));
        continue;
      }
      const cell = (name: string) => cells[columns.get(name) ?? -1];
      const timeText = cell('time') ?? '';
      if (cells.length < columns.size || !TIME.test(timeText)) {
        skip(file.path, cells.length < columns.size ? `${cells.length} cells, header has ${columns.size}` : 'no ISO 8601 time with zone', record);
        continue;
      }
      yield {
        time: Date.parse(timeText),
        host: cell('host') ?? '',
        task: cell('task_id') ?? '',
        gpu: cell('gpu_id') ?? '',
        uuid: cell('gpu_uuid') ?? '',
        status: cell('status') ?? '',
        utilization: num(cell('utilization_percent')),
        memoryUsedMiB: num(cell('memory_used_mib')),
        memoryTotalMiB: num(cell('memory_total_mib')),
        powerW: num(cell('power_draw_w')),
        temperatureC: num(cell('temperature_c')),
      };
    }
    if (pending) skip(file.path, 'quoted cell never closed', pending);
  }
}
