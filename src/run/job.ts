import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { lineScanner } from './line-scanner.js';
import { passSignals, processStat } from './signals.js';
import type { JobExit } from './summary.js';

/** After the job exits, how long its output pipes may stay open (a child of the job holding them) before we stop reading. */
const DRAIN_AFTER_EXIT_MS = 5000;

/** A started job: its pid and how it ended; or why it could not start (exit status 127, as a shell's). */
export type Job =
  | { kind: 'started'; pid: number; ended: Promise<JobExit>; releaseSignals: () => void }
  | { kind: 'not-started'; message: string };

export interface JobIo {
  stdout: Writable;
  stderr: Writable;
  /** Each line the job prints on either stream (cut at MAX_SCANNED_LINE), as it is read. */
  onLine: (line: string) => void;
  /** Our stdout or stderr failed (not EPIPE): the job's further output on it is dropped, as said above copyThrough. */
  onOutputFailed: (stream: string, error: NodeJS.ErrnoException) => void;
  /** Each chunk of the job's stderr as it is passed on (our lines that follow start on a new line). */
  onStderrCopied: (chunk: Buffer) => void;
}

/** Why spawn failed, as a shell says it. */
function notStarted(command: string, error: NodeJS.ErrnoException): string {
  if (error.code === 'ENOENT') return `${command}: command not found`;
  if (error.code === 'EACCES') return `${command}: permission denied (not executable)`;
  return `${command}: cannot run it: ${error.code ?? error.message}`;
}

/**
 * Copies one of the job's output streams to ours, byte for byte and in order, while its lines are
 * scanned on the side. When ours is slow the job's pipe is paused (the job then blocks, as it would
 * writing to a slow terminal). When ours is closed (EPIPE: `| head`), the job wrote output no one
 * will read: without us that write would have raised SIGPIPE in the job, so `onBroken` sends it
 * one, and the job's pipe is closed (a job that ignores SIGPIPE, as Python does, sees its next write
 * fail). When ours fails otherwise (ENOSPC: a full disk, `> /dev/full`; EIO), the job's pipe stays
 * open and is read on (its lines still scanned), what it writes there dropped: closed, the job's
 * next write would raise SIGPIPE and end it (status 141) where without us it would only have seen
 * ENOSPC and gone on; a pipe can carry no other failure. `onFailed` hears the error, for one line of ours.
 */
function copyThrough(from: Readable, to: Writable, io: CopyIo): Promise<void> {
  const scanner = lineScanner(io.onLine);
  let broken = false;
  to.on('error', (error: NodeJS.ErrnoException) => {
    if (broken) return;
    broken = true;
    if (error.code === 'EPIPE') {
      io.onBroken();
      from.destroy();
      return;
    }
    io.onFailed(error);
    // Paused for a drain that will not come now: read on.
    from.resume();
  });
  from.on('data', (chunk: Buffer) => {
    scanner.push(chunk);
    if (broken) return;
    io.onCopied?.(chunk);
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  return new Promise((resolve) => {
    from.once('close', () => {
      scanner.end();
      resolve();
    });
  });
}

interface CopyIo {
  onLine: (line: string) => void;
  onBroken: () => void;
  onFailed: (error: NodeJS.ErrnoException) => void;
  onCopied?: (chunk: Buffer) => void;
}

/**
 * Starts `command` (argv) with stdin inherited and stdout/stderr copied through, passing signals to
 * it while it runs (src/run/signals.ts; from before it starts until run releases them, so none ends
 * run first). Resolves once it started (or could not); `ended` once it exited and its output was copied.
 */
export function startJob(command: readonly string[], env: NodeJS.ProcessEnv, io: JobIo): Promise<Job> {
  // A signal before the job started is passed once it has; after it exited, ignored.
  let state: 'starting' | 'running' | 'exited' = 'starting';
  const early: NodeJS.Signals[] = [];
  let settled = false;
  const signals = passSignals(
    (signal) => {
      if (state === 'running') child.kill(signal);
      else if (state === 'starting') early.push(signal);
    },
    // Until the loop has turned once after the spawn, a terminal's signal may have come before the
    // fork (Node runs handlers from the loop): it reached run only, so it is passed, not held back.
    () => (state === 'running' && settled && child.pid !== undefined ? processStat(child.pid) : undefined),
  );
  const child = spawn(command[0]!, command.slice(1), { stdio: ['inherit', 'pipe', 'pipe'], env });
  return new Promise((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      signals.release();
      resolve({ kind: 'not-started', message: notStarted(command[0]!, error) });
    });
    child.once('spawn', () => {
      state = 'running';
      setImmediate(() => {
        settled = true;
      });
      for (const signal of early) child.kill(signal);
      const onBroken = () => child.kill('SIGPIPE');
      const failed = (stream: string) => (error: NodeJS.ErrnoException) => io.onOutputFailed(stream, error);
      const copied = Promise.all([
        copyThrough(child.stdout!, io.stdout, { onLine: io.onLine, onBroken, onFailed: failed('stdout') }),
        copyThrough(child.stderr!, io.stderr, { onLine: io.onLine, onBroken, onFailed: failed('stderr'), onCopied: io.onStderrCopied }),
      ]);
      const exited = new Promise<JobExit>((done) =>
        child.once('exit', (code, signal) => {
          state = 'exited';
          done(exitOf(code, signal));
        }),
      );
      const ended = exited.then(async (exit) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((done) => {
          timer = setTimeout(() => {
            child.stdout!.destroy();
            child.stderr!.destroy();
            done();
          }, DRAIN_AFTER_EXIT_MS);
        });
        await Promise.race([copied, late]);
        clearTimeout(timer);
        await copied;
        return exit;
      });
      resolve({ kind: 'started', pid: child.pid!, ended, releaseSignals: signals.release });
    });
  });
}

/** Node's exit code and signal -> the status a shell reports: the code, or 128 + the signal's number. */
export function exitOf(code: number | null, signal: NodeJS.Signals | null): JobExit {
  if (signal) return { status: 128 + (constants.signals[signal] ?? 0), signal };
  return { status: code ?? 1, code: code ?? 1 };
}
