import { getHeapStatistics } from 'node:v8';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { heapTidier } from '../../../src/report/store/garbage.js';
import { bundledScript, cliEnv } from '../../support/helpers.js';

// The store door's heap tidier: a full collection once the heap grew by half of what survived the
// last one (32 MB at least), none before; V8's young generation kept at the size it has.

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

describe('the young generation', () => {
  /** young-generation.ts in a Node.js of its own (V8's flags are the process's): its young generation before and after. */
  async function youngGeneration(tidy: boolean): Promise<{ before: number; after: number; kept: number }> {
    const script = await bundledScript('test/report/store/young-generation.ts');
    const child = await execa(process.execPath, [script, ...(tidy ? ['tidy'] : [])], { env: cliEnv(), extendEnv: false });
    return JSON.parse(child.stdout);
  }

  it('grows as objects survive young collections, and not once the tidier is made', async () => {
    const grown = await youngGeneration(false);
    expect(grown.kept).toBe(3);
    // From 1 MB (one half committed), Node.js 20 grows it to 32 MB, 24 to 64 MB here.
    expect(grown.after).toBeGreaterThan(8 * grown.before);
    const kept = await youngGeneration(true);
    expect(kept.kept).toBe(3);
    // Its two halves at their first size.
    expect(kept.after).toBeLessThanOrEqual(2 * kept.before);
  });
});
