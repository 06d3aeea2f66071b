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
  /** The first and the latest sample with power: the job's first and last moments, which no sample covers, are counted at their power. */
  firstPowered?: { time: number; powerW: number };
  lastPowered?: { time: number; powerW: number };
  /** The longest gap bridged between two samples (the last one given): also the most held at either end of the job. */
  maxGapMs: number;
  meter?: Meter;
  last?: RunSample;
  series: Thinned<RunSample>;
}

/**
 * The energy counter (NVML). The daemon mode reads it every 10 s and repeats that reading in between,
 * so only a sample whose counter moved holds a fresh reading: `lastAt` is the latest of those.
 * `powerJAtFirst` and `powerJAtLast` are the power x time integral when the first and the latest
 * fresh readings were taken: what lies outside the two is covered by power x time alone.
 */
export interface Meter {
  firstJ: number;
  firstAt: number;
  lastJ: number;
  lastAt: number;
  powerJAtFirst: number;
  powerJAtLast: number;
  /** The counter went back (the driver reloaded): not trusted. */
  broken: boolean;
  /**
   * Joules from `firstAt` to `lastAt`: between each two fresh readings the counter's rise, or power x
   * time where the counter rose by less than STALLED_SHARE of it (it stopped while the GPU drew power).
   */
  countedJ: number;
  /** Seconds of those spans covered by power x time instead of the counter. */
  distrustedSeconds: number;
}

/**
 * A counter that rose by less than this share of what power x time says over the same span stopped
 * counting for part of it (seen: stuck for 21 s at 500 W, the job's energy 21 % short): that span is
 * taken from power x time. The two agree within a few percent where both work (the counter is the
 * board's own sum, the power readings a 1 s average), so a half is far outside their disagreement.
 */
const STALLED_SHARE = 0.5;

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
      maxGapMs,
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
  gpu.maxGapMs = maxGapMs;
  const last = gpu.lastPowered;
  if (sample.powerW !== undefined) {
    if (last && sample.time > last.time && sample.time - last.time <= maxGapMs) {
      const seconds = (sample.time - last.time) / 1000;
      gpu.energyJ += ((last.powerW + sample.powerW) / 2) * seconds;
      gpu.poweredSeconds += seconds;
    }
    const powered = { time: sample.time, powerW: sample.powerW };
    gpu.firstPowered ??= powered;
    if (!last || sample.time >= last.time) gpu.lastPowered = powered;
  }
  if (sample.energyCounterJ !== undefined) addReading(gpu, sample.energyCounterJ, sample.time);
  gpu.last = sample;
  gpu.series.push(sample);
}

/** A counter reading; one equal to the last is the daemon's repeat of it, not a new reading. */
function addReading(gpu: GpuTotals, joules: number, time: number): void {
  const meter = gpu.meter;
  if (!meter) {
    gpu.meter = {
      firstJ: joules,
      firstAt: time,
      lastJ: joules,
      lastAt: time,
      powerJAtFirst: gpu.energyJ,
      powerJAtLast: gpu.energyJ,
      broken: false,
      countedJ: 0,
      distrustedSeconds: 0,
    };
    return;
  }
  if (joules === meter.lastJ) return;
  if (joules < meter.lastJ) meter.broken = true;
  const counterJ = joules - meter.lastJ;
  const powerJ = gpu.energyJ - meter.powerJAtLast;
  if (counterJ < STALLED_SHARE * powerJ) {
    meter.countedJ += powerJ;
    meter.distrustedSeconds += (time - meter.lastAt) / 1000;
  } else meter.countedJ += counterJ;
  meter.lastJ = joules;
  meter.lastAt = time;
  meter.powerJAtLast = gpu.energyJ;
}

/** Energy over a job's span, and where it came from; `estimatedSeconds`: the part of the span power x time covered. */
export interface Energy {
  joules: number;
  from: 'counter' | 'power';
  estimatedSeconds: number;
}

/** The longest stretch held at the first or last sample's power at each end of the job (nvidia-smi's start-up can take seconds). */
export const EDGE_MAX_MS = 10_000;

/**
 * A GPU's energy over the job (from `startedAt` to `endedAt`): the board's own counter between its
 * first and latest readings where the source reads it (NVML) and it never went back, but for spans
 * where it stopped while power was drawn (STALLED_SHARE); power x time
 * (trapezoids) for what no reading covers: all of it without a counter, and the moments before the
 * first and after the last sample at those samples' power (at most EDGE_MAX_MS, or the longest gap
 * bridged, at each end). Undefined without power or counter.
 */
export function gpuEnergy(gpu: GpuTotals, span: { startedAt: number; endedAt: number }): Energy | undefined {
  const first = gpu.firstPowered;
  const last = gpu.lastPowered;
  if (!first || !last) return undefined;
  const cap = Math.max(EDGE_MAX_MS, gpu.maxGapMs);
  const before = Math.min(cap, Math.max(0, first.time - span.startedAt)) / 1000;
  const after = Math.min(cap, Math.max(0, span.endedAt - last.time)) / 1000;
  const edgesJ = before * first.powerW + after * last.powerW;
  const meter = gpu.meter;
  if (meter && !meter.broken && meter.lastJ > meter.firstJ) {
    const outsideJ = meter.powerJAtFirst + (gpu.energyJ - meter.powerJAtLast);
    const countedSeconds = (meter.lastAt - meter.firstAt) / 1000 - meter.distrustedSeconds;
    return {
      joules: meter.countedJ + outsideJ + edgesJ,
      from: 'counter',
      estimatedSeconds: Math.max(0, gpu.poweredSeconds - countedSeconds) + before + after,
    };
  }
  const joules = gpu.energyJ + edgesJ;
  return joules > 0 || gpu.poweredSeconds > 0
    ? { joules, from: 'power', estimatedSeconds: gpu.poweredSeconds + before + after }
    : undefined;
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
