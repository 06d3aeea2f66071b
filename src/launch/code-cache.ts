import { closeSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

const PREFIX = 'gpu-textfile-';
const SUFFIX = '.v8cache';

/** One cache file per build of the bundle and Node.js binary: V8 checks only the source's length. */
export const cacheFileName = (buildId: string, nodeVersion: string, arch: string): string => `${PREFIX}${buildId}-${nodeVersion}-${arch}${SUFFIX}`;

/** The cache file's contents, if `uid` owns it and nobody else may change it: bytecode is code. */
export function readOwnCache(path: string, uid: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return undefined;
  }
  try {
    const info = fstatSync(fd);
    return info.isFile() && info.uid === uid && (info.mode & 0o022) === 0 ? readFileSync(fd) : undefined;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the cache beside its final name (creating the directory, as Node.js does for its own cache)
 * and renames it into place, then removes the files of other builds and Node.js versions. A cache
 * that cannot be kept is no error: the next run compiles again.
 */
export function saveCache(path: string, data: Buffer): void {
  const temp = `${path}.${process.pid}`;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
    writeFileSync(temp, data, { mode: 0o644, flag: 'wx' });
    renameSync(temp, path);
    const dir = dirname(path);
    for (const name of readdirSync(dir)) {
      if (name.startsWith(PREFIX) && name.endsWith(SUFFIX) && join(dir, name) !== path) unlinkSync(join(dir, name));
    }
  } catch {
    try {
      unlinkSync(temp);
    } catch {
      // never created, or renamed into place already
    }
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
