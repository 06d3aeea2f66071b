import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { csvCells } from '../../src/csvlog/read.js';
import { addSample, addStep, newTotals } from '../../src/run/accumulate.js';
import { summarize } from '../../src/run/summary.js';
import { CAPTURES } from '../support/helpers.js';

// A real PyTorch loop on an H200 whose input pipeline turns slow halfway (test/gpu/slow-input-loop.py),
// recorded by `gpu-textfile run` (SOURCE.md there): its CSV replayed through the summary.
const DIR = join(CAPTURES, 'h200__580.159.04__run-slow-input');

function replay() {
  const [header, ...rows] = readFileSync(join(DIR, 'run.csv'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => csvCells(line)!);
  const at = (name: string) => header!.indexOf(name);
  const totals = newTotals();
  let lastStep = '';
  for (const row of rows) {
    const time = Date.parse(row[at('time')]!);
    addSample(
      totals,
      {
        time,
        gpu: row[at('gpu_id')]!,
        uuid: row[at('gpu_uuid')]!,
        utilization: Number(row[at('utilization_percent')]),
        memoryUsedMiB: Number(row[at('memory_used_mib')]),
        powerW: Number(row[at('power_draw_w')]),
        smClockMHz: Number(row[at('sm_clock_mhz')]),
      },
      1000,
    );
    // Each row carries the last step seen: a new value is a step mark at that row's time.
    const step = row[at('step')]!;
    if (step !== '' && step !== lastStep) addStep(totals, { time, step: Number(step) });
    lastStep = step;
  }
  const times = rows.map((row) => Date.parse(row[at('time')]!));
  return { totals, rows, startedAt: times[0]!, endedAt: times[times.length - 1]! };
}

describe('a recorded run with a slow input pipeline in its second half', () => {
  const { totals, rows, startedAt, endedAt } = replay();
  const summary = summarize(totals, {
    task: 'slow-input',
    command: ['python3', 'test/gpu/slow-input-loop.py', '120', '0.3'],
    startedAt,
    endedAt,
    exit: { status: 0, code: 0 },
    selection: 'process tree',
    gpus: ['0'],
    notes: [],
  });
  const recorded = JSON.parse(readFileSync(join(DIR, 'summary.json'), 'utf8'));

  it('agrees with the summary the run printed on the GPU machine', () => {
    expect(summary.gpus[0]!.samples).toBe(rows.length);
    expect(recorded.gpus[0].samples).toBe(rows.length);
    expect(Math.round(summary.utilizationMean! * 100) / 100).toBe(recorded.utilization_mean);
    expect([summary.utilizationP95, summary.gpus[0]!.peakMemoryMiB]).toEqual([recorded.utilization_p95, recorded.gpus[0].peak_memory_mib]);
    // The live run integrated over nvidia-smi's own timestamps, the CSV has the times rows were written.
    expect(summary.energyWh! / recorded.energy_wh).toBeCloseTo(1, 1);
  });

  it('shows the slow-down in the step ranges and calls it data-starved', () => {
    const [early, , late] = summary.steps!.ranges;
    expect(summary.steps!.done).toBe(120);
    expect(early!.utilizationMean).toBeGreaterThan(85);
    expect(late!.stepsPerSecond).toBeLessThan(0.67 * early!.stepsPerSecond);
    expect(late!.utilizationMean).toBeLessThan(early!.utilizationMean! - 30);
    expect(late!.verdicts).toEqual(['data_starved']);
    expect(summary.steps!.finding).toMatchObject({ kind: 'slowdown', cause: 'data_starved' });
    expect(summary.nextSteps[0]).toBe('the GPU waits for each batch: look at the input pipeline');
    expect(recorded.steps.finding).toMatchObject({ kind: 'slowdown', cause: 'data_starved' });
  });
});

// The same job on an H200 measured by both sources at once, beside a 100 ms NVML trace of the board's
// energy counter (SOURCE.md there): the nvidia-smi trail replayed through the summary (power x time)
// must give what the counter says over the run's own span, an independent measurement.
describe('energy on a real H200: power x time against the board counter', () => {
  const ENERGY = join(CAPTURES, 'h200__580.159.04__run-energy');
  const trace = readFileSync(join(ENERGY, 'nvml-trace.csv'), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split(',').map(Number) as [number, number, number]);
  /** The counter (J) at `ms`, in a straight line between the two readings around it. */
  const counterAt = (ms: number) => {
    const i = trace.findIndex(([seconds]) => seconds * 1000 >= ms);
    const [t1, , e1] = trace[i]!;
    const [t0, , e0] = trace[i - 1]!;
    return (e0 + ((e1 - e0) * (ms - t0 * 1000)) / ((t1 - t0) * 1000)) / 1000;
  };

  it.each(['saturated', 'starved-60'])('%s: within 1 % of the counter', (load) => {
    const recorded = JSON.parse(readFileSync(join(ENERGY, `summary-${load}-smi.json`), 'utf8'));
    const startedAt = Date.parse(recorded.started_at);
    const endedAt = startedAt + recorded.duration_seconds * 1000;
    const [header, ...rows] = readFileSync(join(ENERGY, `smi-${load}.csv`), 'utf8')
      .trim()
      .split('\n')
      .map((line) => csvCells(line)!);
    const at = (name: string) => header!.indexOf(name);
    const totals = newTotals();
    for (const row of rows)
      addSample(
        totals,
        {
          time: Date.parse(row[at('time')]!),
          gpu: row[at('gpu_id')]!,
          uuid: row[at('gpu_uuid')]!,
          utilization: Number(row[at('utilization_percent')]),
          powerW: Number(row[at('power_draw_w')]),
        },
        5000,
      );
    const summary = summarize(totals, {
      task: load,
      command: ['python3', 'bench/load.py', '40', load],
      startedAt,
      endedAt,
      exit: { status: 0, code: 0 },
      selection: 'process tree',
      gpus: ['0'],
      notes: [],
    });
    const counterJ = counterAt(endedAt) - counterAt(startedAt);
    expect(summary.energyFrom).toBe('power');
    expect(Math.abs((summary.energyWh! * 3600) / counterJ - 1)).toBeLessThan(0.01);
  });
});
