import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { capture, eventually, runCli, tempDir } from '../../support/helpers.js';
import { buildStandInWithout, standInConfig, startDaemonWithStandIn } from '../../support/nvml-stand-in.js';

// An older driver's libnvidia-ml lacks the functions added after it. The stand-in built without one
// export stands for it: every field read through the missing function is absent (no series, no
// field error, as nvidia-smi's [N/A]), and the function is looked up once, when the library is
// loaded, not at every sample.

const CAPTURE = capture('h200x2__580.159.04__linux-load');

describe('a library without one of the functions the source calls', () => {
  it('nvmlDeviceGetFieldValues: memory temperature, instant power and the recovery action are absent', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'conf'), standInConfig(CAPTURE));
    const library = buildStandInWithout('nvmlDeviceGetFieldValues');
    const result = await runCli(['collect', '--dry-run', '--state-dir', join(dir, 's'), '--source', 'nvml', '--nvml-library', library], {
      NVML_STAND_IN: join(dir, 'conf'),
    });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const { samples, problems } = checkExposition(result.stdout);
    expect(problems).toEqual([]);
    const names = new Set(samples.map((s) => s.name));
    expect({
      memoryTemperature: names.has('nvidia_gpu_memory_temperature_celsius'),
      instantPower: names.has('nvidia_gpu_power_draw_instant_watts'),
      recoveryAction: names.has('nvidia_gpu_recovery_action'),
      fieldErrors: samples.filter((s) => s.name === 'nvidia_gpu_field_error'),
      // The rest of the GPU is read as ever.
      temperature: samples.filter((s) => s.name === 'nvidia_gpu_temperature_celsius').length,
    }).toEqual({ memoryTemperature: false, instantPower: false, recoveryAction: false, fieldErrors: [], temperature: 2 });
  });

  it('nvmlDeviceGetMarginTemperature in the daemon mode: absent at every sample, the library loaded once', {
    timeout: 60_000,
  }, async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    await writeFile(join(dir, 'conf'), standInConfig(CAPTURE, [`calls=${calls}`]));
    const daemon = startDaemonWithStandIn(join(dir, 'conf'), dir, buildStandInWithout('nvmlDeviceGetMarginTemperature'));
    onTestFinished(() => {
      daemon.kill('SIGKILL');
    });
    const called = async (name: string) => (await readFile(calls, 'utf8').catch(() => '')).split('\n').filter((n) => n === name).length;
    // Ten samples of both GPUs' temperature.
    expect(await eventually(async () => (await called('nvmlDeviceGetTemperature')) >= 20, 45_000)).toBe(true);
    const text = await readFile(join(dir, 't', 'nvidia_gpu.prom'), 'utf8');
    const { samples, problems } = checkExposition(text);
    expect(problems).toEqual([]);
    expect({
      margin: samples.filter((s) => s.name === 'nvidia_gpu_temperature_limit_margin_celsius'),
      fieldErrors: samples.filter((s) => s.name === 'nvidia_gpu_field_error'),
      success: samples.find((s) => s.name === 'nvidia_gpu_collector_success')?.value,
      inits: await called('nvmlInit_v2'),
    }).toEqual({ margin: [], fieldErrors: [], success: 1, inits: 1 });
  });
});
