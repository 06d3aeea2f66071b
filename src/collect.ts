import type { FieldSpec } from './fields.js';
import type { Collection } from './metrics.js';
import { COMPUTE_APPS_ARGS, parseComputeApps } from './nvidia-smi/compute-apps.js';
import { classifyFailure, type Failure } from './nvidia-smi/failure.js';
import { kernelGpus, queryGpus, type KnownGpu } from './nvidia-smi/query-gpu.js';
import type { SmiRunner } from './nvidia-smi/run.js';
import { largestProcesses, withUsers, type UserRoots } from './processes.js';
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

const textReading = (sample: { readings: ReadonlyMap<string, { kind: string; text?: string }> }, query: string) => {
  const reading = sample.readings.get(query);
  return reading?.kind === 'text' ? reading.text : undefined;
};

/** One collection: nvidia-smi -> samples and processes, with health. Writes nothing. */
export async function collect(input: CollectInput): Promise<CollectOutput> {
  const started = input.now();
  const knownNames = input.state.names;
  const knownGpus = async (): Promise<KnownGpu[]> => {
    const fromState = input.state.gpus ?? [];
    return fromState.length > 0 ? fromState : kernelGpus(input.procRoot);
  };
  const [gpus, apps] = await Promise.all([
    queryGpus({ run: input.run, fields: input.fields, knownNames, knownGpus }),
    input.processes ? input.run(COMPUTE_APPS_ARGS) : Promise.resolve(undefined),
  ]);
  const duration = () => (input.now() - started) / 1000;

  if (gpus.kind === 'failed') {
    const state = gpus.names && gpus.learned ? { ...input.state, names: gpus.names } : input.state;
    return { collection: failedCollection(gpus.failure, duration(), input.previousSuccessSeconds), state, warnings: [] };
  }

  const warnings = [
    ...gpus.lost.map((gpu) => `GPU ${gpu.gpu || gpu.busId} (${gpu.uuid || 'uuid unknown'}) did not answer: ${gpu.message}`),
    ...gpus.problems.map((p) => `nvidia-smi --query-gpu: ${p.message}: "${p.line.slice(0, 120)}"`),
  ];

  let processes: Collection['processes'];
  if (apps?.kind === 'ok') {
    const parsed = parseComputeApps(apps.stdout);
    const { kept, dropped } = largestProcesses(parsed.apps, input.maxProcesses);
    processes = { apps: await withUsers(kept, input.userRoots), dropped, skipped: parsed.skipped };
  } else if (apps) {
    warnings.push(`processes left out: ${classifyFailure(apps, 'nvidia-smi --query-compute-apps').message}`);
  }

  const driverVersion = gpus.samples.map((sample) => textReading(sample, 'driver_version')).find(Boolean);
  // Names learned for another driver may be wrong for this one: forget them and learn next run.
  const namesStillValid = gpus.learned || driverVersion === undefined || driverVersion === input.state.driverVersion;
  const state: CollectorState = {
    driverVersion: namesStillValid ? (driverVersion ?? input.state.driverVersion) : driverVersion,
    names: namesStillValid ? gpus.names : undefined,
    gpus: gpus.lost.length > 0 ? input.state.gpus : gpus.samples.map((sample) => ({ gpu: sample.gpu, uuid: sample.uuid, busId: textReading(sample, 'pci.bus_id') ?? '' })),
  };
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
      health: { durationSeconds: duration(), lastSuccessSeconds: Math.floor(input.now() / 1000) },
    },
    state,
    warnings,
  };
}

/** A collection that carries only its health: never the last run's GPU values. */
export function failedCollection(failure: Failure, durationSeconds: number, lastSuccessSeconds?: number): Collection {
  return { fields: [], samples: [], down: [], health: { failure, durationSeconds, lastSuccessSeconds } };
}
