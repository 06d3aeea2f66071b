import { describe, expect, it } from 'vitest';
import type { RunSample } from '../../src/run/samples.js';
import { progressOf, summarizeSteps } from '../../src/run/steps.js';

const S = 1000;
const marks = (pairs: [seconds: number, step: number][]) => pairs.map(([t, step]) => ({ time: t * S, step }));
/** One GPU sampled every 10 s from 0 to 180 s, its utilization by time. */
const series = (utilization: (seconds: number) => number): RunSample[] =>
  Array.from({ length: 19 }, (_, i) => ({ time: i * 10 * S, gpu: '0', uuid: 'GPU-a', utilization: utilization(i * 10) }));
// 30 steps in the first 30 s, 30 in the next 60 s, 30 in the last 90 s: a mark every 10 steps.
const SLOWING = marks([
  [0, 0],
  [10, 10],
  [20, 20],
  [30, 30],
  [50, 40],
  [70, 50],
  [90, 60],
  [120, 70],
  [150, 80],
  [180, 90],
]);

describe('progressOf', () => {
  it('counts steps done; a step number going down starts a new count that adds on', () => {
    expect(
      progressOf(
        marks([
          [0, 4998],
          [1, 4999],
          [2, 5000],
          [3, 1],
          [4, 2],
        ]),
      ).map((p) => p.done),
    ).toEqual([0, 1, 2, 3, 4]);
    // A stray first line that matched ("slow input from step 61") costs one step, not the ranges.
    expect(
      progressOf(
        marks([
          [0, 61],
          [1, 1],
          [2, 2],
          [3, 3],
        ]),
      ).map((p) => p.done),
    ).toEqual([0, 1, 2, 3]);
  });
});

describe('summarizeSteps', () => {
  it('splits the steps done in thirds: pace and GPU utilization of each, hand-computed', () => {
    const summary = summarizeSteps(SLOWING, 10, [series((t) => (t <= 30 ? 90 : t <= 90 ? 60 : 20))], 180 * S)!;
    expect(summary.done).toBe(90);
    expect(summary.stepsPerSecond).toBe(0.5);
    expect(summary.ranges.map((r) => [r.name, r.fromDone, r.toDone, r.seconds, r.stepsPerSecond])).toEqual([
      ['early', 0, 30, 30, 1],
      ['middle', 30, 60, 60, 0.5],
      ['late', 60, 90, 90, 1 / 3],
    ]);
    // Both ends of a range count: early 0-30 s is 4 samples of 90; middle 30-90 s is one 90 and six 60;
    // late 90-180 s is one 60 and nine 20.
    expect(summary.ranges.map((r) => r.utilizationMean)).toEqual([90, (90 + 6 * 60) / 7, (60 + 9 * 20) / 10]);
    expect(summary.ranges[0]!.verdicts).toEqual([]);
    expect(summary.finding).toEqual({
      kind: 'slowdown',
      cause: 'data_starved',
      text: 'steps slowed from 1.00/s (early) to 0.33/s (late) while GPU utilization went from 90 % to 24 %: the GPU waited for its input (data-starved)',
    });
  });

  it('a slow-down with the GPU busy throughout: each step got heavier', () => {
    const summary = summarizeSteps(SLOWING, 10, [series(() => 95)], 180 * S)!;
    expect(summary.finding?.cause).toBe('busy');
    expect(summary.finding?.text).toMatch(/: the GPU stayed busy, so each step got heavier$/);
  });

  it('no finding at a steady pace', () => {
    const steady = marks(Array.from({ length: 10 }, (_, i): [number, number] => [i * 10, i * 10]));
    expect(summarizeSteps(steady, 10, [series(() => 50)], 90 * S)!.finding).toBeUndefined();
  });

  it('a stall: no step for much longer than the steps took, before the job ended', () => {
    const early = marks(Array.from({ length: 10 }, (_, i): [number, number] => [i, i]));
    expect(summarizeSteps(early, 10, [], 100 * S)!.finding).toEqual({
      kind: 'stall',
      text: 'no step for the last 91 s before the job ended (a step every 1.0 s before): it stalled or hung',
    });
  });

  it('no ranges from too few marks; nothing without any', () => {
    const few = summarizeSteps(
      marks([
        [0, 1],
        [2, 3],
      ]),
      2,
      [],
      2 * S,
    )!;
    expect([few.done, few.stepsPerSecond, few.ranges]).toEqual([2, 1, []]);
    expect(summarizeSteps([], 0, [], 0)).toBeUndefined();
  });
});
