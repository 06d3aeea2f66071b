import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mean, median } from '../src/stats.js';

describe('median', () => {
  it('of an odd count is the middle value', () => expect(median([9, 1, 5])).toBe(5));
  // The report's interval and pulse's bursts took the upper middle value (38 here, not 36.5) before one module held it.
  it('of an even count is the mean of the two middle values', () => expect(median([38, 10, 35, 49])).toBe(36.5));
  it('does not reorder its input', () => {
    const xs = [3, 1, 2];
    median(xs);
    expect(xs).toEqual([3, 1, 2]);
  });
  it('of nothing is undefined', () => expect(median([])).toBeUndefined());
  it('is the sorted middle of any input: ties, runs, sorted and reversed, NaN and infinities', () => {
    const sortedMedian = (xs: number[]) => {
      const sorted = Float64Array.from(xs).sort();
      const mid = Math.floor(sorted.length / 2);
      return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
    };
    const values = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double(), fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -0));
    const inputs = fc.oneof(
      fc.array(values, { minLength: 1, maxLength: 200 }),
      fc.array(fc.integer(), { minLength: 1, maxLength: 500 }).map((xs) => xs.sort((a, b) => a - b)),
      fc.array(fc.integer(), { minLength: 1, maxLength: 500 }).map((xs) => xs.sort((a, b) => b - a)),
    );
    fc.assert(
      fc.property(inputs, (xs) => {
        const got = median(xs)!;
        const want = sortedMedian(xs);
        // -0 and 0 are one value here: which of two equal middles is taken may differ.
        expect(got === want || Object.is(got, want), String(xs)).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });
});

describe('mean', () => {
  it('averages', () => expect(mean([1, 2, 6])).toBe(3));
  it('of nothing is NaN', () => expect(mean([])).toBeNaN());
});
