import { closeSync, constants } from 'node:fs';
import { basename, dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  UnsafeFileError,
  describeFileError,
  isFileError,
  openNoFollow,
  pinDir,
  tempName,
  tempNamePattern,
  writeAll,
  type PinnedDir,
} from '../files/safe-fs.js';
import { FILE_STEPS, type FileSteps } from '../files/file-steps.js';
import { readLock, removeIfPossible, removeIfUnchanged, removeQuietly } from './lock-file.js';
import { currentOwner, formatOwner, isAlive, parseOwner, type Owner } from './owner.js';

// A lock is a file whose one line names its owner (pid, start time, boot: see owner.ts). It is
// written whole into a temp file first and then hard-linked to the lock's name (link(2) fails with
// EEXIST when the name is taken, and never follows a link planted there), so a lock is never seen
// empty or half written: a full disk or a kill leaves at most a temp file, never a lock. A lock
// whose line is not an owner's, or whose owner is gone, is stale and removed; a reused pid is not
// its owner (start time and boot differ). This makes the old rule "take a dead pid's lock only once
// the file is 10 s old" unnecessary: it guarded against removing a successor's lock that reused the
// judged file's inode, and a successor's lock now differs in its line, which is compared too.

export type TryLock = { kind: 'held'; release: () => Promise<void> } | { kind: 'busy'; pid: number } | { kind: 'error'; message: string };

const { O_WRONLY, O_CREAT, O_EXCL } = constants;
const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;
/** "cannot create PATH: ENOSPC": the errno alone, as the message would name /proc/self/fd/N instead of the path. */
const cannotCreate = (path: string, error: unknown): string =>
  `cannot create ${path}: ${error instanceof UnsafeFileError ? error.message : (errorCode(error) ?? describeFileError(error))}`;

/** Writes our owner line into a new temp file beside the lock (O_EXCL, O_NOFOLLOW); removed again on failure. */
function writeOwnerTemp(dir: PinnedDir, name: string, owner: Owner, steps: FileSteps): string {
  const temp = tempName(name);
  const fd = openNoFollow(dir, temp, O_WRONLY | O_CREAT | O_EXCL, 0o644);
  try {
    writeAll(fd, formatOwner(owner), steps);
  } catch (error) {
    closeSync(fd);
    removeQuietly(dir, temp, steps);
    throw error;
  }
  closeSync(fd);
  return temp;
}

/**
 * One attempt at the lock file `path`: taken, held by a live owner (busy), or an error that says
 * why (the directory is missing or a link, the disk is full). Stale locks are removed on the way.
 * Synchronous file calls: a handful of them take microseconds, where each asynchronous one would be
 * a round trip through libuv's thread pool, every sample of the daemon mode.
 */
export async function tryLock(place: LockPlace, steps: FileSteps = FILE_STEPS): Promise<TryLock> {
  let opened: OpenedPlace;
  try {
    opened = openPlace(place);
  } catch (error) {
    return { kind: 'error', message: cannotCreate(shownPlace(place), error) };
  }
  const { dir, name } = opened;
  let result: TryLock | undefined;
  let temp: string | undefined;
  try {
    temp = writeOwnerTemp(dir, name, currentOwner(), steps);
    result = takeOrJudge(opened, temp, steps);
    removeQuietly(dir, temp, steps);
  } catch (error) {
    // A temp name that cannot be removed is a second link to a lock just taken: give the lock up (release
    // closes the place), and say why.
    if (result?.kind === 'held') await result.release();
    else {
      if (temp !== undefined) removeIfPossible(dir, temp, steps);
      opened.close();
    }
    return { kind: 'error', message: cannotCreate(shownPlace(place), error) };
  }
  if (result.kind !== 'held') opened.close();
  return result;
}

/**
 * Where a lock lives: a path, or a name in a directory the caller has pinned and keeps open (the CSV
 * writer and the archiver hold their directory already; /proc/self/fd/N cannot be pinned again).
 */
export type LockPlace = string | { dir: PinnedDir; name: string };

interface OpenedPlace {
  dir: PinnedDir;
  name: string;
  /** Closes the directory if this module pinned it. */
  close: () => void;
}

const shownPlace = (place: LockPlace): string => (typeof place === 'string' ? place : `${place.dir.path}/${place.name}`);

function openPlace(place: LockPlace): OpenedPlace {
  if (typeof place !== 'string') return { ...place, close: () => {} };
  const dir = pinDir(dirname(place));
  return { dir, name: basename(place), close: () => dir.close() };
}

/** Links the written temp file to the lock's name, removing stale locks in the way. */
function takeOrJudge(opened: OpenedPlace, temp: string, steps: FileSteps): TryLock {
  const { dir, name } = opened;
  // Each round either takes the lock, meets a live holder, or removed a stale lock (or saw it go):
  // then it tries again. Many rounds only under heavy contention: report busy then.
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      steps.link(dir.at(temp), dir.at(name));
      const mine = readLock(dir, name);
      return {
        kind: 'held',
        release: async () => {
          try {
            removeIfUnchanged(dir, name, mine, steps);
          } catch (error) {
            // The work is done and must not be reported lost: a lock file left here names this process,
            // which the next run (another process) judges stale. A one-off failure gets a second try.
            if (!isFileError(error)) throw error;
            removeIfPossible(dir, name, steps);
          } finally {
            opened.close();
          }
        },
      };
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
    const found = readLock(dir, name);
    if (found.kind === 'gone') continue;
    const holder = found.trusted ? parseOwner(found.text) : undefined;
    if (holder && isAlive(holder)) return { kind: 'busy', pid: holder.pid };
    // Empty, garbled, not ours, or its owner is gone: stale.
    removeIfUnchanged(dir, name, found, steps);
  }
  return { kind: 'busy', pid: 0 };
}

/** A temp file still empty this long after it was made is a taker killed before writing it. */
const UNWRITTEN_TEMP_MS = 60_000;

/**
 * Removes the temp files that takers of `path` killed mid-way left beside it: those whose owner is
 * gone, or that are still empty (or garbled) a minute on. A live taker's temp file is left alone.
 * Returns why it could not look, if it could not: a leftover costs a few bytes, never a lock.
 */
export function removeLeftoverTemps(path: string, now = Date.now()): string | undefined {
  const name = basename(path);
  const pattern = tempNamePattern(name);
  let dir: PinnedDir;
  try {
    dir = pinDir(dirname(path));
  } catch (error) {
    return `cannot clear ${path}'s temp files: ${describeFileError(error)}`;
  }
  try {
    for (const temp of dir.list().filter((entry) => pattern.test(entry))) {
      const found = readLock(dir, temp);
      if (found.kind === 'gone') continue;
      const owner = found.trusted ? parseOwner(found.text) : undefined;
      if (owner ? !isAlive(owner) : now - found.info.mtimeMs > UNWRITTEN_TEMP_MS) removeIfUnchanged(dir, temp, found, FILE_STEPS);
    }
    return undefined;
  } catch (error) {
    return `cannot clear ${path}'s temp files: ${describeFileError(error)}`;
  } finally {
    dir.close();
  }
}

/**
 * Runs `work` while holding `<path>`. The CSV writer and the archiver both take it, so a row is
 * appended either before the archive's copy or after its truncate, never in between.
 * Waits up to `waitMs` for another holder.
 */
export async function withFileLock<T>(
  place: LockPlace,
  waitMs: number,
  work: () => Promise<T>,
  steps: FileSteps = FILE_STEPS,
): Promise<T | { lockError: string }> {
  const until = Date.now() + waitMs;
  for (;;) {
    const lock = await tryLock(place, steps);
    if (lock.kind === 'error') return { lockError: lock.message };
    if (lock.kind === 'held') {
      try {
        return await work();
      } finally {
        await lock.release();
      }
    }
    if (Date.now() > until) return { lockError: `${shownPlace(place)} is held by pid ${lock.pid || '?'} for more than ${waitMs} ms` };
    await sleep(5 + Math.random() * 10);
  }
}

export const isLockError = (value: unknown): value is { lockError: string } =>
  typeof value === 'object' && value !== null && 'lockError' in value;
