import { describe, expect, it } from 'vitest';
import { formatValue, timeTicks, valueTicks } from '../../../src/report/html/axis.js';
import { segments } from '../../../src/report/html/chart.js';

describe('chart axes', () => {
  const ticks: [max: number, expected: number[]][] = [
    [11770, [0, 5000, 10000, 15000]],
    [61.4, [0, 20, 40, 60, 80]],
    [100, [0, 25, 50, 75, 100]],
    [0.7, [0, 0.2, 0.4, 0.6, 0.8]],
    [0, [0, 1]],
  ];
  it.each(ticks)('round value ticks up to %d', (max, expected) => expect(valueTicks(max)).toEqual(expected));

  it('values with units, no trailing zeros', () => {
    expect([formatValue(12500, 'MiB'), formatValue(2.5, 'GiB'), formatValue(0.2, 'W'), formatValue(47.25, '%')]).toEqual([
      '12500 MiB',
      '2.5 GiB',
      '0.2 W',
      '47.3 %',
    ]);
  });

  it('time ticks on local hours, midnights major with the day', () => {
    const start = new Date(2026, 10, 23, 18).getTime(); // local, as the ticks are
    const got = timeTicks(start, start + 12 * 3_600_000, 4).map((t) => `${t.label}${t.major ? '*' : ''}`);
    expect(got).toEqual(['18:00', '21:00', 'Tue 24 Nov*', '03:00', '06:00']);
  });

  it('a path with a subpath per stretch of values; a lone value is a dot', () => {
    const d = segments(
      [1, 2, undefined, 3, undefined, undefined, 4, 5],
      (i) => i * 10,
      (v) => v,
    );
    expect(d).toBe('M0.0,1.0L10.0,2.0M30.0,3.0h0M60.0,4.0L70.0,5.0');
  });
});

describe('memory growth over long spans', () => {
  it('fits at most 400 binned points: a year of hourly maxima is 8760, 38 M pairs', async () => {
    const { binned } = await import('../../../src/report/memory-growth.js');
    const year = Array.from({ length: 8760 }, (_, i) => ({ x: i, y: 1000 + i }));
    const bins = binned(year);
    expect(bins.length).toBeLessThanOrEqual(400);
    // 8760 / 400 -> bins of 22: hours 0..21, mean 10.5, median of 1000..1021 = (1010 + 1011) / 2.
    expect(bins[0]).toEqual({ x: 10.5, y: 1010.5 });
    expect(binned(year.slice(0, 168))).toHaveLength(168);
  });
});

describe('findings on the page, in GiB', () => {
  // Sentences as src/report/memory-growth.ts and idle-gpus.ts write them.
  const cases: [title: string, input: string, expected: string][] = [
    [
      'a range names its unit once',
      'memory used grows 1400 MiB a day, steadily (6010 to 10220 MiB over 71 h): a leak?',
      'memory used grows 1.4 GiB a day, steadily (5.9 to 10.0 GiB over 71 h): a leak?',
    ],
    [
      'one amount',
      'idle for 5 h in a row (7 h in all; 0.0 % utilization) while holding at least 30000 MiB',
      'idle for 5 h in a row (7 h in all; 0.0 % utilization) while holding at least 29.3 GiB',
    ],
    ['no memory in it', 'every GPU missed 12 samples', 'every GPU missed 12 samples'],
  ];
  it.each(cases)('%s', async (_title, input, expected) => {
    const { inGiB } = await import('../../../src/report/html/finding-text.js');
    expect(inGiB(input)).toBe(expected);
  });
});
