import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyPulse } from '../../src/pulse/classify.js';
import { ROOT } from '../support/helpers.js';
import { LOAD_VERDICT, otherGpusTable, samplesOf, steady, trailPhases, trailTable, without } from './held-out-data.js';
import { SERIES } from './recordings.js';

// Pulse on data its thresholds never saw (docs/pulse.md, "Held out"): other GPUs and drivers, a real
// trail recorded by collect on an H200 under known loads, and recordings without a power column or
// without a power limit. Each expected verdict follows from the load that ran, not from what pulse said.

const series = (file: string) => readFileSync(join(SERIES, `h200__580.159.04__${file}.csv`), 'utf8');

describe('recordings without a power column: what utilization and clocks alone can say', () => {
  const POWER = ['power.draw', 'power.max_limit'];
  it.each([
    ['idle__lms200', 'idle'],
    ['saturated__lms200', 'saturated'],
    // The bursts show in utilization, and the power cap hit between samples in the clock event reasons.
    ['bursts-10__lms200', 'data_starved'],
    ['starved-60__lms200', 'data_starved'],
  ] as const)('%s: %s', (file, verdict) => {
    const pulse = classifyPulse(samplesOf(without(series(file), POWER)));
    expect(pulse.verdict).toBe(verdict);
    expect(pulse.evidence.powerMeanW).toBeUndefined();
  });

  it('host-device copies read near 100 %: without power they cannot be told from real load, and the verdict says so', () => {
    const pulse = classifyPulse(samplesOf(without(series('h2d-pinned__lms200'), POWER)));
    expect(pulse.verdict).toBe('saturated');
    expect(pulse.notes.join('\n')).toMatch(/no power to compare with idle .* only power tells them from real load/);
  });
});

describe('recordings without a power limit: near idle is measured against the lowest power at near-0 utilization', () => {
  it.each([
    ['idle__lms200', 'idle'],
    ['saturated__lms200', 'saturated'],
    ['bursts-10__lms200', 'data_starved'],
  ] as const)('%s: %s', (file, verdict) => {
    const pulse = classifyPulse(samplesOf(without(series(file), ['power.max_limit'])));
    expect(pulse.verdict).toBe(verdict);
    expect([pulse.evidence.powerLimitW, pulse.evidence.powerShare]).toEqual([undefined, undefined]);
  });

  it('all busy and no quiet sample: nothing to compare power with, and the verdict says so', () => {
    const pulse = classifyPulse(samplesOf(without(series('saturated__lms100'), ['power.max_limit'])).filter((s) => s.utilization > 5));
    expect(pulse.verdict).toBe('saturated');
    expect(pulse.notes.join('\n')).toMatch(/no power to compare with idle \(no power column, or no power limit and no quiet sample\)/);
  });
});

describe("other GPUs and drivers (the peers' captures, test/fixtures/captures): idle power is a share of each board's own limit", () => {
  it("docs/pulse.md's table of other GPUs is the code's (paste the expected text between the markers)", () => {
    const doc = readFileSync(join(ROOT, 'docs/pulse.md'), 'utf8');
    expect(/<!-- other-gpus:start -->\n([\s\S]*?)\n<!-- other-gpus:end -->/.exec(doc)?.[1]).toBe(otherGpusTable());
  });

  it.each([
    // Idle at 26 W of 400 W and 70 W of 700 W: far below an H200's 77-130 W, the same share of the limit.
    ['geforce-rtx-4080-super__595.71.05__linux-idle', 'idle'],
    ['h100-80gb-hbm3__590.48.01__linux-idle', 'idle'],
    // gpu-burn on an H100 (SOURCE.md there): 100 % at 632 W of 700 W.
    ['h100-80gb-hbm3__590.48.01__linux-load', 'saturated'],
  ] as const)('%s: %s', (name, verdict) => {
    const samples = steady(name);
    expect(samples).toHaveLength(30);
    expect(classifyPulse(samples).verdict).toBe(verdict);
  });
});

describe('a real trail, collect --interval 1s on an H200 under known loads (no power limit column)', () => {
  const phases = trailPhases();
  it('holds each load of bench/load.py, 24-25 samples each', () => {
    expect(phases.map((p) => p.load)).toEqual(['idle', 'saturated', 'starved-30', 'starved-60', 'tiny', 'h2d-pinned', 'bursts-10', 'idle']);
    for (const { samples } of phases) expect(samples.length).toBeGreaterThanOrEqual(24);
  });

  it.each(['idle', 'saturated', 'h2d-pinned', 'bursts-10'])('%s: what it is, at 1 s and without a limit', (load) => {
    for (const phase of phases.filter((p) => p.load === load)) expect(classifyPulse(phase.samples).verdict).toBe(LOAD_VERDICT[load]);
  });

  it('a verdict other than the load at 1 s is never called idle or saturated, and says that 1 s sampling can hide stalls', () => {
    for (const { load, samples } of phases) {
      const pulse = classifyPulse(samples);
      if (pulse.verdict === LOAD_VERDICT[load]) continue;
      expect([load, pulse.verdict]).not.toEqual([load, expect.stringMatching(/^(idle|saturated)$/)]);
      expect(pulse.notes.join('\n')).toMatch(/sampled every 1\d{3} ms: short stalls can hide between samples/);
    }
  });

  it("docs/pulse.md's table of the trail is the code's (paste the expected text between the markers)", () => {
    const doc = readFileSync(join(ROOT, 'docs/pulse.md'), 'utf8');
    expect(/<!-- trail:start -->\n([\s\S]*?)\n<!-- trail:end -->/.exec(doc)?.[1]).toBe(trailTable());
  });
});
