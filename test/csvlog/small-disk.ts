import { closeSync, fstatSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import { mkdtemp, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { onTestFinished } from 'vitest';

/**
 * A real small disk: a tmpfs of `bytes` (a multiple of 4096) on a fresh directory, unmounted when
 * the test finishes. Needs root, as the tests run in CI.
 */
export async function smallDisk(bytes: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-disk-'));
  await execa('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', dir]);
  onTestFinished(async () => {
    await execa('umount', [dir]);
    await rmdir(dir);
  });
  return dir;
}

/** Writes `path` until the disk says ENOSPC, then gives back `sparePages` pages (4096 bytes each). */
export function fillDisk(path: string, sparePages = 0): void {
  const fd = openSync(path, 'wx');
  try {
    for (;;) writeSync(fd, Buffer.alloc(1 << 16));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
    ftruncateSync(fd, fstatSync(fd).size - sparePages * 4096);
  } finally {
    closeSync(fd);
  }
}
