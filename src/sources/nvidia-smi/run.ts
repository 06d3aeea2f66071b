import type { Readable } from 'node:stream';
import { killGroup, letGo, MAX_OUTPUT_BYTES, startCall, startGated, type StartedCall } from './call.js';
import { boundedLines } from './lines.js';
import { GATE_NOT_EXECUTABLE, GATE_NOT_FOUND, type GuardPool, openGate, startGuard } from './orphan-guard.js';

// nvidia-smi is started with node:child_process, not execa (which `install` keeps using): the one-shot
// collect runs every 15 s on every GPU host, and execa's modules were nearly half of what collect loaded (302 of
// 657 KB of dist/cli.js, with its set-up per call): without them, and with run's code out of that
// bundle, the one-shot on an H200 went from 178 to 129 ms (issue 41; BENCHMARKS.md). This module
// already owned what matters here (the process group, its deadline and guard, the line splitter); what
// execa added was buffering the output, done below with a bound.
/** What running nvidia-smi once came to. Nothing above this module sees a child process's error. */
export type SmiOutcome =
  | { kind: 'ok'; stdout: string }
  | { kind: 'not-found'; command: string }
  | { kind: 'not-executable'; command: string; message: string }
  | { kind: 'timeout'; afterMs: number }
  /** Timed out, and SIGKILL did not end it either: asleep in the driver (stuck.ts). Left behind. */
  | { kind: 'stuck'; afterMs: number; pid: number }
  | { kind: 'exit'; code: number; output: string }
  | { kind: 'killed'; signal: string; output: string };

export interface RunOptions {
  timeoutMs: number;
  /** After SIGTERM to the process group, wait this long before SIGKILL. */
  graceMs?: number;
  /** Extra environment for the child (the stand-in nvidia-smi reads its capture from it). */
  env?: Record<string, string>;
  /** The guards of the runs this one shares a guard with (a collection's); else a guard of its own. */
  guards?: GuardPool;
  /** The call, started already (the launcher's head start, head-start.ts): waited for instead of started. */
  takeOver?: StartedCall;
}

/** A way to run nvidia-smi with arguments; tests and the daemon mode pass their own. */
export type SmiRunner = (args: readonly string[]) => Promise<SmiOutcome>;

/** What a child that could not be started came to. */
function notStarted(command: string, error: NodeJS.ErrnoException): SmiOutcome {
  if (error.code === 'ENOENT') return { kind: 'not-found', command };
  if (error.code === 'EACCES') return { kind: 'not-executable', command, message: error.message };
  return { kind: 'exit', code: -1, output: error.message };
}

/** A stream's last `maxBytes` bytes (its end says why it stopped). */
function keepTail(stream: Readable | null, maxBytes: number): () => string {
  const chunks: Buffer[] = [];
  let bytes = 0;
  stream?.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    bytes += chunk.length;
    while (chunks.length > 1 && bytes - chunks[0]!.length >= maxBytes) bytes -= chunks.shift()!.length;
  });
  return () => Buffer.concat(chunks).subarray(-maxBytes).toString('utf8');
}

/** Runs `command args` with a hard deadline on the whole process group. */
export async function runSmi(command: string, args: readonly string[], options: RunOptions): Promise<SmiOutcome> {
  const graceMs = options.graceMs ?? 1000;
  const started = options.takeOver ?? startCall(command, args, { env: options.env, guards: options.guards });
  if ('error' in started) return notStarted(command, started.error);
  const { child, ended, guard } = started;
  let timedOut = false;
  let forceKill: NodeJS.Timeout | undefined;
  let giveUp: NodeJS.Timeout | undefined;
  // A process asleep in the driver (state D) takes no signal, not even SIGKILL: waiting for it would
  // hold this run, and its lock, for as long as the driver does. A grace after SIGKILL, then it is left.
  const stuck = new Promise<'stuck'>((resolve) => {
    const deadline = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid, 'SIGTERM');
      forceKill = setTimeout(() => {
        killGroup(child.pid, 'SIGKILL');
        giveUp = setTimeout(() => resolve('stuck'), graceMs);
      }, graceMs);
    }, options.timeoutMs);
    void ended.finally(() => clearTimeout(deadline));
  });
  const result = await Promise.race([ended, stuck]);
  clearTimeout(forceKill);
  clearTimeout(giveUp);
  guard.release();
  if (result === 'stuck') {
    letGo(child);
    return { kind: 'stuck', afterMs: options.timeoutMs, pid: child.pid ?? 0 };
  }

  if (timedOut) return { kind: 'timeout', afterMs: options.timeoutMs };
  const printed = started.stdout();
  const output = `${printed}${started.stderr()}`;
  // The gate's sh itself could not be started (an 'error' event, not a throw): as a spawn that threw.
  if (result.error) return notStarted(command, result.error);
  if (result.exitCode === GATE_NOT_FOUND) return { kind: 'not-found', command };
  if (started.overflowed())
    return { kind: 'killed', signal: 'SIGKILL', output: `it printed more than ${MAX_OUTPUT_BYTES / 1024 / 1024} MiB` };
  if (result.exitCode === GATE_NOT_EXECUTABLE) return { kind: 'not-executable', command, message: lastWords(output) };
  if (result.signal) return { kind: 'killed', signal: result.signal, output };
  if (result.exitCode === 0) return { kind: 'ok', stdout: printed };
  return { kind: 'exit', code: result.exitCode ?? -1, output };
}

/** The sh's message when it could not run the command ("sh: 1: exec: /x/nvidia-smi: Permission denied"), from its last colon. */
const lastWords = (output: string): string => output.trim().split('\n')[0]?.split(': ').at(-1) ?? 'cannot be executed';

/** The runner for one nvidia-smi binary and deadline. */
export const smiRunner =
  (command: string, options: RunOptions): SmiRunner =>
  (args) =>
    runSmi(command, args, options);

/** A --query-gpu row is a few hundred characters; nothing we read is longer than this. */
const MAX_LINE_CHARS = 16 * 1024;
/** What a stream's run keeps of its stderr. */
const MAX_STDERR_BYTES = 64 * 1024;

/** A long-running nvidia-smi (-lms): its stdout line by line, and how it ended. */
export interface SmiStream {
  lines: AsyncIterable<string>;
  /** Kills the whole process group (SIGTERM, SIGKILL after the grace period). */
  stop: () => void;
  ended: Promise<SmiOutcome>;
}

/** Starts `command args` and streams its stdout; the last lines of its output say why it ended. */
export function streamSmi(
  command: string,
  args: readonly string[],
  options: { graceMs?: number; env?: Record<string, string> } = {},
): SmiStream {
  const guard = startGuard();
  const started = startGated(command, args, options.env);
  if ('error' in started) {
    guard.release();
    return { lines: (async function* () {})(), stop: () => {}, ended: Promise.resolve(notStarted(command, started.error)) };
  }
  const { child, ended: closed } = started;
  guard.watch(child.pid);
  openGate(child.stdin);
  // Its stderr says why it stopped, at its end: the last 64 KiB of it are plenty.
  const stderr = keepTail(child.stderr, MAX_STDERR_BYTES);
  const releaseGroup = guard.release;
  const tail: string[] = [];
  let stopped = false;
  let forceKill: NodeJS.Timeout | undefined;
  const stop = () => {
    // Once it has ended, its group's id is free and may be another's by now: nothing is sent to it
    // (the daemon and pulse stop a child in a finally, whether or not it already ended).
    if (stopped) return;
    stopped = true;
    killGroup(child.pid, 'SIGTERM');
    forceKill = setTimeout(() => killGroup(child.pid, 'SIGKILL'), options.graceMs ?? 1000);
  };
  // Our own splitter over the raw pipe: readline keeps a line whole however long it grows.
  async function* lines(): AsyncGenerator<string> {
    if (!child.stdout) return;
    child.stdout.setEncoding('utf8');
    for await (const text of boundedLines(child.stdout, MAX_LINE_CHARS)) {
      tail.push(text);
      if (tail.length > 5) tail.shift();
      yield text;
    }
  }
  const ended = closed.then((result): SmiOutcome => {
    stopped = true;
    clearTimeout(forceKill);
    releaseGroup();
    // Newest first: the line nvidia-smi printed last says why it stopped.
    const output = [result.error?.message ?? stderr().replace(/\r?\n$/, ''), ...[...tail].reverse()].filter(Boolean).join('\n');
    if (result.error?.code === 'ENOENT' || result.exitCode === GATE_NOT_FOUND) return { kind: 'not-found', command };
    // As runSmi: the gate's sh could not exec it (the one-shot query right after would say the same).
    if (result.exitCode === GATE_NOT_EXECUTABLE) return { kind: 'not-executable', command, message: lastWords(output) };
    if (result.signal) return { kind: 'killed', signal: result.signal, output };
    return { kind: 'exit', code: result.exitCode ?? -1, output };
  });
  return { lines: lines(), stop, ended };
}
