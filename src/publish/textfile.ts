import { mkdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { listIfAny, readTextIfAny } from '../files.js';

/**
 * Writes the exposition into node_exporter's textfile directory: a temp file in the same directory
 * (write-file-atomic names it "<file>.<number>", which node_exporter ignores since it does not end in
 * .prom), mode 0644, rename. A scrape sees the old file or the new one, never half of one.
 */
export function publishTextfile(dir: string, fileName: string, text: string): string | undefined {
  // The synchronous form: a 20 KB write blocks for well under a millisecond, while the asynchronous
  // one sends each of its ten file operations through libuv's thread pool, which costs more CPU than
  // the write itself. No fsync: the file is replaced every interval, and rename alone is what keeps
  // readers from ever seeing half a file; after a power loss the next run replaces what the crash left.
  const write = () => writeFileAtomic.sync(join(dir, fileName), text, { mode: 0o644, fsync: false });
  try {
    try {
      write();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // The directory is created on first use only: a long-running collector writes several times a second.
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      write();
    }
    return undefined;
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    return `cannot write ${join(dir, fileName)}: ${e.code ?? ''} ${e.message}`.trim();
  }
}

/** Temp files a crashed or killed run left behind: "<file>.<digits>". */
export function removeStaleTemps(dir: string, fileName: string): string[] {
  const pattern = new RegExp(`^${fileName.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.\\d+$`);
  const entries = listIfAny(dir);
  const stale = entries.filter((entry) => pattern.test(entry));
  for (const entry of stale) {
    try {
      unlinkSync(join(dir, entry));
    } catch {
      // gone already, or not ours to remove: the next run tries again
    }
  }
  return stale;
}

/** The previous file's text, if there is one. */
export const readPrevious = (dir: string, fileName: string): string | undefined => readTextIfAny(join(dir, fileName));
