import { basename, dirname } from 'node:path';
import { describeFileError, isFileError, pinDir, type PinnedDir, removeName, replaceFile } from '../../files/safe-fs.js';
import type { StartedCall } from './call.js';

// The timer's one-shot spends about 15 ms loading the CLI, reading its options, taking its lock and
// state before it starts nvidia-smi, whose answer it then waits for (issue 41, BENCHMARKS.md). A run
// that succeeded leaves a record of the calls it started first; the next start of the same command
// line (the launcher, src/launch/main.ts) starts those calls at once, and the CLI loads while they
// run. It takes a call over only where it would have started that very call (same binary, same
// arguments, same environment): otherwise the call is killed and the run goes as without a record.
// What keeps this as safe as starting the calls late:
// - The record names a program that runs as root: it is read only if this user owns it, nobody else
//   may write it, it is no link, has no second name, is no larger than a record (the code cache's
//   rules: bytecode is code too) and was written in the last ten minutes; and only calls of the
//   shape collect starts first (`--query-gpu=…` or `--query-compute-apps=…`, then the format) are
//   started from it.
// - A run claims the record by removing it before it starts anything: of two runs at once (the
//   second finds the first holding the lock), one starts calls, and a run whose nvidia-smi hangs
//   leaves no record behind, so the runs after it wait behind the lock or the stuck check
//   (src/collect/stuck.ts) as they always did instead of starting one more call each.
// - Only a run that succeeded with every first call answered writes one; a call found stuck in the
//   driver removes every record in the directory.
// - Until taken, the calls are bounded by the record's --timeout, and guarded as every call is.
// This module is the record (the file system only); head-start-calls.ts starts its calls, and the
// launcher loads it, with Node's child_process, only when there is a record to start.

/** What a run leaves for the next start of the same command line. */
export interface HeadStartRecord {
  /** The nvidia-smi the run started (--nvidia-smi). */
  command: string;
  /** The --query-* calls it started first, each answered. */
  calls: string[][];
  /** Its --timeout: how long a call started from the record may run untaken. */
  timeoutMs: number;
}

/** The calls a start began from a record, for the run to take over; and where the next record goes. */
export interface HeadStart {
  /** The record's path: this command line's, in the cache directory. */
  file: string;
  /** The call of `command args`, if one was started and not taken yet: it is the caller's from now on. */
  take(command: string, args: readonly string[]): StartedCall | undefined;
  /** Kills the calls nobody took. */
  drop(): void;
}

const PREFIX = 'gpu-textfile-head-start-';
const SUFFIX = '.json';
/** A record is a few hundred bytes; a larger file was not written by us. */
const MAX_RECORD_BYTES = 64 * 1024;
/**
 * The timer rewrites the record every 15 s: one older than this belongs to a configuration or a
 * binary no longer in use (an --nvidia-smi set weeks ago), and is not started.
 */
const MAX_RECORD_AGE_MS = 10 * 60_000;

/** Whether a record file of this size and time may be read: small, and written lately (either way of a clock's step). */
export const recordFits = (info: { size: number; mtimeMs: number }, now: number): boolean =>
  info.size <= MAX_RECORD_BYTES && Math.abs(now - info.mtimeMs) <= MAX_RECORD_AGE_MS;
/** --timeout's own bound is far below this; a record past it is not ours. */
const MAX_TIMEOUT_MS = 3_600_000;

/** Whether `name` is one of our records (or a temp file of one a killed run left). */
const isHeadStartRecord = (name: string): boolean =>
  (name.startsWith(PREFIX) && name.endsWith(SUFFIX)) || (name.startsWith(`.${PREFIX}`) && name.endsWith('.tmp'));

/**
 * The record's file name for a command line: its arguments and the GPU_TEXTFILE_* variables that set
 * its options. A hash (FNV-1a) only to keep command lines apart: a run takes over a call only when it
 * would have started the same one, whatever record it came from.
 */
export function headStartName(args: readonly string[], env: NodeJS.ProcessEnv): string {
  const settings = Object.keys(env)
    .filter((name) => name.startsWith('GPU_TEXTFILE_'))
    .sort()
    .map((name) => [name, env[name]]);
  const text = JSON.stringify([args, settings]);
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return `${PREFIX}${hash.toString(16).padStart(8, '0')}${SUFFIX}`;
}

/** `--query-gpu=NAME,NAME,…` or `--query-compute-apps=…`: field names are letters, digits, dots and underscores. */
const QUERY_WORD = /^--query-(gpu|compute-apps)=[\w.]+(,[\w.]+)*$/;
const FORMAT_WORD = '--format=csv,noheader,nounits';

const isWord = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max && !value.includes('\0');

/** A record's text -> the record, or undefined when it is not one we would have written. */
export function parseRecord(text: string): HeadStartRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { version, command, calls, timeoutMs } = (value ?? {}) as Record<string, unknown>;
  if (version !== 1 || !isWord(command, 4096)) return undefined;
  if (!Number.isInteger(timeoutMs) || (timeoutMs as number) < 1 || (timeoutMs as number) > MAX_TIMEOUT_MS) return undefined;
  if (!Array.isArray(calls) || calls.length < 1 || calls.length > 2) return undefined;
  // Only the shapes collect's first calls have (query-gpu.ts, compute-apps.ts): nothing else, no
  // -f FILE, no other word, can be started from a record.
  const fits = calls.every(
    (args: unknown) =>
      Array.isArray(args) &&
      args.length === 2 &&
      typeof args[0] === 'string' &&
      args[0].length <= 16 * 1024 &&
      QUERY_WORD.test(args[0]) &&
      args[1] === FORMAT_WORD,
  );
  return fits ? { command, calls: calls as string[][], timeoutMs: timeoutMs as number } : undefined;
}

/** The record as its file holds it. */
export const recordText = (record: HeadStartRecord): string => `${JSON.stringify({ version: 1, ...record })}\n`;

/** A start with no calls begun: the run starts its own, and may leave a record at `file`. */
export const noHeadStart = (file: string): HeadStart => ({ file, take: () => undefined, drop: () => {} });

/** Runs `body` in the record's directory (created as the code cache's is); a file error is the one line returned. */
function inRecordDir(file: string, body: (dir: PinnedDir) => void): string | undefined {
  let dir: PinnedDir;
  try {
    dir = pinDir(dirname(file), { create: true });
  } catch (error) {
    if (isFileError(error)) return describeFileError(error);
    throw error;
  }
  try {
    body(dir);
    return undefined;
  } catch (error) {
    if (isFileError(error)) return describeFileError(error);
    throw error;
  } finally {
    dir.close();
  }
}

/**
 * Leaves `record` at `file` for the next start of the command line. No fsync: a record lost in a
 * crash costs one slower start; a damaged one is not read. Returns the error, if any, as one line.
 */
export const keepRecord = (file: string, record: HeadStartRecord): string | undefined =>
  inRecordDir(file, (dir) => replaceFile(dir, basename(file), recordText(record), { mode: 0o644 }));

/** Removes every record beside `file` (a call stuck in the driver: no start may begin one before the stuck check). */
export const forgetRecords = (file: string): string | undefined =>
  inRecordDir(file, (dir) => {
    for (const name of dir.list()) if (isHeadStartRecord(name)) removeName(dir, name);
  });
