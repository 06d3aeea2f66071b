import type { Device, Nvml } from './api.js';
import { NVML_ERROR_NOT_FOUND } from './return-codes.js';

// Per-process SM and memory utilization (nvmlDeviceGetProcessUtilization). The driver samples each
// process about once a second (timestamps 1.000 s apart on an H200, driver 580.159.04) and keeps those
// samples a while; the call averages the samples newer than `since`. NOT_FOUND means no process had a
// sample in that window: between two of the driver's samples, or no process ran at all.

/** Longest gap between two of the driver's samples of a process (NVML documents 1/6 s to 1 s by product). */
export const DRIVER_SAMPLE_PERIOD_MS = 1000;

/** When each GPU's (by UUID) process utilization was last read, in ms since the epoch; kept by the source. */
export type UtilizationReads = Map<string, number>;

/**
 * Where the window starts, in NVML's CPU microseconds: 0 (every sample the driver keeps, about the
 * last 15 s on an H200) on the first read, else one driver sample period before the previous read, so
 * the window always holds a sample of every process that ran in it, however short the interval.
 */
export function windowStart(reads: UtilizationReads, uuid: string): bigint {
  const previous = reads.get(uuid);
  return previous === undefined ? 0n : BigInt(Math.max(0, previous - DRIVER_SAMPLE_PERIOD_MS)) * 1000n;
}

/** Each sampled process's SM and memory utilization in percent, by pid; undefined when the call failed. */
export function processUtilization(nvml: Nvml, device: Device, since: bigint): Map<number, { sm: number; memory: number }> | undefined {
  const read = nvml.processUtilization(device, since);
  if (read.rc === NVML_ERROR_NOT_FOUND) return new Map();
  if (read.rc !== 0) return undefined;
  const newest = new Map<number, { at: bigint; sm: number; memory: number }>();
  for (const sample of read.value!) {
    const at = BigInt(sample.timeStamp);
    const before = newest.get(sample.pid);
    if (!before || at > before.at) newest.set(sample.pid, { at, sm: sample.smUtil, memory: sample.memUtil });
  }
  return new Map([...newest].map(([pid, { sm, memory }]) => [pid, { sm, memory }]));
}
