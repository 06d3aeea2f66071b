import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

/**
 * mkdir -p without Node's recursive mkdir, which loops for ever on procfs and sysfs
 * (`/proc/nope`): each missing parent is created once, and an error other than EEXIST stops it.
 */
export function makeDirs(path: string, mode = 0o755): void {
  const absolute = resolve(path);
  const missing: string[] = [];
  for (let dir = absolute; ; dir = dirname(dir)) {
    try {
      mkdirSync(dir, { mode });
      break;
    } catch (error) {
      const code = errorCode(error);
      if (code === 'EEXIST') break;
      if (code !== 'ENOENT' || dirname(dir) === dir) throw error;
      missing.push(dir);
    }
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir, { mode });
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
  }
}
