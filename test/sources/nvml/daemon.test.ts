import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { capture, eventually, tempDir } from '../../support/helpers.js';
import { standInConfig, startDaemonWithStandIn } from '../../support/nvml-stand-in.js';

// The daemon mode on NVML: no child, the same loop; each sample a new file; the energy counter on its
// own cadence; GPM against the previous sample (no window after the first).
it('collect --interval --source nvml publishes sample after sample, GPM from the previous one', { timeout: 60_000 }, async () => {
  const dir = await tempDir();
  const config = join(dir, 'stand-in.conf');
  const calls = join(dir, 'calls');
  await writeFile(
    config,
    standInConfig(capture('h200x2__580.159.04__linux-load'), ['0.gpm=1', '0.gpm.2=50', '0.energy_mj=1000', `calls=${calls}`]),
  );
  const textfile = join(dir, 't/nvidia_gpu.prom');
  const child = startDaemonWithStandIn(config, dir);
  const called = async (name: string) =>
    existsSync(calls) ? (await readFile(calls, 'utf8')).split('\n').filter((line) => line === name).length : 0;
  // Five GPM comparisons: the first collection's and four samples of the stream after it.
  const enough = await eventually(async () => (await called('nvmlGpmMetricsGet')) >= 5);
  const text = await readFile(textfile, 'utf8');
  child.kill('SIGTERM');
  const result = await child;
  expect(enough).toBe(true);
  expect([result.exitCode, result.stderr]).toEqual([0, '']);
  const samples = checkExposition(text).samples;
  expect(samples.find((s) => s.name === 'nvidia_gpu_sm_active_ratio')?.value).toBe(0.5);
  expect(samples.find((s) => s.name === 'nvidia_gpu_collector_success')?.value).toBe(1);
  // One sample per GPM comparison after the first pair: no second window per sample.
  expect(await called('nvmlGpmSampleGet')).toBe((await called('nvmlGpmMetricsGet')) + 1);
  // The energy counter is read by the first collection and then every 10 s, not every 100 ms.
  expect(await called('nvmlDeviceGetTotalEnergyConsumption')).toBeLessThanOrEqual(4);
  // So are the settings (limits, modes, error counts, thermal headroom) and a moving field the GPU does
  // not have (the capture's H200s have no fan: NOT_SUPPORTED): per GPU by the first collection's two
  // reads (its GPM window) and the stream's first sample, then kept; power is read every sample.
  for (const setting of [
    'nvmlDeviceGetMarginTemperature',
    'nvmlDeviceGetEccMode',
    'nvmlDeviceGetRemappedRows',
    'nvmlDeviceGetEnforcedPowerLimit',
    'nvmlDeviceGetFanSpeed',
  ])
    expect([setting, await called(setting)]).toEqual([setting, expect.toSatisfy((n: number) => n >= 2 && n <= 6)]);
  expect(await called('nvmlDeviceGetPowerUsage')).toBeGreaterThanOrEqual(10);
  expect(await called('nvmlInit_v2')).toBe(1);
  // Nor can the devices: counted and their handles taken by the first collection's reads, the stream's
  // first sample and the Xid event set's registration, not by every sample (10 and more here).
  expect(await called('nvmlDeviceGetCount_v2')).toBeLessThanOrEqual(4);
  expect(await called('nvmlDeviceGetHandleByIndex_v2')).toBeLessThanOrEqual(8);
  // The driver's version cannot change under an initialized NVML: asked once.
  expect(await called('nvmlSystemGetDriverVersion')).toBe(1);
  // Identity and maxima are read once per GPU, not per sample.
  expect([await called('nvmlDeviceGetSerial'), await called('nvmlDeviceGetMaxClockInfo')]).toEqual([2, 6]);
});
