import { readdirSync, readFileSync } from 'node:fs';
import { isFileError, makeDirs } from './safe-fs.js';

// Synchronous on purpose: these read small files (state, /proc, /etc/passwd) on collect's critical
// path, where a round trip through libuv's thread pool, and loading node:fs/promises at start-up,
// cost more than the read.

/** A small file's text, or undefined when it cannot be read. */
export function readTextIfAny(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Creates a directory and its parents if it can; what is wrong with it shows at the write that
 * follows. Not Node's recursive mkdir: it loops for ever on procfs (`/proc/nope`).
 */
export function makeDirIfPossible(dir: string, mode = 0o755): void {
  try {
    makeDirs(dir, mode);
  } catch (error) {
    // A file system error is reported by the caller's next step; anything else is a bug.
    if (!isFileError(error)) throw error;
  }
}

/** A directory's entries, or none when it cannot be read. */
export function listIfAny(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
