import { classifyPulse } from '../pulse/classify.js';
import type { PulseVerdict } from '../pulse/verdicts.js';
import { mean, median } from '../stats.js';
import type { StepMark } from './accumulate.js';
import type { RunSample } from './samples.js';

/**
 * A third of the run's steps: how fast they went and what the GPUs did meanwhile. Counted in steps
 * done since the first mark, not by step number: numbers restart each epoch (`[1/5000]`), and a
 * stray line that matched the regex must not turn a range around.
 */
export interface StepRange {
  name: 'early' | 'middle' | 'late';
  /** Steps done at the range's start and end. */
  fromDone: number;
  toDone: number;
  seconds: number;
  stepsPerSecond: number;
  /** Mean utilization of the job's GPUs over the range (%); undefined without a sample in it. */
  utilizationMean?: number;
  /** Pulse's verdict per GPU over the range (GPUs with at least 5 samples in it). */
  verdicts: PulseVerdict[];
}

/** What the steps say: overall pace, the pace per third, and a slow-down or stall when there is one. */
export interface StepSummary {
  lines: number;
  /** Steps done from the first mark to the last (see progressOf). */
  done: number;
  lastStep: number;
  stepsPerSecond?: number;
  ranges: StepRange[];
  finding?: { kind: 'slowdown' | 'stall'; cause?: PulseVerdict | 'busy'; text: string };
}

/** The late third's pace at or under this share of the early third's is a slow-down. */
export const SLOWDOWN_SHARE = 0.67;
/** Utilization this many points lower in the late third than the early one: the GPU waited. */
export const WAITING_DROP = 15;

/**
 * Step marks -> progress: steps done since the first mark. A step number that goes down (a new epoch
 * counting from 0, `[1/5000]` again) starts a new count that adds on, so progress only grows.
 */
export function progressOf(marks: readonly StepMark[]): { time: number; done: number }[] {
  let done = 0;
  return marks.map((mark, i) => {
    if (i > 0) {
      const delta = mark.step - marks[i - 1]!.step;
      done += delta >= 0 ? delta : mark.step;
    }
    return { time: mark.time, done };
  });
}

/** Steps per range and per run from the marks and the job's GPUs' samples; undefined without any step. */
export function summarizeSteps(
  marks: readonly StepMark[],
  lines: number,
  series: readonly RunSample[][],
  endTime: number,
): StepSummary | undefined {
  if (marks.length === 0) return undefined;
  const progress = progressOf(marks);
  const last = progress[progress.length - 1]!;
  const first = progress[0]!;
  const span = (last.time - first.time) / 1000;
  const summary: StepSummary = {
    lines,
    done: last.done,
    lastStep: marks[marks.length - 1]!.step,
    ...(span > 0 && last.done > 0 ? { stepsPerSecond: last.done / span } : {}),
    ranges: [],
  };
  // Thirds need a few marks in each to mean anything.
  if (marks.length >= 6 && last.done >= 3 && span > 0) {
    const at = (target: number) => progress.find((p) => p.done >= target)!;
    const bounds = [first, at(last.done / 3), at((2 * last.done) / 3), last];
    const names = ['early', 'middle', 'late'] as const;
    summary.ranges = names.map((name, i) => rangeOf(name, bounds[i]!, bounds[i + 1]!, series));
  }
  summary.finding = findingOf(summary, progress, endTime);
  return summary;
}

function rangeOf(
  name: StepRange['name'],
  from: { time: number; done: number },
  to: { time: number; done: number },
  series: readonly RunSample[][],
): StepRange {
  const seconds = (to.time - from.time) / 1000;
  const inRange = series.map((samples) => samples.filter((s) => s.time >= from.time && s.time <= to.time));
  const all = inRange.flat().map((s) => s.utilization);
  return {
    name,
    fromDone: from.done,
    toDone: to.done,
    seconds,
    stepsPerSecond: seconds > 0 ? (to.done - from.done) / seconds : 0,
    ...(all.length > 0 ? { utilizationMean: mean(all) } : {}),
    verdicts: inRange.filter((samples) => samples.length >= 5).map((samples) => classifyPulse(samples).verdict),
  };
}

/** A slow-down (late third much slower than the early one) and its likely cause, or a stall before the end. */
function findingOf(summary: StepSummary, progress: readonly { time: number }[], endTime: number): StepSummary['finding'] {
  const gaps = progress.slice(1).map((p, i) => p.time - progress[i]!.time);
  const typicalGap = median(gaps);
  const silentMs = endTime - progress[progress.length - 1]!.time;
  if (typicalGap !== undefined && silentMs > Math.max(30_000, 10 * typicalGap)) {
    return {
      kind: 'stall',
      text: `no step for the last ${(silentMs / 1000).toFixed(0)} s before the job ended (a step every ${(typicalGap / 1000).toFixed(1)} s before): it stalled or hung`,
    };
  }
  const [early, , late] = summary.ranges;
  if (!early || !late || early.stepsPerSecond <= 0 || late.stepsPerSecond > SLOWDOWN_SHARE * early.stepsPerSecond) return undefined;
  const pace = `steps slowed from ${early.stepsPerSecond.toFixed(2)}/s (early) to ${late.stepsPerSecond.toFixed(2)}/s (late)`;
  const waited =
    late.verdicts.includes('data_starved') ||
    (early.utilizationMean !== undefined &&
      late.utilizationMean !== undefined &&
      late.utilizationMean <= early.utilizationMean - WAITING_DROP);
  const utilization =
    early.utilizationMean !== undefined && late.utilizationMean !== undefined
      ? ` while GPU utilization went from ${early.utilizationMean.toFixed(0)} % to ${late.utilizationMean.toFixed(0)} %`
      : '';
  if (waited)
    return { kind: 'slowdown', cause: 'data_starved', text: `${pace}${utilization}: the GPU waited for its input (data-starved)` };
  if (late.verdicts.includes('throttled'))
    return { kind: 'slowdown', cause: 'throttled', text: `${pace}${utilization}: the GPU's clocks were held back (throttled)` };
  return { kind: 'slowdown', cause: 'busy', text: `${pace}${utilization}: the GPU stayed busy, so each step got heavier` };
}
