import { PULSE_THRESHOLDS } from '../pulse/thresholds.js';
import type { RunSample } from './samples.js';
import { Thinned } from './thinned.js';

/** Samples kept per GPU for pulse and the step ranges, and step marks kept: bounded whatever the run's length. */
export const SERIES_CAP = 8192;

/**
 * One GPU over the run. The totals are exact (every sample counts); `series` is a thinned copy for
 * what needs the shape of the series (pulse, utilization per step range).
 */
export interface GpuTotals {
  gpu: string;
  uuid: string;
  name?: string;
  samples: number;
  utilizationSum: number;
  /** Samples by utilization rounded to a whole percent (0-100): the p95 without keeping every sample. */
  utilizationHistogram: number[];
  /** Samples at or under pulse's near-zero utilization. */
  idleSamples: number;
  peakMemoryMiB?: number;
  /** Power integrated over the time between samples (trapezoids), in joules, and the seconds that covers. */
  energyJ: number;
  poweredSeconds: number;
  /** The energy counter's first and last readings (NVML); `meterBroken` when it went back (driver reloaded). */
  meter?: { firstJ: number; lastJ: number; broken: boolean };
  last?: RunSample;
  series: Thinned<RunSample>;
}

/** A line of the job's output with a step number, and when it was read. */
export interface StepMark {
  time: number;
  step: number;
}

/** Everything the summary is computed from, gathered while the job runs. */
export interface RunTotals {
  gpus: Map<string, GpuTotals>;
  steps: Thinned<StepMark>;
  stepLines: number;
  /** Collections that failed (nvidia-smi missing, broken): their reasons, first seen first. */
  failures: string[];
}

export const newTotals = (): RunTotals => ({ gpus: new Map(), steps: new Thinned(SERIES_CAP), stepLines: 0, failures: [] });

/**
 * Adds one sample. Between two samples power is taken to move in a straight line; a gap longer than
 * `maxGapMs` (the stream broke and restarted) is not bridged: no energy is invented for it.
 */
export function addSample(totals: RunTotals, sample: RunSample, maxGapMs: number): void {
  let gpu = totals.gpus.get(sample.gpu);
  if (!gpu) {
    gpu = {
      gpu: sample.gpu,
      uuid: sample.uuid,
      samples: 0,
      utilizationSum: 0,
      utilizationHistogram: new Array(101).fill(0),
      idleSamples: 0,
      energyJ: 0,
      poweredSeconds: 0,
      series: new Thinned(SERIES_CAP),
    };
    totals.gpus.set(sample.gpu, gpu);
  }
  if (sample.name !== undefined) gpu.name = sample.name;
  gpu.samples++;
  gpu.utilizationSum += sample.utilization;
  gpu.utilizationHistogram[Math.max(0, Math.min(100, Math.round(sample.utilization)))]!++;
  if (sample.utilization <= PULSE_THRESHOLDS.nearZero) gpu.idleSamples++;
  if (sample.memoryUsedMiB !== undefined) gpu.peakMemoryMiB = Math.max(gpu.peakMemoryMiB ?? 0, sample.memoryUsedMiB);
  const last = gpu.last;
  if (last?.powerW !== undefined && sample.powerW !== undefined && sample.time > last.time && sample.time - last.time <= maxGapMs) {
    const seconds = (sample.time - last.time) / 1000;
    gpu.energyJ += ((last.powerW + sample.powerW) / 2) * seconds;
    gpu.poweredSeconds += seconds;
  }
  if (sample.energyCounterJ !== undefined) {
    const meter = (gpu.meter ??= { firstJ: sample.energyCounterJ, lastJ: sample.energyCounterJ, broken: false });
    if (sample.energyCounterJ < meter.lastJ) meter.broken = true;
    meter.lastJ = sample.energyCounterJ;
  }
  gpu.last = sample;
  gpu.series.push(sample);
}

/**
 * A GPU's energy over the run: the board's own counter where the source reads it (NVML) and it never
 * went back, else power integrated over time; undefined with neither.
 */
export function gpuEnergy(gpu: GpuTotals): { joules: number; from: 'counter' | 'power' } | undefined {
  if (gpu.meter && !gpu.meter.broken && gpu.meter.lastJ > gpu.meter.firstJ)
    return { joules: gpu.meter.lastJ - gpu.meter.firstJ, from: 'counter' };
  return gpu.poweredSeconds > 0 ? { joules: gpu.energyJ, from: 'power' } : undefined;
}

/** Adds a step mark. */
export function addStep(totals: RunTotals, mark: StepMark): void {
  totals.stepLines++;
  totals.steps.push(mark);
}

/** p-th percentile (nearest rank) of a whole-percent histogram; undefined when empty. */
export function histogramPercentile(histogram: readonly number[], p: number): number | undefined {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (let value = 0; value < histogram.length; value++) {
    seen += histogram[value]!;
    if (seen >= rank) return value;
  }
  return histogram.length - 1;
}
