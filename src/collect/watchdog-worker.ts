import { writeSync } from 'node:fs';
import { join } from 'node:path';
import { workerData } from 'node:worker_threads';
import type { Failure } from '../collection.js';
import { publishFailure } from '../publish/publish.js';
import { publishTargetFrom } from './publish-target.js';
import { monotonicMs, WATCHDOG_FIRED, type WatchdogData } from './watchdog.js';

// The NVML watchdog's thread (src/collect/watchdog.ts), bundled as dist/nvml-watchdog.js. It sleeps
// on the shared word, never longer than a quarter of the deadline while no stretch runs, and fires
// when one has run past the deadline: a hung driver call.

const data = workerData as WatchdogData;
const word = new Int32Array(data.shared, 0, 1);
const since = new Float64Array(data.shared, 8, 1);

/** Waits until a stretch overruns; returns how long it had run, in ms, the main thread then told it fired. */
function overrun(): number {
  const idleMs = Math.max(25, data.deadlineMs / 4);
  for (;;) {
    const seen = Atomics.load(word, 0);
    if (seen % 2 === 0) {
      Atomics.wait(word, 0, seen, idleMs);
      continue;
    }
    const ranMs = monotonicMs() - since[0]!;
    if (ranMs < data.deadlineMs) Atomics.wait(word, 0, seen, data.deadlineMs - ranMs);
    else if (Atomics.compareExchange(word, 0, seen, WATCHDOG_FIRED) === seen) return ranMs;
  }
}

/** The end a failed run has (src/collect/one-shot.ts), from this thread: the file and one line; then the process ends. */
async function fire(ranMs: number): Promise<void> {
  try {
    await publishTimeout(ranMs);
  } finally {
    endProcess();
  }
}

async function publishTimeout(ranMs: number): Promise<void> {
  const failure: Failure = { reason: 'timeout', message: `NVML did not return within ${data.deadlineMs} ms (a call into the driver hung)` };
  const ends = data.ends ?? 'killed the process';
  if (data.publishes === false) {
    writeSync(2, `gpu-textfile: timeout: ${failure.message} (${ends}; try: gpu-textfile doctor)\n`);
    return;
  }
  // The main thread is blocked: --dry-run prints straight to the descriptor, not through its stream.
  const target = publishTargetFrom(data.target, { write: (text: string) => writeSync(1, text) });
  const { textfileError } = await publishFailure(failure, target, ranMs / 1000, new Date());
  const where = join(data.target.textfileDir, data.target.fileName);
  const done = data.target.dryRun ? 'printed the health block only' : (textfileError ?? `wrote ${where} with the health block only`);
  writeSync(2, `gpu-textfile: timeout: ${failure.message} (${done}; ${ends}; try: gpu-textfile doctor)\n`);
}

/**
 * Ends the whole process at once. SIGKILL: process.exit() here would end this thread only, and the
 * main thread, blocked, runs no handler of SIGTERM. systemd restarts the daemon (Restart=always);
 * the timer starts the next one-shot run, which takes over the lock of the dead process.
 */
function endProcess(): void {
  process.kill(process.pid, 'SIGKILL');
}

void fire(overrun());
