import { closeSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ARCHIVE_STEPS, type ArchiveSteps } from './archive-steps.js';
import { copyTruncate } from './copy-truncate.js';
import {
  ARCHIVE_LOCK_NAME,
  archiveName,
  csvLockName,
  isArchiveTemp,
  isSidecarName,
  liveName,
  liveTask,
  parseArchiveName,
  sidecarName,
  type ArchiveFile,
} from './paths.js';
import { openArchive, readSidecar, sha256Now, sidecarText, type Sections } from './sidecar.js';
import { isLockError, withFileLock } from '../locks/file-lock.js';
import {
  describeFileError,
  isFileError,
  openFilePath,
  pinDir,
  removeName,
  showPinned,
  UnsafeFileError,
  type PinnedDir,
} from '../files/safe-fs.js';

export interface ArchiveOptions {
  /** Archives kept per task, newest first. */
  keep: number;
  /** Archives rotated (or whose newest row is) more than this many days ago are removed. */
  maxAgeDays?: number;
  compress: boolean;
  /** Leave the newest archive uncompressed (compressed on the next run), as logrotate's delaycompress. */
  delayCompress: boolean;
  /** Live files smaller than this are left alone. */
  minSize: number;
  now: Date;
  /**
   * What to write beside each archive (sidecar.ts): given by the caller, since the report's
   * per-hour state is a layer above this one. None: no sidecars are written.
   */
  sidecars?: SidecarMaker;
}

/** Makes an archive's sidecar sections from its rows, and says whether existing ones are current. */
export interface SidecarMaker {
  /** Whether sections already written hold every section, at the version, the maker would write. */
  current(sections: Sections): boolean;
  /**
   * The sections of archive `file` read at `path` (the archive held open: /proc/self/fd/N), gzip or
   * not; undefined when it has none to give.
   */
  make(path: string, gzip: boolean, file: string): Promise<Sections | undefined>;
}

/** What archiving did to one live file. */
export type ArchiveAction =
  | { kind: 'rotated'; task: string; archive: string; rows: number; unsynced?: string }
  | { kind: 'skipped'; task: string; why: 'empty' | 'below-min-size' | 'missing' }
  | { kind: 'failed'; task: string; message: string };

/** Oldest first: by day, then by counter. */
const byAge = (a: ArchiveFile, b: ArchiveFile) => a.day.localeCompare(b.day) || a.counter - b.counter;

/**
 * The day an archive is named after, YYYYMMDD: the day it is rotated (as logrotate's dateext), or
 * the day of the newest row in `tail` (the live file's end) when that is later, i.e. the writer's
 * clock was ahead of ours. Never the first row's: a wrong clock at boot must not date a file
 * of today's rows years back, where --max-age would delete it at once.
 */
export function archiveDay(tail: string, now: Date): string {
  const today = localDay(now);
  let newest: string | undefined;
  for (const match of tail.matchAll(/^(\d{4})-(\d{2})-(\d{2})T/gm)) newest = `${match[1]}${match[2]}${match[3]}`;
  return newest !== undefined && newest > today ? newest : today;
}

/** A date's local day as YYYYMMDD. */
const localDay = (date: Date): string =>
  `${date.getFullYear()}${String(date.getMonth() + 1).padStart(2, '0')}${String(date.getDate()).padStart(2, '0')}`;

/** A task's archives in a pinned directory, oldest first. */
const archivesOf = (dir: PinnedDir, task: string): ArchiveFile[] =>
  readdirSync(dir.fdPath)
    .map(parseArchiveName)
    .filter((a): a is ArchiveFile => a?.task === task)
    .sort(byAge);

/** The next free name for an archive of `task` from `day`: NAME-DAY.csv, then NAME-DAY-2.csv, ... */
const nextArchiveName = (existing: readonly ArchiveFile[], task: string, day: string): string =>
  archiveName(task, day, Math.max(0, ...existing.filter((a) => a.day === day).map((a) => a.counter)) + 1);

/**
 * Copies the live file to a new plain archive, then truncates it in place, under the writers' lock;
 * compression comes after, outside the lock (see retain).
 */
async function rotateOne(dir: PinnedDir, task: string, options: ArchiveOptions, steps: ArchiveSteps): Promise<ArchiveAction> {
  const live = join(dir.path, liveName(task));
  const existing = archivesOf(dir, task);
  const result = await withFileLock({ dir, name: csvLockName(task) }, 30_000, async (): Promise<ArchiveAction> => {
    const name = (tail: string) => nextArchiveName(existing, task, archiveDay(tail, options.now));
    const outcome = copyTruncate(dir, task, name, options, steps);
    return outcome.kind === 'copied'
      ? { kind: 'rotated', task, archive: outcome.archive, rows: outcome.rows, unsynced: outcome.unsynced }
      : { kind: 'skipped', task, why: outcome.why };
  }).catch(
    (error: unknown): ArchiveAction => ({
      kind: 'failed',
      task,
      // An UnsafeFileError's message names the file already.
      message: showPinned(dir, error instanceof UnsafeFileError ? error.message : `${live}: ${describeFileError(error)}`),
    }),
  );
  return isLockError(result) ? { kind: 'failed', task, message: showPinned(dir, result.lockError) } : result;
}

/**
 * Compresses a task's plain archives (all but the newest with --delay-compress), and removes those
 * past --keep or --max-age. Returns what it compressed and what went wrong. An archive's day is
 * when its newest row was written or later (archiveDay), so --max-age never removes a row younger
 * than that; a plain archive that cannot be compressed stays, and is tried again next time.
 */
async function retain(
  dir: PinnedDir,
  task: string,
  options: ArchiveOptions,
  steps: ArchiveSteps,
): Promise<{ compressed: string[]; problems: string[] }> {
  const problems: string[] = [];
  const compressed: string[] = [];
  if (options.compress) {
    const archives = archivesOf(dir, task);
    const newest = archives[archives.length - 1];
    for (const archive of archives.filter((a) => !a.gzip && !(options.delayCompress && a === newest))) {
      try {
        await steps.compress(dir, archive.file);
        compressed.push(archive.file);
      } catch (error) {
        problems.push(showPinned(dir, `cannot compress ${archive.file}, kept it plain: ${describeFileError(error)}`));
      }
    }
  }
  const cutoffDay =
    options.maxAgeDays === undefined ? undefined : localDay(new Date(options.now.getTime() - options.maxAgeDays * 86_400_000));
  const remaining = archivesOf(dir, task);
  const doomed = remaining.filter((a, i) => i < remaining.length - options.keep || (cutoffDay !== undefined && a.day < cutoffDay));
  for (const archive of doomed) {
    try {
      // The name only: a link planted under an archive's name is removed, never what it points to.
      steps.prune(dir, archive.file);
      // Only once the archive is gone: a sidecar alone is ignored, an archive alone reads from rows.
      if (!remaining.some((a) => a !== archive && sidecarName(a.file) === sidecarName(archive.file)))
        steps.prune(dir, sidecarName(archive.file));
    } catch (error) {
      problems.push(`cannot remove ${archive.file}: ${(error as NodeJS.ErrnoException).code}`);
    }
  }
  for (const orphan of orphanSidecars(dir, task)) {
    try {
      steps.prune(dir, orphan);
    } catch (error) {
      problems.push(`cannot remove ${orphan}: ${(error as NodeJS.ErrnoException).code}`);
    }
  }
  return { compressed, problems };
}

/** Sidecars of `task` whose archive is gone (a run killed between removing the two): nothing would ever read or remove them. */
function orphanSidecars(dir: PinnedDir, task: string): string[] {
  const own = new Set(archivesOf(dir, task).map((a) => sidecarName(a.file)));
  return readdirSync(dir.fdPath).filter(
    (name) => isSidecarName(name) && parseArchiveName(name.slice(0, -'.hours.json'.length))?.task === task && !own.has(name),
  );
}

/**
 * Writes the sidecar of each archive of `task` that has none, or one that no longer matches it
 * (compressed since, or made by an older version): the new archive, and once an older version's
 * archives. Its rows are read again, outside the writers' lock: they are safe in the archive by
 * then, and a sidecar that cannot be made or written costs only speed (report reads the rows).
 */
async function writeSidecars(dir: PinnedDir, task: string, maker: SidecarMaker, steps: ArchiveSteps): Promise<string[]> {
  const problems: string[] = [];
  for (const archive of archivesOf(dir, task)) {
    const existing = readSidecar(dir.fdPath, archive.file);
    if (typeof existing !== 'string' && maker.current(existing)) continue;
    try {
      const { fd, identity } = openArchive(dir, archive.file);
      try {
        // Read through the descriptor: the name may be a FIFO or a link to /dev/zero by now.
        const sections = await maker.make(openFilePath(fd), archive.gzip, archive.file);
        // Changed while it was read (only a hand, or a second archiver, could): no sidecar this time.
        if (sections === undefined || sha256Now(fd) !== identity.sha256) continue;
        steps.sidecar(dir, sidecarName(archive.file), sidecarText(identity, sections));
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if (!isFileError(error)) throw error;
      problems.push(
        showPinned(dir, `cannot write the sidecar of ${archive.file} (report reads its rows instead): ${describeFileError(error)}`),
      );
    }
  }
  return problems;
}

/** Temp files a killed archiver left (see isArchiveTemp). */
const leftoverTemps = (dir: PinnedDir): string[] => readdirSync(dir.fdPath).filter(isArchiveTemp);

/** Rotates one task and keeps its archives; the action names the archive as it ends up (gzipped or not). */
async function archiveTask(
  dir: PinnedDir,
  task: string,
  options: ArchiveOptions,
  steps: ArchiveSteps,
): Promise<{ action: ArchiveAction; problems: string[] }> {
  const action = await rotateOne(dir, task, options, steps);
  if (action.kind === 'failed') return { action, problems: [] };
  const { compressed, problems } = await retain(dir, task, options, steps);
  if (options.sidecars) problems.push(...(await writeSidecars(dir, task, options.sidecars, steps)));
  if (action.kind !== 'rotated') return { action, problems };
  if (action.unsynced) problems.push(`${task}.csv was truncated, but fsync failed: ${action.unsynced}`);
  return { action: compressed.includes(action.archive) ? { ...action, archive: `${action.archive}.gz` } : action, problems };
}

/** The directory, held open without following a link; undefined when it does not exist. */
function pinCsvDir(dir: string): PinnedDir | undefined | { error: string } {
  try {
    return pinDir(dir);
  } catch (error) {
    const code = error instanceof UnsafeFileError ? error.code : (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    return { error: code === 'ENOTDIR' ? `cannot read ${dir}: ENOTDIR` : `cannot read ${dir}: ${describeFileError(error)}` };
  }
}

/**
 * Rotates every live <task>.csv in `dir` the way logrotate's copytruncate does, but losing no row
 * (the writer's lock is held from copy to truncate, and only then), in bounded memory (the copy
 * goes by chunks, compression by streams, after the lock), with self-contained archives named
 * after the rotation day. Only names inside the pinned directory are opened, linked or removed;
 * a live file that is a link is refused. A directory-wide lock makes two runs take turns.
 * `steps` are the file operations, one per step (ARCHIVE_STEPS; see there why they are a parameter).
 */
export async function archiveDirectory(
  dir: string,
  options: ArchiveOptions,
  steps: ArchiveSteps = ARCHIVE_STEPS,
): Promise<{ actions: ArchiveAction[]; problems: string[] } | { error: string }> {
  const pinned = pinCsvDir(dir);
  if (pinned === undefined) return { actions: [], problems: [] };
  if ('error' in pinned) return pinned;
  try {
    const result = await withFileLock({ dir: pinned, name: ARCHIVE_LOCK_NAME }, 60_000, async () => {
      const actions: ArchiveAction[] = [];
      const problems: string[] = [];
      // Only an archiver makes these, and only under this lock: any there now is a killed run's.
      for (const temp of leftoverTemps(pinned)) {
        try {
          removeName(pinned, temp);
        } catch (error) {
          problems.push(`cannot remove ${temp}: ${(error as NodeJS.ErrnoException).code}`);
        }
      }
      // Listed under the lock: a run that waited must see the archives the one before it made.
      const tasks = readdirSync(pinned.fdPath)
        .map(liveTask)
        .filter((task): task is string => task !== undefined)
        .sort();
      for (const task of tasks) {
        const done = await archiveTask(pinned, task, options, steps);
        actions.push(done.action);
        problems.push(...done.problems);
      }
      return { actions, problems };
    });
    return isLockError(result) ? { error: showPinned(pinned, result.lockError) } : result;
  } finally {
    pinned.close();
  }
}
