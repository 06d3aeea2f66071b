import { lstatSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  describeFileError,
  isFileError,
  pinDir,
  pinDirIfAny,
  readSmallFile,
  removeName,
  escapeRegExp,
  replaceFile,
  tempNamePattern,
  UnsafeFileError,
  type PinnedDir,
} from '../files/safe-fs.js';
import { FILE_STEPS, type FileSteps } from '../files/file-steps.js';

// write-file-atomic is not used here: it resolves the target with realpath (a link planted at the
// file name has its target overwritten and chmodded), opens its temp file without O_EXCL or
// O_NOFOLLOW, copies the target's owner and ignores short writes. safe-fs gives the guarantees.

/** Why the textfile could not be written: a directory we refuse, or a write that did not complete. */
export interface TextfileError {
  reason: 'unsafe_directory' | 'write_failed';
  message: string;
}

/**
 * The one line that refuses a textfile directory that does not exist (a usage error), or undefined.
 * It is node_exporter's to have, not ours to make: a typo created silently would be written on for
 * ever where node_exporter never reads. `install` and the packages' units create the real one.
 */
export function missingTextfileDir(dir: string): string | undefined {
  try {
    // lstat: a link there (even a dangling one) is a name that exists; pinning refuses it with its own line.
    lstatSync(dir);
    return undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    return `--textfile-dir: ${dir} does not exist (a mistyped one would never be read); give node_exporter's --collector.textfile.directory, create it, or run gpu-textfile install`;
  }
}

/** The textfile directory pinned (never created: see missingTextfileDir), or why it cannot be written into. */
export function pinTextfileDir(dir: string): PinnedDir | TextfileError {
  try {
    return pinDir(dir);
  } catch (error) {
    if (error instanceof UnsafeFileError && error.code === 'ELINK') return { reason: 'unsafe_directory', message: error.message };
    if (!isFileError(error)) throw error;
    return { reason: 'write_failed', message: `cannot open the directory ${dir}: ${describeFileError(error)}` };
  }
}

const isTextfileError = (value: object): value is TextfileError => 'reason' in value;

/**
 * Before a run writes anything: the textfile directory exists and can be opened, and neither it nor the state directory is itself a symbolic link. Directories that other
 * users own are accepted: every write in them goes through a pinned descriptor and follows no link.
 */
export function checkDirectories(textfileDir: string, stateDir: string | undefined): string | undefined {
  const pinned = pinTextfileDir(textfileDir);
  if (isTextfileError(pinned)) return `${pinned.reason}: ${pinned.message}; nothing written`;
  pinned.close();
  if (!stateDir) return undefined;
  try {
    pinDir(stateDir).close();
  } catch (error) {
    if (error instanceof UnsafeFileError && error.code === 'ELINK') return `unsafe_directory: ${error.message}; nothing written`;
    // Missing (created at the first write) or unusable (a warning then): the state is optional.
    if (!isFileError(error)) throw error;
  }
  return undefined;
}

/**
 * Writes the exposition into node_exporter's textfile directory: a temp file with a random hidden
 * name (node_exporter reads only *.prom), all of it written, mode 0644, renamed over the file. A
 * scrape sees the old file or the new one, never half of one; a link planted at the name is
 * replaced, never followed. On failure no temp file is left and the old file stays.
 */
export function publishTextfile(dir: string, fileName: string, text: string, steps: FileSteps = FILE_STEPS): TextfileError | undefined {
  const pinned = pinTextfileDir(dir);
  if (isTextfileError(pinned)) return pinned;
  try {
    // No fsync: the file is replaced every interval, and rename alone is what keeps readers from
    // ever seeing half a file; after a power loss the next run replaces what the crash left.
    replaceFile(pinned, fileName, text, { mode: 0o644, steps });
    return undefined;
  } catch (error) {
    if (!isFileError(error)) throw error;
    return { reason: 'write_failed', message: `cannot write ${join(dir, fileName)}: ${describeFileError(error)}` };
  } finally {
    pinned.close();
  }
}

/** Names "<file>.<digits>" that earlier versions (write-file-atomic) left when killed mid-write. */
const legacyTempPattern = (fileName: string): RegExp => new RegExp(`^${escapeRegExp(fileName)}\\.\\d+$`);

/**
 * Temp files a crashed or killed run left behind (ours and the old "<file>.<digits>" ones). unlink
 * removes a link itself, never its target. Returns the names removed.
 */
export function removeStaleTemps(dir: string, fileName: string): string[] {
  const pinned = pinDirIfAny(dir);
  if (!pinned) return [];
  const ours = tempNamePattern(fileName);
  const legacy = legacyTempPattern(fileName);
  try {
    const removed: string[] = [];
    for (const entry of pinned.list().filter((name) => ours.test(name) || legacy.test(name))) {
      try {
        unlinkSync(pinned.at(entry));
        removed.push(entry);
      } catch (error) {
        // Gone already, or not a file (a directory by that name): the next run tries again.
        if (!isFileError(error)) throw error;
      }
    }
    return removed;
  } finally {
    pinned.close();
  }
}

/** Largest previous file read back: it is only searched for one sample, and the directory is not ours alone. */
const PREVIOUS_MAX_BYTES = 1024 * 1024;

/** The previous file's text, if there is a plain file of at most 1 MiB (never through a link, never blocking on a FIFO). */
export function readPrevious(dir: string, fileName: string): string | undefined {
  const pinned = pinDirIfAny(dir);
  if (!pinned) return undefined;
  try {
    return readSmallFile(pinned, fileName, PREVIOUS_MAX_BYTES);
  } finally {
    pinned.close();
  }
}

/**
 * Removes the textfile (the name, never a link's target): `run` does so when its job ends, so a
 * finished job is not shown as running. Returns the one line that says why not, if it could not.
 */
export function removeTextfile(dir: string, fileName: string): string | undefined {
  const pinned = pinDirIfAny(dir);
  if (!pinned) return undefined;
  try {
    removeName(pinned, fileName);
    return undefined;
  } catch (error) {
    if (!isFileError(error)) throw error;
    return `cannot remove ${join(dir, fileName)}: ${describeFileError(error)}`;
  } finally {
    pinned.close();
  }
}
