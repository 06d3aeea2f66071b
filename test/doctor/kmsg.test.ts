import { open } from 'node:fs/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { readRecords } from '../../src/doctor/kmsg.js';

// /dev/zero answers every read in full and never ends: what a kernel log read must survive.
async function endless() {
  const handle = await open('/dev/zero', 'r');
  onTestFinished(() => handle.close());
  return handle;
}

describe('readRecords', () => {
  it('stops at the read cap and keeps only the newest bytes', async () => {
    const text = await readRecords(await endless(), new AbortController().signal, { keep: 64 * 1024, readCap: 1024 * 1024 });
    expect(text.length).toBeLessThanOrEqual(64 * 1024);
    expect(text.length).toBeGreaterThan(0);
  });

  it('stops at the deadline', async () => {
    const stop = new AbortController();
    stop.abort();
    const text = await readRecords(await endless(), stop.signal, { keep: 64 * 1024, readCap: Number.MAX_SAFE_INTEGER });
    expect(text.length).toBeLessThanOrEqual(64 * 1024);
  });
});
