import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { DRIVER_SAMPLE_PERIOD_MS, windowStart } from '../../../src/sources/nvml/process-utilization.js';
import { FAKE_SMI, capture, runCli, tempDir } from '../../support/helpers.js';
import { NVML_CALLS, collectWithStandIn, recordedProcessUtilization, standInConfig } from '../../support/nvml-stand-in.js';

// Per-process SM and memory utilization (NVML only), replayed from what a real H200 answered under
// bf16 matmuls (test/fixtures/nvml-calls/h200__580.159.04__process-utilization/SOURCE.md).

const RECORDING = join(NVML_CALLS, 'h200__580.159.04__process-utilization');
const BASE = capture('h200__590.48.01__linux-idle');
const SM = 'nvidia_gpu_process_sm_utilization_ratio';
const MEMORY = 'nvidia_gpu_process_memory_utilization_ratio';

const series = (text: string, name: string) =>
  checkExposition(text)
    .samples.filter((s) => s.name === name)
    .map((s) => [s.labels, s.value]);
const labelsOf = (text: string, name: string) => series(text, name).map(([labels]) => labels);

describe('per-process utilization', () => {
  it('replays the H200 under load: SM 0.99 and memory 0.23 for the python3 process, labelled as its memory series', async () => {
    const result = await collectWithStandIn(standInConfig(BASE, recordedProcessUtilization(RECORDING)));
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(series(result.stdout, SM).map(([labels, value]) => [(labels as { pid: string }).pid, value])).toEqual([['478', 0.99]]);
    expect(series(result.stdout, MEMORY).map(([labels, value]) => [(labels as { pid: string }).pid, value])).toEqual([['478', 0.23]]);
    expect(labelsOf(result.stdout, SM)).toEqual(labelsOf(result.stdout, 'nvidia_gpu_process_memory_used_bytes'));
    const promtool = await execa('promtool', ['check', 'metrics'], { input: result.stdout, reject: false });
    expect([promtool.exitCode, promtool.stdout + promtool.stderr]).toEqual([0, '']);
  });

  it('asks the driver for its buffer size first: a buffer smaller than it asks for is refused, as on the H200', async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    const result = await collectWithStandIn(standInConfig(BASE, [...recordedProcessUtilization(RECORDING), `calls=${calls}`]));
    expect(series(result.stdout, SM)).toHaveLength(1);
    expect((await readFile(calls, 'utf8')).split('\n').filter((name) => name === 'nvmlDeviceGetProcessUtilization')).toHaveLength(2);
  });

  // NOT_FOUND: no process had a sample in the window (the H200 idle, or between two of the driver's samples).
  it('NOT_FOUND with a listed process: 0, not absent', async () => {
    const keys = recordedProcessUtilization(RECORDING).filter((line) => !line.startsWith('0.putil='));
    const result = await collectWithStandIn(standInConfig(BASE, keys));
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(series(result.stdout, SM).map(([, value]) => value)).toEqual([0]);
    expect(series(result.stdout, MEMORY).map(([, value]) => value)).toEqual([0]);
  });

  it('a failing call leaves the utilization out and the process memory in', async () => {
    const result = await collectWithStandIn(
      standInConfig(BASE, [...recordedProcessUtilization(RECORDING), 'rc.nvmlDeviceGetProcessUtilization=999']),
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(result.stdout).not.toMatch(/nvidia_gpu_process_(sm|memory)_utilization/);
    expect(series(result.stdout, 'nvidia_gpu_process_memory_used_bytes')).toHaveLength(1);
  });

  it('under nvidia-smi the families are absent', async () => {
    const dir = await tempDir();
    const smi = await runCli(['collect', '--dry-run', '--state-dir', join(dir, 'state'), '--nvidia-smi', FAKE_SMI], {
      FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load'),
    });
    expect(smi.exitCode).toBe(0);
    expect(smi.stdout).toMatch(/nvidia_gpu_process_memory_used_bytes\{/);
    expect(smi.stdout).not.toMatch(/nvidia_gpu_process_(sm|memory)_utilization/);
  });
});

describe('windowStart', () => {
  it('first read: 0, every sample the driver keeps', () => expect(windowStart(new Map(), 'GPU-a')).toBe(0n));
  it('later reads: one driver sample period before the previous read, in microseconds', () =>
    expect(windowStart(new Map([['GPU-a', 1_796_141_685_000]]), 'GPU-a')).toBe(
      BigInt(1_796_141_685_000 - DRIVER_SAMPLE_PERIOD_MS) * 1000n,
    ));
});
