import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { HEADER, PROFILES, generateRows } from '../../src/report/history-generator.js';
import { buildReport, type Report } from '../../src/report/build.js';
import { runCli, tempDir } from '../support/helpers.js';

const MONDAY = Date.UTC(2026, 10, 23, 0, 0, 0); // 2026-11-23, a Monday
const HOUR = 3_600_000;

/** Writes rows the way collect and archive leave them: dated gzipped archives, then the live file. */
async function writeTrail(dir: string, task: string, rows: string[], archiveBefore: number) {
  await mkdir(dir, { recursive: true });
  const byDay = new Map<string, string[]>();
  const live: string[] = [];
  for (const row of rows) {
    const time = Date.parse(row.slice(0, row.indexOf(',')));
    if (time >= archiveBefore) live.push(row);
    else {
      const day = row.slice(0, 10).replace(/-/g, '');
      byDay.set(day, [...(byDay.get(day) ?? []), row]);
    }
  }
  for (const [day, dayRows] of byDay) await writeFile(join(dir, `${task}-${day}.csv.gz`), gzipSync(`${HEADER}\n${dayRows.join('\n')}\n`));
  await writeFile(join(dir, `${task}.csv`), `${HEADER}\n${live.join('\n')}\n`);
}

const kinds = (report: Report) => report.findings.map((f) => `${f.kind} ${f.host}/${f.task_id}${f.gpu_id ? `/${f.gpu_id}` : ''}`).sort();

describe('report findings on generated histories', () => {
  it('finds exactly the planted patterns: leak, idle with memory, imbalance, low use, gaps, errors; zones and a day split across archive and live file', async () => {
    const dir = await tempDir();
    const days = 7 * 24;
    const trainRows = generateRows({
      start: MONDAY,
      hours: days,
      intervalSeconds: 60,
      host: 'gpu-node-01',
      task: 'train',
      offsetMinutes: -300,
      gpus: [
        'leak',
        (h: number, r: () => number) => (h >= 30 && h < 40 ? PROFILES.idleWithMemory() : PROFILES.training(h, r)),
        'training',
        'training',
        'training',
        'training',
        'training',
        'training',
      ],
      skip: (gpu: number, h: number) => gpu === 3 && h >= 50 && h < 50.5,
      fail: (gpu: number, h: number) => (gpu === 4 && h >= 60 && h < 60.1 ? 'driver_unreachable' : undefined),
    });
    // The last day is split: its first half in an archive, the rest in the live file.
    await writeTrail(dir, 'train', trainRows, MONDAY + (days - 12) * HOUR);
    const inferRows = generateRows({
      start: MONDAY,
      hours: 24,
      intervalSeconds: 60,
      host: 'gpu-node-02',
      task: 'infer',
      offsetMinutes: 480,
      seed: 7,
      gpus: ['busy', 'waiting'],
    });
    await writeTrail(dir, 'infer', inferRows, MONDAY + 12 * HOUR);

    const report = await buildReport({ csvDirs: [dir], by: 'hour' });
    if ('error' in report) throw new Error(report.error);
    expect(report.oddRows.count).toBe(0);
    expect(report.rowsRead).toBe(trainRows.length + inferRows.length);
    expect(kinds(report)).toEqual([
      'collection_gaps gpu-node-01/train/3',
      'errors gpu-node-01/train/4',
      'idle gpu-node-01/train/1',
      'imbalance gpu-node-02/infer',
      // The 'waiting' GPU, 5-13 % busy holding 50 GB all day: the low_use pattern, beside the imbalance.
      'low_use gpu-node-02/infer/1',
      'memory_growth gpu-node-01/train/0',
    ]);
    const leak = report.findings.find((f) => f.kind === 'memory_growth')!;
    expect(leak.mib_per_day as number).toBeGreaterThan(1300);
    expect(leak.mib_per_day as number).toBeLessThan(1500);
    expect(leak.fit_tau as number).toBeGreaterThan(0.7);
    expect(report.findings.find((f) => f.kind === 'idle')).toMatchObject({ hours: 10, min_memory_used_mib: 30000 });
    expect(report.findings.find((f) => f.kind === 'collection_gaps')).toMatchObject({ missing_samples: 30, interval_seconds: 60 });
    expect(report.findings.find((f) => f.kind === 'errors')).toMatchObject({ error_samples: 6, by_reason: { driver_unreachable: 6 } });
    // Every sample is counted once, across archives and the live file.
    const samples = [...report.rows].filter((r) => r.host === 'gpu-node-01').reduce((a, r) => a + r.samples, 0);
    expect(samples).toBe(trainRows.length);
  });

  it.each([1, 2, 3])('finds nothing on steady training and inference GPUs (seed %d)', async (seed) => {
    const dir = await tempDir();
    const rows = generateRows({
      start: MONDAY,
      hours: 5 * 24,
      intervalSeconds: 60,
      seed,
      gpus: ['training', 'training', 'training', 'training'],
    });
    const infer = generateRows({
      start: MONDAY,
      hours: 5 * 24,
      intervalSeconds: 60,
      seed: seed + 10,
      task: 'serve',
      gpus: ['inference', 'inference'],
    });
    await writeTrail(dir, 'train', rows, MONDAY + 4 * 24 * HOUR);
    await writeTrail(dir, 'serve', infer, MONDAY + 4 * 24 * HOUR);
    const report = await buildReport({ csvDirs: [dir], by: 'day' });
    if ('error' in report) throw new Error(report.error);
    expect(report.findings).toEqual([]);
  });
});

describe('report rows', () => {
  const lines = [
    HEADER,
    '2026-11-29T10:00:05.000+00:00,h,t,0,GPU-a,"NVIDIA ""H200"", rev B",ok,50,1000,143771,100.5,40,1980,3201',
    '2026-11-29T10:00:20.000+00:00,h,t,0,GPU-a,NVIDIA H200,ok,70,3000,143771,200.5,44,1980,3201',
    HEADER,
    '2026-11-29T10:00:35.000+00:00,h,t,0,GPU-a,,driver_unreachable,,,,,,,',
    'this row is not a row',
    '2026-11-29T11:00:05.000+00:00,h,t,0,GPU-a,NVIDIA H200,ok,10,500,143771,,30,345,3201',
  ];
  it('averages, peaks and error counts per hour; header lines inside files; odd rows counted and skipped', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 't.csv'), `${lines.join('\n')}\n`);
    const report = await buildReport({ csvDirs: [dir], by: 'hour' });
    if ('error' in report) throw new Error(report.error);
    expect(report.oddRows.count).toBe(1);
    expect([...report.rows].map(({ period: _, ...row }) => row)).toEqual([
      {
        host: 'h',
        task_id: 't',
        gpu_id: '0',
        gpu_uuid: 'GPU-a',
        samples: 3,
        error_samples: 1,
        avg_utilization_percent: 60,
        max_memory_used_mib: 3000,
        avg_power_draw_w: 150.5,
        max_temperature_c: 44,
      },
      {
        host: 'h',
        task_id: 't',
        gpu_id: '0',
        gpu_uuid: 'GPU-a',
        samples: 1,
        error_samples: 0,
        avg_utilization_percent: 10,
        max_memory_used_mib: 500,
        max_temperature_c: 30,
      },
    ]);
  });
  it('--format csv and json through the CLI, periods in ISO 8601 with the offset', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 't.csv'), `${lines.join('\n')}\n`);
    const csv = await runCli(['report', '--csv-dir', dir, '--format', 'csv'], { TZ: 'Asia/Kolkata' });
    expect(csv.exitCode).toBe(0);
    expect(csv.stdout.split('\n')[0]).toBe(
      'period,host,task_id,gpu_id,gpu_uuid,samples,error_samples,avg_utilization_percent,max_memory_used_mib,avg_power_draw_w,max_temperature_c',
    );
    // 10:00Z is 15:30 in India: hours there start at :00 local time.
    expect(csv.stdout.split('\n')[1]).toBe('2026-11-29T15:00:00.000+05:30,h,t,0,GPU-a,3,1,60,3000,150.5,44');
    const json = await runCli(['report', '--csv-dir', dir, '--format', 'json', '--by', 'day'], { TZ: 'UTC' });
    const parsed = JSON.parse(json.stdout) as {
      rows: { period: string; samples: number }[];
      findings: unknown[];
      odd_rows: { count: number };
    };
    expect(parsed.rows).toEqual([expect.objectContaining({ period: '2026-11-29T00:00:00.000+00:00', samples: 4 })]);
    // The hour without samples after the failure is a gap, too.
    expect(parsed.findings).toEqual([
      expect.objectContaining({ kind: 'collection_gaps', missing_samples: 237, interval_seconds: 15 }),
      expect.objectContaining({ kind: 'errors', by_reason: { driver_unreachable: 1 } }),
    ]);
    expect(parsed.odd_rows.count).toBe(1);
  });
  it('--since and --until select by time; --host and --task filter', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 't.csv'), `${lines.join('\n')}\n`);
    const result = await runCli(['report', '--csv-dir', dir, '--format', 'json', '--since', '2026-11-29T11:00:00Z', '--host', 'h'], {
      TZ: 'UTC',
    });
    expect((JSON.parse(result.stdout) as { rows: unknown[] }).rows).toHaveLength(1);
    const none = await runCli(['report', '--csv-dir', dir, '--format', 'json', '--task', 'other'], { TZ: 'UTC' });
    expect((JSON.parse(none.stdout) as { rows: unknown[] }).rows).toEqual([]);
  });
});
