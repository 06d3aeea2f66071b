import { failedCollection, isSample, toCollection, type Collection, type Failure, type GpuSample, type RowProblem } from '../collection.js';
import type { FieldSpec } from '../fields/field-spec.js';
import type { RowStream } from '../sources/source.js';
import type { CollectorState } from './state.js';
import type { CollectOutput } from './collect.js';
import { latestOnly } from './latest-only.js';

// The daemon mode's rules that are plain arithmetic on what it saw.

/** Restart delays after the stream breaks: from one interval (at least 1 s), doubling up to a minute. */
export const backoffMs = (intervalMs: number, failures: number): number =>
  Math.min(60_000, Math.max(1000, intervalMs) * 2 ** Math.max(0, failures - 1));

/**
 * What one sample of the daemon mode cost, in seconds: from the moment the source took it (its
 * earliest row's takenAt: nvidia-smi's query start) to the collection, so the query and our own
 * work; without takenAt, our own work from the batch's first row.
 */
export function sampleSeconds(batch: { samples: readonly GpuSample[]; startedAt: number }, now: number): number {
  const taken = batch.samples.flatMap((sample) => (sample.takenAt === undefined ? [] : [sample.takenAt]));
  const from = taken.length > 0 ? Math.min(...taken) : batch.startedAt;
  return Math.max(0, now - from) / 1000;
}

/** The longest pause after a slow one-shot while a GPU is lost (the back-off's ceiling). */
export const MAX_LOST_PAUSE_MS = 60_000;

/** Whether a collection names a GPU that did not answer (nvidia_gpu_up 0): while others did, or every GPU the last good run knew. */
export const hasLostGpu = (collection: Collection): boolean => collection.down.some((gpu) => gpu.reason === 'gpu_lost');

/** What the daemon mode's loop is given: its cadence, and every effect as a function (tests pass fakes). */
export interface DaemonLoopInput {
  fields: readonly FieldSpec[];
  intervalMs: number;
  /** How long a new child may take to print its first row (nvidia-smi's start-up: --timeout), before the stall check starts. */
  startupGraceMs: number;
  /** How often to query processes; undefined when they are not collected. */
  processesIntervalMs?: number;
  /** A full one-shot collection: the first sample, and the picture after the stream broke. */
  oneShot: (state: CollectorState, previousSuccessSeconds: number | undefined) => Promise<CollectOutput>;
  queryProcesses: () => Promise<{ processes?: Collection['processes']; warning?: string }>;
  /** Starts one long-running reader of `fields`, asked by `names`, every intervalMs. */
  stream: (fields: readonly FieldSpec[], names: Record<string, string>) => RowStream;
  publish: (collection: Collection) => Promise<void>;
  saveState: (state: CollectorState) => Promise<void>;
  say: (line: string) => void;
  now: () => number;
  signal: AbortSignal;
  initialState: CollectorState;
  initialSuccessSeconds?: number;
}

/** How many silent intervals make a stream stalled, and how many unreadable batches make it garbage. */
export const STALL_INTERVALS = 3;
/**
 * A stall is never shorter than this: at a sub-second interval three intervals are a few hundred
 * milliseconds, which a reader on a host busy for a moment (the scheduler, a page-cache flush) misses
 * without being hung; killing it then says `timeout` and restarts it for nothing. A hung NVML call
 * or nvidia-smi lasts seconds to forever, so two seconds still catches every real one.
 */
export const MIN_STALL_MS = 2000;
export const GARBAGE_BATCHES = 3;
/** Good batches in a row after which a restarted child counts as recovered. */
export const RECOVERED_BATCHES = 10;
/**
 * Rows a batch may hold without a GPU repeating: more than any host has GPUs. A child flooding
 * unreadable lines (which never repeat a GPU) would otherwise grow one batch without bound.
 */
export const MAX_BATCH_ROWS = 64;

interface Batch {
  samples: GpuSample[];
  problems: RowProblem[];
  startedAt: number;
}

/**
 * The daemon mode's loop (`collect --interval`): one long-running reader (an `nvidia-smi --query-gpu …
 * -lms N` child); each batch of rows (one per GPU) is published as it arrives. Processes are queried
 * on their own, slower cadence. A reader that exits, stalls or prints garbage is stopped and
 * restarted with back-off; meanwhile a one-shot collection publishes what is true (a failure, or a
 * lost GPU). While a GPU is lost no reader can run (nvidia-smi -lms exits 15 at once, NVML's reader
 * ends at its first sample): a one-shot collection then publishes every interval instead, the
 * healthy GPUs with their values and the lost one as nvidia_gpu_up 0, as a one-shot run does.
 */
export async function daemonLoop(input: DaemonLoopInput): Promise<void> {
  const { signal } = input;
  let state = input.initialState;
  let processes: Collection['processes'];
  let failures = 0;
  let lastSuccessSeconds = input.initialSuccessSeconds;
  const publisher = latestOnly(input.publish);
  const publish = publisher.publish;
  /** The reader's name in messages (from the last one started). */
  let streamName = 'the reader';

  // At most one query in flight: with --processes-interval under --timeout, hung queries would pile up.
  let querying = false;
  const refreshProcesses = async () => {
    if (querying) return;
    querying = true;
    try {
      const result = await input.queryProcesses();
      processes = result.processes;
      if (result.warning) input.say(result.warning);
    } finally {
      querying = false;
    }
  };
  const processTimer =
    input.processesIntervalMs === undefined ? undefined : setInterval(() => void refreshProcesses(), input.processesIntervalMs);
  signal.addEventListener('abort', () => clearInterval(processTimer), { once: true });

  // A warning repeated by the next one-shot (a GPU still lost, each interval) is said once.
  let said = new Set<string>();
  /** How long the last one-shot took (its nvidia-smi calls are slow on a lost GPU). */
  let took = 0;
  /** When the last one-shot began: the reader's first row is due an interval after it. */
  let oneShotAt = input.now();
  const recover = async () => {
    const started = input.now();
    oneShotAt = started;
    const result = await input.oneShot(state, lastSuccessSeconds);
    took = input.now() - started;
    state = result.state;
    await input.saveState(state);
    processes = result.collection.processes ?? processes;
    lastSuccessSeconds = result.collection.health.lastSuccessSeconds;
    await publish(result.collection);
    // A failed read says why too (every GPU lost: no warning of its own), once while it repeats.
    const { failure } = result.collection.health;
    const lines = [...result.warnings, ...(failure ? [`${failure.reason}: ${failure.message}`] : [])];
    for (const line of lines) if (!said.has(line)) input.say(line);
    said = new Set(lines);
    return result;
  };
  // An abort ends a wait early: the loop then stops.
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, signal.aborted ? 0 : Math.max(0, ms));
      signal.addEventListener('abort', done, { once: true });
    });

  /**
   * A one-shot collection every interval, on the interval's cadence, while it finds a GPU lost. A
   * one-shot that took longer than the interval (nvidia-smi slow on a lost GPU) is followed by a pause
   * as long as it took, so the GPUs are never asked back to back for hours.
   */
  const whileLost = async (first: CollectOutput) => {
    let result = first;
    for (let due = input.now(); !signal.aborted && hasLostGpu(result.collection); ) {
      due = Math.max(due + input.intervalMs, input.now() + Math.min(took, MAX_LOST_PAUSE_MS));
      await wait(due - input.now());
      if (signal.aborted) break;
      result = await recover();
      if (!hasLostGpu(result.collection) && !result.collection.health.failure)
        input.say(`every GPU answers again; restarting ${streamName}`);
    }
  };

  try {
    let last = await recover();
    while (!signal.aborted) {
      if (hasLostGpu(last.collection)) await whileLost(last);
      if (signal.aborted) break;
      const names = state.names;
      const fields = names ? input.fields.filter((field) => names[field.query]) : [];
      // A reader prints its first row as it starts: started at once, it sampled again a few hundred
      // milliseconds after the one-shot, the same values twice. It starts an interval after it instead.
      await wait(oneShotAt + input.intervalMs - input.now());
      if (signal.aborted) break;
      const failure = names ? await streamUntilBroken(fields, names) : undefined;
      if (signal.aborted) break;
      failures++;
      const delay = backoffMs(input.intervalMs, failures);
      if (failure?.reason === 'gpu_lost') {
        // A lost GPU ends the reader of every GPU: a one-shot read at once names it, and the others
        // keep reporting. Its failure is not published over that: the one-shot's picture is the true one.
        last = await recover();
        if (hasLostGpu(last.collection)) {
          input.say(`${streamName} stopped: ${failure.message}; a GPU is lost: one-shot reads every interval while it stays lost`);
          continue;
        }
      } else if (failure) await publish(failedCollection(failure, 0, lastSuccessSeconds));
      if (failure) input.say(`${streamName} stopped: ${failure.reason}: ${failure.message}; restarting in ${delay / 1000} s`);
      await wait(delay);
      if (signal.aborted) break;
      last = await recover();
    }
  } finally {
    clearInterval(processTimer);
    await publisher.idle();
  }

  /** Runs one reader until it breaks (or we stop); returns why it broke. */
  async function streamUntilBroken(fields: FieldSpec[], names: Record<string, string>): Promise<Failure | undefined> {
    const child = input.stream(fields, names);
    streamName = child.what;
    const onAbort = () => child.stop();
    signal.addEventListener('abort', onAbort, { once: true });
    let broken: Failure | undefined;
    let expected = 0;
    let garbage = 0;
    let good = 0;
    let batch: Batch | undefined;
    let flushTimer: NodeJS.Timeout | undefined;

    const stallMs = Math.max(STALL_INTERVALS * input.intervalMs, MIN_STALL_MS);
    // The stall check starts with the first line: until then nvidia-smi gets its start-up time.
    const firstLineMs = Math.max(stallMs, input.startupGraceMs);
    const stall = (message: string) => {
      broken = { reason: 'timeout', message };
      child.stop();
    };
    let watchdog = setTimeout(() => stall(`no line from ${child.what} within ${firstLineMs} ms of its start; killed it`), firstLineMs);

    const flush = () => {
      clearTimeout(flushTimer);
      if (!batch) return;
      const done = batch;
      batch = undefined;
      const rows = done.samples.length + done.problems.length;
      if (done.samples.length === 0 || rows >= MAX_BATCH_ROWS) {
        garbage++;
        const why = rows >= MAX_BATCH_ROWS ? `${rows} rows without a GPU repeating` : (done.problems[0]?.message ?? 'no rows');
        const failure: Failure = {
          reason: 'unparsable_output',
          message: `${child.what}: ${why}: "${done.problems[0]?.line.slice(0, 120) ?? ''}"`,
        };
        void publish(failedCollection(failure, 0, lastSuccessSeconds));
        if (garbage >= GARBAGE_BATCHES) {
          broken = { ...failure, message: `${failure.message} (${GARBAGE_BATCHES} batches in a row)` };
          child.stop();
        }
        return;
      }
      garbage = 0;
      // Back-off starts over only once a child has run well for a while, so one that dies after a
      // couple of samples is restarted ever more slowly.
      if (++good >= RECOVERED_BATCHES) failures = 0;
      expected = done.samples.length + done.problems.length;
      const now = input.now();
      const { collection, warnings } = toCollection({ samples: done.samples, problems: done.problems, lost: [], fields }, processes, {
        durationSeconds: sampleSeconds(done, now),
        nowSeconds: now / 1000,
      });
      lastSuccessSeconds = collection.health.lastSuccessSeconds;
      for (const warning of warnings) input.say(warning);
      void publish(collection);
    };

    try {
      for await (const row of child.rows) {
        // Once the child is being stopped, what it still prints is drained, not read: a line cut
        // short by our SIGTERM is not garbage, and a flood is not read on.
        if (broken || signal.aborted) continue;
        clearTimeout(watchdog);
        watchdog = setTimeout(
          () =>
            stall(
              `no line from ${child.what} for ${stallMs} ms (${STALL_INTERVALS} intervals, ${MIN_STALL_MS / 1000} s at least); killed it`,
            ),
          stallMs,
        );
        if (row === undefined) continue;
        // A GPU seen twice starts the next batch: nvidia-smi prints every GPU once per interval.
        if (batch && row.gpu !== undefined && [...batch.samples, ...batch.problems].some((r) => r.gpu === row.gpu)) flush();
        batch ??= { samples: [], problems: [], startedAt: input.now() };
        if (isSample(row)) batch.samples.push(row);
        else batch.problems.push(row);
        const rows = batch.samples.length + batch.problems.length;
        if ((expected > 0 && rows >= expected) || rows >= MAX_BATCH_ROWS) flush();
        else {
          clearTimeout(flushTimer);
          flushTimer = setTimeout(flush, Math.min(200, input.intervalMs / 2));
        }
      }
      if (broken || signal.aborted) return broken;
      // Lines without a sample just before the child exited are its last words (nvidia-smi prints its
      // errors on stdout): its exit says what happened, they are not garbage.
      if (batch?.samples.length) flush();
      const ended = await child.ended;
      if (broken || signal.aborted) return broken;
      return ended;
    } finally {
      clearTimeout(watchdog);
      clearTimeout(flushTimer);
      signal.removeEventListener('abort', onAbort);
      child.stop();
      await child.ended;
    }
  }
}
