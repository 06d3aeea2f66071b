import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { render } from '../../src/exposition/render.js';
import { keptXid, withXid } from '../../src/collect/collect.js';
import type { Collection, GpuSample } from '../../src/collection.js';
import type { XidPoll } from '../../src/xid/watch.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { FIELDS } from '../../src/fields/fields.js';
import { selectFields } from '../../src/fields/field-select.js';
import { collectCapture, healthyCaptures } from '../support/capture-replay.js';
import { CAPTURES, ROOT } from '../support/helpers.js';

const captures = healthyCaptures();

describe('every recorded capture', () => {
  it.each(captures)('%s renders its golden file', async (dir) => {
    const { collection, warnings } = await collectCapture(dir);
    expect(collection.health.failure).toBeUndefined();
    // Old captures recorded no --query-compute-apps: the stand-in refuses it, and the run says so.
    const appsRecorded =
      existsSync(join(CAPTURES, dir, 'query-compute-apps.csv')) || existsSync(join(CAPTURES, dir, 'query-compute-apps.raw'));
    const expected = [
      ...(appsRecorded ? [] : [expect.stringMatching(/^processes left out: /)]),
      ...(dir.endsWith('comma-in-name')
        ? [expect.stringMatching(/^nvidia-smi --query-gpu: row has \d+ cells, the query asked for \d+: "1, GPU-697e/)]
        : []),
    ];
    expect(warnings).toEqual(expected);
    const text = render(buildFamilies(collection));
    expect(checkExposition(text).problems).toEqual([]);
    await expect(text).toMatchFileSnapshot(`../golden/${dir}.prom`);
  });

  it('has no golden left over from a capture that is gone', () => {
    const goldens = readdirSync(`${ROOT}/test/golden`).filter((f) => f.endsWith('.prom') && !f.startsWith('e2e'));
    expect(goldens.sort()).toEqual(captures.map((dir) => `${dir}.prom`).sort());
  });

  it('every golden passes promtool check metrics with no lint problem', async () => {
    for (const dir of captures) {
      const result = await execa('promtool', ['check', 'metrics'], { inputFile: `${ROOT}/test/golden/${dir}.prom`, reject: false });
      expect({ dir, exit: result.exitCode, out: result.stdout + result.stderr }).toEqual({ dir, exit: 0, out: '' });
    }
  });
});

describe('collect', () => {
  it('reads the H200 values in base units', async () => {
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle');
    const samples = checkExposition(render(buildFamilies(collection))).samples;
    const value = (name: string, gpu = '0') => samples.find((s) => s.name === name && s.labels.gpu === gpu)?.value;
    expect(value('nvidia_gpu_memory_total_bytes')).toBe(143771 * 1024 * 1024);
    expect(value('nvidia_gpu_power_draw_watts', '1')).toBe(77.99);
    expect(value('nvidia_gpu_sm_clock_hertz')).toBe(345e6);
    expect(value('nvidia_gpu_temperature_celsius')).toBe(27);
    expect(samples.find((s) => s.name === 'nvidia_gpu_clocks_event_reason_active' && s.labels.reason === 'gpu_idle')?.value).toBe(1);
  });

  it('names process owners from /proc and passwd, and leaves unknown ones empty', async () => {
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle');
    const owners = Object.fromEntries(collection.processes!.apps.map((app) => [`${app.uuid.slice(0, 8)}/${app.pid}`, app.user]));
    expect(owners).toEqual({ 'GPU-d904/2006': 'alice', 'GPU-d904/2008': '1234', 'GPU-d904/2007': '', 'GPU-697e/2008': '1234' });
  });

  it('--max-processes keeps the largest and counts the rest', async () => {
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle', { maxProcesses: 2 });
    expect(collection.processes!.apps.map((app) => app.pid)).toEqual([2006, 2007]);
    expect(collection.processes!.dropped).toBe(2);
  });

  it('learns the field names once, then makes one --query-gpu call per run', async () => {
    const first: string[][] = [];
    const run1 = await collectCapture('h200x2__580.159.04__linux-idle', { calls: first });
    expect(first.map((args) => args[0]!.split('=')[0]).sort()).toEqual([
      '--help-query-gpu',
      '--query-compute-apps',
      '--query-gpu',
      '--version',
    ]);
    const second: string[][] = [];
    await collectCapture('h200x2__580.159.04__linux-idle', { calls: second, state: run1.state });
    expect(second.map((args) => args[0]!.split('=')[0]).sort()).toEqual(['--query-compute-apps', '--query-gpu']);
  });

  it("learns the driver's CUDA version once per driver and keeps it in the state", async () => {
    const first = await collectCapture('h200x2__580.159.04__linux-idle');
    expect(first.collection.cudaVersion).toBe('13.0');
    expect(first.state.cuda).toEqual({ driverVersion: '580.159.04', version: '13.0' });
    const calls: string[][] = [];
    const again = await collectCapture('h200x2__580.159.04__linux-idle', { calls, state: first.state });
    expect([again.collection.cudaVersion, calls.some((args) => args.includes('--version'))]).toEqual(['13.0', false]);
    // Another driver (the state says 580, the capture 590): asked again, and the new answer kept.
    const upgraded = await collectCapture('h200__590.48.01__linux-idle', { calls, state: first.state });
    expect(calls.filter((args) => args.includes('--version'))).toHaveLength(1);
    expect(upgraded.state.cuda).toEqual({ driverVersion: '590.48.01', version: '13.1' });
  });

  it('a driver that answers --version without a CUDA version (or not at all) gets none, and is not asked again', async () => {
    const first = await collectCapture('geforce-rtx-2080-super__465.27__linux');
    expect([first.collection.cudaVersion, first.state.cuda]).toEqual([undefined, { driverVersion: '465.27', version: '' }]);
  });

  it('relearns when the driver rejects a remembered name, and still collects', async () => {
    const calls: string[][] = [];
    const stale = {
      driverVersion: '610.57.04',
      names: { index: 'index', uuid: 'uuid', 'clocks_event_reasons.gpu_idle': 'clocks_event_reasons.gpu_idle' },
    };
    const { collection, state } = await collectCapture('geforce-rtx-2080-super__465.27__linux', { calls, state: stale });
    expect(collection.health.failure).toBeUndefined();
    expect(calls.map((args) => args[0]!.split('=')[0])).toContain('--help-query-gpu');
    expect(state.driverVersion).toBe('465.27');
    expect(state.names?.['clocks_event_reasons.gpu_idle']).toBe('clocks_throttle_reasons.gpu_idle');
  });

  it('old and new names map to the same metrics', async () => {
    const old = render(buildFamilies((await collectCapture('geforce-rtx-2080-super__465.27__linux')).collection));
    const current = render(buildFamilies((await collectCapture('geforce-rtx-2080-super__610.57.04__linux-idle')).collection));
    const reasons = (text: string) =>
      checkExposition(text)
        .samples.filter((s) => s.name === 'nvidia_gpu_clocks_event_reason_active')
        .map((s) => s.labels.reason)
        .sort();
    expect(reasons(old).length).toBeGreaterThan(5);
    expect(reasons(old)).toEqual(reasons(current));
  });

  it('when one GPU is lost, the others keep reporting and the lost one is down', async () => {
    const healthy = await collectCapture('h200x2__580.159.04__linux-idle');
    const { collection, warnings } = await collectCapture('h200x2__580.159.04__gpu-lost', { state: healthy.state });
    expect(collection.health.failure).toBeUndefined();
    const samples = checkExposition(render(buildFamilies(collection))).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 1],
      ['1', 0],
    ]);
    expect(samples.some((s) => s.name === 'nvidia_gpu_power_draw_watts' && s.labels.gpu === '1')).toBe(false);
    expect(warnings.join('\n')).toMatch(/GPU 1 .* did not answer: .*Unable to determine the device handle/);
  });

  it('a lost GPU with no earlier run to name the GPUs fails as gpu_lost with the health block only', async () => {
    const { collection } = await collectCapture('h200x2__580.159.04__gpu-lost');
    expect(collection.health.failure?.reason).toBe('gpu_lost');
    expect(collection.samples).toEqual([]);
  });

  it('every GPU lost: gpu_lost, no values, and each GPU the last good run knew is down (nvidia_gpu_up 0, as one lost among several)', async () => {
    const healthy = await collectCapture('h200x2__580.159.04__linux-idle');
    const { collection } = await collectCapture('h200x2__580.159.04__all-gpus-lost', { state: healthy.state });
    expect(collection.health.failure?.reason).toBe('gpu_lost');
    const samples = checkExposition(render(buildFamilies(collection))).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => [s.labels.gpu, s.labels.uuid, s.value])).toEqual(
      (healthy.state.gpus ?? []).map((gpu) => [gpu.gpu, gpu.uuid, 0]),
    );
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up')).toHaveLength(2);
    expect(samples.some((s) => s.name === 'nvidia_gpu_power_draw_watts')).toBe(false);
  });

  it('a row with a comma inside the GPU name is unreadable, not shifted; the other GPU reports', async () => {
    const { collection } = await collectCapture('h200x2__580.159.04__comma-in-name');
    const samples = checkExposition(render(buildFamilies(collection))).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 1],
      ['1', 0],
    ]);
    expect(samples.filter((s) => s.name === 'nvidia_gpu_power_draw_watts').map((s) => s.labels.gpu)).toEqual(['0']);
  });

  it('error tokens drop the series and are exported per field; strings never become numbers', async () => {
    const { collection } = await collectCapture('h200x2__580.159.04__field-errors');
    const samples = checkExposition(render(buildFamilies(collection))).samples;
    const errors = samples
      .filter((s) => s.name === 'nvidia_gpu_field_error')
      .map((s) => `${s.labels.gpu} ${s.labels.field} ${s.labels.error}`);
    expect(errors.sort()).toEqual(
      [
        '0 fan.speed err',
        '0 power.draw unknown_error',
        '0 temperature.gpu gpu_requires_reset',
        '0 clocks.current.sm insufficient_permissions',
        '1 utilization.gpu unparsable',
        '1 memory.used unrecognized',
        '1 pstate unparsable',
      ].sort(),
    );
    const has = (name: string, gpu: string) => samples.some((s) => s.name === name && s.labels.gpu === gpu);
    expect(has('nvidia_gpu_power_draw_watts', '0')).toBe(false);
    expect(has('nvidia_gpu_power_draw_watts', '1')).toBe(true);
    expect(has('nvidia_gpu_memory_used_bytes', '1')).toBe(false);
    expect(has('nvidia_gpu_performance_state', '1')).toBe(false);
    const mode = samples
      .filter((s) => s.name === 'nvidia_gpu_compute_mode' && s.labels.gpu === '1' && s.value === 1)
      .map((s) => s.labels.mode);
    expect(mode).toEqual(['Exclusive_Something']);
  });

  it('--exclude-fields leaves fields out, but never index or uuid', async () => {
    const fields = selectFields(FIELDS, ['clocks_event_reasons.*', 'nvidia_gpu_ecc_*', 'index', 'uuid'], true);
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle', { fields });
    const names = new Set(checkExposition(render(buildFamilies(collection))).samples.map((s) => s.name));
    expect(names.has('nvidia_gpu_clocks_event_reason_active')).toBe(false);
    expect(names.has('nvidia_gpu_ecc_errors_total')).toBe(false);
    expect(names.has('nvidia_gpu_clocks_event_reason_seconds_total')).toBe(true);
    expect(names.has('nvidia_gpu_up')).toBe(true);
  });
});

// The daemon mode keeps the last sample's Xid series while the poll (one look a second) and the GPUs are
// the same: every answer must still be the one withXid gives for that sample.
describe('keptXid', () => {
  const gpu = (index: string, uuid: string, bus: string): GpuSample => ({
    gpu: index,
    uuid,
    readings: new Map([['pci.bus_id', { kind: 'text', text: bus }]]),
  });
  const sampled = (samples: GpuSample[]): Collection => ({ fields: [], samples, down: [], health: { durationSeconds: 0.01 } });
  const poll = (count: number, up = true): XidPoll => ({
    up,
    state: { boot: 'b', cursor: 1, counts: count > 0 ? [{ bus: '0000:00:06', xid: 79, count }] : [] } as unknown as XidPoll['state'],
  });
  const a = gpu('0', 'GPU-a', '00000000:00:06.0');

  it("the same poll and GPUs give the very same series; each answer equals withXid's", () => {
    const kept = keptXid();
    const first = poll(1);
    const one = kept(sampled([a]), first, []);
    const two = kept(sampled([a]), first, []);
    expect(two.xid).toBe(one.xid);
    expect(two.xid).toEqual(withXid(sampled([a]), first, []).xid);
  });

  it('a new poll, another GPU or a GPU on another bus makes them anew', () => {
    const kept = keptXid();
    const first = poll(1);
    const cases: [Collection, XidPoll, { gpu: string; uuid: string; busId: string }[]][] = [
      [sampled([a]), first, []],
      [sampled([a]), poll(2), []],
      [sampled([a]), poll(2, false), []],
      [sampled([gpu('0', 'GPU-b', '00000000:00:06.0')]), first, []],
      [sampled([gpu('0', 'GPU-a', '00000000:00:07.0')]), first, []],
      [sampled([]), first, [{ gpu: '0', uuid: 'GPU-a', busId: '00000000:00:06.0' }]],
      [sampled([a]), first, []],
    ];
    for (const [collection, xid, gpus] of cases) expect(kept(collection, xid, gpus).xid).toEqual(withXid(collection, xid, gpus).xid);
    expect(kept(sampled([a]), undefined, []).xid).toBeUndefined();
  });
});
