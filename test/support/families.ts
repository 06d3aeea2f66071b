import { expect } from 'vitest';
import type { MetricFamily } from '../../src/exposition/families.js';

/** A family's series as plain objects: labels by name, and the value. */
export type Series = { labels: Record<string, string>; value: number }[];

/**
 * Compares only the families named in `expected` (name -> series, in order): a test of one family
 * is not broken by a family added elsewhere. A named family that is missing fails.
 */
export function expectFamilies(families: readonly MetricFamily[], expected: Record<string, Series>): void {
  const actual = Object.fromEntries(
    Object.keys(expected).map((name) => {
      const family = families.find((f) => f.name === name);
      return [name, family?.samples.map((s) => ({ labels: Object.fromEntries(s.labels), value: s.value }))];
    }),
  );
  expect(actual).toEqual(expected);
}
