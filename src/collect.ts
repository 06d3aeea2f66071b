import type { FieldSpec } from './fields.js';
import type { Collection } from './metrics.js';
import { COMPUTE_APPS_ARGS, parseComputeApps } from './nvidia-smi/compute-apps.js';
import { classifyFailure, type Failure } from './nvidia-smi/failure.js';
import { kernelGpus, queryGpus, type GpuQueryResult, type KnownGpu } from './nvidia-smi/query-gpu.js';
import type { SmiRunner } from './nvidia-smi/run.js';
import { largestProcesses, withUsers, type UserRoots } from './processes.js';
import type { GpuSample } from './samples.js';
import type { CollectorState } from './state.js';

export interface CollectInput {
  run: SmiRunner;
  fields: readonly FieldSpec[];
  processes: boolean;
  maxProcesses?: number;
  state: CollectorState;
  /** Last successful collection before this one (unix seconds), carried over on failure. */
  previousSuccessSeconds?: number;
  userRoots: UserRoots;
  procRoot: string;
  /** Milliseconds since the epoch. */
  now: () => number;
}

export interface CollectOutput {
  collection: Collection;
  state: CollectorState;
  /** One line each: things that went wrong without failing the collection. */
  warnings: string[];
}

type GpuRead = Extract<GpuQueryResult, { kind: 'ok' }>;

const textReading = (sample: GpuSample, query: string) => {
  const reading = sample.readings.get(query);
  return reading?.kind === 'text' ? reading.text : undefined;
};

/** One --query-compute-apps call -> processes with their owners, or why they are left out. */
export async function queryProcesses(
  run: SmiRunner,
  options: { maxProcesses?: number; userRoots: UserRoots },
): Promise<{ processes?: Collection['processes']; warning?: string }> {
  const outcome = await run(COMPUTE_APPS_ARGS);
  if (outcome.kind !== 'ok') return { warning: `processes left out: ${classifyFailure(outcome, 'nvidia-smi --query-compute-apps').message}` };
  const parsed = parseComputeApps(outcome.stdout);
  const { kept, dropped } = largestProcesses(parsed.apps, options.maxProcesses);
  return { processes: { apps: withUsers(kept, options.userRoots), dropped, skipped: parsed.skipped } };
}

/** Samples read from nvidia-smi -> a collection, with a line for every GPU that gave none. */
export function toCollection(
  gpus: Pick<GpuRead, 'samples' | 'problems' | 'lost' | 'fields'>,
  processes: Collection['processes'],
  timing: { durationSeconds: number; nowSeconds: number },
): { collection: Collection; warnings: string[] } {
  const warnings = [
    ...gpus.lost.map((gpu) => `GPU ${gpu.gpu || gpu.busId} (${gpu.uuid || 'uuid unknown'}) did not answer: ${gpu.message}`),
    ...gpus.problems.map((p) => `nvidia-smi --query-gpu: ${p.message}: "${p.line.slice(0, 120)}"`),
  ];
  const down = [
    ...gpus.lost.map((gpu) => ({ gpu: gpu.gpu, uuid: gpu.uuid, reason: 'gpu_lost' as const })),
    ...gpus.problems
      .filter((p) => p.gpu !== undefined && p.uuid !== undefined)
      .map((p) => ({ gpu: p.gpu!, uuid: p.uuid!, reason: 'unparsable_output' as const })),
  ];
  return {
    collection: {
      fields: gpus.fields,
      samples: gpus.samples,
      down,
      processes,
      health: { durationSeconds: timing.durationSeconds, lastSuccessSeconds: Math.floor(timing.nowSeconds) },
    },
    warnings,
  };
}

/** What the next run should know: the driver's names (while still valid) and the GPUs seen. */
export function nextState(before: CollectorState, gpus: GpuRead): CollectorState {
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

/** One collection: nvidia-smi -> samples and processes, with health. Writes nothing. */
export async function collect(input: CollectInput): Promise<CollectOutput> {
  const started = input.now();
  const knownGpus = (): KnownGpu[] => {
    const fromState = input.state.gpus ?? [];
    return fromState.length > 0 ? fromState : kernelGpus(input.procRoot);
  };
  const [gpus, apps] = await Promise.all([
    queryGpus({ run: input.run, fields: input.fields, knownNames: input.state.names, knownGpus }),
    input.processes ? queryProcesses(input.run, input) : Promise.resolve(undefined),
  ]);
  const durationSeconds = (input.now() - started) / 1000;

  if (gpus.kind === 'failed') {
    const state = gpus.names && gpus.learned ? { ...input.state, names: gpus.names } : input.state;
    return { collection: failedCollection(gpus.failure, durationSeconds, input.previousSuccessSeconds), state, warnings: [] };
  }
  const { collection, warnings } = toCollection(gpus, apps?.processes, { durationSeconds, nowSeconds: input.now() / 1000 });
  return { collection, state: nextState(input.state, gpus), warnings: [...warnings, ...(apps?.warning ? [apps.warning] : [])] };
}

/** A collection that carries only its health: never the last run's GPU values. */
export function failedCollection(failure: Failure, durationSeconds: number, lastSuccessSeconds?: number): Collection {
  return { fields: [], samples: [], down: [], health: { failure, durationSeconds, lastSuccessSeconds } };
}
