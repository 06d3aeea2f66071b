import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';
import { Script } from 'node:vm';
import { isFileError, pinDir, replaceFile, type PinnedDir } from '../files/safe-fs.js';

const PREFIX = 'gpu-textfile-';
const SUFFIX = '.v8cache';

/** One cache file per build of the bundle and Node.js binary: V8 checks only the source's length. */
export const cacheFileName = (buildId: string, nodeVersion: string, arch: string): string =>
  `${PREFIX}${buildId}-${nodeVersion}-${arch}${SUFFIX}`;

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/**
 * The cache file's contents, if `uid` owns it, nobody else may change it, no other name links to it
 * (a planted hard link) and `fits` accepts it (its size, its age): bytecode is code.
 */
export function readOwnCache(path: string, uid: number, fits: (info: Stats) => boolean = () => true): Buffer | undefined {
  let fd: number;
  try {
    // No link followed, and a FIFO planted at the name is opened without blocking, then refused.
    fd = openSync(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if (isFileError(error)) return undefined;
    throw error;
  }
  try {
    const info = fstatSync(fd);
    return info.isFile() && info.nlink === 1 && info.uid === uid && (info.mode & 0o022) === 0 && fits(info) ? readFileSync(fd) : undefined;
  } catch (error) {
    if (isFileError(error)) return undefined;
    throw error;
  } finally {
    closeSync(fd);
  }
}

/** Our cache files and the temp files a killed run left while writing one. */
const isOurs = (name: string): boolean =>
  (name.startsWith(PREFIX) && name.endsWith(SUFFIX)) || (name.startsWith(`.${PREFIX}`) && name.endsWith('.tmp'));

/**
 * Writes the cache beside its final name (creating the directory, as Node.js does for its own cache)
 * and renames it into place, then removes the files of other builds and Node.js versions. A cache
 * that cannot be kept is no error: the next run compiles again. Through safe-fs: the directory is
 * created without Node's recursive mkdir, which loops for ever on procfs (NODE_COMPILE_CACHE=/proc/nope).
 */
export function saveCache(path: string, data: Buffer): void {
  const name = basename(path);
  let dir: PinnedDir;
  try {
    dir = pinDir(dirname(path), { create: true });
  } catch (error) {
    if (isFileError(error)) return;
    throw error;
  }
  try {
    replaceFile(dir, name, data, { mode: 0o644 });
    for (const other of dir.list()) if (isOurs(other) && other !== name) unlinkSync(dir.at(other));
  } catch (error) {
    if (!isFileError(error)) throw error;
  } finally {
    dir.close();
  }
}

/** What loading a CommonJS bundle through the cache gave: its exports, and how to keep fresh bytecode. */
export interface CachedModule<T> {
  exports: T;
  /** Whether the cache was there and V8 took it. */
  cacheUsed: boolean;
  /** Writes the cache unless V8 took the one there; call it after the work, so it holds what ran. */
  save: () => void;
}

/** Runs the CommonJS file `bundle` as Node's loader would, compiled from the cache file if V8 accepts it. */
export function loadCached<T>(bundle: string, cacheFile: string, uid: number): CachedModule<T> {
  const cachedData = readOwnCache(cacheFile, uid);
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8')}\n})`;
  const script = new Script(wrapped, { filename: bundle, cachedData });
  const module = { exports: {} as T };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  const cacheUsed = cachedData !== undefined && script.cachedDataRejected !== true;
  // Made after the run, the cache also holds the functions compiled on the way, not only the top level.
  return { exports: module.exports, cacheUsed, save: () => cacheUsed || saveCache(cacheFile, script.createCachedData()) };
}
