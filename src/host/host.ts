import { readdirSync } from 'node:fs';
import { readBounded } from '../files/bounded-read.js';
import { join, resolve } from 'node:path';

/**
 * The system the tool reads: `/`, or the host's root mounted elsewhere (`--host-root /host` in a
 * container, as node_exporter's --path.rootfs), or a fixture tree in tests. Every reader of the
 * host's files takes it; no reader names a system path of its own.
 */
export interface Host {
  root: string;
  proc: string;
  sys: string;
  dev: string;
  etcPasswd: string;
}

/** The Host rooted at `root` (default `/`). */
export function hostAt(root = '/'): Host {
  const base = resolve(root);
  return { root: base, proc: join(base, 'proc'), sys: join(base, 'sys'), dev: join(base, 'dev'), etcPasswd: join(base, 'etc/passwd') };
}

/** A file of one process in the host's procfs: processFile(host, 713, 'cgroup') is <root>/proc/713/cgroup. */
export const processFile = (host: Host, pid: number, name: string): string => join(host.proc, String(pid), name);

/** The host paths under `/`, for messages that name where a fact comes from. */
export const SYSTEM_HOST: Host = hostAt('/');

/**
 * This process's own procfs, never under --host-root: locks and descriptor paths are about the
 * processes of the machine (or container) we run in.
 */
export const OWN_PROC = '/proc';

/** An error of a system call (ENOENT, EACCES, EISDIR, EIO…): the file cannot be read here. Anything else (a bad argument) is a bug. */
const isSystemError = (error: unknown): boolean => typeof (error as NodeJS.ErrnoException | undefined)?.syscall === 'string';

// Synchronous on purpose: these read small files (/proc, /etc/passwd) on collect's critical path,
// where a round trip through libuv's thread pool, and loading node:fs/promises at start-up, cost
// more than the read.

/** The most of one host file read: /etc/passwd of a large directory-backed host stays well under it. */
const HOST_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * A small host file's text, or undefined when it cannot be read (missing, unreadable: a file system
 * error), is not a regular file (a FIFO planted under --host-root would block), or is over 16 MiB.
 */
export function readTextIfAny(path: string): string | undefined {
  try {
    return readBounded(path, HOST_FILE_MAX_BYTES);
  } catch (error) {
    if (isSystemError(error)) return undefined;
    throw error;
  }
}

/** A host directory's entries, or none when it cannot be read. */
export function listIfAny(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    if (isSystemError(error)) return [];
    throw error;
  }
}
