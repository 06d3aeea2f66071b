import type { Reading } from '../../collection.js';
import type { FieldSpec } from '../../fields/field-spec.js';
import type { Nvml, Result } from './api.js';
import type { DeviceCalls, DeviceState, FieldReader } from './device-calls.js';
import { OUT_OF_RANGE } from './field-readers.js';
import { NVML_ERROR_NOT_SUPPORTED } from './return-codes.js';

// The fields only NVML answers (FieldSpec.nvml in src/fields/fields.ts): the energy counter, PCIe replays and
// GPM's activity ratios.

/** nvmlGpmMetricId_t: the GPM metrics read, by field. */
export const GPM_METRICS: Readonly<Record<string, number>> = {
  'nvml.gpm.graphics_active': 1, // NVML_GPM_METRIC_GRAPHICS_UTIL
  'nvml.gpm.sm_active': 2, // NVML_GPM_METRIC_SM_UTIL
  'nvml.gpm.sm_occupancy': 3, // NVML_GPM_METRIC_SM_OCCUPANCY
  'nvml.gpm.tensor_active': 5, // NVML_GPM_METRIC_ANY_TENSOR_UTIL
  'nvml.gpm.dram_active': 10, // NVML_GPM_METRIC_DRAM_BW_UTIL
};
const GPM_IDS = Object.values(GPM_METRICS);

// Divided rather than multiplied by the field's factor: 14.25 / 100 is 0.1425, 14.25 * 0.01 is not quite.
const scaled = (value: number, field: FieldSpec): number => value / Math.round(1 / (field.factor ?? 1));
/** NVML's "not available" in a 32-bit or a 64-bit answer: never a count (field-readers.ts). */
const isNone = (value: bigint | number, bits: 32 | 64): boolean => BigInt(value) === (1n << BigInt(bits)) - 1n;
const counter = (value: bigint | number, field: FieldSpec, bits: 32 | 64): Reading =>
  isNone(value, bits) ? OUT_OF_RANGE : { kind: 'number', value: scaled(Number(value), field), shown: String(value) };

/**
 * Energy in millijoules (a 64-bit counter). Measured at 4.5 ms per GPU per call on an H200 host, so the
 * daemon mode reads it every `energyEveryMs` and repeats that reading in between: a counter read a
 * little earlier, never a made-up value.
 */
const energy: FieldReader = (c, field) => {
  const kept = c.state.energy;
  if (kept && c.now - kept.at < c.energyEveryMs) return kept.result;
  const read = c.nvml.energy(c.device);
  const result: Result<Reading> = read.rc === 0 ? { rc: 0, value: counter(read.value!, field, 64) } : { rc: read.rc };
  c.state.energy = { at: c.now, result };
  return result;
};

/**
 * GPM's metrics between the previous sample (prepareGpm's, or the last comparison's in the daemon
 * mode) and one taken now; the new one becomes the previous. The daemon mode compares at most every
 * gpmEveryMs and repeats that comparison in between: a GPM sample cost 0.48 ms per GPU at a 250 ms
 * interval on an H200 host (far more than when taken back to back), and ratios over a window of a
 * second are what a scrape every 15 s reads anyway.
 */
const gpmAll = (c: DeviceCalls): Result<Result<number>[]> =>
  c.once('gpm', () => {
    const gpm = c.state.gpm;
    if (!gpm?.supported || gpm.previous === undefined || gpm.next === undefined) return { rc: 3 };
    if (gpm.kept && c.now - gpm.kept.at < c.gpmEveryMs) return gpm.kept.result;
    const rc = c.nvml.gpmTake(c.device, gpm.next);
    if (rc !== 0) return { rc };
    const metrics = c.nvml.gpmMetrics(gpm.previous, gpm.next, GPM_IDS);
    [gpm.previous, gpm.next] = [gpm.next, gpm.previous];
    gpm.kept = { at: c.now, result: metrics };
    return metrics;
  });

const gpm = (c: DeviceCalls, field: FieldSpec): Result<Reading> => {
  const all = gpmAll(c);
  if (all.rc !== 0) return { rc: all.rc };
  const one = all.value![GPM_IDS.indexOf(GPM_METRICS[field.query]!)]!;
  if (one.rc !== 0) return { rc: one.rc };
  const percent = one.value!;
  // A ratio of two samples: a value that is no number, or below 0, is no activity.
  if (!Number.isFinite(percent) || percent < 0) return { rc: 0, value: OUT_OF_RANGE };
  return { rc: 0, value: { kind: 'number', value: scaled(percent, field), shown: percent.toFixed(1) } };
};

/** nvmlDeviceGetPcieThroughput's counter 0 (TX) or 1 (RX), in KB/s. */
function pcieThroughput(c: DeviceCalls, field: FieldSpec, counter: 0 | 1): Result<Reading> {
  const read = c.nvml.pcieThroughput(c.device, counter);
  if (read.rc !== 0) return { rc: read.rc };
  if (isNone(read.value!, 32)) return { rc: 0, value: OUT_OF_RANGE };
  return { rc: 0, value: { kind: 'number', value: read.value! * (field.factor ?? 1), shown: String(read.value) } };
}

/**
 * The fabric state; NOT_SUPPORTED where the GPU has none (the state Not_Supported): no series, as on a
 * GPU whose driver lacks the call. The fabric's status is not the state's: nvml.h has it checked only
 * once the state is Completed, where an error is a registration that completed and failed (not read).
 */
const fabricState: FieldReader = (c, field) => {
  const read = c.nvml.fabric(c.device);
  if (read.rc !== 0) return { rc: read.rc };
  const { state } = read.value!;
  if (state === 0 || field.states?.[state] === undefined) return { rc: NVML_ERROR_NOT_SUPPORTED };
  return { rc: 0, value: { kind: 'text', text: field.states[state]! } };
};

export const NVML_ONLY_READERS: Readonly<Record<string, FieldReader>> = {
  'nvml.energy': energy,
  'nvml.pcie.replay_counter': (c, field) => {
    const read = c.nvml.uint('PcieReplayCounter', c.device);
    return read.rc === 0 ? { rc: 0, value: counter(read.value!, field, 32) } : { rc: read.rc };
  },
  ...Object.fromEntries(Object.keys(GPM_METRICS).map((query) => [query, gpm])),
  'nvml.pcie.throughput.transmit': (c, field) => pcieThroughput(c, field, 0),
  'nvml.pcie.throughput.receive': (c, field) => pcieThroughput(c, field, 1),
  'nvml.fabric.state': fabricState,
};

/**
 * Makes sure a GPU has a GPM sample to compare with: where it has none yet (the first collection) one
 * is taken now. Returns whether one was, so the caller waits a window before the fields are read.
 */
export function prepareGpm(nvml: Nvml, device: bigint, state: DeviceState): boolean {
  if (!state.gpm) {
    const support = nvml.gpmSupported(device);
    state.gpm = { supported: support.rc === 0 && support.value === true };
  }
  const gpm = state.gpm;
  if (!gpm.supported || gpm.previous !== undefined) return false;
  const first = nvml.gpmAlloc();
  const second = nvml.gpmAlloc();
  if (first.rc !== 0 || second.rc !== 0 || nvml.gpmTake(device, first.value!) !== 0) {
    // Nothing kept, so freed: a GPU that refuses samples must not cost two more buffers every read.
    for (const buffer of [first, second]) if (buffer.rc === 0) nvml.gpmFree(buffer.value!);
    return false;
  }
  gpm.previous = first.value;
  gpm.next = second.value;
  return true;
}
