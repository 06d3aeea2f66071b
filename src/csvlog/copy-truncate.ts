import { closeSync, constants, fchmodSync, fstatSync, readSync } from 'node:fs';
import type { ArchiveSteps } from './archive-steps.js';
import { CSV_HEADER, csvLine } from './columns.js';
import { liveName } from './paths.js';
import { describeFileError, isFileError, openNoFollow, openTemp, removeName, type PinnedDir } from '../files/safe-fs.js';

/** What copy-and-truncate did to one live file. */
export type CopyOutcome =
  | { kind: 'copied'; archive: string; rows: number; unsynced?: string }
  | { kind: 'skipped'; why: 'empty' | 'below-min-size' | 'missing' };

/** Bytes copied per read: memory stays at this however large the live file is. */
const CHUNK = 1 << 20;
/** How much of the file's end is read to find its newest row's day. */
const TAIL = 1 << 16;

const HEADER = Buffer.from(csvLine(CSV_HEADER));

/** Up to `length` bytes of `fd` from `position`. */
function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, buffer, done, length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return buffer.subarray(0, done);
}

const countNewlines = (bytes: Buffer): number => {
  let count = 0;
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) count++;
  return count;
};

/**
 * Copies all of `fd` to `out` by CHUNK, reading until end of file (so a row appended during the
 * copy by a writer outside our lock is copied too). Returns the newlines copied and the last byte.
 */
function copyAll(fd: number, out: number, steps: ArchiveSteps): { newlines: number; last: number | undefined } {
  const buffer = Buffer.alloc(CHUNK);
  let newlines = 0;
  let last: number | undefined;
  for (let position = 0; ; ) {
    const n = readSync(fd, buffer, 0, CHUNK, position);
    if (n === 0) return { newlines, last };
    const bytes = buffer.subarray(0, n);
    steps.copy(out, bytes);
    newlines += countNewlines(bytes);
    last = bytes[n - 1];
    position += n;
  }
}

/**
 * Writes the archive NAME from the live file `fd`: a new temp file (O_EXCL, O_NOFOLLOW) that
 * starts with exactly one header and ends on a newline, fsynced, then linked to NAME, which fails
 * rather than replace an existing file. Returns the rows copied. On failure nothing is left behind.
 */
function writeArchive(dir: PinnedDir, name: string, fd: number, startsWithHeader: boolean, mode: number, steps: ArchiveSteps): number {
  const { temp, fd: out } = openTemp(dir, name, mode);
  try {
    try {
      // Someone else's truncate, or an old writer, may have left rows without a header.
      if (!startsWithHeader) steps.copy(out, HEADER);
      const { newlines, last } = copyAll(fd, out, steps);
      // A crash mid-write can leave the last row without its newline: end the archive on one.
      const cut = last !== undefined && last !== 0x0a;
      if (cut) steps.copy(out, '\n');
      // The umask may have narrowed the mode at creation.
      fchmodSync(out, mode);
      steps.fsync(out);
      steps.link(dir.at(temp), dir.at(name));
      return newlines + (cut ? 1 : 0) - (startsWithHeader ? 1 : 0);
    } finally {
      closeSync(out);
    }
  } finally {
    removeName(dir, temp);
  }
}

/**
 * fsync after the truncate, so that a crash cannot bring the copied rows back beside their archive.
 * The truncate is done by then: a failure here is a warning, not a reason to undo the rotation.
 */
function syncError(fd: number, steps: ArchiveSteps): string | undefined {
  try {
    steps.fsync(fd);
    return undefined;
  } catch (error) {
    return describeFileError(error);
  }
}

/**
 * Removes the archive just made when the live file could not be truncated, so that no row is in both.
 * If that fails too (a file system gone read-only), the rows are in both: the error says so and names
 * the archive, which must be removed by hand before the next run archives the same rows again.
 */
function discardArchive(dir: PinnedDir, archive: string, truncateError: unknown, steps: ArchiveSteps): void {
  try {
    steps.discard(dir, archive);
  } catch (error) {
    if (!isFileError(error)) throw error;
    const why = `${(truncateError as Error).message}; removing ${archive} again failed too (${describeFileError(error)}): its rows are in both files, remove ${archive} before the next run archives them again`;
    throw Object.assign(new Error(why), { code: (truncateError as NodeJS.ErrnoException).code });
  }
}

/**
 * Rotates <task>.csv in a pinned directory, the way logrotate's copytruncate does; the caller holds
 * the writers' lock. The live file is opened without following a link and must be a plain file
 * with one link (else UnsafeFileError: a planted link is refused, its target never read or
 * truncated). It is copied by chunks into an archive named `archiveName(the newest row's day)`,
 * and truncated only once the archive is whole on disk. Every failure throws and leaves the live
 * file untouched: if the truncate itself fails, the new archive is removed again, so no row is in
 * both files (see discardArchive for when that fails too).
 */
export function copyTruncate(
  dir: PinnedDir,
  task: string,
  archiveName: (newestRows: string) => string,
  options: { minSize: number },
  steps: ArchiveSteps,
): CopyOutcome {
  let fd: number;
  try {
    // O_RDWR: read to copy, then ftruncate. O_NONBLOCK (from openNoFollow): a FIFO planted here cannot hang us.
    fd = openNoFollow(dir, liveName(task), constants.O_RDWR);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'skipped', why: 'missing' };
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (info.size < options.minSize) return { kind: 'skipped', why: 'below-min-size' };
    const head = readAt(fd, 0, HEADER.length);
    const startsWithHeader = head.equals(HEADER);
    if (info.size === 0 || (startsWithHeader && info.size === HEADER.length)) return { kind: 'skipped', why: 'empty' };
    const tail = readAt(fd, Math.max(0, info.size - TAIL), TAIL).toString('utf8');
    const archive = archiveName(tail);
    const rows = writeArchive(dir, archive, fd, startsWithHeader, info.mode & 0o644, steps);
    try {
      // In place: a writer that keeps the path (or the descriptor, with O_APPEND) goes on.
      steps.truncate(fd);
    } catch (error) {
      discardArchive(dir, archive, error, steps);
      throw error;
    }
    return { kind: 'copied', archive, rows, unsynced: syncError(fd, steps) };
  } finally {
    closeSync(fd);
  }
}
