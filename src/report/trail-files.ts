import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { isSidecarName, liveTask, parseArchiveName, sidecarName } from '../csvlog/paths.js';
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
 * The times the rows of archive `files[i]` may lie in, by the names around it (as inRange reads
 * them) and its modification time (it was written after its last row; a copy that did not keep the
 * time is newer still): a sidecar's hours outside them are not its archive's (sidecar-ranges.ts).
 */
export function archiveWindow(files: readonly HistoryFile[], i: number, mtimeMs: number): { lower: number; upper: number } {
  const file = files[i]!;
  const sameTrail = (other: HistoryFile | undefined) =>
    other?.archive !== undefined && other.task === file.task && join(other.path, '..') === join(file.path, '..');
  const before = files[i - 1];
  const after = files[i + 1];
  const lower = sameTrail(before) ? utcDay(before!.archive!.day) - 14 * HOUR : -Infinity;
  const upper = Math.min(sameTrail(after) ? utcDay(after!.archive!.day) + 36 * HOUR : Infinity, mtimeMs + 36 * HOUR);
  return { lower, upper };
}

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

/**
 * Why `out` must not be written: it is a file the report reads (the same file by device and inode:
 * a hard link, a path through a link), or it lies in one of the trails' directories under a name
 * the trail uses (a live file, an archive, a sidecar), there or not yet: the report, written by
 * rename, would replace the trail's rows or become a trail file read next time. Undefined when it
 * may be written. Links are followed here to find where `out` leads, never written through
 * (src/publish/named-output.ts refuses that).
 */
export async function outIntoTrail(out: string, csvDirs: readonly string[]): Promise<string | undefined> {
  const target = await fileId(out);
  const outDir = await realpath(dirname(resolve(out))).catch(() => undefined);
  const outName = basename(resolve(out));
  for (const dir of csvDirs) {
    const own = await historyFiles(dir).catch(() => []);
    const hosts = own.length > 0 ? [] : await hostDirs(dir);
    for (const trail of [dir, ...hosts]) {
      if (outDir !== undefined && outDir === (await realpath(trail).catch(() => undefined)) && isTrailName(outName))
        return `--out ${out} is a file of the trail ${dir} reads: written there it would replace it (or be read as rows next time); name a file outside the trail`;
      if (target === undefined) continue;
      for (const file of await historyFiles(trail).catch(() => [])) {
        const names = [file.path, ...(file.archive ? [join(dirname(file.path), sidecarName(file.archive.file))] : [])];
        for (const name of names)
          if ((await fileId(name)) === target)
            return `--out ${out} is a file of the trail ${dir} reads (it is ${name}): written there it would replace it; name a file outside the trail`;
      }
    }
  }
  return undefined;
}

/** A trail's own names: a live file, an archive or a sidecar (src/csvlog/paths.ts). */
const isTrailName = (name: string): boolean => liveTask(name) !== undefined || parseArchiveName(name) !== undefined || isSidecarName(name);

/** The directories in a gathered fleet directory (DIR/<host>/), as trailFiles takes them. */
const hostDirs = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => join(dir, e.name));

/** A file's device and inode, following links; undefined when there is none. */
const fileId = async (path: string): Promise<string | undefined> => {
  const info = await stat(path, { bigint: true }).catch(() => undefined);
  return info && `${info.dev}:${info.ino}`;
};
