import type { Collection } from '../collection.js';
import { daemonLoop } from '../collect/daemon-loop.js';
import { queryProcesses } from '../collect/collect.js';
import { collectOnce } from '../collect/one-shot.js';
import type { CollectPlan } from '../collect/plan.js';
import { openSource } from '../sources/sources.js';
import { ProcessMemory } from '../host/processes.js';
import type { Source } from '../sources/source.js';
import { readState } from '../collect/state.js';

/** How often the job's processes are looked for on the GPUs (to find its GPUs when CUDA_VISIBLE_DEVICES is not set). */
const PROCESSES_INTERVAL_MS = 5000;

/** What the loop hands on, and where its own lines go. */
export interface ReadLoopIo {
  onCollection: (collection: Collection) => Promise<void>;
  say: (line: string) => void;
  signal: AbortSignal;
  /** The source, opened already (the reader process opens NVML under its watchdog); else opened here. */
  source?: Source;
}

/**
 * The daemon mode's loop reading every GPU for `run`, each collection handed on, until `signal`.
 * With NVML it runs in a process of its own (src/run/reader.ts), so a call that hangs holds no more than that.
 */
export async function readCollections(plan: CollectPlan, intervalMs: number, io: ReadLoopIo): Promise<void> {
  // The state collect keeps (the driver's field names) spares a --help-query-gpu; run only reads it.
  const state = readState(plan.stateDir);
  // The source is chosen by sources.ts, as collect's is: a new source (NVML) serves run unchanged.
  const source = io.source ?? (await openSource(plan.source, plan));
  const memory = new ProcessMemory();
  await daemonLoop({
    fields: plan.fields,
    intervalMs,
    startupGraceMs: plan.timeoutMs,
    processesIntervalMs: plan.processes ? PROCESSES_INTERVAL_MS : undefined,
    // The one source, opened once: its one-shot reads are under the same deadline as its stream.
    oneShot: (current, previous) => collectOnce(plan, current, previous, source),
    // A pid gone from /proc that NVML still lists keeps the job it was seen with (src/host/processes.ts).
    queryProcesses: () => queryProcesses(source.reads(), { ...plan, memory }),
    stream: (fields, names) => source.stream(fields, names, intervalMs),
    publish: io.onCollection,
    saveState: async () => undefined,
    // The loop's own lines (a reader restarted) are worth one line each; the summary says the rest.
    say: io.say,
    now: Date.now,
    signal: io.signal,
    initialState: state,
  });
}
