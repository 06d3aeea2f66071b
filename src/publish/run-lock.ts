import { open, readFile, unlink } from 'node:fs/promises';

export type LockResult = { kind: 'held'; release: () => Promise<void> } | { kind: 'busy'; pid: number } | { kind: 'error'; message: string };

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * A pid lock file, so that a collect started while another still waits on a hung nvidia-smi
 * returns at once instead of piling up behind it. A lock whose process is gone is taken over.
 */
export async function takeRunLock(path: string): Promise<LockResult> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx', 0o644);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      return { kind: 'held', release: () => unlink(path).catch(() => undefined) };
    } catch (error) {
      const e = error as NodeJS.ErrnoException;
      if (e.code !== 'EEXIST') return { kind: 'error', message: `cannot create lock ${path}: ${e.code ?? e.message}` };
    }
    const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) return { kind: 'busy', pid };
    await unlink(path).catch(() => undefined); // stale: its process is gone
  }
  return { kind: 'error', message: `cannot take lock ${path}` };
}
