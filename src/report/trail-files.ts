import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { historyFiles, type HistoryFile } from '../csvlog/read.js';

/**
 * The files of one trail argument: a CSV directory, or a directory of hosts' CSV directories
 * (DIR/<host>/..., as rsync or a shared file system gathers a fleet's trails): when DIR itself
 * holds no live file or archive, each directory in it that does is a trail, in name order. One
 * level only; a link to a directory is not followed (an entry of a gathered tree is data, not a
 * place to go).
 */
export async function trailFiles(dir: string, task?: string): Promise<HistoryFile[]> {
  const own = await historyFiles(dir, task);
  if (own.length > 0) return own;
  const entries = await readdir(dir, { withFileTypes: true });
  const hosts = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const files: HistoryFile[] = [];
  for (const host of hosts) files.push(...(await historyFiles(join(dir, host), task)));
  return files;
}

const HOUR = 3_600_000;

/** Midnight UTC of a YYYYMMDD day. */
const utcDay = (day: string): number => Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)));

/**
 * The files that may hold rows in [since, until), by archive names alone: nothing is opened. An
 * archive's rows were written after the archive before it was rotated, and before the archive
 * after it was (or, named by older versions after their first row's day, from that day on): so
 * they lie between the day of the archive before it and the end of the day of the one after it,
 * in the writer's zone, which may be anywhere from 14 h ahead of UTC to 12 h behind. Live files
 * are always read. Rows stamped by a clock set far wrong can lie outside that and are then missed
 * by a range that leaves their archive out (docs/report.md).
 */
export function inRange(files: readonly HistoryFile[], since?: number, until?: number): HistoryFile[] {
  if (since === undefined && until === undefined) return [...files];
  return files.filter((file, i) => {
    if (!file.archive) return true;
    const before = files[i - 1];
    const after = files[i + 1];
    const sameTrail = (other: HistoryFile | undefined) =>
      other?.archive !== undefined && other.task === file.task && join(other.path, '..') === join(file.path, '..');
    const lower = sameTrail(before) ? utcDay(before!.archive!.day) - 14 * HOUR : -Infinity;
    const upper = sameTrail(after) ? utcDay(after!.archive!.day) + 36 * HOUR : Infinity;
    return !(since !== undefined && upper < since) && !(until !== undefined && lower >= until);
  });
}
