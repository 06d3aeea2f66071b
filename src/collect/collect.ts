import { textReading, toCollection, failedCollection, type Collection } from '../collection.js';
import type { FieldSpec } from '../fields.js';
import type { Host } from '../host.js';
import { largestProcesses, describeProcesses } from '../processes.js';
import type { GpuRead, SourceReads } from '../sources/source.js';
import type { CollectorState } from '../state.js';

export interface CollectInput {
  reads: SourceReads;
  fields: readonly FieldSpec[];
  processes: boolean;
  maxProcesses?: number;
  state: CollectorState;
  /** Last successful collection before this one (unix seconds), carried over on failure. */
  previousSuccessSeconds?: number;
  /** Where process owners and cgroups are looked up. */
  host: Host;
  /** Milliseconds since the epoch. */
  now: () => number;
}

export interface CollectOutput {
  collection: Collection;
  state: CollectorState;
  /** One line each: things that went wrong without failing the collection. */
  warnings: string[];
}

/** One read of the processes -> processes with their owners and what they run for, or why they are left out. */
export async function queryProcesses(
  reads: SourceReads,
  options: { maxProcesses?: number; host: Host },
): Promise<{ processes?: Collection['processes']; warning?: string }> {
  const read = await reads.processes();
  if (read.kind !== 'ok') return { warning: `processes left out: ${read.failure.message}` };
  const { kept, dropped } = largestProcesses(read.apps, options.maxProcesses);
  return { processes: { apps: describeProcesses(kept, options.host), dropped, skipped: read.skipped } };
}

/** What the next run should know: the driver's names (while still valid) and the GPUs seen. */
export function nextState(before: CollectorState, gpus: Extract<GpuRead, { kind: 'ok' }>): CollectorState {
  const driverVersion = gpus.samples.map((sample) => textReading(sample, 'driver_version')).find(Boolean);
  // Names learned for another driver may be wrong for this one: forget them and learn next run.
  const namesStillValid = gpus.learned || driverVersion === undefined || driverVersion === before.driverVersion;
  return {
    driverVersion: namesStillValid ? (driverVersion ?? before.driverVersion) : driverVersion,
    names: namesStillValid ? gpus.names : undefined,
    gpus:
      gpus.lost.length > 0
        ? before.gpus
        : gpus.samples.map((sample) => ({ gpu: sample.gpu, uuid: sample.uuid, busId: textReading(sample, 'pci.bus_id') ?? '' })),
  };
}

/** One collection: the source's reads -> samples and processes, with health. Writes nothing. */
export async function collect(input: CollectInput): Promise<CollectOutput> {
  const started = input.now();
  const [gpus, apps] = await Promise.all([
    input.reads.gpus({ fields: input.fields, knownNames: input.state.names, knownGpus: input.state.gpus ?? [] }),
    input.processes ? queryProcesses(input.reads, input) : Promise.resolve(undefined),
  ]);
  const durationSeconds = (input.now() - started) / 1000;

  if (gpus.kind === 'failed') {
    const state = gpus.names && gpus.learned ? { ...input.state, names: gpus.names } : input.state;
    return { collection: failedCollection(gpus.failure, durationSeconds, input.previousSuccessSeconds), state, warnings: [] };
  }
  const { collection, warnings } = toCollection(gpus, apps?.processes, { durationSeconds, nowSeconds: input.now() / 1000 });
  return { collection, state: nextState(input.state, gpus), warnings: [...warnings, ...(apps?.warning ? [apps.warning] : [])] };
}
