import { closeSync, ftruncateSync, openSync, statfsSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, onTestFinished } from 'vitest';

/** A tmpfs of `bytes` mounted for this test (tests run as root), unmounted when it finishes. */
export async function smallTmpfs(bytes: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-tmpfs-'));
  await execa('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', dir]);
  onTestFinished(async () => {
    await execa('umount', [dir]);
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Fills the file system of `dir` with `<dir>/filler` until exactly `freeBytes` are left; returns its path. */
export function fillLeaving(dir: string, freeBytes: number): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let size = 0;
  try {
    for (;;) size += writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  }
  ftruncateSync(fd, size - freeBytes);
  closeSync(fd);
  const { bavail, bsize } = statfsSync(dir);
  expect(bavail * bsize).toBe(freeBytes);
  return path;
}
