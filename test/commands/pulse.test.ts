import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capture, FAKE_SMI, runCli, tempDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// pulse --source nvml: the live look through NVML, against the stand-in library answering an H100
// under load (utilization near 100 %), with GPM's SM and tensor activity set per test.

const H100 = capture('h100-80gb-hbm3__590.48.01__linux-load');

async function pulseNvml(gpm: string[], ...more: string[]) {
  const dir = await tempDir();
  const config = join(dir, 'stand-in.conf');
  await writeFile(config, standInConfig(H100, ['0.gpm=1', ...gpm]));
  return runCli(
    ['pulse', '--source', 'nvml', '--nvml-library', standInLibrary(), '--seconds', '2', '--interval', '100ms', '--json', ...more],
    {
      NVML_STAND_IN: config,
    },
    // A busy machine starts node, the reader and the library slowly; --seconds counts from the first sample.
    90_000,
  );
}

type PulseJson = { verdict: string; evidence: { samples: number; sm_active_mean?: number; tensor_active_mean?: number } };

it('full utilization with the SMs idle (copies): never saturated, and GPM is in the evidence', { timeout: 120_000 }, async () => {
  const result = await pulseNvml(['0.gpm.2=0', '0.gpm.5=0']);
  expect([result.exitCode, result.stderr]).toEqual([
    0,
    expect.stringMatching(/^gpu-textfile: sampling GPU 0 through NVML every 100 ms for 2 s…\n$/),
  ]);
  const pulse = JSON.parse(result.stdout) as PulseJson;
  expect(pulse.evidence.samples).toBeGreaterThanOrEqual(5);
  expect([pulse.verdict, pulse.evidence.sm_active_mean, pulse.evidence.tensor_active_mean]).toEqual(['copies_or_tiny_kernels', 0, 0]);
});

it('the same GPU asked by UUID, its SMs and tensor cores busy: saturated', { timeout: 120_000 }, async () => {
  const uuid = /0\.uuid=(\S+)/.exec(standInConfig(H100))![1]!;
  const result = await pulseNvml(['0.gpm.2=96', '0.gpm.5=94'], '--gpu', uuid);
  expect(result.exitCode).toBe(0);
  const pulse = JSON.parse(result.stdout) as PulseJson;
  expect([pulse.verdict, pulse.evidence.sm_active_mean, pulse.evidence.tensor_active_mean]).toEqual(['saturated', 96, 94]);
});

it('without the library: exit 1 and the one line that says so', async () => {
  const result = await runCli(['pulse', '--source', 'nvml', '--nvml-library', '/nonexistent/libnvidia-ml.so.1', '--seconds', '1']);
  expect(result.exitCode).toBe(1);
  expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(
    /^gpu-textfile: nvml_library_missing: \/nonexistent\/libnvidia-ml\.so\.1 could not be loaded/,
  );
});

it('an nvidia-smi -lms that exits at once (no such GPU) ends pulse at once with its line, not after --seconds', async () => {
  // --seconds 3600: were pulse to wait it out, runCli's deadline (20 s) would kill it first.
  const result = await runCli(['pulse', '--nvidia-smi', FAKE_SMI, '--gpu', '9', '--seconds', '3600'], {
    FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load'),
  });
  expect(result.timedOut).toBe(false);
  expect(result.exitCode).toBe(1);
  expect(result.stderr).toMatch(/No devices were found/);
});

describe('pulse --source nvml while a call hangs', () => {
  // The stand-in's hang.<function>=N: that call never returns, as a driver stuck in the kernel.
  async function pulseHanging(hangAt: number, ...more: string[]) {
    const dir = await tempDir();
    const config = join(dir, 'stand-in.conf');
    await writeFile(config, standInConfig(H100, ['0.gpm=1', `hang.nvmlDeviceGetPowerUsage=${hangAt}`]));
    return runCli(
      ['pulse', '--source', 'nvml', '--nvml-library', standInLibrary(), '--interval', '100ms', ...more],
      { NVML_STAND_IN: config },
      90_000,
    );
  }
  const HUNG = /^gpu-textfile: timeout: NVML did not return within \d+ ms \(a call into the driver hung\)/;

  it('at the second sample, --seconds over before the watchdog fires: says that a call hung, not "only 1 samples"', {
    timeout: 120_000,
  }, async () => {
    const result = await pulseHanging(2, '--seconds', '1', '--timeout', '3s');
    expect([result.exitCode, result.stdout]).toEqual([1, '']);
    const last = result.stderr.trimEnd().split('\n').at(-1);
    expect(last).toMatch(HUNG);
    expect(result.stderr).not.toMatch(/only \d+ samples/);
  });

  it('after enough samples: the verdict on them, and a line that a call hung', { timeout: 120_000 }, async () => {
    // Seven samples, then the eighth never comes; --seconds would go on for a minute.
    const result = await pulseHanging(8, '--seconds', '60', '--timeout', '500ms', '--json');
    expect(result.exitCode).toBe(0);
    expect((JSON.parse(result.stdout) as PulseJson).evidence.samples).toBe(7);
    expect(result.stderr.trimEnd().split('\n').at(-1)).toMatch(
      new RegExp(`${HUNG.source.slice(1)}.*; the verdict covers the 7 samples read before$`),
    );
  });
});

// Issue 39: the documented interval range enforced, a message that does not read as "zero GPUs", and a
// host without nvidia-smi pointed where collect points it.
describe('pulse, said plainly', () => {
  it.each(['5', '50ms', '1s'])('--interval %s is outside 100ms to 500ms: a usage error', async (interval) => {
    const result = await runCli(['pulse', '--source', 'demo', '--interval', interval]);
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      `gpu-textfile: --interval: "${interval}" must be a duration from 100ms to 500ms\n`,
    ]);
  });

  it('a GPU the data does not have: which GPUs it has', async () => {
    const result = await runCli(['pulse', '--source', 'demo', '--gpu', '7', '--seconds', '1']);
    expect([result.exitCode, result.stderr.split('\n').at(-2)]).toEqual([
      1,
      'gpu-textfile: no samples of GPU 7: the data has GPU 0 only (--gpu names one)',
    ]);
  });

  it('without nvidia-smi: doctor and the demo, as collect says', async () => {
    const result = await runCli(['pulse', '--nvidia-smi', '/nonexistent/nvidia-smi', '--seconds', '1']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/ \(try: gpu-textfile doctor; to see pulse without a GPU: gpu-textfile pulse --source demo\)\n$/);
  });
});
