import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { FAKE_SMI, capture, runCli, tempDir } from '../../support/helpers.js';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';

// The NVML source against the stand-in libnvidia-ml.so.1 (test/fixtures/nvml-stand-in/), through the
// CLI users run: the library is loaded by path (--nvml-library), its answers written from captures.

/** Runs `collect --dry-run --source nvml` with the stand-in answering from `config`. */
async function collectNvml(config: string, ...more: string[]) {
  const dir = await tempDir();
  const file = join(dir, 'stand-in.conf');
  await writeFile(file, config);
  return runCli(
    ['collect', '--dry-run', '--state-dir', join(dir, 'state'), '--source', 'nvml', '--nvml-library', standInLibrary(), ...more],
    { NVML_STAND_IN: file },
  );
}

/**
 * The exposition without the lines that differ between any two runs (duration, time of success) and
 * the families only NVML has (per-process utilization: test/sources/nvml/process-utilization.test.ts).
 */
const comparable = (text: string): string[] =>
  text
    .split('\n')
    .filter((line) => !/^nvidia_gpu_collector_(duration_seconds|last_success_timestamp_seconds) /.test(line))
    .filter((line) => !/nvidia_gpu_process_(sm|memory)_utilization_ratio/.test(line));

const CAPTURES = [
  'h200x2__580.159.04__linux-load',
  'h200x2__580.159.04__linux-idle',
  'h200__590.48.01__linux-load',
  'h100-80gb-hbm3__590.48.01__linux-load',
  'l40s__595.80__linux-load',
  'geforce-rtx-4080-super__595.71.05__linux-load',
];

describe('collect --source nvml', () => {
  // Same families, names, labels and values as nvidia-smi for the same GPUs: the stand-in answers
  // what each capture recorded, in NVML's units.
  it.each(CAPTURES)('renders %s exactly as the nvidia-smi source does', async (name) => {
    const dir = await tempDir();
    // An empty host for both: the captures' pids are looked up in --host-root's proc for their
    // owner, and on the machine the tests run on a live process may hold one of them for one run
    // and not the other (seen: user="root" for pid 20037 in one of the two).
    const host = ['--host-root', await tempDir()];
    const smi = await runCli(['collect', '--dry-run', '--state-dir', join(dir, 'state'), '--nvidia-smi', FAKE_SMI, ...host], {
      FAKE_SMI_CAPTURE: capture(name),
    });
    const nvml = await collectNvml(standInConfig(capture(name)), ...host);
    expect([nvml.exitCode, nvml.stderr]).toEqual([0, '']);
    expect(smi.exitCode).toBe(0);
    expect(checkExposition(nvml.stdout).problems).toEqual([]);
    expect(comparable(nvml.stdout)).toEqual(comparable(smi.stdout));
  });

  // NVML's codes are the numbers nvidia-smi exits with: the same reason whichever source met it.
  it.each([
    [9, 'driver_unreachable'],
    [18, 'driver_library_mismatch'],
    [17, 'gpu_access_blocked'],
    [4, 'insufficient_permissions'],
    [999, 'nvml_unknown_error'],
    [12, 'nvml_library_missing'],
  ])('nvmlInit_v2 returning %i: health block with reason %s, exit 1, one line', async (rc, reason) => {
    const result = await collectNvml(`${standInConfig(capture('h200x2__580.159.04__linux-idle'))}rc.nvmlInit_v2=${rc}\n`);
    expect(result.exitCode).toBe(1);
    expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(result.stderr).toMatch(new RegExp(`^gpu-textfile: ${reason}: nvmlInit_v2 returned NVML_ERROR_\\w+ \\(${rc}\\)`));
    const samples = checkExposition(result.stdout).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_collector_error').map((s) => s.labels.reason)).toEqual([reason]);
    expect(samples.filter((s) => /^nvidia_gpu_(?!collector_)/.test(s.name))).toEqual([]);
  });

  it('no devices: no_devices, as nvidia-smi exit 6', async () => {
    const result = await collectNvml('count=0\n');
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^gpu-textfile: no_devices: NVML found no NVIDIA devices /);
  });

  it('a host without libnvidia-ml.so.1: nvml_library_missing, health block, exit 1, one stderr line', async () => {
    const dir = await tempDir();
    const result = await collectNvml('', '--nvml-library', join(dir, 'libnvidia-ml.so.1'));
    expect(result.exitCode).toBe(1);
    expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(result.stderr).toMatch(/^gpu-textfile: nvml_library_missing: .*libnvidia-ml\.so\.1 could not be loaded: .*No such file/);
    expect(checkExposition(result.stdout).samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason).toBe(
      'nvml_library_missing',
    );
  });

  it('one GPU lost: the other keeps reporting, the lost one is nvidia_gpu_up 0', async () => {
    const result = await collectNvml(`${standInConfig(capture('h200x2__580.159.04__linux-idle'))}rc.nvmlDeviceGetPowerUsage.1=15\n`);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(/^gpu-textfile: GPU 1 \(uuid unknown\) did not answer: power\.draw: NVML_ERROR_GPU_IS_LOST \(15\)\n$/);
    const samples = checkExposition(result.stdout).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 1],
      ['1', 0],
    ]);
    expect(samples.filter((s) => s.name === 'nvidia_gpu_power_draw_watts').map((s) => s.labels.gpu)).toEqual(['0']);
  });

  it('every GPU lost: gpu_lost, exit 1', async () => {
    const result = await collectNvml(`${standInConfig(capture('h200x2__580.159.04__linux-idle'))}rc.nvmlDeviceGetHandleByIndex_v2=15\n`);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /^gpu-textfile: gpu_lost: no GPU could be read: GPU 0: nvmlDeviceGetHandleByIndex_v2 returned NVML_ERROR_GPU_IS_LOST/,
    );
  });

  // As a cell of nvidia-smi's: [Not Supported] is absent, [Unknown Error] a field error, never a number.
  it.each([
    [3, undefined],
    [999, 'unknown_error'],
    [4, 'insufficient_permissions'],
    [16, 'gpu_requires_reset'],
    [2, 'unrecognized'],
  ])('a field call returning %i: %s', async (rc, error) => {
    const result = await collectNvml(`${standInConfig(capture('h200x2__580.159.04__linux-idle'))}rc.nvmlDeviceGetPowerUsage.0=${rc}\n`);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const samples = checkExposition(result.stdout).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_power_draw_watts').map((s) => s.labels.gpu)).toEqual(['1']);
    expect(samples.filter((s) => s.name === 'nvidia_gpu_field_error').map((s) => [s.labels.gpu, s.labels.field, s.labels.error])).toEqual(
      error === undefined ? [] : [['0', 'power.draw', error]],
    );
  });

  // What nvidia-smi cannot give: energy, PCIe replays and GPM's activity, the last from two samples.
  it('NVML-only fields: energy in joules, PCIe replays, GPM ratios from two samples a window apart', async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    const more = [
      '0.energy_mj=123456789',
      '0.replay=3',
      '0.gpm=1',
      '0.gpm.1=98.75',
      '0.gpm.2=96.5',
      '0.gpm.3=14.25',
      '0.gpm.5=94',
      '0.gpm.10=16',
      `calls=${calls}`,
    ];
    const result = await collectNvml(standInConfig(capture('h200x2__580.159.04__linux-load'), more), '--gpm-window', '20ms');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const samples = checkExposition(result.stdout).samples;
    const values = (name: string) => samples.filter((s) => s.name === name).map((s) => [s.labels.gpu, s.value]);
    expect(values('nvidia_gpu_energy_joules_total')).toEqual([['0', 123456.789]]);
    expect(values('nvidia_gpu_pcie_replay_errors_total')).toEqual([['0', 3]]);
    expect(values('nvidia_gpu_graphics_active_ratio')).toEqual([['0', 0.9875]]);
    expect(values('nvidia_gpu_sm_active_ratio')).toEqual([['0', 0.965]]);
    expect(values('nvidia_gpu_sm_occupancy_ratio')).toEqual([['0', 0.1425]]);
    expect(values('nvidia_gpu_tensor_active_ratio')).toEqual([['0', 0.94]]);
    expect(values('nvidia_gpu_dram_active_ratio')).toEqual([['0', 0.16]]);
    // GPU 1 has no GPM: no sample taken there, and its ratios are absent, not zero.
    const called = (await readFile(calls, 'utf8')).split('\n');
    expect(called.filter((name) => name === 'nvmlGpmSampleGet')).toHaveLength(2);
    expect(called.filter((name) => name === 'nvmlGpmMetricsGet')).toHaveLength(1);
  });

  it('PCIe throughput is opt-in (--slow-fields): bytes per second by direction, never called without it', async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    // KB/s, as NVML answers: GPU 0 sends 1000 and receives 250; GPU 1 answers only for sending.
    const config = standInConfig(capture('h200x2__580.159.04__linux-load'), [
      '0.pcie_tx=1000',
      '0.pcie_rx=250',
      '1.pcie_tx=0',
      `calls=${calls}`,
    ]);
    const plain = await collectNvml(config, '--no-processes');
    expect([plain.exitCode, plain.stdout.includes('pcie_throughput'), (await readFile(calls, 'utf8')).includes('PcieThroughput')]).toEqual([
      0,
      false,
      false,
    ]);
    const slow = await collectNvml(config, '--no-processes', '--slow-fields');
    expect([slow.exitCode, slow.stderr]).toEqual([0, '']);
    const samples = checkExposition(slow.stdout).samples.filter((s) => s.name === 'nvidia_gpu_pcie_throughput_bytes_per_second');
    expect(samples.map((s) => [s.labels.gpu, s.labels.direction, s.value])).toEqual([
      ['0', 'transmit', 1024000],
      ['0', 'receive', 256000],
      ['1', 'transmit', 0],
    ]);
  });

  it('under nvidia-smi the NVML-only families are absent, not zero, --slow-fields or not', async () => {
    const dir = await tempDir();
    const smi = await runCli(['collect', '--dry-run', '--slow-fields', '--state-dir', join(dir, 'state'), '--nvidia-smi', FAKE_SMI], {
      FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load'),
    });
    expect(smi.exitCode).toBe(0);
    expect(smi.stdout).not.toMatch(/nvidia_gpu_(pcie_throughput|energy|sm_active|pcie_replay)/);
  });

  it('an unknown --source is refused at parse time (exit 2)', async () => {
    const result = await runCli(['collect', '--dry-run', '--source', 'nvlm']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/--source: "nvlm" is not one of nvidia-smi, demo, nvml/);
  });
});
