import type { MigActivity, MigInstance } from '../../collection.js';
import type { Device, Nvml, Result } from './api.js';
import { type DeviceCalls, type DeviceState, deviceCalls, type GpuInstanceGpm } from './device-calls.js';
import { readMig } from './mig.js';
import { GPM_METRICS } from './nvml-only-readers.js';

// GPM per MIG GPU instance, with the whole GPU's discipline (nvml-only-readers.ts): two samples compared
// with nvmlGpmMetricsGet, the first taken before the one-shot run's window (the same wait as the whole
// GPU's), the daemon mode's previous one kept and compared at most every gpmEveryMs. nvml.h's
// nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample) takes
// the PARENT's handle and the GPU instance id: GPM samples a GPU instance (DCGM's GPU_I entity, sampled
// the same way in its DcgmGpmManager), which its compute instances share, so there is one series per GPU
// instance, not one per MIG device. Each instance's two buffers are allocated once and freed when the
// instance goes (MIG reconfigured or turned off) or its GPU is dropped.

const GPM_IDS = Object.values(GPM_METRICS);

/** "1c.3g.71gb" (a compute instance's profile) -> "3g.71gb" (its GPU instance's). */
export const gpuInstanceProfile = (profile: string): string => profile.replace(/^\d+c\./, '');

/**
 * The GPU instances of a GPU's MIG devices, by id: their identity (the MIG UUIDs of their compute
 * instances: a GPU instance destroyed and made again under the same id has new ones) and profile.
 */
function gpuInstances(mig: readonly MigInstance[]): Map<number, { identity: string; profile: string }> {
  const byId = new Map<number, { uuids: string[]; profile: string }>();
  for (const device of mig) {
    const entry = byId.get(device.gpuInstance) ?? { uuids: [], profile: '' };
    entry.uuids.push(device.uuid);
    entry.profile ||= gpuInstanceProfile(device.profile);
    byId.set(device.gpuInstance, entry);
  }
  // The profile too: a GPU instance made again with another profile is another, whatever its UUIDs.
  return new Map([...byId].map(([id, { uuids, profile }]) => [id, { identity: `${profile} ${uuids.sort().join(' ')}`, profile }]));
}

const release = (nvml: Nvml, samples: GpuInstanceGpm) => {
  nvml.gpmFree(samples.previous);
  nvml.gpmFree(samples.next);
};

/**
 * Keeps `kept` in step with the GPU's instances: the buffers of an instance that is gone, or is another
 * under the same id, are freed; an instance without buffers gets two, and one without a sample takes its
 * first. Returns whether a first sample was taken (a one-shot run then waits its window).
 */
function follow(nvml: Nvml, device: Device, kept: Map<number, GpuInstanceGpm>, instances: ReturnType<typeof gpuInstances>): boolean {
  for (const [id, samples] of kept)
    if (instances.get(id)?.identity !== samples.identity) {
      release(nvml, samples);
      kept.delete(id);
    }
  let took = false;
  for (const [id, { identity }] of instances) {
    let samples = kept.get(id);
    if (!samples) {
      const [previous, next] = [nvml.gpmAlloc(), nvml.gpmAlloc()];
      if (previous.rc !== 0 || next.rc !== 0) {
        for (const buffer of [previous, next]) if (buffer.rc === 0) nvml.gpmFree(buffer.value!);
        continue;
      }
      kept.set(id, (samples = { identity, previous: previous.value!, next: next.value!, taken: false }));
    }
    if (samples.taken) continue;
    samples.taken = nvml.gpmMigTake(device, id, samples.previous) === 0;
    took ||= samples.taken;
  }
  return took;
}

/**
 * Before a read: where the GPU has GPM and its MIG layout was never read (a one-shot run, the daemon
 * mode's first read), each GPU instance takes its first sample. Returns whether one did.
 */
export function prepareMigGpm(nvml: Nvml, device: Device, state: DeviceState): boolean {
  if (!state.gpm?.supported || state.migGpm !== undefined) return false;
  state.migGpm = new Map();
  // Asked afresh and not kept: the read after the window keeps the mode with its own time, one
  // clock for the mode's fields and the MIG reader (kept from here, it would expire a window early).
  const calls = deviceCalls(nvml, device, state, { now: Date.now(), energyEveryMs: 0, settingsEveryMs: 0, gpmEveryMs: 0 });
  return follow(nvml, device, state.migGpm, gpuInstances(readMig(calls) ?? []));
}

/** An instance's metrics between its previous sample and one taken now (or the last comparison, within gpmEveryMs). */
function compare(calls: DeviceCalls, id: number, samples: GpuInstanceGpm): Result<Result<number>[]> {
  if (samples.kept && calls.now - samples.kept.at < calls.gpmEveryMs) return samples.kept.result;
  const rc = calls.nvml.gpmMigTake(calls.device, id, samples.next);
  if (rc !== 0) return { rc };
  const metrics = calls.nvml.gpmMetrics(samples.previous, samples.next, GPM_IDS);
  [samples.previous, samples.next] = [samples.next, samples.previous];
  samples.kept = { at: calls.now, result: metrics };
  return metrics;
}

/**
 * The GPM ratios of `queries` (the whole GPU's GPM fields asked) for each GPU instance of `mig` (this
 * read's MIG devices; undefined: MIG off or unread) that had a sample of the same instance to compare
 * with. undefined where the GPU has no GPM. A call that fails leaves that instance out; a metric NVML
 * does not answer, or answers NaN (DCGM shows it blank), leaves that ratio out.
 */
export function readMigGpm(
  calls: DeviceCalls,
  mig: readonly MigInstance[] | undefined,
  queries: readonly string[],
): MigActivity[] | undefined {
  if (!calls.state.gpm?.supported) return undefined;
  const kept = (calls.state.migGpm ??= new Map());
  const instances = gpuInstances(mig ?? []);
  const comparable = [...instances].filter(([id, { identity }]) => kept.get(id)?.taken && kept.get(id)!.identity === identity);
  follow(calls.nvml, calls.device, kept, instances);
  const activity: MigActivity[] = [];
  for (const [id, { profile }] of comparable) {
    const all = compare(calls, id, kept.get(id)!);
    if (all.rc !== 0) continue;
    const ratios = new Map<string, number>();
    for (const query of queries) {
      const one = all.value![GPM_IDS.indexOf(GPM_METRICS[query]!)];
      if (one?.rc === 0 && Number.isFinite(one.value)) ratios.set(query, one.value! / 100);
    }
    activity.push({ gpuInstance: id, profile, ratios });
  }
  return activity;
}

/** Frees every GPM buffer a GPU's state holds (the GPU is lost, or NVML stopped answering): its whole GPU's and its instances'. */
export function releaseGpm(nvml: Nvml, state: DeviceState): void {
  for (const samples of state.migGpm?.values() ?? []) release(nvml, samples);
  state.migGpm = undefined;
  const gpm = state.gpm;
  for (const buffer of [gpm?.previous, gpm?.next]) if (buffer !== undefined) nvml.gpmFree(buffer);
  state.gpm = undefined;
}
