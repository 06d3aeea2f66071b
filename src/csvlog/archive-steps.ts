import { fsyncSync, ftruncateSync, linkSync } from 'node:fs';
import { gzipArchive } from './compress.js';
import { removeName, replaceFile, writeAll, type PinnedDir } from '../files/safe-fs.js';

/**
 * The file operations archiving takes, one per step, in the order it takes them. Production passes
 * ARCHIVE_STEPS; this seam exists so a test can make each step fail in turn (a full file system, a
 * read-only one, a failing call) and check that no row is lost or doubled (issue 22): the order of
 * these steps is what keeps the rows safe, and a failure between two of them cannot be caused from
 * outside at a chosen point, since the archiver holds its files open throughout.
 */
export interface ArchiveSteps {
  /** Writes bytes of the live file (or the header) into the archive's temp file. */
  copy(fd: number, bytes: Buffer | string): void;
  /** Puts the archive's temp file on disk before it gets its name, and the emptied live file after the truncate. */
  fsync(fd: number): void;
  /** Gives the temp file the archive's name; fails rather than replace a file. */
  link(from: string, to: string): void;
  /** Empties the live file in place, once the archive is whole. */
  truncate(fd: number): void;
  /** Removes the new archive again when the truncate failed, so that no row is in both files. */
  discard(dir: PinnedDir, name: string): boolean;
  /** Gzips a plain archive into NAME.gz, then removes NAME. */
  compress(dir: PinnedDir, name: string): Promise<string>;
  /** Removes an archive past --keep or --max-age, and then its sidecar. */
  prune(dir: PinnedDir, name: string): boolean;
  /** Writes an archive's sidecar (temp file, fsync, rename: a reader sees the old one, none, or the new one). */
  sidecar(dir: PinnedDir, name: string, text: string): void;
}

/** The real steps. */
export const ARCHIVE_STEPS: ArchiveSteps = {
  copy: writeAll,
  fsync: fsyncSync,
  link: linkSync,
  truncate: (fd) => ftruncateSync(fd, 0),
  discard: removeName,
  compress: gzipArchive,
  prune: removeName,
  sidecar: (dir, name, text) => replaceFile(dir, name, text, { fsync: true }),
};
