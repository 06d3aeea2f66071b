import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEADER, generateRows, isoWithOffset } from '../../src/report/history-generator.js';
import { Aggregator } from '../../src/report/aggregate.js';
import { historyFiles, readHistory } from '../../src/csvlog/read.js';
import { tempDir } from '../support/helpers.js';

/** Map entries and array elements reachable from `value`: what a structure holds, whatever its shape. */
function heldEntries(value: unknown, seen = new Set<unknown>()): number {
  if (value === null || typeof value !== 'object' || seen.has(value)) return 0;
  seen.add(value);
  if (value instanceof Map)
    return value.size + [...value.entries()].reduce((a, [k, v]) => a + heldEntries(k, seen) + heldEntries(v, seen), 0);
  if (Array.isArray(value)) return value.length + value.reduce((a: number, v) => a + heldEntries(v, seen), 0);
  return Object.values(value).reduce((a: number, v) => a + heldEntries(v, seen), 0);
}

describe('the report aggregates while streaming', () => {
  it.each([24, 72])('keeps per-hour state, not per-row, over %d hours of 4 GPUs at 15 s with a stray second collection', async (hours) => {
    const dir = await tempDir();
    const gpus = 4;
    const start = Date.UTC(2026, 10, 23);
    const rows = generateRows({ start, hours, intervalSeconds: 15, gpus: Array(gpus).fill('training') });
    // Someone ran `collect` by hand a second after the timer once: two samples 1 s apart. Nothing
    // about that should make the aggregator keep something per later row.
    const stray = generateRows({
      start: start + 3_600_000 + 1000,
      hours: 15 / 3600,
      intervalSeconds: 15,
      gpus: Array(gpus).fill('training'),
    });
    const at = rows.findIndex((row) => row.startsWith(isoWithOffset(start + 3_600_000, 0).slice(0, 19)));
    rows.splice(at + gpus, 0, ...stray);
    await writeFile(join(dir, 'train.csv'), `${HEADER}\n${rows.join('\n')}\n`);

    const aggregator = new Aggregator();
    let read = 0;
    for await (const row of readHistory(await historyFiles(dir), { count: 0, examples: [] })) {
      aggregator.add(row);
      read++;
    }
    expect(read).toBe(rows.length);
    // Per GPU (and per host): an hourly bucket per hour, plus a fixed amount to learn the interval.
    const bound = 3 * hours * (gpus + 1) + 200 * (gpus + 1);
    expect(heldEntries(aggregator)).toBeLessThan(bound);
    expect(rows.length).toBeGreaterThan(10 * bound);
  });
});

describe('report rows', () => {
  it('come by period, then host, task and GPU (numerically), whatever order the rows came in', () => {
    const aggregator = new Aggregator();
    const hour = Date.UTC(2026, 10, 23, 5);
    const row = (time: number, host: string, task: string, gpu: string) =>
      aggregator.add({ time, host, task, gpu, uuid: `GPU-${host}-${gpu}`, status: 'ok', utilization: 50 });
    // The later hour first, hosts and GPUs out of order, two tasks on one host.
    for (const time of [hour + 3_600_000, hour])
      for (const [host, task, gpu] of [
        ['b', 'train', '10'],
        ['b', 'train', '9'],
        ['a', 'z', '0'],
        ['a', 'eval', '1'],
      ] as const)
        row(time, host, task, gpu);
    const order = [...aggregator.periodRows('hour')].map((r) => `${r.period === hour ? 1 : 2} ${r.host} ${r.task_id} ${r.gpu_id}`);
    expect(order).toEqual(['1 a eval 1', '1 a z 0', '1 b train 9', '1 b train 10', '2 a eval 1', '2 a z 0', '2 b train 9', '2 b train 10']);
  });
});

describe('report rows of GPU ids that are not numbers', () => {
  // A hand-edited or foreign trail: Number() of such an id is NaN, and a comparison with NaN says
  // neither is first, so sorting by Number() alone was no order at all (GPU 1 came before GPU 0).
  it('keep the numbered GPUs in number order, the others after them by name, in every period', () => {
    const aggregator = new Aggregator();
    const hour = Date.UTC(2026, 10, 23, 5);
    for (const time of [hour, hour + 3_600_000])
      for (const gpu of ['1', 'b', '0', 'a', '10', '2'])
        aggregator.add({ time, host: 'h', task: 't', gpu, uuid: `GPU-${gpu}`, status: 'ok', utilization: 50 });
    const order = [...aggregator.periodRows('hour')].map((r) => `${r.period === hour ? 1 : 2}:${r.gpu_id}`);
    expect(order).toEqual(['1:0', '1:1', '1:2', '1:10', '1:a', '1:b', '2:0', '2:1', '2:2', '2:10', '2:a', '2:b']);
  });
});
