import { join } from 'node:path';
import { tryLock } from '../locks/file-lock.js';
import { describeFileError, isFileError, pinDir, type PinnedDir } from '../files/safe-fs.js';

/**
 * Takes the lock collect takes for a textfile (`DIR/.NAME.lock`, src/collect/lock.ts) for as long as
 * the job runs, so run and another writer never publish one file in turn and run never deletes a
 * file that is not its own. Returns release(), or the one line that says why not.
 */
export async function lockTextfile(textfileDir: string, fileName: string): Promise<{ release: () => Promise<void> } | string> {
  let dir: PinnedDir;
  try {
    // Never created, as publishing never does (its absence is refused before the job starts): the lock lives beside the file.
    dir = pinDir(textfileDir);
  } catch (error) {
    if (!isFileError(error)) throw error;
    return `--textfile-dir: cannot use ${textfileDir}: ${describeFileError(error)}`;
  }
  const lock = await tryLock({ dir, name: `.${fileName}.lock` });
  if (lock.kind === 'held')
    return {
      release: async () => {
        await lock.release();
        dir.close();
      },
    };
  dir.close();
  if (lock.kind === 'busy')
    return `${join(textfileDir, fileName)} is another writer's (pid ${lock.pid} holds its lock): choose another --file-name`;
  return lock.message;
}
