import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Aggregator } from '../../src/report/aggregate.js';
import { HEADER } from '../../src/report/history-generator.js';
import { summaryByGpu } from '../../src/report/summary.js';
import { runCli, tempDir } from '../support/helpers.js';

// Two GPUs collected every 10 minutes from 10:00 to 10:40, then nothing until 11:20 (a gap every
// GPU shares: 10:50, 11:00 and 11:10 are missing), then 11:20 to 11:40.
//   GPU 0: 100 % at 400 W for the first five samples, then 0 % at 100 W holding 2048 MiB (idle with memory).
//   GPU 1: 50 % at 200 W holding 500 MiB; 10:20 failed; 10:30 has no power reading; then 1 % at 200 W.
const minutes = [0, 10, 20, 30, 40, 80, 90, 100];
const time = (m: number) =>
  `2026-11-29T${String(10 + Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}:00.000+00:00`;
const gpu0 = (m: number) => (m <= 40 ? '100,2048,81559,400,60' : '0,2048,81559,100,35');
const gpu1 = (m: number) => (m === 30 ? '50,500,81559,,50' : m <= 40 ? '50,500,81559,200,50' : '1,500,81559,200,40');
const rows = minutes.flatMap((m) => [
  `${time(m)},h1,t,0,GPU-aaaa,NVIDIA A100,ok,${gpu0(m)},1410,1593`,
  m === 20 ? `${time(m)},h1,t,1,GPU-bbbb,,gpu_lost,,,,,,,` : `${time(m)},h1,t,1,GPU-bbbb,NVIDIA A100,ok,${gpu1(m)},1410,1593`,
]);

// By hand. The interval: spacings 10,10,10,10,40,10,10 min, median 10 min (600 s).
// GPU 0: 8 good samples x 600 s = 4800 s = 1.33 GPU-h; busy (5x100 + 3x0)/8 = 62.5 %;
//   idle holding memory 3 x 600 s = 0.5 h; energy (5x400 + 3x100) W x 600 s = 1,380,000 J = 0.383 kWh;
//   missed: the 40-minute spacing is 4 intervals, 3 samples missing = 1800 s = 0.5 h; peak 2048 MiB.
// GPU 1: 7 good samples x 600 s = 4200 s = 1.17 GPU-h; busy (4x50 + 3x1)/7 = 203/7 = 29.0 %; idle 0 (500 MiB
//   is under 1 GiB); energy 6 readings x 200 W x 600 s = 720,000 J = 0.2 kWh; missed 0.5 h; peak 500; 1 failed.
// Host h1, task t: 9000 s = 2.5 GPU-h; busy 703/15 = 46.87 -> 46.9 %; idle 0.5 h; 0.583 kWh; missed 1 h; peak 2048.
const byGpu = [
  {
    host: 'h1',
    task_id: 't',
    gpu_id: '0',
    gpu_uuid: 'GPU-aaaa',
    gpus: 1,
    samples: 8,
    error_samples: 0,
    gpu_hours: 1.33,
    busy_percent: 62.5,
    idle_with_memory_hours: 0.5,
    energy_kwh: 0.383,
    missed_gpu_hours: 0.5,
    peak_memory_used_mib: 2048,
  },
  {
    host: 'h1',
    task_id: 't',
    gpu_id: '1',
    gpu_uuid: 'GPU-bbbb',
    gpus: 1,
    samples: 8,
    error_samples: 1,
    gpu_hours: 1.17,
    busy_percent: 29,
    idle_with_memory_hours: 0,
    energy_kwh: 0.2,
    missed_gpu_hours: 0.5,
    peak_memory_used_mib: 500,
  },
];
const byTask = {
  host: 'h1',
  task_id: 't',
  gpus: 2,
  samples: 16,
  error_samples: 1,
  gpu_hours: 2.5,
  busy_percent: 46.9,
  idle_with_memory_hours: 0.5,
  energy_kwh: 0.583,
  missed_gpu_hours: 1,
  peak_memory_used_mib: 2048,
};
const span = { first_sample: '2026-11-29T10:00:00.000+00:00', last_sample: '2026-11-29T11:40:00.000+00:00' };

async function trail(): Promise<string> {
  const dir = await tempDir();
  await writeFile(join(dir, 't.csv'), `${HEADER}\n${rows.join('\n')}\n`);
  return dir;
}

describe('the summary per host and task, and per GPU, against a trail computed by hand', () => {
  it('--format json: summary always, rows per GPU with --by gpu; one finding for the gap every GPU shares', async () => {
    const dir = await trail();
    const result = await runCli(['report', '--csv-dir', dir, '--format', 'json', '--by', 'gpu'], { TZ: 'UTC' });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const report = JSON.parse(result.stdout) as {
      rows: unknown[];
      summary: unknown[];
      findings: { kind: string; gpu_id: string; missing_samples?: number }[];
    };
    expect(report.summary).toEqual([{ ...byTask, ...span }]);
    expect(report.rows).toEqual(byGpu.map((row) => ({ ...row, ...span })));
    expect(report.findings.map((f) => [f.kind, f.gpu_id])).toEqual([
      ['collection_gaps', ''],
      ['errors', '1'],
    ]);
    expect(report.findings[0]!.missing_samples).toBe(3);
  });

  it('--format csv --by task and --by gpu: the same numbers', async () => {
    const dir = await trail();
    const task = await runCli(['report', '--csv-dir', dir, '--format', 'csv', '--by', 'task'], { TZ: 'UTC' });
    expect(task.stdout).toBe(
      'host,task_id,gpus,first_sample,last_sample,samples,error_samples,gpu_hours,busy_percent,idle_with_memory_hours,energy_kwh,missed_gpu_hours,peak_memory_used_mib\n' +
        'h1,t,2,2026-11-29T10:00:00.000+00:00,2026-11-29T11:40:00.000+00:00,16,1,2.5,46.9,0.5,0.583,1,2048\n',
    );
    const gpu = await runCli(['report', '--csv-dir', dir, '--format', 'csv', '--by', 'gpu'], { TZ: 'UTC' });
    expect(gpu.stdout.split('\n').slice(1)).toEqual([
      'h1,t,0,GPU-aaaa,1,2026-11-29T10:00:00.000+00:00,2026-11-29T11:40:00.000+00:00,8,0,1.33,62.5,0.5,0.383,0.5,2048',
      'h1,t,1,GPU-bbbb,1,2026-11-29T10:00:00.000+00:00,2026-11-29T11:40:00.000+00:00,8,1,1.17,29,0,0.2,0.5,500',
      '',
    ]);
    const bad = await runCli(['report', '--csv-dir', dir, '--by', 'week']);
    expect([bad.exitCode, bad.stderr]).toEqual([
      2,
      'gpu-textfile: --by must be hour or day (rows per period and GPU), task, gpu, job or host (the summary per host and task, per GPU, per job or per host)\n',
    ]);
  });
});

describe('the summary per GPU of GPU ids that are not numbers', () => {
  // As the rows (aggregate.test.ts): Number() of such an id is NaN, no order at all beside numbers.
  it('lists the numbered GPUs in number order, a row without a GPU first, the others after by name', () => {
    const aggregator = new Aggregator();
    for (const gpu of ['1', 'b', '0', 'a', '10', '2', ''])
      aggregator.add({ time: Date.UTC(2026, 10, 23, 5), host: 'h', task: 't', gpu, uuid: `GPU-${gpu}`, status: 'ok', utilization: 50 });
    expect(summaryByGpu(aggregator.finish()).map((row) => row.gpu_id)).toEqual(['', '0', '1', '2', '10', 'a', 'b']);
  });
});
