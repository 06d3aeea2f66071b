import { describe, expect, it } from 'vitest';
import { periodStart } from '../../../src/report/aggregate.js';
import type { StoreClient } from '../../../src/report/store/client.js';
import {
  buildStoreReport,
  fiveMinuteWindows,
  MAX_STEPS,
  POINTS_PER_ANSWER,
  rangeChunks,
  readWindows,
  windowsOf,
} from '../../../src/report/store/store-report.js';

// The windows a store is asked about: local hours (the tests run in UTC), the first and last cut to
// --since/--until, whole hours in range queries of at most MAX_STEPS steps (Prometheus refuses
// more than 11,000 points per series), each step evaluated at the hour's last millisecond.

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);

describe('windowsOf', () => {
  it('cuts the first and last hour to --since and --until', () => {
    const { whole, partial } = windowsOf(T0 + 30 * 60_000, T0 + 3 * HOUR + 60_000);
    expect(whole).toEqual([
      { start: T0 + HOUR, end: T0 + 2 * HOUR },
      { start: T0 + 2 * HOUR, end: T0 + 3 * HOUR },
    ]);
    expect(partial).toEqual([
      { start: T0 + 30 * 60_000, end: T0 + HOUR },
      { start: T0 + 3 * HOUR, end: T0 + 3 * HOUR + 60_000 },
    ]);
  });

  it('five minutes inside one hour: one partial window', () => {
    expect(windowsOf(T0 + 10 * 60_000, T0 + 15 * 60_000)).toEqual({
      whole: [],
      partial: [{ start: T0 + 10 * 60_000, end: T0 + 15 * 60_000 }],
    });
  });
});

describe('rangeChunks', () => {
  it('a break starts a new chunk at its window', () => {
    const { whole } = windowsOf(T0, T0 + 48 * HOUR);
    const chunks = rangeChunks(whole, MAX_STEPS, new Set([T0 + 10 * HOUR]));
    expect(chunks).toEqual([
      { start: T0 + HOUR - 1, end: T0 + 10 * HOUR - 1, steps: 10 },
      { start: T0 + 11 * HOUR - 1, end: T0 + 48 * HOUR - 1, steps: 38 },
    ]);
  });

  it('a year by hour is one query of 8,760 steps, under the limit', () => {
    const { whole } = windowsOf(T0, T0 + 8760 * HOUR);
    expect(rangeChunks(whole)).toEqual([{ start: T0 + HOUR - 1, end: T0 + 8760 * HOUR - 1, steps: 8760 }]);
  });

  it('two years: chunks of at most MAX_STEPS steps that meet end to start', () => {
    const { whole } = windowsOf(T0, T0 + 2 * 8760 * HOUR);
    const chunks = rangeChunks(whole);
    expect(chunks.map((c) => c.steps)).toEqual([MAX_STEPS, 2 * 8760 - MAX_STEPS]);
    expect(MAX_STEPS).toBeLessThanOrEqual(11_000);
    expect(chunks[1]!.start).toBe(chunks[0]!.end + HOUR);
    for (const c of chunks) expect((c.end - c.start) / HOUR + 1).toBe(c.steps);
  });
});

describe('buildStoreReport', () => {
  it("cuts a month of 40 hosts x 8 GPUs into range queries of about POINTS_PER_ANSWER points each (a day at least): steps x the store's series", async () => {
    const series = Array.from({ length: 40 }, (_, h) => [
      { __name__: 'nvidia_gpu_collector_success', instance: `h${h}` },
      ...Array.from({ length: 8 }, (_, g) => ({ __name__: 'nvidia_gpu_up', instance: `h${h}`, gpu: String(g), uuid: `GPU-${h}-${g}` })),
    ]).flat();
    const steps: number[] = [];
    const ok = <T>(data: T) => ({ kind: 'ok' as const, data, warnings: [] });
    const client: StoreClient = {
      series: async (matchers) => ok(matchers.some((m) => m.startsWith('nvidia_gpu_collector_success')) ? series : []),
      query: async () => ok([]),
      queryRange: async (_expr, start, end, stepMs) => {
        steps.push((end - start) / stepMs + 1);
        return ok([]);
      },
    };
    const since = T0;
    const until = T0 + 30 * 24 * HOUR;
    await buildStoreReport(client, { since, until, by: 'host', concurrency: 4, hostLabel: 'instance' }, () => {});
    const perAnswer = Math.max(24, Math.floor(POINTS_PER_ANSWER / series.length));
    expect(steps.length).toBeGreaterThan(0);
    expect(Math.max(...steps)).toBe(perAnswer);
    // Every question covers the month: its chunks' steps add up to its hours.
    const questions = steps.length / Math.ceil((30 * 24) / perAnswer);
    expect(Number.isInteger(questions)).toBe(true);
    expect(steps.reduce((a, b) => a + b, 0)).toBe(questions * 30 * 24);
  });
});

describe('readWindows: which rule sets each hour reads', () => {
  const { whole } = windowsOf(T0, T0 + 6 * HOUR);
  const at = (i: number) => T0 + (i + 1) * HOUR - 1;
  const all = { idle: true, holders: true, reservations: true, fiveMinute: false };
  /** Each hour's coverage where every host is covered alike. */
  const even = (shares: number[]) => new Map(shares.map((v, i) => [at(i), { least: v, most: v }]));

  it('a set is read where its marker covers its source (99 %): not before it was loaded, nor in a gap backfilled after', () => {
    // idle: loaded in hour 1 (half of it), a gap backfilled in hour 4; holders: covered throughout but for
    // one evaluation fewer than the scrapes in hour 2 (within the tolerance); reservations: no answer.
    const idle = even([0, 0.5, 1, 1, 0.2, 1]);
    const holders = even([1, 1, 0.995, 1, 1, 1]);
    const read = readWindows(all, { idle, holders }, whole);
    expect(whole.map((w) => read.get(w.start)!.idle)).toEqual([false, false, true, true, false, true]);
    expect(whole.map((w) => read.get(w.start)!.holders)).toEqual([true, true, true, true, true, true]);
    expect(whole.map((w) => read.get(w.start)!.reservations)).toEqual([false, false, false, false, false, false]);
  });

  it('a set the series API did not show is never read, whatever its coverage says', () => {
    const full = even(whole.map(() => 1));
    const read = readWindows(
      { idle: false, holders: true, reservations: false, fiveMinute: false },
      { idle: full, holders: full, reservations: full, fiveMinute: full },
      whole,
    );
    expect([...read.values()].every((r) => !r.idle && r.holders && !r.reservations && !r.fiveMinute)).toBe(true);
  });

  it('where the five-minute set counts every sample (1 % either way) it alone is read; elsewhere the other sets as they cover', () => {
    // Loaded in hour 1 (a third of it); hour 3 counted twice over a few minutes (a backfill beside the
    // live evaluations, 3 % over); hour 4 short by the few minutes its windows are off the clock (0.995).
    const fiveMinute = even([0, 0.33, 1, 1.03, 0.995, 1]);
    const idle = even([1, 1, 1, 1, 1, 0.5]);
    const read = readWindows({ ...all, fiveMinute: true }, { fiveMinute, idle }, whole);
    expect(whole.map((w) => read.get(w.start)!.fiveMinute)).toEqual([false, false, true, false, true, true]);
    // Read alone: the others are not asked where it answers.
    expect(whole.map((w) => read.get(w.start)!.idle)).toEqual([true, true, false, true, false, false]);
    expect(whole.map((w) => read.get(w.start)!.holders)).toEqual([false, false, false, false, false, false]);
  });

  it("an hour is covered only where every host's is: one host missing among many, or counted twice, is not covered", () => {
    // Hour 1: one host of a hundred without the set (a gap backfilled there after the rules ran); hour
    // 2: one counted twice over a few minutes; hour 3: every host within 1 %.
    const hosts = (least: number, most: number) => ({ least, most });
    const fiveMinute = new Map([hosts(1, 1), hosts(0, 1), hosts(1, 1.05), hosts(0.992, 1.008)].map((c, i) => [at(i), c]));
    const idle = new Map([hosts(1, 1), hosts(0.4, 1), hosts(1, 1), hosts(1, 1)].map((c, i) => [at(i), c]));
    const read = readWindows({ ...all, fiveMinute: true }, { fiveMinute, idle }, whole.slice(0, 4));
    expect(whole.slice(0, 4).map((w) => read.get(w.start)!.fiveMinute)).toEqual([true, false, false, true]);
    expect(whole.slice(0, 4).map((w) => read.get(w.start)!.idle)).toEqual([false, false, true, false]);
  });
});

describe('fiveMinuteWindows: where the five-minute set may answer', () => {
  it('never over less than a day; over a day or more, every whole hour but the first and the last', () => {
    const day = windowsOf(T0, T0 + 24 * HOUR).whole;
    expect(fiveMinuteWindows(T0, T0 + 24 * HOUR, day)).toEqual(day.slice(1, 23));
    const short = windowsOf(T0, T0 + 23 * HOUR).whole;
    expect(fiveMinuteWindows(T0, T0 + 23 * HOUR, short)).toEqual([]);
  });
});

describe('over a fall-back night (America/New_York, 2026-11-01: 01:00-02:00 twice)', () => {
  it('each local hour is a window of its own, the repeated one too, and the windows end', () => {
    const before = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      const [since, until] = [Date.UTC(2026, 9, 31), Date.UTC(2026, 10, 2)];
      const { whole, partial } = windowsOf(since, until);
      expect(partial).toEqual([]);
      expect(whole).toHaveLength(48);
      whole.forEach((w, i) => {
        expect(w.end - w.start).toBe(HOUR);
        expect(w.start).toBe(since + i * HOUR);
      });
      // 01:30 EDT and 01:30 EST: two hours with the same local name, each its own start.
      expect(periodStart(Date.UTC(2026, 10, 1, 5, 30), 'hour')).toBe(Date.UTC(2026, 10, 1, 5));
      expect(periodStart(Date.UTC(2026, 10, 1, 6, 30), 'hour')).toBe(Date.UTC(2026, 10, 1, 6));
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });
});
