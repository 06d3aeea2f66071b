import { constants, type Stats } from 'node:fs';
import { access, open, opendir, readlink, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Host as HostRoots } from '../host/host.js';

// Doctor's readers of the host's files: every path is relative to the Host's root (`/`, a tree
// standing in for it in tests, a mounted disk image, /host in a container).
type Host = Pick<HostRoots, 'root'>;

export const hostPath = (host: Host, path: string): string => join(host.root, path);

/** The files doctor reads are a line or a table (/proc/modules); more than this is not one of them. */
export const FILE_CAP_BYTES = 256 * 1024;
/** A directory listing stops here: doctor looks for a few names, not through a million. */
const LIST_CAP = 10_000;

/**
 * Any system error means "cannot be read here" to a diagnosis (ENOENT, EACCES, ELOOP, EIO…): the
 * check then says so. Anything else is a bug and is thrown on.
 */
export function unreadable(error: unknown): undefined {
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string') return undefined;
  throw error;
}

// O_NONBLOCK: open() of a FIFO would otherwise wait for a writer for ever. O_NOCTTY: a terminal
// opened by root must not become its controlling terminal.
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Opens `path` only when stat() says `wanted` (a regular file, say; links are followed, as /etc/modprobe.d
 * has alternatives links), and checks the open file is still that, so no FIFO, socket or device
 * is ever opened by mistake: opening some devices has effects of its own (a watchdog starts).
 */
export async function openIf(path: string, wanted: (stats: Stats) => boolean) {
  const before = await stat(path).catch(unreadable);
  if (!before || !wanted(before)) return undefined;
  const handle = await open(path, READ_FLAGS).catch(unreadable);
  if (!handle) return undefined;
  const after = await handle.stat().catch(unreadable);
  if (after && wanted(after) && after.ino === before.ino && after.dev === before.dev) return handle;
  await handle.close();
  return undefined;
}

/** A regular file's first FILE_CAP_BYTES as text; undefined when missing, unreadable or not a regular file. */
export async function readIfExists(host: Host, path: string): Promise<string | undefined> {
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

/** Names in a directory (at most LIST_CAP of them); none when it cannot be read. */
export async function list(host: Host, path: string): Promise<string[]> {
  const dir = await opendir(hostPath(host, path)).catch(unreadable);
  if (!dir) return [];
  const names: string[] = [];
  try {
    for await (const entry of dir) {
      names.push(entry.name);
      if (names.length >= LIST_CAP) break;
    }
  } catch (error) {
    unreadable(error);
  }
  return names;
}

export const exists = (host: Host, path: string): Promise<boolean> =>
  stat(hostPath(host, path)).then(
    () => true,
    (error: unknown) => unreadable(error) ?? false,
  );

/** The name a symlink points at (a sysfs `driver` link -> "nvidia"). */
export const linkName = (host: Host, path: string): Promise<string | undefined> =>
  readlink(hostPath(host, path)).then((target) => basename(target), unreadable);

/** Whether this process may read and write the path (device nodes; plain files stand in for them in test trees). */
export const readWritable = (host: Host, path: string): Promise<boolean> =>
  access(hostPath(host, path), constants.R_OK | constants.W_OK).then(
    () => true,
    (error: unknown) => unreadable(error) ?? false,
  );
