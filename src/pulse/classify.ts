import type { SeriesSample } from '../sources/nvidia-smi/series-csv.js';
import { findBursts } from './bursts.js';
import { REASON_BITS, THROTTLING } from './clock-reasons.js';
import { PULSE_THRESHOLDS } from './thresholds.js';
import { NEXT_STEPS, type PulseVerdict } from './verdicts.js';
import { mean, median } from '../stats.js';

export interface PulseEvidence {
  samples: number;
  /** The median spacing of the samples' timestamps; undefined when they do not advance. */
  intervalMs?: number;
  utilizationMean: number;
  /** Share of samples at or over `high` utilization. */
  dutyCycle: number;
  nearZeroShare: number;
  nearFullShare: number;
  swingsPer10: number;
  /** Runs of samples above near-zero (see bursts.ts), the median time between their starts and their median peak. */
  bursts: number;
  burstSpacingMs?: number;
  burstPeakMedian?: number;
  /** Share of near-0 samples in which the power cap was active. */
  cappedWhileNearZeroShare?: number;
  powerMeanW?: number;
  powerLimitW?: number;
  powerShare?: number;
  smClockMeanMHz?: number;
  smClockMaxMHz?: number;
  smClockShare?: number;
  /** Share of samples each clock event reason was active in (gpu_idle left out). */
  activeReasons: Record<string, number>;
  /** GPM's mean SM and tensor activity (%), where the recording has them (the NVML source). */
  smActiveMean?: number;
  tensorActiveMean?: number;
}

export interface Pulse {
  gpu: string;
  verdict: PulseVerdict;
  /** What the numbers show, in words. */
  explanation: string;
  notes: string[];
  nextSteps: string[];
  evidence: PulseEvidence;
  /** Idle samples left out at the start or end (trimIdleEnds): the evidence is over the rest. */
  trimmed: number;
}

const pct = (x: number) => `${Math.round(x * 100)} %`;

/**
 * Idle samples before the load started or after it stopped (utilization near 0 and power near the
 * lowest seen) are left out, as long as most of the recording remains: they say when the recording
 * began, not how the job behaves.
 */
export function trimIdleEnds(
  samples: readonly SeriesSample[],
  t = PULSE_THRESHOLDS,
): { samples: readonly SeriesSample[]; trimmed: number } {
  const powers = samples.flatMap((s) => (s.powerW === undefined ? [] : [s.powerW]));
  const floor = powers.length ? Math.min(...powers) : undefined;
  // A sample that hit the power cap is no idle sample, whatever its utilization reads.
  const capped = (s: SeriesSample) => s.reasons !== undefined && (s.reasons & REASON_BITS.sw_power_cap!) !== 0n;
  const quiet = (s: SeriesSample) =>
    s.utilization <= t.nearZero && !capped(s) && (floor === undefined || s.powerW === undefined || s.powerW <= 1.6 * floor);
  let start = 0;
  let end = samples.length;
  while (start < end && quiet(samples[start]!)) start++;
  while (end > start && quiet(samples[end - 1]!)) end--;
  if (end - start < samples.length / 2) return { samples, trimmed: 0 };
  return { samples: samples.slice(start, end), trimmed: samples.length - (end - start) };
}

/** One GPU's samples -> its pattern, with the numbers behind it. */
export function classifyPulse(all: readonly SeriesSample[], t = PULSE_THRESHOLDS): Pulse {
  const { samples, trimmed } = trimIdleEnds(all, t);
  const gpu = samples[0]?.gpu ?? '';
  const util = samples.map((s) => s.utilization);
  const intervals = samples
    .slice(1)
    .map((s, i) => s.time - samples[i]!.time)
    .filter((d) => d > 0);
  let swings = 0;
  for (let i = 1; i < util.length; i++) if (util[i - 1]! >= t.high !== util[i]! >= t.high) swings++;
  const powers = samples.flatMap((s) => (s.powerW === undefined ? [] : [s.powerW]));
  const limits = samples.flatMap((s) => (s.powerLimitW === undefined ? [] : [s.powerLimitW]));
  const clocks = samples.flatMap((s) => (s.smClockMHz === undefined ? [] : [s.smClockMHz]));
  const maxClocks = samples.flatMap((s) => (s.smClockMaxMHz === undefined ? [] : [s.smClockMaxMHz]));
  const busy = samples.filter((s) => s.utilization >= t.high);
  const smActive = samples.flatMap((s) => (s.smActive === undefined ? [] : [s.smActive]));
  const tensorActive = samples.flatMap((s) => (s.tensorActive === undefined ? [] : [s.tensorActive]));
  const activeReasons: Record<string, number> = {};
  const withReasons = samples.filter((s) => s.reasons !== undefined);
  for (const [name, bit] of Object.entries(REASON_BITS)) {
    if (name === 'gpu_idle' || withReasons.length === 0) continue;
    const share = withReasons.filter((s) => (s.reasons! & bit) !== 0n).length / withReasons.length;
    if (share > 0) activeReasons[name] = share;
  }
  const powerLimit = limits.length ? Math.max(...limits) : undefined;
  const powerMean = powers.length ? mean(powers) : undefined;
  // Without a limit column, "near idle" is measured against the lowest power seen while utilization
  // read near 0 (a busy GPU's lowest power is no idle reference); with no such sample it is unknown.
  const quietPowers = all.flatMap((s) => (s.powerW === undefined || s.utilization > t.nearZero ? [] : [s.powerW]));
  const idleFloor = quietPowers.length ? Math.min(...quietPowers) : undefined;
  const powerShare = powerMean !== undefined && powerLimit ? powerMean / powerLimit : undefined;
  const nearIdlePower =
    powerMean === undefined
      ? undefined
      : powerShare !== undefined
        ? powerShare <= t.idlePowerShare
        : idleFloor !== undefined
          ? powerMean <= t.idleFloorFactor * idleFloor
          : undefined;
  const clockMax = maxClocks.length ? Math.max(...maxClocks) : clocks.length ? Math.max(...clocks) : undefined;
  const busyClocks = busy.flatMap((s) => (s.smClockMHz === undefined ? [] : [s.smClockMHz]));
  const smClockShare = clockMax && busyClocks.length ? mean(busyClocks) / clockMax : undefined;
  const bursts = findBursts(samples, t.nearZero);
  const nearZero = samples.filter((s) => s.utilization <= t.nearZero && s.reasons !== undefined);
  const cappedWhileNearZeroShare =
    nearZero.length >= 5 ? nearZero.filter((s) => (s.reasons! & REASON_BITS.sw_power_cap!) !== 0n).length / nearZero.length : undefined;
  const throttlingShare = busy.length
    ? busy.filter((s) => s.reasons !== undefined && THROTTLING.some((r) => (s.reasons! & REASON_BITS[r]!) !== 0n)).length / busy.length
    : 0;

  const evidence: PulseEvidence = {
    samples: samples.length,
    intervalMs: intervals.length > 0 ? Math.round(median(intervals)!) : undefined,
    utilizationMean: mean(util),
    dutyCycle: busy.length / (util.length || 1),
    nearZeroShare: util.filter((u) => u <= t.nearZero).length / (util.length || 1),
    nearFullShare: util.filter((u) => u >= t.nearFull).length / (util.length || 1),
    swingsPer10: (swings / Math.max(1, util.length - 1)) * 10,
    bursts: bursts.count,
    ...(bursts.spacingMs !== undefined ? { burstSpacingMs: bursts.spacingMs } : {}),
    ...(bursts.peakMedian !== undefined ? { burstPeakMedian: bursts.peakMedian } : {}),
    ...(cappedWhileNearZeroShare !== undefined ? { cappedWhileNearZeroShare } : {}),
    ...(powerMean !== undefined ? { powerMeanW: powerMean } : {}),
    ...(smActive.length ? { smActiveMean: mean(smActive) } : {}),
    ...(tensorActive.length ? { tensorActiveMean: mean(tensorActive) } : {}),
    ...(powerLimit !== undefined ? { powerLimitW: powerLimit } : {}),
    ...(powerShare !== undefined ? { powerShare } : {}),
    ...(clocks.length ? { smClockMeanMHz: mean(clocks) } : {}),
    ...(clockMax !== undefined ? { smClockMaxMHz: clockMax } : {}),
    ...(smClockShare !== undefined ? { smClockShare } : {}),
    activeReasons,
  };
  const notes: string[] = trimmed > 0 ? [`left out ${trimmed} idle samples at the start or end of the recording`] : [];
  const lowShare = 1 - evidence.dutyCycle;
  // The power cap cannot be hit by a GPU that did nothing since the last sample.
  const cappedBetweenSamples = (cappedWhileNearZeroShare ?? 0) >= t.cappedWhileNearZeroShare;
  // Near-0 gaps between recurring spikes, or between samples that hit the power cap: a job that
  // computes for a moment, then waits. Counted in bursts, not in the busy share, which short bursts never reach.
  const burstsWithGaps =
    evidence.nearZeroShare >= t.burstGapShare &&
    ((bursts.count >= t.burstsMin && (bursts.peakMedian ?? 0) >= t.burstPeak) || cappedBetweenSamples);
  const burstsText = () =>
    `utilization ${evidence.utilizationMean.toFixed(1)} % on average, ` +
    (bursts.count === 0
      ? `near 0 in ${pct(evidence.nearZeroShare)} of samples`
      : `in ${bursts.count} bursts${bursts.spacingMs !== undefined ? `, one every ${(bursts.spacingMs / 1000).toFixed(1)} s` : ''} (median peak ${bursts.peakMedian} %), near 0 in ${pct(evidence.nearZeroShare)} of samples between them`) +
    (cappedBetweenSamples
      ? `; the power cap was hit in ${pct(cappedWhileNearZeroShare!)} of the near-0 samples, so heavy work ran between samples`
      : '') +
    ': the GPU computes for a moment, then waits for its input';
  let verdict: PulseVerdict;
  let explanation: string;

  if (evidence.utilizationMean < t.idleMean && nearIdlePower === false) {
    // The utilization counter missed the bursts: the power meter did not.
    verdict = 'data_starved';
    explanation = `utilization reads ${evidence.utilizationMean.toFixed(0)} % but power says busy (${powerMean!.toFixed(0)} W${powerShare !== undefined ? `, ${pct(powerShare)} of the limit` : ''}): short bursts fall between samples, the pattern of a job waiting on its input`;
    notes.push(
      `power says busy while utilization says idle: sample faster (--interval 100ms) to see the bursts${evidence.intervalMs !== undefined ? ` (this recording: every ${evidence.intervalMs} ms)` : ''}`,
    );
  } else if (evidence.utilizationMean < t.idleMean && burstsWithGaps) {
    verdict = 'data_starved';
    explanation = burstsText();
  } else if (evidence.utilizationMean < t.idleMean) {
    verdict = 'idle';
    explanation = `utilization ${evidence.utilizationMean.toFixed(1)} % on average${powerMean !== undefined ? `, power ${powerMean.toFixed(0)} W` : ''}`;
  } else if (
    evidence.smActiveMean !== undefined &&
    evidence.smActiveMean < t.gpmLowSmActive &&
    evidence.utilizationMean >= t.busyAtIdlePowerMean &&
    evidence.nearZeroShare < t.burstGapShare
  ) {
    // GPM sees the SMs themselves: busy by utilization.gpu, idle by SM activity is never saturated.
    verdict = 'copies_or_tiny_kernels';
    explanation = `utilization ${evidence.utilizationMean.toFixed(0)} % on average, but GPM has the SMs active ${evidence.smActiveMean.toFixed(1)} % of the time${evidence.tensorActiveMean !== undefined ? ` and the tensor cores ${evidence.tensorActiveMean.toFixed(1)} %` : ''}: the GPU is kept busy by work that uses little of it, host-device copies or a stream of tiny kernels`;
  } else if (
    busy.length > 0 &&
    smClockShare !== undefined &&
    smClockShare <= t.throttledClockShare &&
    throttlingShare >= t.throttledShare
  ) {
    verdict = 'throttled';
    explanation = `busy, but the SM clock averages ${pct(smClockShare)} of its maximum with ${THROTTLING.filter((r) => activeReasons[r]).join(', ')} active`;
  } else if (evidence.utilizationMean >= t.busyAtIdlePowerMean && nearIdlePower === true && evidence.nearZeroShare < t.burstGapShare) {
    // A GPU that draws idle power is not saturated, whatever utilization.gpu says.
    verdict = 'copies_or_tiny_kernels';
    explanation = `utilization a steady ${evidence.utilizationMean.toFixed(0)} % but power stays near idle (${powerMean!.toFixed(0)} W${powerShare !== undefined ? `, ${pct(powerShare)} of the limit` : ''}): the GPU is kept busy by work that uses little of it, host-device copies or a stream of tiny kernels`;
  } else if (evidence.utilizationMean >= t.saturatedMean && lowShare < t.lowShareSaturated) {
    verdict = 'saturated';
    explanation = `utilization ${evidence.utilizationMean.toFixed(0)} % on average, ${pct(evidence.nearFullShare)} of samples at 90 % or more`;
    if (activeReasons.sw_power_cap && powerShare !== undefined && powerShare >= 0.9)
      notes.push(
        `power-bound: drawing ${pct(powerShare)} of the power limit, clocks capped by it (sw_power_cap), which is normal at full load`,
      );
    if (nearIdlePower === undefined)
      notes.push(
        'no power to compare with idle (no power column, or no power limit and no quiet sample): host-device copies and tiny kernels also read near 100 %, and only power tells them from real load',
      );
  } else if (lowShare >= t.starvedLowShare && evidence.swingsPer10 >= t.starvedSwingsPer10 && evidence.utilizationMean >= t.idleMean) {
    verdict = 'data_starved';
    explanation = `utilization swings between low and high (${evidence.swingsPer10.toFixed(1)} swings per 10 samples, busy ${pct(evidence.dutyCycle)} of the time, near 0 in ${pct(evidence.nearZeroShare)})`;
  } else if (burstsWithGaps) {
    verdict = 'data_starved';
    explanation = burstsText();
  } else {
    verdict = 'mixed';
    explanation = `utilization ${evidence.utilizationMean.toFixed(0)} % on average, busy ${pct(evidence.dutyCycle)} of the time, no single pattern`;
  }
  if (evidence.intervalMs !== undefined && evidence.intervalMs >= 400 && verdict !== 'data_starved')
    notes.push(`sampled every ${evidence.intervalMs} ms: short stalls can hide between samples (--interval 100ms sees them)`);
  return { gpu, verdict, explanation, notes, nextSteps: NEXT_STEPS[verdict], evidence, trimmed };
}
