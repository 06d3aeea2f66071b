import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../../src/fields/fields.js';
import { demoSource } from '../../../src/sources/demo/source.js';
import type { GpuRead } from '../../../src/sources/source.js';
import { ROOT } from '../../support/helpers.js';

// The demo source over the recordings as the build ships them (global setup builds dist/).
const DIR = join(ROOT, 'dist/demo');
const NOW = 1_795_976_400_000;

async function readAt(now: number): Promise<Extract<GpuRead, { kind: 'ok' }>> {
  const read = await demoSource({ dir: DIR, now: () => now })
    .reads()
    .gpus({ fields: FIELDS, knownGpus: [] });
  if (read.kind !== 'ok') throw new Error(read.failure.message);
  return read;
}

const value = (read: Extract<GpuRead, { kind: 'ok' }>, gpu: string, query: string) => {
  const reading = read.samples.find((sample) => sample.gpu === gpu)?.readings.get(query);
  return reading?.kind === 'number' ? reading.value : undefined;
};

describe('the demo source', () => {
  it('gives both recorded H200s, every row a sample', async () => {
    const read = await readAt(NOW);
    expect(read.samples.map((sample) => sample.uuid)).toEqual([
      'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d',
      'GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb',
    ]);
    expect(read.problems).toEqual([]);
  });

  it('is the same at the same now, and its gauges move over a minute of the series', async () => {
    expect(value(await readAt(NOW), '0', 'power.draw')).toBe(value(await readAt(NOW), '0', 'power.draw'));
    const powers = new Set<number | undefined>();
    for (let t = 0; t < 60_000; t += 500) powers.add(value(await readAt(NOW + t), '0', 'power.draw'));
    expect(powers.size).toBeGreaterThan(10);
  });

  it('grows its counters and never lowers them', async () => {
    const query = 'clocks_event_reasons_counters.sw_power_cap';
    const fields = FIELDS.filter((field) => field.query === query);
    expect(fields).toHaveLength(1);
    const at = async (now: number) => {
      const read = await demoSource({ dir: DIR, now: () => now })
        .reads()
        .gpus({ fields: [...FIELDS.slice(0, 2), ...fields], knownGpus: [] });
      return read.kind === 'ok' ? value(read, '0', query) : undefined;
    };
    const earlier = await at(NOW + 3_600_000);
    const later = await at(NOW + 3_660_000);
    expect(earlier).toBeTypeOf('number');
    expect(later!).toBeGreaterThan(earlier!);
  });

  it('gives the recorded processes', async () => {
    const apps = await demoSource({ dir: DIR, now: () => NOW })
      .reads()
      .processes();
    expect(apps.kind === 'ok' ? apps.apps.map((app) => app.pid) : apps).toEqual([2006, 2008, 2007, 2008]);
  });

  // Issue 39: the processes were captured under one load and the series cycle through others; a GPU
  // that says 1 GB used never shows 7 GB of processes, and a job's peak never passes its GPU's.
  it.each(['h200x2-load', 'h200x2-idle', 'h200'] as const)(
    'never shows more process memory on a GPU of %s than the GPU has in use, over a minute',
    async (host) => {
      let seenProcesses = 0;
      for (let t = 0; t < 60_000; t += 500) {
        const source = demoSource({ dir: DIR, now: () => NOW + t, host }).reads();
        const read = await source.gpus({ fields: FIELDS, knownGpus: [] });
        const apps = await source.processes();
        if (read.kind !== 'ok' || apps.kind !== 'ok') throw new Error('demo read failed');
        for (const sample of read.samples) {
          const held = apps.apps.filter((app) => app.uuid === sample.uuid).reduce((sum, app) => sum + (app.memoryBytes ?? 0), 0);
          seenProcesses += held > 0 ? 1 : 0;
          const used = value(read, sample.gpu, 'memory.used');
          expect(used).toBeTypeOf('number');
          expect(held).toBeLessThanOrEqual(used!);
        }
      }
      if (host !== 'h200x2-idle') expect(seenProcesses).toBeGreaterThan(0);
    },
  );

  it('shows a busy GPU busy: never 0 % at more than 200 W in the default host', async () => {
    for (let t = 0; t < 120_000; t += 500) {
      const read = await readAt(NOW + t);
      for (const sample of read.samples)
        if ((value(read, sample.gpu, 'power.draw') ?? 0) > 200) expect(value(read, sample.gpu, 'utilization.gpu')).toBeGreaterThan(0);
    }
  });

  // Three real recordings ship: two H200s under load, the same two idle, and one H200 of another driver.
  it.each([
    ['h200x2-load', 2, 'a GPU at full load'],
    ['h200x2-idle', 2, 'no load'],
    ['h200', 1, 'a GPU at full load'],
  ] as const)('replays the %s host: %i GPU(s), %s somewhere in a minute', async (host, gpus, seen) => {
    const utilizations: number[] = [];
    for (let t = 0; t < 60_000; t += 500) {
      const read = await demoSource({ dir: DIR, now: () => NOW + t, host })
        .reads()
        .gpus({ fields: FIELDS, knownGpus: [] });
      if (read.kind !== 'ok') throw new Error(read.failure.message);
      expect([host, read.samples.length, read.problems]).toEqual([host, gpus, []]);
      for (const sample of read.samples) utilizations.push(value(read, sample.gpu, 'utilization.gpu') ?? -1);
    }
    expect(Math.min(...utilizations)).toBeGreaterThanOrEqual(0);
    if (seen === 'no load') expect(Math.max(...utilizations)).toBeLessThan(0.05);
    else expect(Math.max(...utilizations)).toBeGreaterThan(0.9);
  });
});
