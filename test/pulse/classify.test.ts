import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyPulse, trimIdleEnds } from '../../src/pulse/classify.js';
import { REASON_BITS } from '../../src/pulse/clock-reasons.js';
import { formatPulse, pulseJson } from '../../src/pulse/format.js';
import { parseSeries, type SeriesSample } from '../../src/sources/nvidia-smi/series-csv.js';
import { FAKE_SMI, ROOT, capture, runCli } from '../support/helpers.js';
import { RECORDINGS, SERIES, TUNING, confusionTables, expectedVerdict, gpu0 } from './recordings.js';

describe('pulse on the recordings its thresholds were tuned on', () => {
  it.each(RECORDINGS.filter((f) => TUNING.has(f)))('%s', (file) => {
    expect(classifyPulse(gpu0(file)).verdict).toBe(expectedVerdict(file));
  });
});

describe('pulse on held-out recordings (never used to tune)', () => {
  it.each(RECORDINGS.filter((f) => !TUNING.has(f)))('%s', (file) => {
    expect(classifyPulse(gpu0(file)).verdict).toBe(expectedVerdict(file));
  });
  it('holds out recordings of every kind of load, at every interval', () => {
    const held = RECORDINGS.filter((f) => !TUNING.has(f));
    for (const verdict of ['idle', 'data_starved', 'copies_or_tiny_kernels'])
      expect(held.filter((f) => expectedVerdict(f) === verdict).length).toBeGreaterThanOrEqual(3);
    for (const ms of [100, 200, 500]) expect(held.some((f) => f.endsWith(`__lms${ms}.csv`))).toBe(true);
    for (const f of TUNING) expect(RECORDINGS).toContain(f);
  });
  it("docs/pulse.md's confusion tables are those of the code (paste the expected text between the markers)", () => {
    const doc = readFileSync(join(ROOT, 'docs/pulse.md'), 'utf8');
    const section = /<!-- confusion:start -->\n([\s\S]*?)\n<!-- confusion:end -->/.exec(doc)?.[1];
    expect(section).toBe(confusionTables());
  });
});

describe('pulse on the two loads issue 17 found wrong', () => {
  it('compute for ~50 ms, then wait 0.35-0.5 s: data_starved, from the bursts, not the busy share', () => {
    const pulse = classifyPulse(gpu0('h200__580.159.04__bursts-10__lms200.csv'));
    expect(pulse.evidence.dutyCycle).toBe(0);
    expect(pulse.verdict).toBe('data_starved');
    expect(pulse.explanation).toMatch(
      /^utilization 9\.3 % on average, in 20 bursts, one every 0\.4 s \(median peak 36\.5 %\), near 0 in 72 % of samples between them; the power cap was hit in 87 % of the near-0 samples, so heavy work ran between samples: the GPU computes for a moment, then waits for its input$/,
    );
    expect(pulse.nextSteps.join('\n')).toMatch(/num_workers/);
  });
  it.each(['h2d-pinned', 'd2h-pageable', 'tiny-graph'])(
    '%s: a steady utilization at idle power is copies or tiny kernels, not saturated, and says both',
    (load) => {
      const pulse = classifyPulse(gpu0(`h200__580.159.04__${load}__lms200.csv`));
      expect(pulse.verdict).toBe('copies_or_tiny_kernels');
      expect(pulse.explanation).toMatch(
        /power stays near idle \(12\d W, 1\d % of the limit\).*host-device copies or a stream of tiny kernels/,
      );
      const steps = pulse.nextSteps.join('\n');
      for (const advice of [
        /cannot always tell these two apart/,
        /pinned memory/,
        /larger transfers/,
        /overlap copies with compute/,
        /CUDA graphs/,
        /fuse kernels/,
        /larger batches/,
      ])
        expect(steps).toMatch(advice);
      expect(steps).not.toMatch(/bf16|more GPUs/);
    },
  );
});

describe('pulse on recordings under known loads', () => {
  it('says when power says busy while utilization says idle, rather than calling it idle', () => {
    const pulse = classifyPulse(gpu0('h200x2__580.159.04__starved__lms500.csv'));
    expect(pulse.verdict).toBe('data_starved');
    expect(pulse.notes.join('\n')).toMatch(/power says busy while utilization says idle: sample faster \(--interval 100ms\)/);
    expect(pulse.nextSteps.join('\n')).toMatch(/num_workers/);
  });

  it('the other GPU of the 500 ms recordings, idle throughout, is idle', () => {
    const parsed = parseSeries(readFileSync(join(SERIES, 'h200x2__580.159.04__saturated__lms500.csv'), 'utf8'));
    if ('error' in parsed) throw new Error(parsed.error);
    expect(classifyPulse(parsed.samples.filter((s) => s.gpu === '1')).verdict).toBe('idle');
  });
});

const synthetic = (rows: Partial<SeriesSample>[]): SeriesSample[] =>
  rows.map((row, i) => ({ time: 1_000_000 + i * 200, gpu: '0', utilization: 0, ...row }));

describe('pulse classification', () => {
  it('busy with clocks well under the maximum and thermal slowdown active is throttled', () => {
    const rows = synthetic(
      Array.from({ length: 50 }, () => ({
        utilization: 98,
        powerW: 420,
        powerLimitW: 700,
        smClockMHz: 1100,
        smClockMaxMHz: 1980,
        reasons: REASON_BITS.hw_thermal_slowdown! | REASON_BITS.sw_thermal_slowdown!,
      })),
    );
    const pulse = classifyPulse(rows);
    expect(pulse.verdict).toBe('throttled');
    expect(pulse.explanation).toMatch(/56 % of its maximum with sw_thermal_slowdown, hw_thermal_slowdown active/);
    expect(pulse.nextSteps.join('\n')).toMatch(/cooling/);
  });
  it('power capping at the limit under full load is saturated, not throttled', () => {
    const rows = synthetic(
      Array.from({ length: 50 }, () => ({
        utilization: 99,
        powerW: 690,
        powerLimitW: 700,
        smClockMHz: 1480,
        smClockMaxMHz: 1980,
        reasons: REASON_BITS.sw_power_cap,
      })),
    );
    const pulse = classifyPulse(rows);
    expect(pulse.verdict).toBe('saturated');
    expect(pulse.notes.join('\n')).toMatch(/power-bound/);
  });
  it('utilization near 0 at near-idle power, but the power cap hit between samples, is data_starved, not idle', () => {
    const rows = synthetic(
      Array.from({ length: 30 }, (_, i) => ({
        utilization: 0,
        powerW: 150,
        powerLimitW: 700,
        reasons: i % 3 === 1 ? 0n : REASON_BITS.sw_power_cap,
      })),
    );
    const pulse = classifyPulse(rows);
    expect(pulse.verdict).toBe('data_starved');
    expect(pulse.explanation).toMatch(
      /^utilization 0\.0 % on average, near 0 in 100 % of samples; the power cap was hit in 67 % of the near-0 samples/,
    );
  });
  it('samples that hit the power cap are not trimmed as idle', () => {
    const rows = synthetic([
      ...Array.from({ length: 4 }, () => ({ utilization: 0, powerW: 150, reasons: REASON_BITS.sw_power_cap })),
      ...Array.from({ length: 6 }, () => ({ utilization: 40, powerW: 150 })),
    ]);
    expect(trimIdleEnds(rows).trimmed).toBe(0);
  });
  it('without a power limit, a GPU busy at one steady high power is saturated: its lowest power is no idle reference', () => {
    const rows = synthetic(Array.from({ length: 20 }, () => ({ utilization: 99, powerW: 690 })));
    const pulse = classifyPulse(rows);
    expect(pulse.verdict).toBe('saturated');
    expect(pulse.notes.join('\n')).toMatch(/no power to compare with idle/);
  });
  it('a steady middling load with no swings is mixed', () => {
    const rows = synthetic(Array.from({ length: 50 }, () => ({ utilization: 60, powerW: 400, powerLimitW: 700 })));
    expect(classifyPulse(rows).verdict).toBe('mixed');
  });
});

describe('gpu-textfile pulse', () => {
  it('--from a recording prints the verdict, the evidence and next steps', async () => {
    const result = await runCli(['pulse', '--from', join(SERIES, 'h200__580.159.04__starved-60__lms100.csv')]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^GPU 0: data_starved\n/);
    expect(result.stdout).toMatch(/utilization +mean \d+\.\d %, busy \(>= 50 %\) \d+ %, near 0 \d+ %/);
    expect(result.stdout).toMatch(/power +mean \d+ W of 700 W/);
    expect(result.stdout).toMatch(/- PyTorch DataLoader: raise num_workers/);
  });
  it('--from a bursty recording prints the bursts and the power cap between samples', async () => {
    const result = await runCli(['pulse', '--from', join(SERIES, 'h200__580.159.04__bursts-10__lms200.csv')]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^GPU 0: data_starved\n/);
    expect(result.stdout).toMatch(
      /\n {2}bursts {15}20, one every 0\.4 s, median peak 36\.5 %\n {2}power cap while ~0 {3}87 % of near-0 samples\n/,
    );
  });
  it('--json has snake_case keys and numbers rounded to what they can say', async () => {
    const result = await runCli(['pulse', '--from', join(SERIES, 'h200__580.159.04__bursts-10__lms200.csv'), '--json']);
    expect(result.exitCode).toBe(0);
    const keys: string[] = [];
    const numbers: number[] = [];
    JSON.parse(result.stdout, (key, value: unknown) => {
      if (key !== '' && Number.isNaN(Number(key))) keys.push(key);
      if (typeof value === 'number') numbers.push(value);
      return value;
    });
    expect(keys.filter((key) => !/^[a-z0-9_]+$/.test(key))).toEqual([]);
    expect(numbers.length).toBeGreaterThan(10);
    expect(numbers.filter((n) => Math.round(n * 1000) / 1000 !== n)).toEqual([]);
  });
  it('samples live with one nvidia-smi -lms child (--json)', async () => {
    const result = await runCli(['pulse', '--seconds', '1.5', '--interval', '100ms', '--json', '--nvidia-smi', FAKE_SMI], {
      FAKE_SMI_CAPTURE: capture('h100-80gb-hbm3__590.48.01__linux-load'),
    });
    expect(result.exitCode).toBe(0);
    const pulse = JSON.parse(result.stdout) as {
      verdict: string;
      next_steps: string[];
      skipped_rows: number;
      evidence: { samples: number; interval_ms: number; utilization_mean: number; bursts: number };
    };
    expect(pulse.evidence.samples).toBeGreaterThanOrEqual(8);
    // The stand-in's timer, like nvidia-smi's, drifts, and more so on a busy machine.
    expect(pulse.evidence.interval_ms).toBeGreaterThanOrEqual(95);
    expect(pulse.evidence.interval_ms).toBeLessThanOrEqual(500);
    expect(pulse.evidence.utilization_mean).toBeGreaterThan(85);
    expect(pulse.evidence.bursts).toBe(1);
    expect(pulse.next_steps.length).toBeGreaterThan(0);
    expect(pulse.skipped_rows).toBe(0);
    expect(pulse.verdict).toBe('saturated');
  });
  it('says why when nvidia-smi fails', async () => {
    const result = await runCli(['pulse', '--seconds', '1', '--nvidia-smi', FAKE_SMI], {
      FAKE_SMI_CAPTURE: capture('constructed__driver-unreachable'),
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/couldn't communicate with the NVIDIA driver/);
  });
});

// With the NVML source's GPM columns, pulse sees the SMs themselves. The recordings predate GPM: its
// columns are added here, at the values recorded on an H200 (bench/nvml-device-probe.sh: bf16 matmuls
// SM active 96 %, tensor 94 %; host-to-device copies only 0 %).
describe('pulse with GPM (recordings of the NVML source)', () => {
  const withGpm = (file: string, sm: number, tensor: number): SeriesSample[] => {
    const [header, ...rows] = readFileSync(join(SERIES, file), 'utf8').trimEnd().split('\n');
    const text = [`${header}, nvml.gpm.sm_active [%], nvml.gpm.tensor_active [%]`, ...rows.map((row) => `${row}, ${sm} %, ${tensor} %`)];
    const parsed = parseSeries(`${text.join('\n')}\n`);
    if ('error' in parsed) throw new Error(parsed.error);
    return parsed.samples.filter((s) => s.gpu === '0');
  };

  it('full utilization at full power, but no SM activity: copies or tiny kernels, never saturated', () => {
    const pulse = classifyPulse(withGpm('h200__580.159.04__saturated__lms200.csv', 0, 0));
    expect(pulse.verdict).toBe('copies_or_tiny_kernels');
    expect(pulse.explanation).toMatch(/GPM has the SMs active 0\.0 % of the time and the tensor cores 0\.0 %/);
  });

  it('full utilization with the SMs and tensor cores busy: saturated, as without GPM', () => {
    const pulse = classifyPulse(withGpm('h200__580.159.04__saturated__lms200.csv', 96, 94));
    expect([pulse.verdict, pulse.evidence.smActiveMean, pulse.evidence.tensorActiveMean]).toEqual(['saturated', 96, 94]);
  });
});

describe('pulse on timestamps that do not advance', () => {
  // A recording whose clock column repeats (an --from file written at a coarse clock, a clock set
  // back): no interval can be told, and none is made up.
  it('says the interval is unknown, never "every NaN ms"', async () => {
    const samples = gpu0('h200__580.159.04__bursts-10__lms200.csv').map((s) => ({ ...s, time: 1_700_000_000_000 }));
    const pulse = classifyPulse(samples);
    expect(pulse.evidence.intervalMs).toBeUndefined();
    const text = formatPulse(pulse);
    expect(text).not.toMatch(/NaN/);
    expect(text).toContain(`samples              ${pulse.evidence.samples} (their timestamps do not advance: interval unknown)`);
    expect(JSON.stringify(pulseJson(pulse, 0))).toContain('"interval_ms":null');
  });
});
