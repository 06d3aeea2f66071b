import { setMaxListeners } from 'node:events';

/** What a piece of work comes to when the deadline passed first. */
export const LATE = Symbol('late');

/**
 * The work's result, or LATE once `signal` aborts first. The work is not stopped (a read stuck in
 * the kernel cannot be); doctor only stops waiting for it. The command's signal is
 * AbortSignal.timeout(--timeout); tests abort one by hand, so no test waits on a clock.
 */
export function beforeDeadline<T>(work: Promise<T>, signal: AbortSignal): Promise<T | typeof LATE> {
  if (signal.aborted) return Promise.resolve(LATE);
  // Every fact waits on the one deadline: more listeners than Node's leak warning expects (10), none leaked.
  setMaxListeners(0, signal);
  return new Promise((resolve, reject) => {
    const late = () => resolve(LATE);
    signal.addEventListener('abort', late, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', late);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', late);
        reject(error);
      },
    );
  });
}
