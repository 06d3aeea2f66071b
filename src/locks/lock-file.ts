import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, type Stats } from 'node:fs';
import type { FileSteps } from '../files/file-steps.js';
import { isFileError, type PinnedDir } from '../files/safe-fs.js';

// Reading what is at a lock's name, and removing it: the parts of taking a lock (file-lock.ts) that
// judge and clear a file, whether the lock's or a temp file's.

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
/** An owner's line is under 100 bytes: read no more than this of whatever is at the lock's name. */
const MAX_RECORD = 256;
const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

/** What is at the lock's name: its inode and text, or why it is not a lock of ours. */
export type Found = { kind: 'gone' } | { kind: 'file'; info: Stats; text: string; trusted: boolean };

/**
 * Reads NAME without following a link and without blocking on a FIFO. Only a regular file owned
 * by us or by root is trusted: another user who can write the directory could otherwise name a
 * live process of ours (pid 1) and block every run for ever.
 */
export function readLock(dir: PinnedDir, name: string): Found {
  let fd: number;
  try {
    fd = openSync(dir.at(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return { kind: 'gone' };
    // ELOOP: a symbolic link planted at the name; ENXIO: a socket. Never ours (link(2) made ours): remove it.
    if (errorCode(error) !== 'ELOOP' && errorCode(error) !== 'ENXIO') throw error;
    return { kind: 'file', info: lstatSync(dir.at(name)), text: '', trusted: false };
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { kind: 'file', info, text: '', trusted: false };
    const buffer = Buffer.alloc(MAX_RECORD);
    const length = readSync(fd, buffer, 0, MAX_RECORD, 0);
    const trusted = info.uid === 0 || info.uid === process.geteuid?.();
    return { kind: 'file', info, text: buffer.toString('utf8', 0, length), trusted };
  } finally {
    closeSync(fd);
  }
}

/**
 * The same file as judged: inode, line and owner. An inode number alone is reused by a successor's lock
 * (ext4 hands a freed one to the next file), and a line alone can be another user's copy of a holder's.
 */
const sameFile = (a: Found, b: Found): boolean =>
  a.kind === 'file' &&
  b.kind === 'file' &&
  a.info.ino === b.info.ino &&
  a.info.dev === b.info.dev &&
  a.info.uid === b.info.uid &&
  a.text === b.text;

/** Removes NAME only while it is still the file judged (a successor may have taken the name meanwhile). */
export function removeIfUnchanged(dir: PinnedDir, name: string, judged: Found, steps: FileSteps): void {
  if (sameFile(readLock(dir, name), judged)) removeQuietly(dir, name, steps);
}

/** Removes NAME if it is there. */
export function removeQuietly(dir: PinnedDir, name: string, steps: FileSteps): void {
  try {
    steps.unlink(dir.at(name));
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}

/** Removes NAME if it can; a file error leaves it (a temp file of a few bytes: removeLeftoverTemps clears it later). */
export function removeIfPossible(dir: PinnedDir, name: string, steps: FileSteps): void {
  try {
    removeQuietly(dir, name, steps);
  } catch (error) {
    if (!isFileError(error)) throw error;
  }
}
