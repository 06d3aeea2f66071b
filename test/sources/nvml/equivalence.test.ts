import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { FIELDS } from '../../../src/fields.js';
import { FIXTURES } from '../../helpers.js';

// Both sources on one real H200 at the same moments (test/fixtures/nvml-equivalence/, see its SOURCE.md):
// the NVML source gives every family and series nvidia-smi gives, with the same labels, and values
// that agree within what can move between two reads a few milliseconds apart.

const DIR = join(FIXTURES, 'nvml-equivalence/h200__580.159.04');
const read = (name: string) => checkExposition(readFileSync(join(DIR, name), 'utf8'));
const key = (s: { name: string; labels: Record<string, string> }) => `${s.name}${JSON.stringify(s.labels)}`;
const NVML_ONLY = new Set(FIELDS.filter((field) => field.nvml).map((field) => field.metric!));
const MIB = 1024 * 1024;

/** How far two reads of a family may differ: moving values get a tolerance, everything else none. */
function tolerance(name: string, value: number): number {
  if (name.endsWith('_bytes')) return MIB; // nvidia-smi prints whole MiB, NVML gives bytes
  if (name.startsWith('nvidia_gpu_power_draw')) return Math.max(5, 0.05 * value);
  if (name.endsWith('_celsius')) return 2;
  if (name.endsWith('_clock_hertz')) return 0.03 * value;
  if (name === 'nvidia_gpu_collector_duration_seconds' || name === 'nvidia_gpu_collector_last_success_timestamp_seconds') return Infinity;
  return 0;
}

describe.each(['idle', 'load', 'h2d'])('recorded on an H200, %s', (moment) => {
  const smi = read(`${moment}.nvidia-smi.prom`);
  const nvml = read(`${moment}.nvml.prom`);

  it('both files are valid exposition', () => {
    expect([smi.problems, nvml.problems]).toEqual([[], []]);
  });

  it('NVML has every series nvidia-smi has, and only its own families besides', () => {
    const nvmlKeys = new Set(nvml.samples.map(key));
    expect(smi.samples.map(key).filter((k) => !nvmlKeys.has(k))).toEqual([]);
    const smiKeys = new Set(smi.samples.map(key));
    expect([...new Set(nvml.samples.filter((s) => !smiKeys.has(key(s))).map((s) => s.name))].every((name) => NVML_ONLY.has(name))).toBe(
      true,
    );
  });

  it('values agree within what moves between two reads', () => {
    const nvmlValues = new Map(nvml.samples.map((s) => [key(s), s.value]));
    const apart = smi.samples
      .map((s) => ({ series: key(s), smi: s.value, nvml: nvmlValues.get(key(s))! }))
      .filter(({ series, smi: a, nvml: b }) => Math.abs(a - b) > tolerance(series.split('{')[0]!, a));
    expect(apart).toEqual([]);
  });
});

it('under host-to-device copies only, utilization.gpu reads busy while GPM says no SM or tensor work ran', () => {
  const nvml = read('h2d.nvml.prom');
  const value = (name: string) => nvml.samples.find((s) => s.name === name)?.value;
  expect([value('nvidia_gpu_utilization_ratio'), value('nvidia_gpu_sm_active_ratio'), value('nvidia_gpu_tensor_active_ratio')]).toEqual([
    1, 0, 0,
  ]);
});
