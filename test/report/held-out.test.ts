import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildReport } from '../../src/report/build.js';
import { HEADER, generateRows, type HistoryOptions, type Profile } from '../../src/report/history-generator.js';
import { CAPTURES, tempDir } from '../support/helpers.js';

// The report's thresholds (src/report/findings.ts) were tuned on generated histories: the TUNING set
// below, i.e. the histories of test/report/build.test.ts, report --demo's week (src/report/demo.ts) and the
// weeks bench/make-history.mjs writes. These tests use the HELD-OUT set, which tuning never looked at: other
// seeds, another interval (30 s), other lengths (10 days), zones and GPU counts, and load shapes of their own
// (below, not the generator's PROFILES). Each history plants what the thresholds' definitions must find, or
// stays on the quiet side of every threshold; the expected findings follow from what is planted.

/** What tuning used: the generator's seeds in those histories (writeHistory seeds day N with N + 1). */
const TUNING_SEEDS = [1, 2, 3, 4, 5, 6, 7, 11, 12, 13];

const START = Date.UTC(2027, 2, 1); // a Monday
const DAY = 24;

/** Noise around a level, clamped to a utilization. */
const util = (level: number, spread: number, r: () => number) => Math.max(0, Math.min(100, level + spread * (r() - 0.5)));

/** Held-out load shapes. */
const SHAPES = {
  /** Fine-tuning with a checkpoint every 2 h (utilization drops, memory spikes), memory flat. */
  finetune: (h, r) =>
    h % 2 < 0.1 ? { util: util(20, 10, r), memory: 71000 + 4000 * r() } : { util: util(80, 14, r), memory: 70000 + 600 * r() },
  /** Batch inference in office hours (zone-shifted), idle-looking but memory released at night. */
  officeHours: (h, r) =>
    h % 24 >= 8 && h % 24 < 18 ? { util: util(60, 30, r), memory: 24000 + 800 * r() } : { util: util(1, 2, r), memory: 600 },
  /** A slow leak: 800 MiB a day, with allocation noise and rare spikes. */
  slowLeak: (h, r) => ({ util: util(55, 20, r), memory: 12000 + (800 / 24) * h + 400 * r() + (r() < 0.005 ? 5000 : 0) }),
  /** Growth under the threshold: 200 MiB a day. */
  creep: (h, r) => ({ util: util(55, 20, r), memory: 12000 + (200 / 24) * h + 400 * r() }),
  /** Starved beside a busy peer: 12 % on average. */
  starved: (_h, r) => ({ util: util(12, 10, r), memory: 40000 + 300 * r() }),
  /** Busy: 75 % on average. */
  busy: (_h, r) => ({ util: util(75, 10, r), memory: 40000 + 300 * r() }),
  /** 25 points under its busy peer: a spread under the threshold. */
  slower: (_h, r) => ({ util: util(50, 10, r), memory: 40000 + 300 * r() }),
} satisfies Record<string, Profile>;

/** `shape`, but idle holding 20000 MiB for hours [from, to). */
const idleBetween =
  (shape: Profile, from: number, to: number): Profile =>
  (h, r) =>
    h >= from && h < to ? { util: 0.3 * r(), memory: 20000 + 100 * r() } : shape(h, r);

interface HeldOut {
  name: string;
  histories: (Omit<HistoryOptions, 'start' | 'intervalSeconds'> & { seed: number })[];
  /** "kind host/task[/gpu]" of every finding expected. */
  expected: string[];
}

const HELD_OUT: HeldOut[] = [
  {
    name: 'steady fine-tuning and office-hours inference for 10 days: nothing',
    histories: [
      { hours: 10 * DAY, seed: 1001, host: 'n1', task: 'ft', offsetMinutes: 330, gpus: Array(4).fill(SHAPES.finetune) },
      {
        hours: 10 * DAY,
        seed: 1002,
        host: 'n2',
        task: 'batch',
        offsetMinutes: -420,
        gpus: [SHAPES.officeHours, SHAPES.officeHours, SHAPES.officeHours],
      },
    ],
    expected: [],
  },
  {
    name: 'a slow leak (800 MiB a day) on one of three GPUs',
    histories: [{ hours: 10 * DAY, seed: 1003, host: 'n3', task: 'ft', gpus: [SHAPES.finetune, SHAPES.slowLeak, SHAPES.finetune] }],
    expected: ['memory_growth n3/ft/1'],
  },
  {
    name: 'growth under the threshold (200 MiB a day): nothing',
    histories: [{ hours: 10 * DAY, seed: 1004, host: 'n4', task: 'ft', gpus: [SHAPES.creep, SHAPES.creep] }],
    expected: [],
  },
  {
    name: 'idle for 5 hours holding memory, and idle for 2 hours (under the threshold)',
    histories: [
      {
        hours: 4 * DAY,
        seed: 1005,
        host: 'n5',
        task: 'ft',
        gpus: [idleBetween(SHAPES.finetune, 40, 45), idleBetween(SHAPES.finetune, 70, 72), SHAPES.finetune],
      },
    ],
    expected: ['idle n5/ft/0'],
  },
  {
    name: 'a starved GPU beside a busy one, and a pair 25 points apart (under the threshold)',
    histories: [
      { hours: 3 * DAY, seed: 1006, host: 'n6', task: 'pair', gpus: [SHAPES.busy, SHAPES.starved] },
      { hours: 3 * DAY, seed: 1007, host: 'n6', task: 'close', gpus: [SHAPES.busy, SHAPES.slower] },
    ],
    // The starved GPU (12 % busy holding 40 GB for 3 days) is also a low_use finding of its own (issue
    // 39 added that kind after these were held out; its thresholds were set on the demo and the tuning seeds).
    expected: ['imbalance n6/pair', 'low_use n6/pair/1'],
  },
  {
    name: 'a GPU missing for an hour, and one lost for 5 minutes',
    histories: [
      {
        hours: 3 * DAY,
        seed: 1008,
        host: 'n7',
        task: 'ft',
        gpus: [SHAPES.finetune, SHAPES.finetune, SHAPES.finetune],
        skip: (gpu, h) => gpu === 2 && h >= 30 && h < 31,
        fail: (gpu, h) => (gpu === 0 && h >= 50 && h < 50 + 5 / 60 ? 'gpu_lost' : undefined),
      },
    ],
    expected: ['collection_gaps n7/ft/2', 'errors n7/ft/0'],
  },
];

describe('report findings on the held-out generated histories (thresholds never tuned on them)', () => {
  it('held out means held out: no tuning seed is used here', () => {
    const seeds = HELD_OUT.flatMap((h) => h.histories.map((history) => history.seed));
    expect(seeds.filter((seed) => TUNING_SEEDS.includes(seed))).toEqual([]);
  });

  for (const { name, histories, expected } of HELD_OUT) {
    it(name, async () => {
      const dir = await tempDir();
      let written = 0;
      for (const history of histories) {
        const rows = generateRows({ ...history, start: START, intervalSeconds: 30 });
        written += rows.length;
        // All but the last day archived, as the archiver leaves them.
        const cut = rows.length - Math.floor(rows.length / (history.hours / DAY));
        const task = history.task ?? 'train';
        await writeFile(join(dir, `${task}-20270301.csv.gz`), gzipSync(`${HEADER}\n${rows.slice(0, cut).join('\n')}\n`));
        await writeFile(join(dir, `${task}.csv`), `${HEADER}\n${rows.slice(cut).join('\n')}\n`);
      }
      const report = await buildReport({ csvDirs: [dir], by: 'hour' });
      if ('error' in report) throw new Error(report.error);
      expect(report.rowsRead).toBe(written);
      const found = report.findings.map((f) => `${f.kind} ${f.host}/${f.task_id}${f.gpu_id ? `/${f.gpu_id}` : ''}`).sort();
      expect(found).toEqual(expected);
      // Weeks of 30-second samples: generous, for a busy machine.
    }, 120_000);
  }
});

// A REAL trail, held out too: collect --interval 1s with the real nvidia-smi on an H200 while
// bench/load.py ran eight 25 s loads (test/fixtures/captures/h200__580.159.04__load-trail/SOURCE.md).
// Four minutes of one GPU holding ~1 GiB: nothing there lasts the hours a finding needs, so the report
// finds nothing, and its sums are checked against ones worked out here from the rows.
describe('a real H200 trail under known loads (held out)', () => {
  const TRAIL = join(CAPTURES, 'h200__580.159.04__load-trail');

  it('no findings; GPU-hours, busy share and energy as the rows give them', async () => {
    const dir = await tempDir();
    const text = readFileSync(join(TRAIL, 'h200-load.csv'), 'utf8');
    await writeFile(join(dir, 'h200-load.csv'), text);
    const report = await buildReport({ csvDirs: [dir], by: 'task' });
    if ('error' in report) throw new Error(report.error);
    const [header, ...rows] = text
      .trim()
      .split('\n')
      .map((line) => line.split(','));
    const at = (name: string) => header!.indexOf(name);
    const times = rows.map((row) => Date.parse(row[at('time')]!));
    const util = rows.map((row) => Number(row[at('utilization_percent')]));
    const power = rows.map((row) => Number(row[at('power_draw_w')]));
    // Power in a straight line between rows (trapezoids), in kWh; the mean utilization over the rows (1 s apart).
    let joules = 0;
    for (let i = 1; i < rows.length; i++) joules += ((power[i - 1]! + power[i]!) / 2) * ((times[i]! - times[i - 1]!) / 1000);
    const meanUtil = util.reduce((a, b) => a + b, 0) / util.length;
    expect(report.findings).toEqual([]);
    const [summary] = report.summary;
    expect(summary).toMatchObject({ host: 'vm', task_id: 'h200-load', samples: rows.length, error_samples: 0 });
    expect(summary!.gpu_hours).toBeCloseTo((rows.length * 1) / 3600, 2);
    expect(Math.abs(summary!.busy_percent! - meanUtil)).toBeLessThan(0.1);
    // energy_kwh has 3 decimals: within one of them (the trail holds about 0.02 kWh).
    expect(Math.abs(summary!.energy_kwh! - joules / 3.6e6)).toBeLessThanOrEqual(0.0011);
  });
});
