import { describe, expect, it } from 'vitest';
import { addSample, addStep, histogramPercentile, newTotals } from '../../src/run/accumulate.js';
import { formatSummary, summaryJson } from '../../src/run/format.js';
import type { RunSample } from '../../src/run/samples.js';
import { summarize, type SummaryInput } from '../../src/run/summary.js';

const S = 1000;
const HOUR = 3600 * S;
const sample = (gpu: string, seconds: number, utilization: number, powerW: number, memoryUsedMiB: number): RunSample => ({
  time: seconds * S,
  gpu,
  uuid: `GPU-${gpu}`,
  name: 'NVIDIA H200',
  utilization,
  powerW,
  memoryUsedMiB,
});

/** GPU 0: utilization 0, 50, 100, 100 % at 100, 200, 200, 100 W; GPU 1: 10 % at 50 W throughout. One sample a second. */
function totals() {
  const t = newTotals();
  const gpu0: [number, number, number][] = [
    [0, 100, 1000],
    [50, 200, 3000],
    [100, 200, 2000],
    [100, 100, 2500],
  ];
  gpu0.forEach(([util, power, memory], i) => {
    addSample(t, sample('0', i, util, power, memory), 5 * S);
    addSample(t, sample('1', i, 10, 50, 700), 5 * S);
  });
  return t;
}

const input = (gpus: string[], endedAt = HOUR): SummaryInput => ({
  task: 'train-1',
  command: ['python3', 'train.py'],
  startedAt: 0,
  endedAt,
  exit: { status: 0, code: 0 },
  selection: 'CUDA_VISIBLE_DEVICES',
  gpus,
  notes: [],
});

describe('the summary, against numbers computed by hand', () => {
  it('one GPU: mean, p95 (nearest rank), idle share, peak memory, energy by trapezoids, GPU-hours', () => {
    const summary = summarize(totals(), input(['0']));
    const [gpu] = summary.gpus;
    // (0 + 50 + 100 + 100) / 4; the 4th of 4 sorted values (ceil(0.95 x 4)); one sample at or under 5 %.
    expect([gpu!.utilizationMean, gpu!.utilizationP95, gpu!.idleShare, gpu!.peakMemoryMiB]).toEqual([62.5, 100, 0.25, 3000]);
    // (100+200)/2 + (200+200)/2 + (200+100)/2 W over 1 s each = 500 J; after the last sample (3 s) the
    // job ran on to 1 h: 10 s of it (the most held at an end) at the last sample's 100 W, 1000 J.
    expect(gpu!.energyWh).toBeCloseTo(1500 / 3600, 12);
    expect([summary.gpuHours, summary.durationSeconds, summary.utilizationMean, summary.energyWh]).toEqual([1, 3600, 62.5, gpu!.energyWh]);
  });

  it('two GPUs: the numbers pool both, GPU-hours count both', () => {
    const summary = summarize(totals(), input(['0', '1']));
    // (250 + 4 x 10) / 8; sorted 0,10,10,10,10,50,100,100: the 8th (ceil(7.6)); one of 8 near 0; 500 + 3 x 50 J
    // between samples, 10 s x 100 W + 10 s x 50 W after them.
    expect([summary.utilizationMean, summary.utilizationP95, summary.idleShare, summary.gpuHours]).toEqual([36.25, 100, 1 / 8, 2]);
    expect(summary.energyWh).toBeCloseTo(2150 / 3600, 12);
    expect(summary.gpus.map((g) => [g.gpu, g.peakMemoryMiB])).toEqual([
      ['0', 3000],
      ['1', 700],
    ]);
  });

  it('a gap longer than the one allowed adds no energy', () => {
    const t = newTotals();
    addSample(t, sample('0', 0, 50, 100, 1), 5 * S);
    addSample(t, sample('0', 1, 50, 100, 1), 5 * S);
    addSample(t, sample('0', 60, 50, 300, 1), 5 * S);
    expect(summarize(t, input(['0'], 60 * S)).energyWh).toBeCloseTo(100 / 3600, 12);
  });

  it('power x time is the trapezoids over uneven intervals of a ramp, plus the uncovered ends at the nearest power', () => {
    const t = newTotals();
    // 100 W at 0 s, 200 W at 1 s, 400 W at 3 s; the job ran from -1 s to 5 s. Power moves in a straight
    // line between samples: 0-1 s averages 150 W (150 J), 1-3 s 300 W (600 J); before the first sample
    // 1 s at 100 W, after the last 2 s at 400 W (900 J): 1650 J. A left-rectangle sum would give
    // 100 + 400 + 900 = 1400 J, a right-rectangle one 200 + 800 + 900 = 1900 J.
    for (const [second, watts] of [
      [0, 100],
      [1, 200],
      [3, 400],
    ])
      addSample(t, sample('0', second!, 50, watts!, 1), 5 * S);
    const summary = summarize(t, { ...input(['0']), startedAt: -1 * S, endedAt: 5 * S });
    expect(summary.energyWh! * 3600).toBeCloseTo(1650, 9);
    // All of it is power x time: the GPU's 6 s; the total names no uncovered seconds (there is no counter to cover them).
    expect([summary.energyFrom, summary.gpus[0]!.energyEstimatedSeconds, summary.energyEstimatedSeconds]).toEqual(['power', 6, undefined]);
  });

  it('the counter read every 10 s (repeated in between): counted between fresh readings, power x time after the last one', () => {
    const t = newTotals();
    // Power ramps 100 + 10 t W over 0-12 s: the board's counter reads 1000 + 100 t + 5 t^2 J. The
    // daemon reads it at 0 s and 10 s (1000 J, 2500 J) and repeats each reading until the next. The job's
    // energy is the integral over 0-12 s, 100 x 12 + 5 x 144 = 1920 J: 1500 J by the counter, 420 J by
    // the trapezoid 10-12 s (exact on a straight line). Last minus first reading would give 1500 J.
    for (let second = 0; second <= 12; second++) {
      const read = second >= 10 ? 10 : 0;
      const energyCounterJ = 1000 + 100 * read + 5 * read * read;
      addSample(t, { ...sample('0', second, 50, 100 + 10 * second, 1), energyCounterJ }, 5 * S);
    }
    const summary = summarize(t, input(['0'], 12 * S));
    expect(summary.energyWh! * 3600).toBeCloseTo(1920, 9);
    expect([summary.energyFrom, summary.energyEstimatedSeconds]).toEqual(['counter', 2]);
    expect(formatSummary(summary)).toContain(
      "  energy          0.533 Wh (the boards' energy counters; power x time for the 2.0 GPU-s no reading covers)\n",
    );
  });

  it("the boards' energy counter (NVML) is used when read: last minus first, not power x time", () => {
    const t = newTotals();
    // Power says 100 W for 2 s (200 J); the counter moved 1000 -> 1450 J: the counter wins.
    [1000, 1200, 1450].forEach((energyCounterJ, i) => {
      addSample(t, { ...sample('0', i, 50, 100, 1), energyCounterJ }, 5 * S);
    });
    const summary = summarize(t, input(['0'], 2 * S));
    expect([summary.gpus[0]!.energyWh, summary.gpus[0]!.energyFrom, summary.energyFrom]).toEqual([450 / 3600, 'counter', 'counter']);
    expect(formatSummary(summary)).toContain("  energy          0.125 Wh (the boards' energy counters)\n");
  });

  it('a counter that went back (the driver reloaded) is not trusted: power x time instead', () => {
    const t = newTotals();
    [5000, 10, 20].forEach((energyCounterJ, i) => {
      addSample(t, { ...sample('0', i, 50, 100, 1), energyCounterJ }, 5 * S);
    });
    const summary = summarize(t, input(['0'], 2 * S));
    expect([summary.gpus[0]!.energyWh, summary.energyFrom]).toEqual([200 / 3600, 'power']);
  });

  it('one GPU with a counter and one without: the total says it is mixed', () => {
    const t = newTotals();
    [0, 1].forEach((i) => {
      addSample(t, { ...sample('0', i, 50, 100, 1), energyCounterJ: 100 + 360 * i }, 5 * S);
      addSample(t, sample('1', i, 50, 100, 1), 5 * S);
    });
    const summary = summarize(t, input(['0', '1'], 1 * S));
    expect([summary.energyWh, summary.energyFrom]).toEqual([(360 + 100) / 3600, 'mixed']);
  });

  it('no GPU data: says why (nvidia-smi missing), with no numbers made up', () => {
    const t = newTotals();
    t.failures.push('nvidia_smi_not_found: nvidia-smi not found on PATH');
    const summary = summarize(t, input([]));
    expect(summary.noGpuData).toBe('no GPU data: nvidia_smi_not_found: nvidia-smi not found on PATH');
    expect([summary.gpus, summary.gpuHours, summary.utilizationMean, summary.energyWh]).toEqual([[], 0, undefined, undefined]);
    expect(formatSummary(summary)).toBe(
      'gpu-textfile run: train-1: exit status 0 after 1 h 00 min\n  no GPU data: nvidia_smi_not_found: nvidia-smi not found on PATH\n',
    );
  });

  it('prints the numbers, and writes them as JSON with snake_case keys', () => {
    const t = totals();
    for (let i = 0; i < 4; i++) addStep(t, { time: i * S, step: 10 * i });
    const summary = summarize(t, { ...input(['0']), exit: { status: 137, signal: 'SIGKILL' } });
    const text = formatSummary(summary);
    expect(text).toMatch(/^gpu-textfile run: train-1: killed by SIGKILL \(status 137\) after 1 h 00 min\n/);
    expect(text).toContain('  utilization     mean 62.5 %, p95 100 %, idle 25 % of samples\n');
    expect(text).toContain('  energy          0.417 Wh (power x time)\n');
    expect(text).toContain('  steps           30 done, the last one numbered 30 (4 lines), 10.00 steps/s\n');
    const json = summaryJson(summary) as Record<string, unknown>;
    expect(json).toMatchObject({ exit_status: 137, signal: 'SIGKILL', gpu_hours: 1, utilization_p95: 100, energy_wh: 0.4167 });
  });
});

describe("one set of numbers: pulse's explanation under the GPU's line", () => {
  /** GPU 0: `idle` samples at 0 % and 80 W, then `busy` at 100 % and 650 W of 700 W, one a second. */
  function run(idle: number, busy: number) {
    const t = newTotals();
    for (let i = 0; i < idle + busy; i++) {
      const loaded = i >= idle;
      addSample(t, { ...sample('0', i, loaded ? 100 : 0, loaded ? 650 : 80, 1000), powerLimitW: 700 }, 5 * S);
    }
    return formatSummary(summarize(t, input(['0'], (idle + busy) * S)));
  }

  it('idle samples pulse leaves out at the start: its figures differ from the line above, and it says why', () => {
    // The job's mean over 30 samples is 20 x 100 / 30 = 66.7 %; pulse reads the 20 busy ones only.
    const text = run(10, 20);
    expect(text).toContain('  GPU 0           mean 66.7 %, p95 100 %, peak memory 1000 MiB, 30 samples: saturated\n');
    expect(text).toContain(
      '                  without the 10 idle samples at the start or end (20 of 30): utilization 100 % on average, 100 % of samples at 90 % or more\n',
    );
  });

  it('pulse read every sample: the mean is printed once', () => {
    const text = run(0, 20);
    expect(text).toContain('  GPU 0           mean 100.0 %, p95 100 %, peak memory 1000 MiB, 20 samples: saturated\n');
    expect(text).toContain('                  100 % of samples at 90 % or more\n');
    expect(text).not.toContain('on average');
  });
});

describe('histogramPercentile', () => {
  it('nearest rank over whole percents', () => {
    const histogram = new Array(101).fill(0);
    histogram[10] = 19;
    histogram[90] = 1;
    expect([
      histogramPercentile(histogram, 95),
      histogramPercentile(histogram, 96),
      histogramPercentile(new Array(101).fill(0), 95),
    ]).toEqual([10, 90, undefined]);
  });
});
