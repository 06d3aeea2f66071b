import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { FIELDS } from '../../../src/fields/fields.js';
import { selectFields } from '../../../src/fields/field-select.js';
import type { Nvml } from '../../../src/sources/nvml/api.js';
import { type Kept, readGpus, readPlan } from '../../../src/sources/nvml/source.js';
import { FAKE_SMI, capture, eventually, runCli, tempDir } from '../../support/helpers.js';
import {
  NVML_CALLS,
  collectWithStandIn,
  servedByNodeExporter,
  standInConfig,
  startDaemonWithStandIn,
} from '../../support/nvml-stand-in.js';

// GPM per MIG GPU instance (NVML only), from the layout and values constructed in
// test/fixtures/nvml-calls/h200-mig__590.48.01__constructed/ (SOURCE.md): no MIG GPU could be used.

const MIG = capture('h200-mig__590.48.01__linux-load');
const TWO = capture('h200x2__580.159.04__linux-load');
/** A constructed file's keys, for GPU `gpu`: its MIG devices answer as 100 + 10 * gpu + k (the stand-in's convention). */
const keys = async (file: string, gpu = 0): Promise<string[]> =>
  (await readFile(join(NVML_CALLS, 'h200-mig__590.48.01__constructed', file), 'utf8'))
    .split('\n')
    .filter((line) => line.includes('=') && !line.startsWith('#'))
    .map((line) => line.replace(/^(\d+)\./, (_, n: string) => `${Number(n) >= 100 ? Number(n) + 10 * gpu : gpu}.`));
const layout = async (gpu = 0) => [...(await keys('mig.conf', gpu)), ...(await keys('mig-gpm.conf', gpu))];
const RATIOS = ['graphics_active', 'sm_active', 'sm_occupancy', 'tensor_active', 'dram_active'].map(
  (name) => `nvidia_gpu_mig_${name}_ratio`,
);
/** A MIG device's or GPU instance's family (nvidia_gpu_mig_mode is the GPU's own). */
const MIG_FAMILY = /nvidia_gpu_mig_(?!mode)/;
const series = (text: string, name: string) =>
  checkExposition(text)
    .samples.filter((s) => s.name === name)
    .map((s) => [s.labels.gpu, s.labels.gpu_instance, s.labels.mig_profile, s.value]);
const callsOf = async (file: string) => (existsSync(file) ? (await readFile(file, 'utf8')).split('\n') : []);
const count = (calls: string[], name: string) => calls.filter((line) => line === name).length;

describe('GPM per MIG GPU instance', () => {
  it('one series per GPU instance (not per compute instance), labelled gpu, uuid, gpu_instance, mig_profile; one window for all', async () => {
    const calls = join(await tempDir(), 'calls');
    const result = await collectWithStandIn(standInConfig(MIG, [...(await layout()), `calls=${calls}`]), '--gpm-window', '20ms');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(series(result.stdout, 'nvidia_gpu_mig_sm_active_ratio')).toEqual([
      ['0', '1', '3g.71gb', 0.975],
      ['0', '5', '2g.35gb', 0.125],
      ['0', '13', '1g.18gb', 0.06],
      ['0', '14', '1g.18gb', 0],
    ]);
    expect(series(result.stdout, 'nvidia_gpu_mig_graphics_active_ratio').map((row) => row[3])).toEqual([0.99, 0.2, 0.08, 0]);
    expect(series(result.stdout, 'nvidia_gpu_mig_sm_occupancy_ratio').map((row) => row[3])).toEqual([0.4525, 0.035, 0.015, 0]);
    expect(series(result.stdout, 'nvidia_gpu_mig_tensor_active_ratio').map((row) => row[3])).toEqual([0.88, 0, 0, 0]);
    expect(series(result.stdout, 'nvidia_gpu_mig_dram_active_ratio').map((row) => row[3])).toEqual([0.31, 0.64, 0.585, 0]);
    const one = checkExposition(result.stdout).samples.find((s) => s.name === 'nvidia_gpu_mig_sm_active_ratio')!;
    expect(one.labels).toEqual({ gpu: '0', uuid: 'GPU-00000000-0000-0000-0000-000000000000', gpu_instance: '1', mig_profile: '3g.71gb' });
    // The whole GPU's ratios stay as they were.
    expect(series(result.stdout, 'nvidia_gpu_sm_active_ratio').map((row) => row[3])).toEqual([0.415]);
    const promtool = await execa('promtool', ['check', 'metrics'], { input: result.stdout, reject: false });
    expect([promtool.exitCode, promtool.stdout + promtool.stderr]).toEqual([0, '']);
    // Two samples per GPU instance (instance 1 once, for its two compute instances) and the GPU's two;
    // every first sample is taken before any comparison: one window, not one per GPU instance.
    const called = await callsOf(calls);
    expect([count(called, 'nvmlGpmMigSampleGet'), count(called, 'nvmlGpmSampleGet'), count(called, 'nvmlGpmMetricsGet')]).toEqual([
      8, 2, 5,
    ]);
    const samples = called.flatMap((line, at) => (/^nvmlGpm(Mig)?SampleGet$/.test(line) ? [at] : []));
    expect(samples.slice(0, 5).every((at) => at < called.indexOf('nvmlGpmMetricsGet'))).toBe(true);
  });

  // Absent, not zero, wherever a GPU instance's GPM cannot be read; the first row shows what is there when it can.
  it('only under NVML, with MIG on and GPM supported by the GPU: absent otherwise, and no MIG sample asked', async () => {
    const dir = await tempDir();
    const nvml = async (name: string, capturePath: string, lines: string[]) => {
      const calls = join(dir, name);
      const result = await collectWithStandIn(standInConfig(capturePath, [...lines, `calls=${calls}`]));
      expect([name, result.exitCode, result.stderr]).toEqual([name, 0, '']);
      const called = await callsOf(calls);
      const ratios = RATIOS.flatMap((family) => series(result.stdout, family)).length;
      return [name, ratios, count(called, 'nvmlGpmMigSampleGet'), count(called, 'nvmlGpmSampleAlloc'), result.stdout] as const;
    };
    const on = await nvml('MIG on, GPM', MIG, await layout());
    // An H200 as recorded: MIG disabled (mode 0); GPM and the instances' keys are there all the same.
    const off = await nvml('MIG off', TWO, await layout());
    const noGpm = await nvml(
      'no GPM',
      MIG,
      (await layout()).filter((line) => line !== '0.gpm=1'),
    );
    expect([on, off, noGpm].map((row) => row.slice(0, 4))).toEqual([
      ['MIG on, GPM', 20, 8, 10],
      ['MIG off', 0, 0, 2],
      ['no GPM', 0, 0, 0],
    ]);
    // The GPU's own ratios stay with MIG off; with no GPM the MIG memory stays.
    expect(series(off[4], 'nvidia_gpu_sm_active_ratio').map((row) => row[3])).toEqual([0.415]);
    expect(series(noGpm[4], 'nvidia_gpu_mig_memory_used_bytes')).toHaveLength(5);
    const smi = await runCli(['collect', '--dry-run', '--state-dir', join(dir, 's'), '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: MIG });
    expect([smi.exitCode, MIG_FAMILY.test(smi.stdout), MIG_FAMILY.test(on[4])]).toEqual([0, false, true]);
  });

  it('a GPM field excluded leaves out its MIG family too; all of them excluded, every GPM sample', async () => {
    const dir = await tempDir();
    const run = async (glob: string) => {
      const calls = join(dir, glob);
      const result = await collectWithStandIn(standInConfig(MIG, [...(await layout()), `calls=${calls}`]), '--exclude-fields', glob);
      expect([result.exitCode, result.stderr]).toEqual([0, '']);
      const shown = RATIOS.filter((family) => series(result.stdout, family).length > 0);
      return [shown, count(await callsOf(calls), 'nvmlGpmMigSampleGet')];
    };
    expect(await run('nvml.gpm.tensor_active')).toEqual([RATIOS.filter((family) => !family.includes('tensor')), 8]);
    expect(await run('nvml.gpm.*')).toEqual([[], 0]);
  });

  it('a failing instance leaves only its series out, a failing GPU only its own; a metric not answered only that ratio', async () => {
    const config = standInConfig(TWO, [
      '0.mig_current=1',
      '1.mig_current=1',
      ...(await layout(0)),
      ...(await layout(1)),
      'rc.nvmlGpmMigSampleGet.0.5=999',
      'rc.nvmlGpmMigSampleGet.1=999',
    ]);
    // GPU 0's instance 14 answers no tensor activity (the last value for a key wins; unset: NOT_SUPPORTED).
    const result = await collectWithStandIn(config.replace(/^0\.gi\.14\.gpm\.5=.*$/m, 'unset=1'), '--gpm-window', '20ms');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(series(result.stdout, 'nvidia_gpu_mig_sm_active_ratio').map((row) => row.slice(0, 2))).toEqual([
      ['0', '1'],
      ['0', '13'],
      ['0', '14'],
    ]);
    expect(series(result.stdout, 'nvidia_gpu_mig_tensor_active_ratio').map((row) => row.slice(0, 2))).toEqual([
      ['0', '1'],
      ['0', '13'],
    ]);
    // Everything else of both GPUs stays: their memory per MIG device, their own GPM ratios, up.
    expect(new Set(series(result.stdout, 'nvidia_gpu_mig_memory_used_bytes').map(([gpu]) => gpu))).toEqual(new Set(['0', '1']));
    expect(series(result.stdout, 'nvidia_gpu_sm_active_ratio').map((row) => row[0])).toEqual(['0', '1']);
    expect(series(result.stdout, 'nvidia_gpu_up').map((row) => row[3])).toEqual([1, 1]);
  });

  it('a GPU refusing its first GPM sample frees the buffers it was given', async () => {
    const calls = join(await tempDir(), 'calls');
    const result = await collectWithStandIn(standInConfig(TWO, ['0.gpm=1', 'rc.nvmlGpmSampleGet=999', `calls=${calls}`]));
    expect([result.exitCode, result.stdout.includes('nvidia_gpu_sm_active_ratio')]).toEqual([0, false]);
    const called = await callsOf(calls);
    expect([
      count(called, 'nvmlGpmSampleAlloc'),
      count(called, 'nvmlGpmSampleFree'),
      called.filter((l) => l.startsWith('live=')).at(-1),
    ]).toEqual([2, 2, 'live=0']);
  });

  it('is served by the real node_exporter with node_textfile_scrape_error 0', async () => {
    const scraped = await servedByNodeExporter(standInConfig(MIG, await layout()));
    for (const name of RATIOS) expect([name, scraped.filter((s) => s.name === name).length]).toEqual([name, 4]);
  });
});

// The daemon mode keeps each GPU instance's previous sample. MIG reconfigured under it (instance 13
// destroyed; 5 destroyed and made again, another profile under the same id): no ratio from samples of
// two different instances, the old buffers freed, the new instance's ratio from its own two samples.
it('daemon: a reconfigured MIG never compares samples of different instances; buffers freed, none allocated per sample', {
  timeout: 90_000,
}, async () => {
  const dir = await tempDir();
  const config = join(dir, 'stand-in.conf');
  const calls = join(dir, 'calls');
  const more = [`calls=${calls}`, 'reload=1'];
  await writeFile(config, standInConfig(MIG, [...(await layout()), ...more]));
  const textfile = join(dir, 't/nvidia_gpu.prom');
  const child = startDaemonWithStandIn(config, dir);
  onTestFinished(() => {
    child.kill('SIGKILL');
  });
  const text = async () => (existsSync(textfile) ? readFile(textfile, 'utf8') : '');
  const instances = async () => series(await text(), 'nvidia_gpu_mig_sm_active_ratio').map((row) => row.slice(1));
  const before = await eventually(async () => (await instances()).length === 4);
  const next = join(dir, 'next.conf');
  await writeFile(next, standInConfig(MIG, [...(await keys('mig-reconfigured.conf')), ...more]));
  await rename(next, config);
  const after = await eventually(
    async () =>
      JSON.stringify(await instances()) ===
      JSON.stringify([
        ['1', '3g.71gb', 0.975],
        ['5', '1g.18gb', 0.6],
        ['14', '1g.18gb', 0],
      ]),
  );
  // A few comparisons more: none of them may take a new buffer.
  const compared = count(await callsOf(calls), 'nvmlGpmMetricsGet');
  const more3 = await eventually(async () => count(await callsOf(calls), 'nvmlGpmMetricsGet') >= compared + 9);
  child.kill('SIGTERM');
  const result = await child;
  expect([before, after, more3]).toEqual([true, true, true]);
  expect([result.exitCode, result.stderr]).toEqual([0, '']);
  const called = await callsOf(calls);
  expect(count(called, 'nvmlGpmMetricsGet:mismatched')).toBe(0);
  // The GPU's two, two for each of the first layout's four instances, two for the new instance 5: all
  // there ever were. The old 5's and 13's four were freed.
  expect([count(called, 'nvmlGpmSampleAlloc'), count(called, 'nvmlGpmSampleFree')]).toEqual([12, 4]);
});

/**
 * An NVML as an H200 with MIG on answers (GPU instances 1 and 2, one MIG device each), counting GPM
 * buffers; `state.lost` makes every device call GPU_IS_LOST, `state.broken` the device count fail.
 */
function fakeMigNvml(state: { lost: boolean; broken: boolean; allocated: Set<bigint>; freed: bigint[] }): Nvml {
  let next = 1000n;
  const answers: Record<string, (...args: unknown[]) => unknown> = {
    count: () => (state.broken ? { rc: 999 } : { rc: 0, value: 1 }),
    handle: () => ({ rc: 0, value: 1n }),
    driverVersion: () => ({ rc: 0, value: '590.48.01' }),
    text: (what, device) =>
      what === 'uuid' ? { rc: 0, value: device === 1n ? 'GPU-0' : `MIG-${device}` } : { rc: 0, value: 'NVIDIA H200 MIG 1g.18gb' },
    twoModes: () => ({ rc: 0, value: [1, 1] }),
    migCount: () => ({ rc: 0, value: 2 }),
    migHandle: (_, index) => ({ rc: 0, value: 10n + BigInt(index as number) }),
    instanceId: (which, device) => ({ rc: 0, value: which === 'gpuInstance' ? Number(device) - 9 : 0 }),
    gpmSupported: () => ({ rc: 0, value: true }),
    gpmAlloc: () => {
      state.allocated.add(next);
      return { rc: 0, value: next++ };
    },
    gpmTake: () => 0,
    gpmMigTake: () => 0,
    gpmMetrics: () => ({ rc: 0, value: [60, 50, 14, 40, 16].map((value) => ({ rc: 0, value })) }),
    gpmFree: (sample) => {
      state.freed.push(sample as bigint);
      return 0;
    },
  };
  return new Proxy({} as Nvml, {
    get:
      (_, name: string) =>
      (...args: unknown[]) =>
        state.lost && name !== 'gpmFree' && name !== 'count' && name !== 'handle' ? { rc: 15 } : (answers[name]?.(...args) ?? { rc: 3 }),
  });
}

describe('GPM buffers of a GPU that goes', () => {
  it.each(['lost', 'broken'] as const)('a GPU %s: every buffer its GPU and instances held is freed, once', async (how) => {
    const state = { lost: false, broken: false, allocated: new Set<bigint>(), freed: [] as bigint[] };
    const nvml = fakeMigNvml(state);
    const plan = readPlan(selectFields(FIELDS, []));
    const kept: Kept = new Map();
    const timing = { gpmWindowMs: 0, energyEveryMs: 0, settingsEveryMs: 0, gpmEveryMs: 0 };
    const first = await readGpus(nvml, plan, { knownGpus: [] }, kept, timing);
    expect(first.kind === 'ok' && first.samples[0]!.migActivity?.map((a) => [a.gpuInstance, a.ratios.get('nvml.gpm.sm_active')])).toEqual([
      [1, 0.5],
      [2, 0.5],
    ]);
    // The GPU's two and two for each GPU instance.
    expect([state.allocated.size, state.freed]).toEqual([6, []]);
    state[how] = true;
    await readGpus(nvml, plan, { knownGpus: [] }, kept, timing);
    expect([state.freed.length, new Set(state.freed)]).toEqual([6, state.allocated]);
  });
});
