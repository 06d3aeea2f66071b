import { describe, expect, it } from 'vitest';
import type { Collection } from '../../src/collection.js';
import { latestOnly } from '../../src/collect/latest-only.js';

/** A collection that says only when its data was good: what the test tells writes apart by. */
const good = (lastSuccessSeconds: number): Collection => ({
  fields: [],
  samples: [],
  down: [],
  health: { durationSeconds: 0, lastSuccessSeconds },
});

/** Polls a condition (real time, generous deadline). */
async function until(check: () => boolean, what: string) {
  for (const end = Date.now() + 60_000; !check(); await new Promise((resolve) => setTimeout(resolve, 5))) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
  }
}

describe('latestOnly', () => {
  it('writes one at a time and keeps only the newest waiting collection', async () => {
    const written: number[] = [];
    let release = () => {};
    const publisher = latestOnly(async (c) => {
      written.push(c.health.lastSuccessSeconds!);
      await new Promise<void>((resolve) => (release = resolve));
    });
    void publisher.publish(good(1));
    for (let i = 2; i <= 1000; i++) void publisher.publish(good(i));
    release();
    await until(() => written.length === 2, 'the second write');
    release();
    await publisher.idle();
    expect(written).toEqual([1, 1000]);
  });
});
