import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { heapTidier } from '../../../src/report/store/garbage.js';

// The store door's heap tidier: a full collection once the heap grew by half of what survived the
// last one (32 MB at least), none before.

const MB = 1024 * 1024;
const used = () => getHeapStatistics().used_heap_size;

/** About `mb` MB of objects, reachable while the array is. */
const objects = (mb: number) => Array.from({ length: (mb * MB) / 64 }, (_, i) => ({ i, s: `x${i}` }));

describe('heapTidier', () => {
  it('collects the garbage once the heap grew by 32 MB, and leaves what is alive', () => {
    const tidy = heapTidier();
    const kept = objects(16);
    let garbage: unknown[] | undefined = objects(64);
    const grown = used();
    garbage = undefined;
    expect(garbage).toBeUndefined();
    tidy();
    const after = used();
    // The 64 MB dropped are gone; the 16 kept are still there.
    expect(grown - after).toBeGreaterThan(40 * MB);
    expect(after).toBeGreaterThan(12 * MB);
    expect(kept).toHaveLength((16 * MB) / 64);
  });

  it('does nothing while the heap grew by less', () => {
    const tidy = heapTidier();
    tidy();
    const before = used();
    let garbage: unknown[] | undefined = objects(4);
    garbage = undefined;
    expect(garbage).toBeUndefined();
    const grown = used();
    tidy();
    // No collection: what was dropped is still counted (a young collection may take a little of it).
    expect(used()).toBeGreaterThan(before + (grown - before) / 2);
  });
});
