import { join } from 'node:path';
import { SHARE_ENV, Worker } from 'node:worker_threads';
import type { BlockingDeadline } from '../sources/source.js';
import type { CollectPlan } from './plan.js';
import { targetPlanOf, type TargetPlan } from './publish-target.js';

// A deadline on NVML's calls. They run on the main thread through koffi, synchronously: a driver that
// hangs inside one holds the thread, and no timer, signal handler or promise of ours runs again. A
// worker thread watches instead. The main thread marks each stretch of calls in shared memory (two
// atomic stores and a clock read: nothing per call, no system call, no message); the worker wakes
// now and then, and when a stretch has outlasted the deadline it publishes the timeout failure to
// every file the run owns and ends the process (src/collect/watchdog-worker.ts).

/** What the worker is given. */
export interface WatchdogData {
  /** The files the run owns: every one of them says timeout when the worker fires. */
  target: TargetPlan;
  /** What firing does besides publishing, in its line: "killed the process" unless said. */
  ends?: string;
  /** False: fire without publishing (pulse, run without a textfile: no file is theirs, stdout is the job's). */
  publishes?: boolean;
  /** How long one stretch of calls may take. */
  deadlineMs: number;
  /** Int32 at 0: the stretch's generation, odd while one runs, WATCHDOG_FIRED once the worker fired; float64 at 8: its start (ms). */
  shared: SharedArrayBuffer;
}

/** The generation word once the worker has fired: the main thread publishes nothing more. */
export const WATCHDOG_FIRED = -1;

/** Milliseconds on the monotonic clock, the same in every thread of the process (unlike performance.now()). */
export const monotonicMs = (): number => {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1000 + nanoseconds / 1e6;
};

/** A running watchdog: the deadline the source marks its stretches with, and stop() at the end. */
export interface Watchdog extends BlockingDeadline {
  stop(): void;
}

/** Starts the worker (its own file beside this bundle: dist/nvml-watchdog.js); `say` tells why it could not. */
export function startWatchdog(data: Omit<WatchdogData, 'shared'>, say: (line: string) => void): Watchdog {
  const shared = new SharedArrayBuffer(16);
  const word = new Int32Array(shared, 0, 1);
  const since = new Float64Array(shared, 8, 1);
  const worker = new Worker(join(__dirname, 'nvml-watchdog.js'), { workerData: { ...data, shared }, env: SHARE_ENV });
  // Not a reason to stay alive: the process ends when the collection does.
  worker.unref();
  worker.on('error', (error) => say(`the NVML watchdog stopped: ${error.message}; NVML calls run without a deadline`));
  let depth = 0;
  let generation = 0;
  return {
    enter() {
      if (depth++ > 0) return;
      since[0] = monotonicMs();
      generation++;
      Atomics.store(word, 0, generation);
    },
    leave() {
      if (--depth > 0) return;
      const armed = generation;
      generation = (generation + 1) & 0x3fffffff;
      // The worker fired meanwhile: it is publishing the failure and ending the process; wait for that.
      if (Atomics.compareExchange(word, 0, armed, generation) !== armed) for (;;) Atomics.wait(word, 0, WATCHDOG_FIRED);
    },
    stop: () => void worker.terminate(),
  };
}

/**
 * The watchdog a run of `plan` needs: one for --source nvml, whose calls block; the deadline is
 * --timeout, plus the GPM window a stretch may sleep through. None for the other sources.
 */
export const watchdogFor = (
  plan: CollectPlan,
  say: (line: string) => void,
  firing: Pick<WatchdogData, 'ends' | 'publishes'> = {},
): Watchdog | undefined =>
  plan.source !== 'nvml'
    ? undefined
    : startWatchdog(
        {
          target: targetPlanOf(plan),
          deadlineMs: plan.timeoutMs + plan.gpmWindowMs,
          ...firing,
        },
        say,
      );
