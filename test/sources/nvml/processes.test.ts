import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { capture } from '../../support/helpers.js';
import { collectWithStandIn, standInConfig } from '../../support/nvml-stand-in.js';

// The compute processes NVML lists (src/sources/nvml/processes.ts, the list calls of binding.ts).
// The driver fills a buffer the caller sizes; one too small is INSUFFICIENT_SIZE with the count it
// needs. A GPU with more processes than the first buffer holds was once read as holding none.

const BASE = capture('h200x2__580.159.04__linux-idle');
const MIB = 1024 * 1024;

/** Stand-in keys: `n` processes on GPU 0 (pids from 100000, k+1 MiB each, named), each with an SM sample of k % 100 percent. */
function manyProcesses(n: number): string[] {
  const pids = Array.from({ length: n }, (_, k) => 100_000 + k);
  return [
    `0.procs=${pids.map((pid, k) => `${pid}:${(k + 1) * MIB}`).join(',')}`,
    `0.putil=${pids.map((pid, k) => `${pid}:${k % 100}:1:1796141656443000`).join(',')}`,
    ...pids.map((pid) => `name.${pid}=python`),
  ];
}

const values = (text: string, name: string) =>
  checkExposition(text)
    .samples.filter((s) => s.name === name)
    .map((s) => [s.labels.gpu, s.value]);

describe('NVML processes', () => {
  it('300 processes on one GPU: all 300 listed, with their utilization (the buffer grows to the count the driver names)', async () => {
    const result = await collectWithStandIn(standInConfig(BASE, manyProcesses(300)));
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(values(result.stdout, 'nvidia_gpu_processes')[0]).toEqual(['0', 300]);
    expect(values(result.stdout, 'nvidia_gpu_process_memory_used_bytes').filter(([gpu]) => gpu === '0')).toHaveLength(300);
    const sm = checkExposition(result.stdout).samples.filter(
      (s) => s.name === 'nvidia_gpu_process_sm_utilization_ratio' && s.labels.gpu === '0',
    );
    expect(sm).toHaveLength(300);
    expect(sm.find((s) => s.labels.pid === '100299')?.value).toBe(0.99);
  });

  it('processes that start between the calls: asked again with the count the driver names, until it fits', async () => {
    // Each call lists 10 more: 310 > 256 first, then 320 fits the room grown for 310.
    const result = await collectWithStandIn(standInConfig(BASE, [...manyProcesses(300), '0.procs_grow=10']));
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(values(result.stdout, 'nvidia_gpu_processes')[0]).toEqual(['0', 320]);
  });

  it('a list that never fits (it outgrows every buffer, a bounded number of tries): unknown, never none', async () => {
    const result = await collectWithStandIn(standInConfig(BASE, [...manyProcesses(300), '0.procs_grow=100000']));
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(
      /^gpu-textfile: processes left out: nvmlDeviceGetComputeRunningProcesses_v3 for GPU 0 returned NVML_ERROR_INSUFFICIENT_SIZE \(7\)\n?$/,
    );
    // No count at all, for either GPU: not 0, which would say "idle and free".
    expect(values(result.stdout, 'nvidia_gpu_processes')).toEqual([]);
    expect(values(result.stdout, 'nvidia_gpu_holders')).toEqual([]);
  });

  it('a list call that fails: unknown, never none', async () => {
    const result = await collectWithStandIn(standInConfig(BASE, [...manyProcesses(3), 'rc.nvmlDeviceGetComputeRunningProcesses_v3.1=999']));
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(/processes left out: .* for GPU 1 returned NVML_ERROR_UNKNOWN \(999\)/);
    expect(values(result.stdout, 'nvidia_gpu_processes')).toEqual([]);
  });
});
