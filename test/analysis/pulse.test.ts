import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyPulse, REASON_BITS, type PulseVerdict } from '../../src/analysis/pulse.js';
import { parseSeries, type SeriesSample } from '../../src/nvidia-smi/series-csv.js';
import { FAKE_SMI, FIXTURES, capture, runCli } from '../helpers.js';

const SERIES = join(FIXTURES, 'series');
const expected = (file: string): PulseVerdict =>
  file.includes('__idle__') ? 'idle' : file.includes('__saturated__') ? 'saturated' : file.includes('__starved') ? 'data_starved' : 'small_kernels';

const gpu0 = (file: string): SeriesSample[] => {
  const parsed = parseSeries(readFileSync(join(SERIES, file), 'utf8'));
  if ('error' in parsed) throw new Error(parsed.error);
  return parsed.samples.filter((s) => s.gpu === '0');
};

describe('pulse on recordings under known loads', () => {
  it.each(readdirSync(SERIES).filter((f) => f.endsWith('.csv')))('%s', (file) => {
    expect(classifyPulse(gpu0(file)).verdict).toBe(expected(file));
  });

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
    const rows = synthetic(Array.from({ length: 50 }, () => ({ utilization: 98, powerW: 420, powerLimitW: 700, smClockMHz: 1100, smClockMaxMHz: 1980, reasons: REASON_BITS.hw_thermal_slowdown! | REASON_BITS.sw_thermal_slowdown! })));
    const pulse = classifyPulse(rows);
    expect(pulse.verdict).toBe('throttled');
    expect(pulse.explanation).toMatch(/56 % of its maximum with sw_thermal_slowdown, hw_thermal_slowdown active/);
    expect(pulse.nextSteps.join('\n')).toMatch(/cooling/);
  });
  it('power capping at the limit under full load is saturated, not throttled', () => {
    const rows = synthetic(Array.from({ length: 50 }, () => ({ utilization: 99, powerW: 690, powerLimitW: 700, smClockMHz: 1480, smClockMaxMHz: 1980, reasons: REASON_BITS.sw_power_cap })));
    const pulse = classifyPulse(rows);
    expect(pulse.verdict).toBe('saturated');
    expect(pulse.notes.join('\n')).toMatch(/power-bound/);
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
  it('samples live with one nvidia-smi -lms child (--json)', async () => {
    const result = await runCli(['pulse', '--seconds', '1.5', '--interval', '100ms', '--json', '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: capture('h100-80gb-hbm3__590.48.01__linux-load') });
    expect(result.exitCode).toBe(0);
    const pulse = JSON.parse(result.stdout) as { verdict: string; evidence: { samples: number; intervalMs: number } };
    expect(pulse.evidence.samples).toBeGreaterThanOrEqual(8);
    // The stand-in's timer, like nvidia-smi's, drifts a little.
    expect(pulse.evidence.intervalMs).toBeGreaterThanOrEqual(95);
    expect(pulse.evidence.intervalMs).toBeLessThanOrEqual(120);
    expect(pulse.verdict).toBe('saturated');
  });
  it('says why when nvidia-smi fails', async () => {
    const result = await runCli(['pulse', '--seconds', '1', '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: capture('constructed__driver-unreachable') });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/couldn't communicate with the NVIDIA driver/);
  });
});
