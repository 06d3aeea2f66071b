import { closeSync, constants, type Dirent, fstatSync, opendirSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { access, open, opendir, readlink, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { readBoundedFd } from '../files/bounded-read.js';

// The one reader of the host's files: collect's processes and cgroups and the GPUs the kernel
// lists, doctor's checks, the Xid log, run's process tree. Its guarantees, whichever reader is
// called: every path lies under the Host's root (`--host-root`); a file is opened only when stat()
// says it is what the caller wants, and checked again once open (so no FIFO, socket or device is
// opened by mistake: opening some devices has effects of its own, a FIFO would block); a read and a
// listing are bounded; a file system error means "cannot be read here", anything else is a bug.

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

/** A path of the host given from its root: hostPath(host, 'proc/modules') is <root>/proc/modules. */
export const hostPath = (host: Pick<Host, 'root'>, path: string): string => join(host.root, path);

/** The host paths under `/`, for messages that name where a fact comes from. */
export const SYSTEM_HOST: Host = hostAt('/');

/**
 * This process's own procfs, never under --host-root: locks and descriptor paths are about the
 * processes of the machine (or container) we run in.
 */
export const OWN_PROC = '/proc';

/** An error of a system call (ENOENT, EACCES, EISDIR, EIO…): the file cannot be read here. Anything else (a bad argument) is a bug. */
const isSystemError = (error: unknown): boolean => typeof (error as NodeJS.ErrnoException | undefined)?.syscall === 'string';

/** For a diagnosis, a system error is "cannot be read here" (the check then says so): undefined. Anything else is thrown on. */
export function unreadable(error: unknown): undefined {
  if (isSystemError(error)) return undefined;
  throw error;
}

// O_NONBLOCK: open() of a FIFO would otherwise wait for a writer for ever (and at the end of the live
// kernel log read() says EAGAIN instead of waiting). O_NOCTTY: a terminal opened by root must not
// become its controlling terminal.
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** The file opened is the one stat() judged: not another swapped in between. */
const sameFile = (before: Stats, after: Stats) => after.ino === before.ino && after.dev === before.dev && after.rdev === before.rdev;

/** The most of one listing: callers look for a few names, not through a million. */
const LIST_CAP = 10_000;

// Synchronous readers, on purpose: these read small files (/proc, /etc/passwd) on collect's critical
// path, where a round trip through libuv's thread pool, and loading node:fs/promises at start-up,
// cost more than the read.

/**
 * The descriptor of `path` opened for reading, only when stat() says `wanted` (links are followed)
 * and the open file is still that file; undefined when it is not, or cannot be opened (a system error).
 */
export function openIfSync(path: string, wanted: (stats: Stats) => boolean): { fd: number; stats: Stats } | undefined {
  try {
    const before = statSync(path);
    if (!wanted(before)) return undefined;
    const fd = openSync(path, READ_FLAGS);
    const stats = fstatSync(fd);
    if (wanted(stats) && sameFile(before, stats)) return { fd, stats };
    closeSync(fd);
    return undefined;
  } catch (error) {
    return unreadable(error);
  }
}

/** The most of one host file read: /etc/passwd of a large directory-backed host stays well under it. */
const HOST_FILE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * A small host file's text, or undefined when it cannot be read (missing, unreadable: a file system
 * error), is not a regular file (a FIFO planted under --host-root would block), or is over 16 MiB.
 */
export function readTextIfAny(path: string): string | undefined {
  const opened = openIfSync(path, (stats) => stats.isFile());
  if (!opened) return undefined;
  try {
    return readBoundedFd(opened.fd, HOST_FILE_MAX_BYTES);
  } catch (error) {
    return unreadable(error);
  } finally {
    closeSync(opened.fd);
  }
}

/** A host directory's entries (at most LIST_CAP of them), sorted; none when it cannot be read. */
export function listIfAny(dir: string): string[] {
  const names: string[] = [];
  try {
    const handle = opendirSync(dir);
    try {
      for (let entry = handle.readSync(); entry && names.length < LIST_CAP; entry = handle.readSync()) names.push(entry.name);
    } finally {
      handle.closeSync();
    }
  } catch (error) {
    unreadable(error);
    return [];
  }
  return names.sort();
}

/**
 * The first `maxBytes` of a host file (a /proc environ: NUL-separated, not text), and whether it
 * went on past them; undefined when it cannot be read, or is not a regular file.
 */
export function readHeadIfAny(path: string, maxBytes: number, into?: Buffer): { bytes: Buffer; cut: boolean } | undefined {
  const opened = openIfSync(path, (stats) => stats.isFile());
  if (!opened) return undefined;
  try {
    // A caller reading many (a job's environs) passes one buffer for all: the bytes are theirs until the next read.
    const buffer = into && into.length >= maxBytes + 1 ? into.subarray(0, maxBytes + 1) : Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    for (let n: number; length < buffer.length && (n = readSync(opened.fd, buffer, length, buffer.length - length, null)) > 0; )
      length += n;
    return { bytes: buffer.subarray(0, Math.min(length, maxBytes)), cut: length > maxBytes };
  } catch (error) {
    return unreadable(error);
  } finally {
    closeSync(opened.fd);
  }
}

/** The sub-directories of a host directory (at most `max`, not sorted: in the directory's order); none when it cannot be read. */
export function listDirsIfAny(dir: string, max = LIST_CAP): string[] {
  const names: string[] = [];
  try {
    const handle = opendirSync(dir);
    try {
      for (let entry = handle.readSync(); entry && names.length < max; entry = handle.readSync())
        if (entry.isDirectory()) names.push(entry.name);
    } finally {
      handle.closeSync();
    }
  } catch (error) {
    unreadable(error);
    return [];
  }
  return names;
}

// Asynchronous readers, for doctor: its checks run side by side under one deadline.

/** The files doctor reads are a line or a table (/proc/modules); more than this is not one of them. */
export const FILE_CAP_BYTES = 256 * 1024;

/** openIfSync's promise: the file at `path` opened only when it is what `wanted` says, before and after open(). */
export async function openIf(path: string, wanted: (stats: Stats) => boolean) {
  const before = await stat(path).catch(unreadable);
  if (!before || !wanted(before)) return undefined;
  const handle = await open(path, READ_FLAGS).catch(unreadable);
  if (!handle) return undefined;
  const after = await handle.stat().catch(unreadable);
  if (after && wanted(after) && sameFile(before, after)) return handle;
  await handle.close();
  return undefined;
}

/** A regular file's first FILE_CAP_BYTES as text; undefined when missing, unreadable or not a regular file. */
export async function readIfExists(host: Pick<Host, 'root'>, path: string): Promise<string | undefined> {
  const handle = await openIf(hostPath(host, path), (s) => s.isFile());
  if (!handle) return undefined;
  try {
    // /proc and /sys files say size 0 and are read until read() returns nothing.
    const buffer = Buffer.alloc(FILE_CAP_BYTES);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return buffer.toString('utf8', 0, length);
  } catch (error) {
    return unreadable(error);
  } finally {
    await handle.close();
  }
}

/**
 * A directory's entries (at most LIST_CAP of them), in the directory's order; none when it cannot be
 * read. With `match`, only the names it takes are kept and counted: a few names looked for in a
 * directory of thousands (/usr/lib64) are found wherever the directory's order puts them.
 */
async function listDir(host: Pick<Host, 'root'>, path: string, match?: (name: string) => boolean): Promise<Dirent[]> {
  const dir = await opendir(hostPath(host, path)).catch(unreadable);
  if (!dir) return [];
  const entries: Dirent[] = [];
  try {
    for await (const entry of dir) {
      if (match && !match(entry.name)) continue;
      entries.push(entry);
      if (entries.length >= LIST_CAP) break;
    }
  } catch (error) {
    unreadable(error);
  }
  return entries;
}

/** Names in a directory (at most LIST_CAP of them; with `match`, of those it takes); none when it cannot be read. */
export const list = async (host: Pick<Host, 'root'>, path: string, match?: (name: string) => boolean): Promise<string[]> =>
  (await listDir(host, path, match)).map((entry) => entry.name);

/** A directory's entries with their types (at most LIST_CAP), sorted by name as readdir() gives them; none when it cannot be read. */
export const listEntries = async (host: Pick<Host, 'root'>, path: string): Promise<Dirent[]> =>
  (await listDir(host, path)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

/** Whether anything stands at the path (stat() follows links). */
export const exists = (host: Pick<Host, 'root'>, path: string): Promise<boolean> =>
  stat(hostPath(host, path)).then(
    () => true,
    (error: unknown) => unreadable(error) ?? false,
  );

/** The name a symlink points at (a sysfs `driver` link -> "nvidia"). */
export const linkName = (host: Pick<Host, 'root'>, path: string): Promise<string | undefined> =>
  readlink(hostPath(host, path)).then((target) => basename(target), unreadable);

/** Whether this process may read and write the path (device nodes; plain files stand in for them in test trees). */
export const readWritable = (host: Pick<Host, 'root'>, path: string): Promise<boolean> =>
  access(hostPath(host, path), constants.R_OK | constants.W_OK).then(
    () => true,
    (error: unknown) => unreadable(error) ?? false,
  );
