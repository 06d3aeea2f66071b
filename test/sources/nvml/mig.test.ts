import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { migProfile } from '../../../src/sources/nvml/mig.js';
import { capture, tempDir } from '../../support/helpers.js';
import { NVML_CALLS, collectWithStandIn, servedByNodeExporter, standInConfig } from '../../support/nvml-stand-in.js';

// MIG devices' memory (NVML only), from a layout built from NVIDIA's documented profiles on the
// h200-mig capture's GPU (test/fixtures/nvml-calls/h200-mig__590.48.01__constructed/SOURCE.md).

const MIG = capture('h200-mig__590.48.01__linux-load');
const layout = async (gpu = 0): Promise<string[]> =>
  (await readFile(join(NVML_CALLS, 'h200-mig__590.48.01__constructed/mig.conf'), 'utf8'))
    .split('\n')
    .filter((line) => line.includes('='))
    // GPU i's MIG devices answer as 100 + 10i + k (the stand-in's convention).
    .map((line) => line.replace(/^(\d+)\./, (_, n: string) => `${Number(n) >= 100 ? Number(n) + 10 * gpu : gpu}.`));
const migSeries = (text: string, name: string) =>
  checkExposition(text)
    .samples.filter((s) => s.name === name)
    .map((s) => [s.labels.gpu, s.labels.gpu_instance, s.labels.compute_instance, s.labels.mig_profile, s.labels.mig_uuid, s.value]);
const MIB = 1024 * 1024;

describe('MIG memory', () => {
  it('MIG enabled: each MIG device with its instance ids, UUID and profile; promtool accepts it', async () => {
    const result = await collectWithStandIn(standInConfig(MIG, await layout()));
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(migSeries(result.stdout, 'nvidia_gpu_mig_memory_total_bytes')).toEqual([
      ['0', '1', '0', '1c.3g.71gb', 'MIG-00000000-0000-0000-0000-000000000000', 71885 * MIB],
      ['0', '1', '1', '2c.3g.71gb', 'MIG-00000001-0000-0000-0000-000000000001', 71885 * MIB],
      ['0', '5', '0', '2g.35gb', 'MIG-00000002-0000-0000-0000-000000000002', 35942 * MIB],
      ['0', '13', '0', '1g.18gb', 'MIG-00000003-0000-0000-0000-000000000003', 17971 * MIB],
      ['0', '14', '0', '1g.18gb', 'MIG-00000004-0000-0000-0000-000000000004', 17971 * MIB],
    ]);
    expect(migSeries(result.stdout, 'nvidia_gpu_mig_memory_used_bytes').map((row) => row.at(-1))).toEqual([
      13526 * MIB,
      13526 * MIB,
      2194 * MIB,
      1170 * MIB,
      0,
    ]);
    expect(migSeries(result.stdout, 'nvidia_gpu_mig_memory_free_bytes')).toHaveLength(5);
    const promtool = await execa('promtool', ['check', 'metrics'], { input: result.stdout, reject: false });
    expect([promtool.exitCode, promtool.stdout + promtool.stderr]).toEqual([0, '']);
  });

  it('MIG disabled (an H200 as recorded: mode 0): no MIG family, and only the mode is asked', async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    const result = await collectWithStandIn(
      standInConfig(capture('h200x2__580.159.04__linux-load'), [...(await layout()), `calls=${calls}`]),
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(result.stdout).not.toMatch(/nvidia_gpu_mig_memory/);
    expect(
      (await readFile(calls, 'utf8')).split('\n').filter((name) => /Mig|InstanceId/.test(name) && name !== 'nvmlDeviceGetMigMode'),
    ).toEqual([]);
  });

  it('a failing MIG call leaves that GPU’s MIG series out; the other GPU and every other series stay', async () => {
    const config = standInConfig(capture('h200x2__580.159.04__linux-load'), [
      '0.mig_current=1',
      '1.mig_current=1',
      ...(await layout(0)),
      ...(await layout(1)),
      'rc.nvmlDeviceGetMigDeviceHandleByIndex.1=999',
    ]);
    const result = await collectWithStandIn(config);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(new Set(migSeries(result.stdout, 'nvidia_gpu_mig_memory_used_bytes').map(([gpu]) => gpu))).toEqual(new Set(['0']));
    const up = checkExposition(result.stdout).samples.filter((s) => s.name === 'nvidia_gpu_up');
    expect(up.map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 1],
      ['1', 1],
    ]);
  });

  it('is served by the real node_exporter with node_textfile_scrape_error 0', async () => {
    const scraped = await servedByNodeExporter(standInConfig(MIG, await layout()));
    expect(scraped.filter((s) => s.name === 'nvidia_gpu_mig_memory_used_bytes')).toHaveLength(5);
  });
});

describe('migProfile', () => {
  it.each([
    ['NVIDIA H200 MIG 1g.18gb', '1g.18gb'],
    ['NVIDIA H200 MIG 1c.3g.71gb', '1c.3g.71gb'],
    ['NVIDIA A30 MIG 1g.6gb+me', '1g.6gb+me'],
    ['NVIDIA H200', ''],
  ])('%s -> %s', (name, profile) => expect(migProfile(name)).toBe(profile));
});
