import { closeSync, fstatSync, openSync, readFileSync, statSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export type TryLock = { kind: 'held'; release: () => Promise<void> } | { kind: 'busy'; pid: number } | { kind: 'error'; message: string };

/** Removes a file, if it is still there. */
const removeQuietly = (path: string): void => {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
};

/**
 * One attempt at a pid lock file created with O_EXCL. A lock is taken over only when its process
 * is gone *and* the file is older than `staleAfterMs`: a holder that just released and exited
 * leaves a fresh file behind for its successor, which must not be mistaken for a stale one.
 * Synchronous file calls: a handful of them take microseconds, where each asynchronous one would be
 * a round trip through libuv's thread pool, every sample of the long-running mode.
 */
export async function tryLock(path: string, staleAfterMs: number): Promise<TryLock> {
  // Each round either takes the lock, meets a live holder, or saw the file go away (released or
  // stale): then it tries again. Many rounds only under heavy contention: report busy then.
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      try {
        writeSync(fd, `${process.pid}\n`);
      } finally {
        closeSync(fd);
      }
      return { kind: 'held', release: async () => removeQuietly(path) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') return { kind: 'error', message: `cannot create ${path}: ${code}` };
    }
    let text: string;
    let info: Stats;
    try {
      const fd = openSync(path, 'r');
      try {
        text = readFileSync(fd, 'utf8');
        info = fstatSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile: try again
      return { kind: 'error', message: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code}` };
    }
    const pid = Number(text.trim());
    const old = Date.now() - info.mtimeMs > staleAfterMs;
    if (!(Number.isInteger(pid) && pid > 0) || alive(pid) || !old) return { kind: 'busy', pid: pid || 0 };
    // Stale: remove it, but only if the path still names the file we judged.
    const now = statSync(path, { throwIfNoEntry: false });
    if (now?.ino === info.ino) removeQuietly(path);
  }
  return { kind: 'busy', pid: 0 };
}

/**
 * Runs `work` while holding `<path>`. The CSV writer and the archiver both take it, so a row is
 * appended either before the archive's copy or after its truncate, never in between.
 * Waits up to `waitMs` for another holder.
 */
export async function withFileLock<T>(path: string, waitMs: number, work: () => Promise<T>): Promise<T | { lockError: string }> {
  const until = Date.now() + waitMs;
  for (;;) {
    const lock = await tryLock(path, 10_000);
    if (lock.kind === 'error') return { lockError: lock.message };
    if (lock.kind === 'held') {
      try {
        return await work();
      } finally {
        await lock.release();
      }
    }
    if (Date.now() > until) return { lockError: `${path} is held by pid ${lock.pid || '?'} for more than ${waitMs} ms` };
    await sleep(5 + Math.random() * 10);
  }
}

export const isLockError = (value: unknown): value is { lockError: string } =>
  typeof value === 'object' && value !== null && 'lockError' in value;
