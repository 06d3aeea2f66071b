import { join } from 'node:path';

/**
 * Every name in a CSV directory, in one place: the writer (append.ts), the archiver (rotate.ts) and
 * the reader (read.ts) must agree on them, or the reader skips an archive and the archiver takes a
 * live file for one.
 */

/** A task's live file: `<task>.csv`. */
export const liveName = (task: string): string => `${task}.csv`;

/** A task's live file in `dir`, as messages show it. */
export const csvPath = (dir: string, task: string): string => join(dir, liveName(task));

/** The lock the CSV writer and the archiver share, a name in the CSV directory. */
export const csvLockName = (task: string): string => `.${task}.csv.lock`;

/** The lock two archivers of one directory take turns on. */
export const ARCHIVE_LOCK_NAME = '.archive.lock';

/**
 * `NAME-YYYYMMDD[-N].csv[.gz]`: an archive of task NAME rotated that day (see archiveDay). Older
 * versions named archives after their first row's day; those parse the same and sort before.
 */
export const ARCHIVE_NAME = /^(.+)-(\d{8})(?:-(\d+))?\.csv(\.gz)?$/;

/** A task name that ends like an archive (`-YYYYMMDD[-N]`): its live file would be taken for one. */
export const endsLikeArchive = (task: string): boolean => /-\d{8}(-\d+)?$/.test(task);

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

/** The plain archive of `task` from `day` with this counter: NAME-DAY.csv, then NAME-DAY-2.csv, ... */
export const archiveName = (task: string, day: string, counter: number): string => `${task}-${day}${counter > 1 ? `-${counter}` : ''}.csv`;

/** A task's live file name, unless it looks like an archive. */
export const liveTask = (file: string): string | undefined =>
  file.endsWith('.csv') && !file.startsWith('.') && !parseArchiveName(file) ? file.slice(0, -'.csv'.length) : undefined;

/** An archive's sidecar (sidecar.ts): the archive's name less .gz, plus .hours.json, so compressing the archive keeps it. */
export const sidecarName = (archive: string): string => `${archive.replace(/\.gz$/, '')}.hours.json`;

/** Whether `file` is the sidecar of an archive name. */
export const isSidecarName = (file: string): boolean =>
  file.endsWith('.csv.hours.json') && parseArchiveName(file.slice(0, -'.hours.json'.length)) !== undefined;

/** Temp files a killed archiver left: `.NAME-YYYYMMDD[-N].csv[.gz|.hours.json].<16 hex>.tmp` (safe-fs tempName of an archive or its sidecar). */
const ARCHIVE_TEMP = /^\.(.+)\.[0-9a-f]{16}\.tmp$/;

/** Whether `file` is the temp file of an archive or its sidecar (safe-fs tempName of their names). */
export const isArchiveTemp = (file: string): boolean => {
  const match = ARCHIVE_TEMP.exec(file);
  return match !== null && (parseArchiveName(match[1]!) !== undefined || isSidecarName(match[1]!));
};
