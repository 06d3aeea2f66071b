import { expect, it } from 'vitest';
import type { Collection, GpuSample, Reading } from '../../src/collection.js';
import { FIELDS } from '../../src/fields/fields.js';
import type { FieldSpec } from '../../src/fields/field-spec.js';
import { newRenderMemo, renderChecked } from '../../src/publish/publish.js';

// The daemon mode keeps a RenderMemo from one sample to the next: the text must be exactly what a
// fresh render gives, whatever changed between samples (values, states, a GPU swapped for another).

const field = (query: string): FieldSpec => FIELDS.find((f) => f.query === query)!;
const FIELDS_USED = ['index', 'uuid', 'name', 'power.draw', 'compute_mode', 'clocks_event_reasons.sw_power_cap'].map(field);
const sample = (gpu: string, uuid: string, watts: number, mode: string, capped: boolean): GpuSample => ({
  gpu,
  uuid,
  readings: new Map<string, Reading>([
    ['name', { kind: 'text', text: 'NVIDIA H200' }],
    ['power.draw', { kind: 'number', value: watts, shown: String(watts) }],
    ['compute_mode', { kind: 'text', text: mode }],
    ['clocks_event_reasons.sw_power_cap', { kind: 'number', value: capped ? 1 : 0, shown: capped ? 'Active' : 'Not Active' }],
  ]),
});
const collection = (samples: GpuSample[]): Collection => ({
  fields: FIELDS_USED,
  samples,
  down: [],
  health: { durationSeconds: 0.01, lastSuccessSeconds: 1000 },
});

it('a kept memo renders every sample exactly as a fresh render does', () => {
  const memo = newRenderMemo();
  const labels: [string, string][] = [['cluster', 'a']];
  const sequence = [
    collection([sample('0', 'GPU-a', 100, 'Default', false), sample('1', 'GPU-b', 90, 'Default', true)]),
    collection([sample('0', 'GPU-a', 120, 'Exclusive_Process', true), sample('1', 'GPU-b', 95, 'Default', false)]),
    // GPU 1 swapped for another board, and a state nvidia-smi's table does not know.
    collection([sample('0', 'GPU-a', 130, 'Some_New_Mode', true), sample('1', 'GPU-c', 60, 'Default', false)]),
    // Keys that would run into each other if gpu and uuid were only joined.
    collection([sample('1', '2GPU', 1, 'Default', false), sample('12', 'GPU', 2, 'Default', false)]),
  ];
  for (const each of sequence) {
    const kept = renderChecked(each, labels, true, [], memo);
    const fresh = renderChecked(each, labels, true, []);
    expect(kept.failure).toBeUndefined();
    expect(kept.text).toBe(fresh.text);
  }
  expect(renderChecked(sequence[2]!, labels, true, [], memo).text).toContain('uuid="GPU-c"');
});

it('a kept memo skips the checks only for the very series last checked: a duplicate that comes later is still found', () => {
  const memo = newRenderMemo();
  const labels: [string, string][] = [];
  const good = collection([sample('0', 'GPU-a', 100, 'Default', false)]);
  expect(renderChecked(good, labels, false, [], memo).failure).toBeUndefined();
  const checked = memo.checked;
  expect(checked).toBeDefined();
  // The same series with other values: not checked again, and the memo moves on to them.
  expect(renderChecked(collection([sample('0', 'GPU-a', 200, 'Default', true)]), labels, false, [], memo).failure).toBeUndefined();
  expect(memo.checked).not.toBe(checked);
  const duplicate = collection([sample('0', 'GPU-a', 100, 'Default', false), sample('0', 'GPU-a', 100, 'Default', false)]);
  const broken = renderChecked(duplicate, labels, false, [], memo);
  expect(broken.failure?.reason).toBe('internal_error');
  expect(broken).toEqual(renderChecked(duplicate, labels, false, []));
  // A failed sample is not what was last checked: the next good one is checked in full, and passes.
  const lastGood = memo.checked;
  expect(renderChecked(good, labels, false, [], memo).failure).toBeUndefined();
  expect(memo.checked).not.toBe(lastGood);
});

it("a kept memo writes each sample's health block and values, never the last ones again", () => {
  const memo = newRenderMemo();
  const gpus = [sample('0', 'GPU-a', 100, 'Default', false)];
  for (const [duration, last] of [
    [0.01, 1000],
    [0.02, 1000.25],
    [0.02, 1000.5],
  ] as const) {
    const each: Collection = { ...collection(gpus), health: { durationSeconds: duration, lastSuccessSeconds: last } };
    const { text } = renderChecked(each, [], false, [], memo);
    expect(text).toBe(renderChecked(each, [], false, []).text);
    expect(text).toContain(`nvidia_gpu_collector_duration_seconds ${duration}\n`);
    expect(text).toContain(`nvidia_gpu_collector_last_success_timestamp_seconds ${last}\n`);
  }
  // A failed sample: its error and success 0, no GPU values (the GPUs' families are gone, not kept).
  const failed: Collection = {
    ...collection([]),
    health: { durationSeconds: 0.5, lastSuccessSeconds: 1000.5, failure: { reason: 'timeout', message: 'x' } },
  };
  const { text } = renderChecked(failed, [], false, [], memo);
  expect(text).toBe(renderChecked(failed, [], false, []).text);
  expect(text).toContain('nvidia_gpu_collector_success 0\n');
  expect(text).not.toContain('nvidia_gpu_power_draw_watts');
  // And back: the GPU's values are those of this sample.
  const back = collection([sample('0', 'GPU-a', 140, 'Default', false)]);
  expect(renderChecked(back, [], false, [], memo).text).toBe(renderChecked(back, [], false, []).text);
  expect(renderChecked(back, [], false, [], memo).text).toContain('nvidia_gpu_power_draw_watts{gpu="0",uuid="GPU-a"} 140\n');
});
