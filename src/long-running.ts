import { setTimeout as sleep } from 'node:timers/promises';
import { failedCollection, toCollection, type CollectOutput } from './collect.js';
import type { FieldSpec } from './fields.js';
import type { Collection } from './metrics.js';
import { splitCells } from './nvidia-smi/cells.js';
import { classifyFailure, type Failure } from './nvidia-smi/failure.js';
import { queryGpuArgs } from './nvidia-smi/query-gpu.js';
import type { SmiStream } from './nvidia-smi/run.js';
import { isSample, sampleFromCells, type GpuSample, type RowProblem } from './samples.js';
import type { CollectorState } from './state.js';

export interface LongRunningInput {
  fields: readonly FieldSpec[];
  intervalMs: number;
  /** How often to query processes; undefined when they are not collected. */
  processesIntervalMs?: number;
  /** A full one-shot collection: the first sample, and the picture after the stream broke. */
  oneShot: (state: CollectorState, previousSuccessSeconds: number | undefined) => Promise<CollectOutput>;
  queryProcesses: () => Promise<{ processes?: Collection['processes']; warning?: string }>;
  stream: (args: string[]) => SmiStream;
  publish: (collection: Collection) => Promise<void>;
  saveState: (state: CollectorState) => Promise<void>;
  say: (line: string) => void;
  now: () => number;
  signal: AbortSignal;
  initialState: CollectorState;
  initialSuccessSeconds?: number;
}

/** Restart delays after the stream breaks: from one interval (at least 1 s), doubling up to a minute. */
export const backoffMs = (intervalMs: number, failures: number): number => Math.min(60_000, Math.max(1000, intervalMs) * 2 ** Math.max(0, failures - 1));

/** How many silent intervals make a stream stalled, and how many unreadable batches make it garbage. */
export const STALL_INTERVALS = 3;
export const GARBAGE_BATCHES = 3;
/** Good batches in a row after which a restarted child counts as recovered. */
export const RECOVERED_BATCHES = 10;

interface Batch {
  samples: GpuSample[];
  problems: RowProblem[];
  startedAt: number;
}

/**
 * `collect --interval`: one long-running `nvidia-smi --query-gpu … -lms N` child; each batch of rows
 * (one per GPU) is published as it arrives. Processes are queried on their own, slower cadence. A
 * child that exits, stalls or prints garbage is killed and restarted with back-off; meanwhile a
 * one-shot collection publishes what is true (a failure, or a lost GPU).
 */
export async function runLongRunning(input: LongRunningInput): Promise<void> {
  const { signal } = input;
  let state = input.initialState;
  let processes: Collection['processes'];
  let failures = 0;
  let lastSuccessSeconds = input.initialSuccessSeconds;
  let chain = Promise.resolve();
  const publish = (collection: Collection) => (chain = chain.then(() => input.publish(collection)));

  const refreshProcesses = async () => {
    const result = await input.queryProcesses();
    processes = result.processes;
    if (result.warning) input.say(result.warning);
  };
  const processTimer = input.processesIntervalMs === undefined ? undefined : setInterval(() => void refreshProcesses(), input.processesIntervalMs);
  signal.addEventListener('abort', () => clearInterval(processTimer), { once: true });

  const recover = async () => {
    const result = await input.oneShot(state, lastSuccessSeconds);
    state = result.state;
    await input.saveState(state);
    processes = result.collection.processes ?? processes;
    lastSuccessSeconds = result.collection.health.lastSuccessSeconds;
    await publish(result.collection);
    for (const warning of result.warnings) input.say(warning);
    return result;
  };

  try {
    await recover();
    while (!signal.aborted) {
      const names = state.names;
      const fields = names ? input.fields.filter((field) => names[field.query]) : [];
      const failure = names ? await streamUntilBroken(fields, names) : undefined;
      if (signal.aborted) break;
      failures++;
      const delay = backoffMs(input.intervalMs, failures);
      if (failure) {
        await publish(failedCollection(failure, 0, lastSuccessSeconds));
        input.say(`nvidia-smi -lms stopped: ${failure.reason}: ${failure.message}; restarting in ${delay / 1000} s`);
      }
      // An abort ends the wait early (AbortError): the loop then stops.
      await sleep(delay, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) break;
      await recover();
    }
  } finally {
    clearInterval(processTimer);
    await chain;
  }

  /** Runs one child until it breaks (or we stop); returns why it broke. */
  async function streamUntilBroken(fields: FieldSpec[], names: Record<string, string>): Promise<Failure | undefined> {
    const child = input.stream([...queryGpuArgs(fields.map((field) => names[field.query]!)), '-lms', String(Math.round(input.intervalMs))]);
    const onAbort = () => child.stop();
    signal.addEventListener('abort', onAbort, { once: true });
    let broken: Failure | undefined;
    let expected = 0;
    let garbage = 0;
    let good = 0;
    let batch: Batch | undefined;
    let flushTimer: NodeJS.Timeout | undefined;

    const stallMs = STALL_INTERVALS * input.intervalMs;
    let watchdog = setTimeout(() => stall(), stallMs);
    const stall = () => {
      broken = { reason: 'timeout', message: `no line from nvidia-smi -lms for ${stallMs} ms (${STALL_INTERVALS} intervals); killed it` };
      child.stop();
    };

    const flush = () => {
      clearTimeout(flushTimer);
      if (!batch) return;
      const done = batch;
      batch = undefined;
      if (done.samples.length === 0) {
        garbage++;
        const failure: Failure = { reason: 'unparsable_output', message: `nvidia-smi -lms: ${done.problems[0]?.message ?? 'no rows'}: "${done.problems[0]?.line.slice(0, 120) ?? ''}"` };
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
      const { collection, warnings } = toCollection(
        { samples: done.samples, problems: done.problems, lost: [], fields },
        processes,
        { durationSeconds: (now - done.startedAt) / 1000, nowSeconds: now / 1000 },
      );
      lastSuccessSeconds = collection.health.lastSuccessSeconds;
      for (const warning of warnings) input.say(warning);
      void publish(collection);
    };

    try {
      for await (const line of child.lines) {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => stall(), stallMs);
        if (line.trim() === '') continue;
        const row = sampleFromCells(fields, splitCells(line), line);
        // A GPU seen twice starts the next batch: nvidia-smi prints every GPU once per interval.
        if (batch && row.gpu !== undefined && [...batch.samples, ...batch.problems].some((r) => r.gpu === row.gpu)) flush();
        batch ??= { samples: [], problems: [], startedAt: input.now() };
        if (isSample(row)) batch.samples.push(row);
        else batch.problems.push(row);
        if (expected > 0 && batch.samples.length + batch.problems.length >= expected) flush();
        else {
          clearTimeout(flushTimer);
          flushTimer = setTimeout(flush, Math.min(200, input.intervalMs / 2));
        }
      }
      flush();
      const outcome = await child.ended;
      if (broken || signal.aborted) return broken;
      return outcome.kind === 'ok'
        ? { reason: 'nvidia_smi_failed', message: 'nvidia-smi -lms exited' }
        : classifyFailure(outcome, 'nvidia-smi -lms');
    } finally {
      clearTimeout(watchdog);
      clearTimeout(flushTimer);
      signal.removeEventListener('abort', onAbort);
      child.stop();
      await child.ended;
    }
  }
}

