import { describe, expect, it } from 'vitest';
import { Thinned } from '../../src/run/thinned.js';

describe('Thinned', () => {
  it('keeps everything under its cap', () => {
    const list = new Thinned<number>(8);
    for (let i = 0; i < 7; i++) list.push(i);
    expect(list.items()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('stays within its cap (plus the latest), evenly spread over all pushed, the latest last', () => {
    const list = new Thinned<number>(8);
    for (let i = 0; i < 1000; i++) list.push(i);
    const items = list.items();
    expect(items.length).toBeLessThanOrEqual(9);
    expect(items[0]).toBe(0);
    expect(items[items.length - 1]).toBe(999);
    const steps = new Set(items.slice(1, -1).map((item, i) => item - items[i]!));
    expect(steps.size).toBe(1);
  });
});
