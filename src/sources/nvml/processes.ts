import type { ComputeApp, Failure } from '../../collection.js';
import type { ProcessRead } from '../source.js';
import type { Nvml } from './api.js';
import { processUtilization, type UtilizationReads, windowStart } from './process-utilization.js';
import { collectionReason, describeReturn, NVML_ERROR_GPU_IS_LOST } from './return-codes.js';

// The GPUs NVML lists, and the compute processes on them.

/** Every GPU's handle (or why there is none), by index. */
export type Handles = { handles: { index: number; rc: number; device?: bigint }[] };

/** Every GPU's handle, or the failure that ends the collection. */
export function devices(nvml: Nvml): Handles | Failure {
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

/** NVML reports a process's memory as this when it cannot tell (NVML_VALUE_NOT_AVAILABLE). */
const NOT_AVAILABLE = 0xffffffffffffffffn;

/** A percentage as a ratio; a sample past 100 % (0xFFFFFFFF: none) is no value, never clamped. */
const ratio = (percent: number): number | undefined => (percent >= 0 && percent <= 100 ? percent / 100 : undefined);

/** The compute processes of every GPU that answers, with their utilization since the previous read (`reads`). */
export function readProcesses(nvml: Nvml, reads: UtilizationReads = new Map(), now = Date.now()): ProcessRead {
  const all = devices(nvml);
  if ('reason' in all) return { kind: 'failed', failure: all };
  const apps: ComputeApp[] = [];
  let skipped = 0;
  for (const { index, device } of all.handles) {
    if (device === undefined) continue;
    const uuid = nvml.text('uuid', device);
    const processes = nvml.processes(device);
    // A lost GPU is reported down; any other GPU whose list cannot be read (still too long after
    // the buffer grew, or an error) makes every GPU's processes unknown, never none: an unread list
    // read as empty made a busy GPU look idle and free.
    if (uuid.rc !== 0 || processes.rc === NVML_ERROR_GPU_IS_LOST) continue;
    if (processes.rc !== 0) {
      const message = `nvmlDeviceGetComputeRunningProcesses_v3 for GPU ${index} returned ${describeReturn(processes.rc)}`;
      return { kind: 'failed', failure: { reason: collectionReason(processes.rc), message } };
    }
    const utilization = processUtilization(nvml, device, windowStart(reads, uuid.value!));
    reads.set(uuid.value!, now);
    for (const process of processes.value!) {
      const name = nvml.processName(process.pid);
      if (name.rc !== 0) skipped++;
      apps.push({
        uuid: uuid.value!,
        pid: process.pid,
        name: name.value ?? '',
        ...(BigInt(process.usedGpuMemory) === NOT_AVAILABLE ? {} : { memoryBytes: Number(process.usedGpuMemory) }),
        // A listed process without a sample in the window had none of its work sampled there: 0.
        ...(utilization && {
          smUtilization: ratio(utilization.get(process.pid)?.sm ?? 0),
          memoryUtilization: ratio(utilization.get(process.pid)?.memory ?? 0),
        }),
      });
    }
  }
  return { kind: 'ok', apps, skipped };
}
