import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { gated, type GroupGuard, type GuardPool, guardPool, openGate } from './orphan-guard.js';

// The start of one nvidia-smi call: the child started gated, in a process group of its own, guarded,
// its output kept from the first byte. runSmi (run.ts) starts its calls here and waits for them; the
// launcher starts the timer's calls here before the CLI has loaded (head-start.ts), and runSmi takes
// them over. Everything that must see the child from its first moment (its output, its end) is
// attached here: a call taken over later must not have lost a byte or its 'close'.

/** How a child ended: its exit status or signal once its pipes closed, or why it could not start. */
export interface Ended {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  error?: NodeJS.ErrnoException;
}

/** The most of its stdout (and of its stderr) a call keeps: far over any host's answer, and a bound on our memory. */
export const MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/** A call under way: its child, what it printed so far, and its end. */
export interface StartedCall {
  command: string;
  args: readonly string[];
  child: ChildProcess;
  /** Its guard, watching its group; released once the call is done with. */
  guard: GroupGuard;
  ended: Promise<Ended>;
  /** Whether its 'exit' came: from then on its group's id may be free again, and nothing is sent to it. */
  exited: () => boolean;
  stdout: () => string;
  stderr: () => string;
  /** Whether it printed more than MAX_OUTPUT_BYTES (and was killed for it). */
  overflowed: () => boolean;
}

export const killGroup = (pid: number | undefined, signal: NodeJS.Signals): void => {
  if (pid === undefined) return;
  try {
    // The child leads its own process group (detached): a negative pid reaches its children too,
    // so a grandchild holding stdout open cannot keep us waiting.
    process.kill(-pid, signal);
  } catch (error) {
    // ESRCH: the group is already gone, which is what we wanted.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
};

/**
 * Starts `command args` gated (orphan-guard.ts), leading a process group of its own, in the C locale;
 * or why it could not: spawn() throws some errors (E2BIG, ENOMEM when fork fails) instead of emitting them.
 */
export function startGated(
  command: string,
  args: readonly string[],
  env: Record<string, string> | undefined,
): { child: ChildProcess; ended: Promise<Ended> } | { error: NodeJS.ErrnoException } {
  let child: ChildProcess;
  try {
    child = spawn(...gated(command, args), {
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      // nvidia-smi's messages are English already; keep any locale from changing number formats.
      env: { ...process.env, ...env, LC_ALL: 'C' },
    });
  } catch (error) {
    return { error: error as NodeJS.ErrnoException };
  }
  const ended = new Promise<Ended>((resolve) => {
    child.once('error', (error) => resolve({ exitCode: null, signal: null, error }));
    child.once('close', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  return { child, ended };
}

/** A stream's bytes, kept up to `maxBytes`; `over` is called once when it printed more. */
function keep(stream: Readable | null, maxBytes: number, over: () => void): () => string {
  const chunks: Buffer[] = [];
  let bytes = 0;
  stream?.on('data', (chunk: Buffer) => {
    if (bytes > maxBytes) return;
    bytes += chunk.length;
    if (bytes > maxBytes) over();
    else chunks.push(chunk);
  });
  return () => Buffer.concat(chunks).toString('utf8');
}

/** Starts one call of `command args`, guarded by a guard of `guards`; or why it could not start. */
export function startCall(
  command: string,
  args: readonly string[],
  options: { env?: Record<string, string>; guards?: GuardPool },
): StartedCall | { error: NodeJS.ErrnoException } {
  const guard = (options.guards ?? guardPool()).guard();
  const started = startGated(command, args, options.env);
  if ('error' in started) {
    guard.release();
    return started;
  }
  const { child, ended } = started;
  guard.watch(child.pid);
  openGate(child.stdin);
  // Its group let go as soon as it is done (its id may then be reused), whoever waits for it, or
  // nobody yet: a call started from a record and never taken must not stay watched until its drop.
  void ended.then(() => guard.release());
  let exited = false;
  child.once('exit', () => (exited = true));
  let overflowed = false;
  const overflow = () => {
    overflowed = true;
    if (!exited) killGroup(child.pid, 'SIGKILL');
  };
  const stdout = keep(child.stdout, MAX_OUTPUT_BYTES, overflow);
  const stderr = keep(child.stderr, MAX_OUTPUT_BYTES, overflow);
  return { command, args, child, guard, ended, exited: () => exited, stdout, stderr, overflowed: () => overflowed };
}

/**
 * Ends a call nobody will wait for: its group killed while it may still be ours to signal, its guard
 * released, and nothing of it left to keep this process alive (it may be asleep in the driver).
 */
export function dropCall(call: StartedCall): void {
  if (!call.exited()) killGroup(call.child.pid, 'SIGKILL');
  call.guard.release();
  letGo(call.child);
}

/** Nothing of `child` may keep this process alive any more: its pipes are closed and its handle let go. */
export function letGo(child: ChildProcess): void {
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
  child.unref();
}
