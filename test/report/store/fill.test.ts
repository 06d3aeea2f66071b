import { describe, expect, it } from 'vitest';
import { summaryByGpu } from '../../../src/report/summary.js';
import { hourlyChain, StoreHours } from '../../../src/report/store/fill.js';

// A series' samples as hourly counts say they fell: gaps from the hours short of samples.

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);
const counts = (list: number[]) => new Map(list.map((c, i) => [T0 + i * HOUR, c] as [number, number]));

describe('hourlyChain', () => {
  it('full hours: no gap; first and last sample where the counts put them', () => {
    const chain = hourlyChain(counts([120, 240, 240, 60]), 15_000);
    expect(chain.gaps).toEqual([]);
    expect(chain.times[0]).toBe(T0 + HOUR - 120 * 15_000);
    expect(chain.times).toHaveLength(65);
    expect(chain.last).toBe(T0 + 3 * HOUR + 59 * 15_000);
  });

  it('a missing hour between two full ones: one gap of exactly its samples', () => {
    const { gaps } = hourlyChain(counts([240, 240, 0, 240, 240]), 15_000);
    expect(gaps).toHaveLength(1);
    // The samples it missed: the spacing over the interval, less one.
    expect((gaps[0]!.to - gaps[0]!.from) / 15_000 - 1).toBe(240);
  });

  it('a run of short hours is one gap; its missing samples add up', () => {
    const { gaps } = hourlyChain(counts([240, 200, 0, 100, 240]), 15_000);
    expect(gaps).toHaveLength(1);
    expect((gaps[0]!.to - gaps[0]!.from) / 15_000 - 1).toBe(40 + 240 + 140);
  });

  it('a sample or two short of an hour is noise, not a gap', () => {
    expect(hourlyChain(counts([240, 239, 238, 240, 240]), 15_000).gaps).toEqual([]);
  });
});

describe('StoreHours', () => {
  it('a GPU with values but no sample in range (nvidia_gpu_up missing) is no crash and no invented time', () => {
    const hours = new StoreHours('instance');
    const gpu = { instance: 'h1', gpu: '0', uuid: 'GPU-0' };
    for (let i = 0; i < 3; i++) hours.take('host_samples', 'host', { instance: 'h1' }, T0 + i * HOUR, 240);
    hours.take('mem_max', 'gpu', gpu, T0 + HOUR, 2 * 1_048_576);
    const { aggregator } = hours.fill();
    const stats = [...aggregator.series.values()];
    expect(stats.map((s) => [s.host, s.task, s.gpu, s.hourly.get(T0 + HOUR)?.memMax])).toEqual([['h1', 'default', '0', 2]]);
    expect([stats[0]!.timeline.firstTime, stats[0]!.timeline.lastTime]).toEqual([undefined, undefined]);
    expect(summaryByGpu(aggregator)[0]!.samples).toBe(0);
  });

  it("adds up the counting answers, takes the others' last value, and keeps an hour the report did not name", () => {
    const MIB = 1_048_576;
    const hours = new StoreHours('instance', [T0, T0 + HOUR]);
    const gpu = { instance: 'h1', task: 'train', gpu: '0', uuid: 'GPU-0' };
    const other = { ...gpu, gpu: '1', uuid: 'GPU-1' };
    for (let i = 0; i < 3; i++) hours.take('host_samples', 'host', { instance: 'h1', task: 'train' }, T0 + i * HOUR, 240);
    // One hour answered in two parts (a chunk's and a partial window's): the counts and sums add up.
    for (const part of [100, 140]) {
      hours.take('samples', 'gpu', gpu, T0, part);
      hours.take('util_n', 'gpu', gpu, T0, part);
      hours.take('util_sum', 'gpu', gpu, T0, part / 2);
      hours.take('power_n', 'gpu', gpu, T0, part);
      hours.take('power_sum', 'gpu', gpu, T0, part * 300.5);
    }
    hours.take('mem_max', 'gpu', gpu, T0, 3 * MIB);
    hours.take('mem_max', 'gpu', gpu, T0, 2 * MIB);
    hours.take('temp_max', 'gpu', gpu, T0, 71);
    // An hour after those named at the start.
    hours.take('samples', 'gpu', gpu, T0 + 2 * HOUR, 240);
    hours.take('mem_max', 'gpu', gpu, T0 + 2 * HOUR, 5 * MIB);
    // Who reserved GPU 0 was read in one hour (0, then 2 samples); GPU 1's samples never said.
    hours.take('reserved_read', 'gpu', gpu, T0 + 2 * HOUR, 0);
    hours.take('reserved_read', 'gpu', gpu, T0 + 2 * HOUR, 2);
    hours.take('samples', 'gpu', other, T0 + HOUR, 240);
    const { aggregator, reservedAccount } = hours.fill();
    const [first, second] = [...aggregator.series.values()].sort((a, b) => a.gpu.localeCompare(b.gpu));
    expect(first!.hourly.get(T0)).toEqual({
      samples: 240,
      errors: 0,
      utilMilliSum: 120 * 100_000,
      utilN: 240,
      memMax: 2,
      memTotal: undefined,
      powerMwSum: 240 * 300_500,
      powerN: 240,
      tempMax: 71,
      idleHeld: 0,
      missingMs: 0,
    });
    expect(first!.hourly.has(T0 + HOUR)).toBe(false);
    expect(first!.hourly.get(T0 + 2 * HOUR)).toMatchObject({ samples: 240, memMax: 5, tempMax: undefined, utilN: 0 });
    expect([...second!.hourly.keys()]).toEqual([T0 + HOUR]);
    expect([...reservedAccount.tasksSeen()]).toEqual(['h1\u0000train']);
  });
});
