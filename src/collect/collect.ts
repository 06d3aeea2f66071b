import { textReading, toCollection, failedCollection, type Collection, type GpuSample, type KnownGpu } from '../collection.js';
import type { FieldSpec } from '../fields/field-spec.js';
import type { Host } from '../host/host.js';
import { largestProcesses, describeProcesses, type ProcessMemory } from '../host/processes.js';
import { readReservations, type ReservationMemory } from '../host/reservations.js';
import type { GpuRead, SourceReads } from '../sources/source.js';
import { rememberStuck, stillStuck, stuckMessage } from './stuck.js';
import type { CollectorState } from './state.js';
import { xidSeries } from '../xid/count.js';
import { busIdKey } from '../xid/parse.js';
import type { XidPoll, XidWatch } from '../xid/watch.js';

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
  /** The kernel log's Xid counter; none with the demo source. */
  xid?: XidWatch;
  /** Where what was read of each job's reserved GPUs is kept; none with the demo source (its GPUs are not this host's). */
  reservations?: ReservationMemory;
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
  options: { maxProcesses?: number; host: Host; memory?: ProcessMemory; reservations?: ReservationMemory },
): Promise<{ processes?: Collection['processes']; warning?: string }> {
  const reading = reads.processes();
  // Read with the processes, at their cadence: a job's reservation is part of who holds the GPU. Read
  // while nvidia-smi runs (the reads are synchronous): after its answer they were on the one-shot's
  // critical path, 5-8 ms on an H200 host (issue 41's profile).
  let found: ReturnType<typeof readReservations>;
  try {
    found = options.reservations ? readReservations(options.host, options.reservations) : undefined;
  } catch (error) {
    // Not left unheard: nvidia-smi's outcome would otherwise be an unhandled rejection.
    void reading.catch(() => {});
    throw error;
  }
  const read = await reading;
  if (read.kind !== 'ok') return { warning: `processes left out: ${read.failure.message}` };
  const { kept, dropped } = largestProcesses(read.apps, options.maxProcesses);
  const apps = describeProcesses(kept, options.host, options.memory);
  if (!found) return { processes: { apps, dropped, skipped: read.skipped } };
  const { environsRead: _, ...reservations } = found;
  return { processes: { apps, dropped, skipped: read.skipped, reservations } };
}

/** A sample as the state and the Xid counts know a GPU: enough to find it by its PCI address. */
export const knownGpu = (sample: GpuSample): KnownGpu => ({
  gpu: sample.gpu,
  uuid: sample.uuid,
  busId: textReading(sample, 'pci.bus_id') ?? '',
});

/** What the next run should know: the driver's names (while still valid) and the GPUs seen. */
export function nextState(before: CollectorState, gpus: Extract<GpuRead, { kind: 'ok' }>): CollectorState {
  const driverVersion = gpus.samples.map((sample) => textReading(sample, 'driver_version')).find(Boolean);
  // Names learned for another driver may be wrong for this one: forget them and learn next run.
  const namesStillValid = gpus.learned || driverVersion === undefined || driverVersion === before.driverVersion;
  return {
    ...before,
    driverVersion: namesStillValid ? (driverVersion ?? before.driverVersion) : driverVersion,
    names: namesStillValid ? gpus.names : undefined,
    gpus: gpus.lost.length > 0 ? before.gpus : gpus.samples.map(knownGpu),
  };
}

/** One collection: the source's reads -> samples and processes, with health. Writes nothing. */
export async function collect(input: CollectInput): Promise<CollectOutput> {
  // An nvidia-smi an earlier run could not kill is still asleep in the driver: another would only
  // join it (one more every timer run), so none is started while it is there.
  const stuck = stillStuck(input.host, input.state.stuck ?? []);
  if (stuck.length > 0) {
    const failure = { reason: 'nvidia_smi_stuck' as const, message: stuckMessage(input.host, stuck[0]!, input.now()) };
    // The kernel log is read all the same: its Xid 79 is what a stuck nvidia-smi most often comes with.
    const xid = input.xid?.poll();
    const collection = withXid(failedCollection(failure, 0, input.previousSuccessSeconds), xid, input.state.gpus ?? []);
    return { collection, state: withXidState({ ...input.state, stuck }, xid), warnings: [] };
  }
  const remembered = (state: CollectorState): CollectorState => {
    const now = input.now();
    const found = (input.reads.stuck?.() ?? []).flatMap((pid) => rememberStuck(input.host, pid, now) ?? []);
    const { stuck: _, ...rest } = state;
    return found.length > 0 ? { ...rest, stuck: found } : rest;
  };
  const started = input.now();
  const reading = Promise.all([
    input.reads.gpus({ fields: input.fields, knownNames: input.state.names, knownGpus: input.state.gpus ?? [] }),
    input.processes ? queryProcesses(input.reads, input) : Promise.resolve(undefined),
  ]);
  // Read while nvidia-smi runs: the kernel log costs a few microseconds a record, done meanwhile.
  const xid = input.xid?.poll();
  const [gpus, apps] = await reading;
  const cuda = gpus.kind === 'ok' ? await learnCuda(input.reads, input.state, gpus) : undefined;
  const durationSeconds = (input.now() - started) / 1000;

  if (gpus.kind === 'failed') {
    const state = gpus.names && gpus.learned ? { ...input.state, names: gpus.names } : input.state;
    // Every GPU lost (a one-GPU host's Xid 79): the GPUs the last good run knew are still named down,
    // nvidia_gpu_up 0, so the alert on a GPU that fell off the bus fires here as where one of several is.
    const down =
      gpus.failure.reason === 'gpu_lost'
        ? (input.state.gpus ?? []).map((gpu) => ({ gpu: gpu.gpu, uuid: gpu.uuid, reason: 'gpu_lost' as const }))
        : [];
    const collection = { ...failedCollection(gpus.failure, durationSeconds, input.previousSuccessSeconds), down };
    return { collection: withXid(collection, xid, input.state.gpus ?? []), state: remembered(withXidState(state, xid)), warnings: [] };
  }
  const { collection, warnings } = toCollection(gpus, apps?.processes, { durationSeconds, nowSeconds: input.now() / 1000 });
  return {
    collection: withXid({ ...collection, cudaVersion: cuda?.version || undefined }, xid, [
      ...gpus.samples.map(knownGpu),
      ...(input.state.gpus ?? []),
    ]),
    state: remembered(withXidState({ ...nextState(input.state, gpus), cuda }, xid)),
    warnings: [...warnings, ...(apps?.warning ? [apps.warning] : [])],
  };
}

/**
 * The driver's CUDA version: the one remembered for this driver, or asked once when the driver is new
 * to the state (one-shot runs are timed: the common run asks nothing). Undefined when unknown.
 */
async function learnCuda(reads: SourceReads, state: CollectorState, gpus: Extract<GpuRead, { kind: 'ok' }>) {
  const driverVersion = gpus.samples.map((sample) => textReading(sample, 'driver_version')).find(Boolean) ?? state.driverVersion;
  if (!driverVersion || state.cuda?.driverVersion === driverVersion) return state.cuda;
  const version = await reads.cudaVersion?.();
  return version === undefined ? undefined : { driverVersion, version };
}

/**
 * The collection with the Xid counts named by `gpus` (this run's first, then the last good run's);
 * this run's GPUs start at 0 for the Xids the example alerts watch, while the log can be read.
 */
export const withXid = (collection: Collection, xid: XidPoll | undefined, gpus: readonly KnownGpu[]): Collection => {
  if (!xid) return collection;
  // NVML counts only the GPUs registered for its Xid events: the others get no zeros.
  const watched = (gpu: KnownGpu) => !xid.nvml || xid.nvml.buses.includes(busIdKey(gpu.busId) ?? '');
  const zeroed = xid.up ? collection.samples.map(knownGpu).filter(watched) : [];
  const source = xid.nvml ? 'nvml' : 'kmsg';
  return { ...collection, xid: { sourceUp: xid.up, source, series: xidSeries(xid.state?.counts ?? [], gpus, zeroed) } };
};

/**
 * withXid for the daemon mode, which looks at the kernel log at most every second: between two looks
 * the poll is the very same object, and the GPUs nearly always the same, so the series are those the
 * last sample had instead of being made again. Any other poll, or any change in a GPU's name, uuid
 * or bus, makes them anew.
 */
export function keptXid(): (collection: Collection, xid: XidPoll | undefined, gpus: readonly KnownGpu[]) => Collection {
  let last: { xid: XidPoll; state: XidPoll['state']; key: string; value: Collection['xid'] } | undefined;
  return (collection, xid, gpus) => {
    if (!xid) return collection;
    // Lengths first: no name runs into the next, whatever characters a source gave them.
    let key = String(collection.samples.length);
    for (const each of [...collection.samples.map(knownGpu), ...gpus])
      key += `|${each.gpu.length}:${each.gpu}${each.uuid.length}:${each.uuid}${each.busId.length}:${each.busId}`;
    if (last?.xid !== xid || last.state !== xid.state || last.key !== key)
      last = { xid, state: xid.state, key, value: withXid(collection, xid, gpus).xid };
    return { ...collection, xid: last.value };
  };
}

const withXidState = (state: CollectorState, xid: XidPoll | undefined): CollectorState =>
  xid?.state ? { ...state, xid: xid.state } : state;
