import { constants } from 'node:fs';
import { link, open, readFile, readdir, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CSV_HEADER, csvLine } from './columns.js';
import { csvLockPath } from './append.js';
import { isLockError, withFileLock } from '../locks/file-lock.js';

export interface ArchiveOptions {
  /** Archives kept per task, newest first. */
  keep: number;
  /** Archives whose data starts more than this many days ago are removed. */
  maxAgeDays?: number;
  compress: boolean;
  /** Leave the newest archive uncompressed (compressed on the next run), as logrotate's delaycompress. */
  delayCompress: boolean;
  /** Live files smaller than this are left alone. */
  minSize: number;
  now: Date;
}

/** What archiving did to one live file. */
export type ArchiveAction =
  | { kind: 'rotated'; task: string; archive: string; rows: number }
  | { kind: 'skipped'; task: string; why: 'empty' | 'below-min-size' | 'missing' }
  | { kind: 'failed'; task: string; message: string };

/** `NAME-YYYYMMDD[-N].csv[.gz]`: an archive of task NAME whose first row is from that day. */
export const ARCHIVE_NAME = /^(.+)-(\d{8})(?:-(\d+))?\.csv(\.gz)?$/;

export interface ArchiveFile {
  file: string;
  task: string;
  day: string;
  counter: number;
  gzip: boolean;
}

export function parseArchiveName(file: string): ArchiveFile | undefined {
  const match = ARCHIVE_NAME.exec(file);
  if (!match) return undefined;
  return { file, task: match[1]!, day: match[2]!, counter: Number(match[3] ?? 1), gzip: match[4] !== undefined };
}

/** A task's live file name, unless it looks like an archive. */
export const liveTask = (file: string): string | undefined =>
  file.endsWith('.csv') && !file.startsWith('.') && !parseArchiveName(file) ? file.slice(0, -'.csv'.length) : undefined;

/** Oldest first: by day, then by counter. */
const byAge = (a: ArchiveFile, b: ArchiveFile) => a.day.localeCompare(b.day) || a.counter - b.counter;

/** "2026-11-29T18:22:01.209+08:00,..." -> "20261129", from the first data row; else the run's local day. */
export function archiveDay(text: string, now: Date): string {
  for (const line of text.split('\n')) {
    const day = /^(\d{4})-(\d{2})-(\d{2})T/.exec(line);
    if (day) return `${day[1]}${day[2]}${day[3]}`;
  }
  return localDay(now);
}

/** A date's local day as YYYYMMDD. */
const localDay = (date: Date): string =>
  `${date.getFullYear()}${String(date.getMonth() + 1).padStart(2, '0')}${String(date.getDate()).padStart(2, '0')}`;

/** The archive's content: the live data, starting with exactly one header line. */
export function withHeader(text: string): string {
  const header = csvLine(CSV_HEADER);
  return text.startsWith(header) ? text : header + text;
}

const countRows = (text: string): number => text.split('\n').filter((line) => line !== '' && !line.startsWith('time,')).length;

/** Writes a new file whole (temp, fsync, link): never replaces an existing archive (EEXIST instead). */
async function writeDurably(path: string, data: string | Buffer): Promise<void> {
  const temp = `${path}.tmp-${process.pid}`;
  try {
    await writeFile(temp, data, { mode: 0o644, flush: true });
    await link(temp, path);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** Copies the live file to a new archive, then truncates it in place, all under the writer's lock. */
async function rotateOne(dir: string, task: string, existing: readonly ArchiveFile[], options: ArchiveOptions): Promise<ArchiveAction> {
  const live = join(dir, `${task}.csv`);
  const result = await withFileLock(csvLockPath(dir, task), 30_000, async (): Promise<ArchiveAction> => {
    const info = await stat(live).catch(() => undefined);
    if (!info) return { kind: 'skipped', task, why: 'missing' };
    if (info.size < options.minSize) return { kind: 'skipped', task, why: 'below-min-size' };
    const text = await readFile(live, 'utf8');
    const rows = countRows(text);
    if (rows === 0) return { kind: 'skipped', task, why: 'empty' };

    const day = archiveDay(text, options.now);
    const counter = Math.max(0, ...existing.filter((a) => a.day === day).map((a) => a.counter)) + 1;
    const plain = `${task}-${day}${counter > 1 ? `-${counter}` : ''}.csv`;
    const content = withHeader(text);
    const gzip = options.compress && !options.delayCompress;
    const archive = gzip ? `${plain}.gz` : plain;
    await writeDurably(join(dir, archive), gzip ? gzipSync(content) : content);

    // Truncate in place: a writer that keeps the path (or the descriptor, with O_APPEND) goes on.
    const handle = await open(live, constants.O_WRONLY);
    try {
      await handle.truncate(0);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { kind: 'rotated', task, archive, rows };
  }).catch((error: NodeJS.ErrnoException): ArchiveAction => ({ kind: 'failed', task, message: `${live}: ${error.code ?? ''} ${error.message}`.trim() }));
  return isLockError(result) ? { kind: 'failed', task, message: result.lockError } : result;
}

/** Compresses a task's plain archives except the newest, and removes those past --keep or --max-age. */
async function retain(dir: string, task: string, options: ArchiveOptions): Promise<string[]> {
  const problems: string[] = [];
  const archives = (await readdir(dir)).map(parseArchiveName).filter((a): a is ArchiveFile => a?.task === task).sort(byAge);
  const newest = archives[archives.length - 1];
  if (options.compress) {
    for (const archive of archives.filter((a) => !a.gzip && a !== newest)) {
      try {
        await writeDurably(join(dir, `${archive.file}.gz`), gzipSync(await readFile(join(dir, archive.file))));
        await unlink(join(dir, archive.file));
      } catch (error) {
        problems.push(`cannot compress ${archive.file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
      }
    }
  }
  const cutoffDay = options.maxAgeDays === undefined ? undefined : localDay(new Date(options.now.getTime() - options.maxAgeDays * 86_400_000));
  const remaining = (await readdir(dir)).map(parseArchiveName).filter((a): a is ArchiveFile => a?.task === task).sort(byAge);
  const doomed = remaining.filter((a, i) => i < remaining.length - options.keep || (cutoffDay !== undefined && a.day < cutoffDay));
  for (const archive of doomed) {
    await unlink(join(dir, archive.file)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') problems.push(`cannot remove ${archive.file}: ${error.code}`);
    });
  }
  return problems;
}

/**
 * Rotates every live <task>.csv in `dir` the way logrotate's copytruncate does, but losing no row
 * (the writer's lock is held from copy to truncate), with self-contained archives named after
 * their first row's day. A directory-wide lock makes two runs at the same moment take turns.
 */
export async function archiveDirectory(dir: string, options: ArchiveOptions): Promise<{ actions: ArchiveAction[]; problems: string[] } | { error: string }> {
  const readable = await readdir(dir).then(
    () => undefined,
    (error: NodeJS.ErrnoException) => error,
  );
  if (readable) return readable.code === 'ENOENT' ? { actions: [], problems: [] } : { error: `cannot read ${dir}: ${readable.code}` };
  const result = await withFileLock(join(dir, '.archive.lock'), 60_000, async () => {
    const actions: ArchiveAction[] = [];
    const problems: string[] = [];
    // Listed under the lock: a run that waited must see the archives the one before it made.
    const tasks = (await readdir(dir)).map(liveTask).filter((task): task is string => task !== undefined).sort();
    for (const task of tasks) {
      const archives = (await readdir(dir)).map(parseArchiveName).filter((a): a is ArchiveFile => a?.task === task);
      const action = await rotateOne(dir, task, archives, options);
      actions.push(action);
      if (action.kind !== 'failed') problems.push(...(await retain(dir, task, options)));
    }
    return { actions, problems };
  });
  return isLockError(result) ? { error: result.lockError } : result;
}
