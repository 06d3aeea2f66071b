import type { ComputeApp, Failure, GpuSample } from '../../collection.js';
import type { FieldSpec } from '../../fields.js';
import { type BlockingDeadline, type GpuQuery, type GpuRead, NO_DEADLINE, type ProcessRead, type Source } from '../source.js';
import type { Nvml } from './api.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { deviceCalls, type DeviceState } from './device-calls.js';
import { nvmlAnswers, readDevice, type LostGpu } from './device-read.js';
import { GPM_METRICS, prepareGpm } from './nvml-only-readers.js';
import { collectionReason, describeReturn } from './return-codes.js';
import { nvmlOpener, type NvmlLocation } from './session.js';
import { nvmlStream } from './stream.js';

// NVML as a source: the same fields as nvidia-smi's, read in this process through koffi, with no
// child to start. Loaded (with koffi's native module) only when --source nvml is chosen.

export interface NvmlSourceOptions extends NvmlLocation {
  /** With GPM fields, how long a collection without an earlier GPM sample waits between its two. */
  gpmWindowMs: number;
  /** Bounds each stretch of NVML's calls (they block this thread); none by default. */
  deadline?: BlockingDeadline;
}

/** The daemon mode reads the energy counter (4.5 ms per GPU per call on an H200 host) and the settings (device-read.ts) this often. */
export const ENERGY_EVERY_MS = 10_000;

/** What the source keeps from one collection to the next: each GPU's state, by index. */
export type Kept = Map<number, DeviceState>;

/** How one read is made: now, the GPM window, the energy cadence. */
export interface ReadTiming {
  gpmWindowMs: number;
  energyEveryMs: number;
  /** Set on the daemon mode's samples: when the read started. */
  takenAt?: number;
}

/** NVML reports a process's memory as this when it cannot tell (NVML_VALUE_NOT_AVAILABLE). */
const NOT_AVAILABLE = 0xffffffffffffffffn;

const isFailure = (value: Nvml | Failure): value is Failure => 'reason' in value;

/** Every GPU's handle, or the failure that ends the collection. */
function devices(nvml: Nvml): { handles: { index: number; rc: number; device?: bigint }[] } | Failure {
  const count = nvml.count();
  if (count.rc !== 0) return { reason: collectionReason(count.rc), message: `nvmlDeviceGetCount_v2 returned ${describeReturn(count.rc)}` };
  if (count.value === 0) return { reason: 'no_devices', message: 'NVML found no NVIDIA devices' };
  return {
    handles: Array.from({ length: count.value! }, (_, index) => {
      const handle = nvml.handle(index);
      return { index, rc: handle.rc, device: handle.value };
    }),
  };
}

/** One read of every GPU: samples, and the GPUs that did not answer. */
export async function readGpus(
  nvml: Nvml,
  fields: readonly FieldSpec[],
  query: Pick<GpuQuery, 'knownGpus'>,
  kept: Kept,
  timing: ReadTiming,
): Promise<GpuRead> {
  const names = Object.fromEntries(fields.map((field) => [field.query, nvmlAnswers(field) ? field.query : '']));
  const asked = fields.filter(nvmlAnswers);
  const all = devices(nvml);
  if ('reason' in all) {
    // What was kept of each GPU may not hold once NVML answers again (a reloaded driver, a GPU reset).
    kept.clear();
    return { kind: 'failed', failure: all, learned: false };
  }
  const driver = nvml.driverVersion();
  const stateOf = (index: number) => kept.get(index) ?? kept.set(index, {}).get(index)!;
  // GPM compares two samples: a GPU without an earlier one takes it now, and the read waits a window.
  if (asked.some((field) => GPM_METRICS[field.query] !== undefined)) {
    const first = all.handles.map(({ index, device }) => device !== undefined && prepareGpm(nvml, device, stateOf(index)));
    if (first.some(Boolean)) await sleep(timing.gpmWindowMs);
  }
  const now = Date.now();
  const samples: GpuSample[] = [];
  const lost: LostGpu[] = [];
  for (const { index, rc, device } of all.handles) {
    const result =
      device === undefined
        ? { lost: `nvmlDeviceGetHandleByIndex_v2 returned ${describeReturn(rc)}` }
        : readDevice(
            deviceCalls(nvml, device, stateOf(index), { now, energyEveryMs: timing.energyEveryMs, settingsEveryMs: timing.energyEveryMs }),
            index,
            asked,
            driver.value,
          );
    if ('lost' in result) {
      kept.delete(index);
      const known = query.knownGpus.find((gpu) => gpu.gpu === String(index));
      lost.push({ gpu: String(index), uuid: known?.uuid ?? '', busId: known?.busId ?? '', message: result.lost });
    } else samples.push(timing.takenAt === undefined ? result : { ...result, takenAt: timing.takenAt });
  }
  if (samples.length === 0)
    return {
      kind: 'failed',
      learned: false,
      failure: { reason: 'gpu_lost', message: `no GPU could be read: GPU ${lost[0]?.gpu}: ${lost[0]?.message}` },
    };
  return { kind: 'ok', samples, problems: [], lost, fields: asked, names, learned: false };
}

/** The compute processes of every GPU that answers. */
export function readProcesses(nvml: Nvml): ProcessRead {
  const all = devices(nvml);
  if ('reason' in all) return { kind: 'failed', failure: all };
  const apps: ComputeApp[] = [];
  let skipped = 0;
  for (const { device } of all.handles) {
    if (device === undefined) continue;
    const uuid = nvml.text('uuid', device);
    const processes = nvml.processes(device);
    if (uuid.rc !== 0 || processes.rc !== 0) continue;
    for (const process of processes.value!) {
      const name = nvml.processName(process.pid);
      if (name.rc !== 0) skipped++;
      apps.push({
        uuid: uuid.value!,
        pid: process.pid,
        name: name.value ?? '',
        ...(BigInt(process.usedGpuMemory) === NOT_AVAILABLE ? {} : { memoryBytes: Number(process.usedGpuMemory) }),
      });
    }
  }
  return { kind: 'ok', apps, skipped };
}

/**
 * NVML's CUDA version (major x 1000 + minor x 10) as nvidia-smi prints it, "13.1"; '' when this
 * driver has no such call or does not say, as nvidia-smi's source does.
 */
export function cudaVersionText(result: { rc: number; value?: number }): string {
  if (result.rc !== 0 || result.value === undefined || result.value <= 0) return '';
  return `${Math.floor(result.value / 1000)}.${Math.floor((result.value % 1000) / 10)}`;
}

/** NVML as a source. */
export function nvmlSource(options: NvmlSourceOptions): Source {
  const open = nvmlOpener(options);
  // One-shot runs read the energy counter every time; the daemon mode's one-shot recoveries share its cadence.
  const kept: Kept = new Map();
  const timing = { gpmWindowMs: options.gpmWindowMs, energyEveryMs: 0 };
  const deadline = options.deadline ?? NO_DEADLINE;
  /** A read under the deadline: NVML opened (the library loaded, nvmlInit_v2, the usual hang) and its calls made. */
  const guarded = async <T>(read: (nvml: Nvml) => T | Promise<T>, failed: (failure: Failure) => T): Promise<T> => {
    deadline.enter();
    try {
      const nvml = open();
      return isFailure(nvml) ? failed(nvml) : await read(nvml);
    } finally {
      deadline.leave();
    }
  };
  return {
    reads: () => ({
      gpus: (query) =>
        guarded(
          (nvml) => readGpus(nvml, query.fields, query, kept, timing),
          (failure) => ({ kind: 'failed', failure, learned: false }),
        ),
      processes: () =>
        guarded(
          (nvml) => readProcesses(nvml),
          (failure) => ({ kind: 'failed', failure }),
        ),
      cudaVersion: () =>
        guarded(
          (nvml) => cudaVersionText(nvml.cudaDriverVersion()),
          () => undefined,
        ),
    }),
    stream: (fields, _names, intervalMs) =>
      nvmlStream({
        open,
        read: (nvml, takenAt) =>
          readGpus(nvml, fields, { knownGpus: [] }, kept, { gpmWindowMs: options.gpmWindowMs, energyEveryMs: ENERGY_EVERY_MS, takenAt }),
        intervalMs,
        deadline,
      }),
  };
}

// For bench/nvml-calls.mjs, which times each NVML call through the bundle users run.
export { nvmlOpener } from './session.js';
