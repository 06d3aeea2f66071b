import { fchmodSync, fsyncSync, ftruncateSync, linkSync, renameSync, unlinkSync, writeSync } from 'node:fs';

/**
 * The calls by which the textfile, the state, the CSV trail and the locks change files, as one value:
 * production passes FILE_STEPS. It exists so a test can make each step of each write path fail in turn
 * (a full disk, a read-only file system, a failing call) and check what is left (issue 22): a failure
 * between two steps cannot be caused from outside at a chosen point, since the writer holds its files
 * open throughout. The paths are /proc/self/fd/N/NAME of a pinned directory (safe-fs).
 */
export interface FileSteps {
  /** write(2) once: bytes written (writeAll loops over it). */
  write(fd: number, bytes: Buffer, offset: number, length: number): number;
  /** write(2) once of a text's UTF-8 bytes, encoded without a Buffer of our own: bytes written (writeAll goes on with write). */
  writeText(fd: number, text: string): number;
  chmod(fd: number, mode: number): void;
  fsync(fd: number): void;
  truncate(fd: number, length: number): void;
  rename(from: string, to: string): void;
  link(from: string, to: string): void;
  unlink(path: string): void;
}

/** The real calls. */
export const FILE_STEPS: FileSteps = {
  write: (fd, bytes, offset, length) => writeSync(fd, bytes, offset, length),
  writeText: (fd, text) => writeSync(fd, text),
  chmod: fchmodSync,
  fsync: fsyncSync,
  truncate: ftruncateSync,
  rename: renameSync,
  link: linkSync,
  unlink: unlinkSync,
};
