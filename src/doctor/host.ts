import { constants } from 'node:fs';
import { access, open, readFile, readdir, readlink, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

/** The system a diagnosis reads: `/`, or a tree standing in for it (tests, a mounted disk image). */
export interface Host {
  root: string;
}

export const hostPath = (host: Host, path: string): string => join(host.root, path);

export const readIfExists = (host: Host, path: string): Promise<string | undefined> =>
  readFile(hostPath(host, path), 'utf8').catch(() => undefined);

export const list = (host: Host, path: string): Promise<string[]> => readdir(hostPath(host, path)).catch(() => []);

export const exists = (host: Host, path: string): Promise<boolean> => stat(hostPath(host, path)).then(() => true, () => false);

/** The name a symlink points at (a sysfs `driver` link -> "nvidia"). */
export const linkName = (host: Host, path: string): Promise<string | undefined> =>
  readlink(hostPath(host, path)).then((target) => basename(target), () => undefined);

/** Whether this process may read and write the path (device nodes; plain files stand in for them in test trees). */
export const readWritable = (host: Host, path: string): Promise<boolean> =>
  access(hostPath(host, path), constants.R_OK | constants.W_OK).then(() => true, () => false);

/**
 * /dev/kmsg: the kernel log, one record per read, without blocking at its end. A plain file
 * (a test tree) is read whole.
 */
export async function readKernelLog(host: Host): Promise<string | undefined> {
  const handle = await open(hostPath(host, 'dev/kmsg'), constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined);
  if (!handle) return undefined;
  const records: string[] = [];
  const buffer = Buffer.alloc(8192);
  try {
    for (let i = 0; i < 100_000; i++) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      records.push(buffer.toString('utf8', 0, bytesRead));
    }
  } catch (error) {
    // EAGAIN: the end of the live log. EPIPE: records overwritten while reading; what was read stands.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EAGAIN' && code !== 'EPIPE' && code !== 'EWOULDBLOCK') return undefined;
  } finally {
    await handle.close();
  }
  return records.join('');
}
