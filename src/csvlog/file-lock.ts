import { open, readFile, unlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Runs `work` while holding `<path>` (created with O_EXCL, holding our pid). The CSV writer and the
 * archiver both take it, so a row is appended either before the archive's copy or after its
 * truncate, never in between. Waits up to `waitMs`; a lock whose process is gone is taken over.
 */
export async function withFileLock<T>(path: string, waitMs: number, work: () => Promise<T>): Promise<T | { lockError: string }> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      const handle = await open(path, 'wx', 0o644);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') return { lockError: `cannot create ${path}: ${code}` };
    }
    const pid = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) {
      await unlink(path).catch(() => undefined); // its process is gone
      continue;
    }
    if (Date.now() > until) return { lockError: `${path} is held by pid ${pid || '?'} for more than ${waitMs} ms` };
    await sleep(5 + Math.random() * 10);
  }
  try {
    return await work();
  } finally {
    await unlink(path).catch(() => undefined);
  }
}

export const isLockError = (value: unknown): value is { lockError: string } =>
  typeof value === 'object' && value !== null && 'lockError' in value;
