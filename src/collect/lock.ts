import { join } from 'node:path';
import { removeLeftoverTemps, tryLock } from '../locks/file-lock.js';
import { checkDirectories } from '../publish/textfile.js';
import type { CollectIo, CollectPlan } from './plan.js';

/**
 * Runs `body` holding the textfile's lock (nothing with --dry-run, which writes nothing), so two
 * collects never publish one file. Returns body's exit status, or the one that says why it did not run.
 */
export async function withCollectLock(plan: CollectPlan, io: CollectIo, body: () => Promise<number>): Promise<number> {
  if (plan.dryRun) return body();
  const unsafe = checkDirectories(plan.textfileDir, plan.stateDir);
  if (unsafe) {
    io.say(unsafe);
    return 1;
  }
  // A lock whose process is gone is taken over at once: the next run must not wait for it.
  const lockPath = join(plan.textfileDir, `.${plan.fileName}.lock`);
  const lock = await tryLock(lockPath);
  if (lock.kind === 'busy') {
    io.say(`another collect (pid ${lock.pid}) is still running for ${join(plan.textfileDir, plan.fileName)}; not starting a second one`);
    return 75;
  }
  if (lock.kind === 'error') {
    io.say(`${lock.message}; nothing written`);
    return 1;
  }
  try {
    return await body();
  } finally {
    // Under the lock: the temp files of runs killed while taking it are cleared on the way out.
    const problem = removeLeftoverTemps(lockPath);
    if (problem) io.say(problem);
    await lock.release();
  }
}
