import type { Collection, Failure, GpuSample, RowProblem } from '../collection.js';
import type { CollectPlan } from '../collect/plan.js';
import { collectOnce } from '../collect/one-shot.js';
import { watchdogFor } from '../collect/watchdog.js';
import { FIELDS } from '../fields/fields.js';
import { openSource } from '../sources/sources.js';
import { readState } from '../collect/state.js';
import { readCollections } from './read-loop.js';

// The GPU reader's process (src/run/reader.ts starts it), bundled as dist/gpu-reader.js. NVML's calls
// block the thread that makes them; here they block this process only, under collect's watchdog:
// a call that hangs past --timeout gets the timeout published and this process killed, while the
// process that started it (run, pulse) goes on copying the job's output and answering signals.

/** A collect plan as it crosses to the reader: its fields by name (a field's spec holds functions). */
export type ReaderPlan = Omit<CollectPlan, 'fields'> & { fieldQueries: string[] };

/** What the reader is asked: run's collections (the daemon mode's loop), or pulse's rows of one stream. */
export type ReaderRequest = { kind: 'collections' | 'rows'; plan: ReaderPlan; intervalMs: number };

/** What the reader tells: a collection, a row, one of its lines, or why its stream ended. */
export type ReaderMessage =
  | { kind: 'collection'; collection: Collection }
  | { kind: 'row'; row: GpuSample | RowProblem }
  | { kind: 'say'; line: string }
  | { kind: 'ended'; failure?: Failure }
  /** The collection asked for by a `final` message has been sent (run's read at the job's end). */
  | { kind: 'final-done' };

/** What the starter may ask later: one more collection, now (the energy counter at the job's end). */
export type ReaderAsk = { kind: 'final' };

const send = (message: ReaderMessage) => new Promise<void>((done) => process.send!(message, undefined, {}, () => done()));

async function serve(request: ReaderRequest): Promise<void> {
  const wanted = new Set(request.plan.fieldQueries);
  const plan: CollectPlan = { ...request.plan, fields: FIELDS.filter((field) => wanted.has(field.query)) };
  const say = (line: string) => void send({ kind: 'say', line });
  // The watchdog publishes the timeout into run's textfile, when it has one; pulse has none.
  const firing = { ends: 'stopped the GPU reader', publishes: plan.textfileDir !== '' && !plan.dryRun };
  const watchdog = plan.source === 'nvml' ? watchdogFor(plan, say, firing) : undefined;
  const stop = new AbortController();
  // The starter went away (ended, or killed): nothing is left to read for.
  process.once('disconnect', () => stop.abort());
  try {
    const source = await openSource(plan.source, { ...plan, deadline: watchdog });
    if (request.kind === 'collections') {
      const onCollection = (collection: Collection) => send({ kind: 'collection', collection });
      // A final read under the same source and watchdog: NVML's energy counter at the job's end, rather
      // than at the daemon mode's last 10 s reading.
      process.on('message', (ask: ReaderAsk) => {
        if (ask.kind !== 'final') return;
        void collectOnce({ ...plan, processes: false }, readState(plan.stateDir), undefined, source)
          .then((output) => onCollection(output.collection))
          .then(() => send({ kind: 'final-done' }));
      });
      await readCollections(plan, request.intervalMs, { onCollection, say, signal: stop.signal, source });
      return;
    }
    const stream = source.stream(plan.fields, {}, request.intervalMs);
    stop.signal.addEventListener('abort', () => stream.stop());
    for await (const row of stream.rows) if (row) await send({ kind: 'row', row });
    await send({ kind: 'ended', failure: await stream.ended });
  } finally {
    watchdog?.stop();
  }
}

// Started without the launcher: the same guard against Node's inspector on SIGUSR1 (src/launch/main.ts).
process.on('SIGUSR1', () => {});

// Its own process group (run starts it so): a Ctrl-C meant for the job does not end the sampling.
process.once('message', (request: ReaderRequest) => {
  void serve(request).finally(() => process.exit(0));
});
