import type { GpuSample } from '../collection.js';
import { CLOCK_EVENT_REASON_BITS } from '../fields/field-spec.js';
import type { SeriesSample } from '../sources/nvidia-smi/series-csv.js';

/** One GPU at one moment, in the units a person reads (percent, MiB, W, MHz), as the run's summary uses them. */
export interface RunSample extends SeriesSample {
  uuid: string;
  name?: string;
  memoryUsedMiB?: number;
  /** The board's energy counter (NVML source only), in joules since the driver loaded. */
  energyCounterJ?: number;
}

const MIB = 1024 * 1024;

const numberOf = (sample: GpuSample, query: string): number | undefined => {
  const reading = sample.readings.get(query);
  return reading?.kind === 'number' ? reading.value : undefined;
};

/** The clock event reasons active in a sample, as the bitmask pulse reads (one 0/1 field per reason in a collection). */
function reasonBits(sample: GpuSample): bigint | undefined {
  let bits = 0n;
  let seen = false;
  for (const [reason, bit] of Object.entries(CLOCK_EVENT_REASON_BITS)) {
    const value = numberOf(sample, `clocks_event_reasons.${reason}`);
    if (value === undefined) continue;
    seen = true;
    if (value === 1) bits |= bit;
  }
  return seen ? bits : undefined;
}

/**
 * A collection's sample -> a RunSample, or undefined without utilization (the one value every
 * summary number needs). Values in the collection are in base units (ratio, bytes, Hz).
 */
export function runSample(sample: GpuSample, time: number): RunSample | undefined {
  const utilization = numberOf(sample, 'utilization.gpu');
  if (utilization === undefined) return undefined;
  const name = sample.readings.get('name');
  const optional = {
    memoryUsedMiB: numberOf(sample, 'memory.used'),
    powerW: numberOf(sample, 'power.draw'),
    powerLimitW: numberOf(sample, 'power.max_limit') ?? numberOf(sample, 'enforced.power.limit'),
    smClockMHz: hz(numberOf(sample, 'clocks.current.sm')),
    smClockMaxMHz: hz(numberOf(sample, 'clocks.max.sm')),
    reasons: reasonBits(sample),
    // NVML only: measured rather than integrated, and GPM's activity that tells copies from compute.
    energyCounterJ: numberOf(sample, 'nvml.energy'),
    smActive: percentOf(numberOf(sample, 'nvml.gpm.sm_active')),
    tensorActive: percentOf(numberOf(sample, 'nvml.gpm.tensor_active')),
  };
  const result: RunSample = { time, gpu: sample.gpu, uuid: sample.uuid, utilization: Math.round(utilization * 1000) / 10 };
  if (name?.kind === 'text') result.name = name.text;
  for (const [key, value] of Object.entries(optional)) if (value !== undefined) Object.assign(result, { [key]: value });
  if (result.memoryUsedMiB !== undefined) result.memoryUsedMiB /= MIB;
  return result;
}

const percentOf = (ratio: number | undefined) => (ratio === undefined ? undefined : Math.round(ratio * 1000) / 10);
const hz = (value: number | undefined) => (value === undefined ? undefined : value / 1e6);
