import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { Failure } from '../collection.js';
import type { CollectPlan } from '../collect/plan.js';
import { lineScanner } from './line-scanner.js';
import type { ReaderAsk, ReaderMessage, ReaderRequest } from './reader-main.js';

/** A reader process: stop() ends it (killed at once: it may be stuck in a driver call); `ended` says how it ended. */
export interface Reader {
  stop(): void;
  /** Asks it for one more collection now; its `final-done` message says it was sent. */
  ask(ask: ReaderAsk): void;
  /** Undefined once stopped by stop(); otherwise why it ended on its own. */
  ended: Promise<Failure | undefined>;
}

/** The request for `plan`'s reads: its fields by name (their specs hold functions, which do not cross). */
export function readerRequest(kind: ReaderRequest['kind'], plan: CollectPlan, intervalMs: number): ReaderRequest {
  const { fields, ...rest } = plan;
  return { kind, intervalMs, plan: { ...rest, fieldQueries: fields.map((field) => field.query) } };
}

/**
 * Starts dist/gpu-reader.js (src/run/reader-main.ts) with `request`. `ownGroup`: in a process group
 * of its own, so a Ctrl-C at the terminal, meant for run's job, leaves the sampling on (run stops it).
 * Its stderr (the watchdog's line) comes back as the failure `ended` resolves to.
 */
export function startReader(request: ReaderRequest, onMessage: (message: ReaderMessage) => void, ownGroup: boolean): Reader {
  const child = fork(join(__dirname, 'gpu-reader.js'), [], {
    // Collections hold Maps and undefined values: the structured clone carries them, JSON does not.
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    detached: ownGroup,
    // Never a debugger: no flags of ours passed on, and SIGUSR1's inspector off where Node.js can (22.14+);
    // before that, the reader's own listener stands in the way (src/run/reader-main.ts).
    execArgv: process.allowedNodeEnvironmentFlags.has('--disable-sigusr1') ? ['--disable-sigusr1'] : [],
  });
  let stopped = false;
  // Its last line on stderr: the watchdog's, when it fired (a crash's, otherwise): it becomes the failure's message.
  let lastLine = '';
  const scanner = lineScanner((line) => {
    if (line !== '') lastLine = line.replace(/^gpu-textfile: (timeout: )?/, '');
  });
  child.stderr!.on('data', (chunk: Buffer) => scanner.push(chunk));
  child.on('message', onMessage);
  // A reader must never outlive its starter, however that ends.
  const killIt = () => child.kill('SIGKILL');
  process.once('exit', killIt);
  const ended = new Promise<Failure | undefined>((resolve) => {
    child.once('error', (error) => resolve({ reason: 'internal_error', message: `the GPU reader could not start: ${error.message}` }));
    child.once('exit', (code, signal) => {
      process.off('exit', killIt);
      scanner.end();
      if (stopped || code === 0) resolve(undefined);
      // Its watchdog kills it when an NVML call outlasts the deadline (and says so on stderr).
      else if (signal === 'SIGKILL') resolve({ reason: 'timeout', message: lastLine || 'the GPU reader was killed (an NVML call hung?)' });
      else
        resolve({
          reason: 'internal_error',
          message: `the GPU reader ended (${signal ?? `exit status ${code}`})${lastLine ? `: ${lastLine}` : ''}`,
        });
    });
  });
  child.send(request);
  return {
    stop: () => {
      stopped = true;
      killIt();
    },
    ask: (ask) => {
      if (child.connected) child.send(ask);
    },
    ended,
  };
}
