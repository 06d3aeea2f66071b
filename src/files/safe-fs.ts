import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, unlinkSync, type Stats } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { readBounded } from './bounded-read.js';
import { FILE_STEPS, type FileSteps } from './file-steps.js';
import { OWN_PROC } from '../host/host.js';
import { makeDirs } from './make-dirs.js';
import { randomHex } from './random-hex.js';

/** `text` as a regular expression that matches it literally (a file name in a pattern of names). */
export const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The tool runs as root in directories other users may own (Debian's /var/lib/prometheus belongs to
// `prometheus`). Every write goes through this module, which guarantees:
// - a directory is opened once, without following a link, and every name in it is then resolved
//   through that descriptor (/proc/self/fd/N/NAME: Node.js has no openat), so a directory swapped
//   for a link after the check cannot redirect a write;
// - a file is opened with O_NOFOLLOW, temp files also with O_EXCL under a random name, and only a
//   regular file with one link is ever written: a planted symlink or hard link is refused, never
//   written through;
// - modes are set on the descriptor, owners never copied;
// - a short write is an error (writeAll), and a replaced file is published by rename only when all
//   of it was written.
// write-file-atomic cannot give these (it resolves the target with realpath, opens its temp file
// without O_EXCL or O_NOFOLLOW, copies the target's owner and ignores short writes), so the
// textfile, the state and the CSV trail are written here on node:fs.

/** Writes all of `data` to `fd`: a short write is retried for the rest, and an error is thrown. */
export function writeAll(fd: number, data: string | Buffer, steps: FileSteps = FILE_STEPS): void {
  let offset = 0;
  let bytes: Buffer;
  if (typeof data === 'string') {
    // A text is handed to write(2) as it is: a Buffer made of it first cost the daemon mode a tenth of
    // a millisecond a sample on the H200 host (24 KiB). Only a short write makes the Buffer, to go on.
    const length = Buffer.byteLength(data);
    if (length === 0) return;
    offset = steps.writeText(fd, data);
    if (offset <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    if (offset >= length) return;
    bytes = Buffer.from(data);
  } else bytes = data;
  while (offset < bytes.length) {
    const written = steps.write(fd, bytes, offset, bytes.length - offset);
    // write(2) returns 0 only for a zero-length request; guard against spinning all the same.
    if (written <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += written;
  }
}

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Why a file operation failed, as one line that names the path. */
export class UnsafeFileError extends Error {
  constructor(
    message: string,
    readonly code: 'ELINK' | 'ENOTREG' | 'ENOTDIR',
  ) {
    super(message);
  }
}

/** A directory held open: names below it are resolved through the descriptor, not the path. */
export interface PinnedDir {
  readonly path: string;
  /** The directory through its descriptor (/proc/self/fd/N): to list it, or to show a message with `path` instead. */
  readonly fdPath: string;
  /** A path for NAME inside the pinned directory (a single name, no slash). */
  at(name: string): string;
  /** The directory's entries, read through the descriptor. */
  list(): string[];
  close(): void;
}

const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch (error) {
    if (isFileError(error)) return false;
    throw error;
  }
}

/** A path that opens the file an open descriptor refers to, whatever its name is now (or if it has none). */
export const openFilePath = (fd: number): string => `${OWN_PROC}/self/fd/${fd}`;

/**
 * Opens a directory without following a link at its last component, creating it (and its
 * parents) first when `create` is set. Throws the errno error, or UnsafeFileError for a link.
 */
export function pinDir(path: string, options: { create?: boolean; mode?: number } = {}): PinnedDir {
  if (!isAbsolute(path)) path = resolve(path);
  const open = () => openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK);
  let fd: number;
  try {
    fd = open();
  } catch (error) {
    const code = errorCode(error);
    // With O_DIRECTORY, Linux answers ENOTDIR for a link (to a directory or not), not ELOOP.
    if (code === 'ELOOP' || (code === 'ENOTDIR' && isSymlink(path)))
      throw new UnsafeFileError(`${path} is a symbolic link; refusing to write through it`, 'ELINK');
    if (code === 'ENOTDIR') throw new UnsafeFileError(`${path} is not a directory`, 'ENOTDIR');
    if (code !== 'ENOENT' || !options.create) throw error;
    makeDirs(path, options.mode ?? 0o755);
    fd = open();
  }
  const base = openFilePath(fd);
  return {
    path,
    fdPath: base,
    at: (name) => {
      if (name === '' || name.includes('/') || name === '.' || name === '..')
        throw new Error(`not a plain file name: ${JSON.stringify(name)}`);
      return `${base}/${name}`;
    },
    list: () => readdirSync(base),
    close: () => closeSync(fd),
  };
}

/** Refuses anything but a regular file with a single link (a planted hard link to /etc/shadow). */
export function assertPlainFile(info: Stats, path: string): void {
  if (!info.isFile()) throw new UnsafeFileError(`${path} is not a regular file; refusing to write it`, 'ENOTREG');
  if (info.nlink > 1) throw new UnsafeFileError(`${path} has ${info.nlink} hard links; refusing to write it`, 'ELINK');
}

/** Opens NAME in a pinned directory for writing without following a link; only plain files. */
export function openNoFollow(dir: PinnedDir, name: string, flags: number, mode = 0o644): number {
  let fd: number;
  // O_CREAT | O_EXCL creates the file or fails, whatever is at the name (a link is not followed): what
  // opens is a new regular file with one link, so it needs no fstat, which the daemon mode would pay
  // on every sample.
  const created = (flags & (O_CREAT | O_EXCL)) === (O_CREAT | O_EXCL);
  try {
    fd = openSync(dir.at(name), flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (error) {
    if (errorCode(error) === 'ELOOP')
      throw new UnsafeFileError(`${dir.path}/${name} is a symbolic link; refusing to write through it`, 'ELINK');
    throw error;
  }
  if (created) return fd;
  try {
    assertPlainFile(fstatSync(fd), `${dir.path}/${name}`);
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Opens NAME for appending (created with `mode` when missing); only a plain file, never through a link. */
export const openForAppend = (dir: PinnedDir, name: string, mode = 0o644): number =>
  openNoFollow(dir, name, O_WRONLY | O_APPEND | O_CREAT, mode);

/**
 * A random temp name beside NAME: hidden, and not ending in .prom, so node_exporter ignores it.
 * Random, so that nobody else writing in the directory can take the name first (O_EXCL then fails).
 */
export const tempName = (name: string): string => `.${name}.${randomHex()}.tmp`;

/** Temp names tempName() gives NAME, to clear what a killed run left. */
export const tempNamePattern = (name: string): RegExp => new RegExp(`^\\.${escapeRegExp(name)}\\.[0-9a-f]{16}\\.tmp$`);

/**
 * Replaces NAME in a pinned directory with `data`: a new temp file (O_EXCL, O_NOFOLLOW, random
 * name), all of it written, mode set on the descriptor, then renamed over NAME; rename replaces a
 * link planted at NAME, never its target. On any failure the temp file is removed and NAME is left
 * as it was.
 */
export function replaceFile(
  dir: PinnedDir,
  name: string,
  data: string | Buffer | Iterable<string>,
  options: { mode?: number; fsync?: boolean; steps?: FileSteps } = {},
): void {
  const mode = options.mode ?? 0o644;
  const steps = options.steps ?? FILE_STEPS;
  const temp = tempName(name);
  const fd = openNoFollow(dir, temp, O_WRONLY | O_CREAT | O_EXCL, mode);
  try {
    try {
      // A text made a piece at a time (a year's report) is written as it is made, never held whole.
      if (typeof data === 'string' || Buffer.isBuffer(data)) writeAll(fd, data, steps);
      else for (const piece of data) writeAll(fd, piece, steps);
      // The umask may have narrowed the mode at creation.
      steps.chmod(fd, mode);
      if (options.fsync) steps.fsync(fd);
    } finally {
      closeSync(fd);
    }
    steps.rename(dir.at(temp), dir.at(name));
  } catch (error) {
    try {
      steps.unlink(dir.at(temp));
    } catch (cleanup) {
      if (errorCode(cleanup) !== 'ENOENT') throw error;
    }
    throw error;
  }
}

/** Whether `error` is a file system error (an errno code or a refusal here), not a bug. */
export const isFileError = (error: unknown): boolean => error instanceof UnsafeFileError || typeof errorCode(error) === 'string';

/**
 * Reads NAME in a pinned directory, at most `maxBytes` of it: undefined when it is missing, a
 * link, not a regular file (a FIFO planted there is opened without blocking, then refused), larger
 * than `maxBytes`, or unreadable. For files we wrote and read back, in directories others may own.
 */
export function readSmallFile(dir: PinnedDir, name: string, maxBytes: number): string | undefined {
  try {
    return readBounded(dir.at(name), maxBytes, O_NOFOLLOW);
  } catch (error) {
    if (isFileError(error)) return undefined;
    throw error;
  }
}

/** Pins PATH for reading: undefined when it is missing, a link or not a directory. */
export function pinDirIfAny(path: string): PinnedDir | undefined {
  try {
    return pinDir(path);
  } catch (error) {
    if (isFileError(error)) return undefined;
    throw error;
  }
}

/** Creates a new temp file beside NAME (O_EXCL, O_NOFOLLOW, random name) for writing; the caller links or renames it into place. */
export function openTemp(dir: PinnedDir, name: string, mode = 0o644): { temp: string; fd: number } {
  const temp = tempName(name);
  return { temp, fd: openNoFollow(dir, temp, O_WRONLY | O_CREAT | O_EXCL, mode) };
}

/** Removes NAME from a pinned directory (the name, never what a link points to); false when it was not there. */
export function removeName(dir: PinnedDir, name: string): boolean {
  try {
    unlinkSync(dir.at(name));
    return true;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return false;
    throw error;
  }
}

/** `text` with the descriptor path of `dir` shown as its real path, for messages. */
export const showPinned = (dir: PinnedDir, text: string): string => text.split(dir.fdPath).join(dir.path);

/** One line for a failed file operation. */
export function describeFileError(error: unknown): string {
  if (error instanceof UnsafeFileError) return error.message;
  // A name in a pinned directory is opened as /proc/self/fd/N/NAME: the line names the directory
  // already, so the descriptor's path is noise (and N means nothing to the reader).
  const message = (error as Error).message.replaceAll(PINNED_PREFIX, '');
  const code = errorCode(error) ?? 'error';
  // Node's own messages start with the code already ("EIO: i/o error, write").
  return message.startsWith(`${code}: `) ? message : `${code}: ${message}`;
}

/** The start of every path PinnedDir.at() gives, up to the name. */
const PINNED_PREFIX = new RegExp(`${escapeRegExp(OWN_PROC)}/self/fd/\\d+/`, 'g');
