import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { parseProcessStat } from '../../src/host/process-stat.js';
import { validStuck } from '../../src/collect/stuck.js';
import { COMPUTE_APPS_ARGS } from '../../src/sources/nvidia-smi/compute-apps.js';
import { headStartName, keepRecord } from '../../src/sources/nvidia-smi/head-start.js';
import { FAKE_SMI, capture, cliEnv, collectIn, eventually, runCli, tempDir } from '../support/helpers.js';
import { stuckNvidiaSmi } from '../support/stuck-in-driver.js';

// An nvidia-smi that SIGKILL does not end (asleep in the driver: a GPU fallen off the bus). The
// stand-in reads a file of a FUSE server that never answers (test/support/stuck-in-driver.ts; root
// and /dev/fuse), so it stays in state D until the test frees it.

describe('validStuck', () => {
  it('keeps well-formed entries only', () =>
    expect(
      validStuck([
        { pid: 42, startTicks: '100', since: 1 },
        { pid: 1, startTicks: '1', since: 1 },
        { pid: 43, startTicks: 'x', since: 1 },
        'junk',
      ]),
    ).toEqual([{ pid: 42, startTicks: '100', since: 1 }]));
});

/** Our file's error reason, GPU values left, and the stuck nvidia-smi's state from /proc/PID/stat. */
const fileOf = (dir: string) => {
  const { samples, problems } = checkExposition(readFileSync(join(dir, 't/nvidia_gpu.prom'), 'utf8'));
  return {
    problems,
    reason: samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason,
    gpuValues: samples.filter((s) => /^nvidia_gpu_(?!collector_)/.test(s.name)).length,
    // The kernel log is still read: Xid 79 is what a stuck nvidia-smi most often comes with.
    xidRead: samples.some((s) => s.name === 'nvidia_gpu_collector_xid_source_up'),
  };
};
/** collect with its files under `dir` (t/, s/), running `smi` as nvidia-smi. */
const collectWith = (dir: string, smi: string) => collectIn(dir, '--nvidia-smi', smi);

/** A process's state letter from /proc/PID/stat; undefined once it is gone. */
function stateOf(pid: number): string | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
    throw error;
  }
  return parseProcessStat(text)?.state;
}

describe('an nvidia-smi stuck in the driver', () => {
  it('is remembered; later runs start no other one and say which is stuck, until it is gone', { timeout: 180_000 }, async () => {
    const dir = await tempDir();
    const stuck = await stuckNvidiaSmi(dir);
    const args = (smi: string) => collectWith(dir, smi);
    expect((await runCli(args(FAKE_SMI), { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') })).exitCode).toBe(0);

    // The run that meets it: killed at --timeout, it does not end; the run does, saying so.
    // A deadline long enough for the stand-in to reach its read on a loaded machine: then SIGKILL leaves it in D.
    const first = await runCli([...args(stuck.nvidiaSmi), '--timeout', '5s'], {}, 90_000);
    expect([first.exitCode, first.timedOut]).toEqual([1, false]);
    expect(first.stderr).toMatch(/^gpu-textfile: timeout: nvidia-smi .*SIGKILL did not end it: pid \d+ is stuck in the driver/);
    expect(first.stderr.trimEnd().split('\n')).toHaveLength(1);
    const pids = stuck.started();
    expect(pids.length).toBeGreaterThan(0);
    expect(pids.map(stateOf)).toEqual(pids.map(() => 'D'));
    expect(fileOf(dir)).toEqual({ problems: [], reason: 'timeout', gpuValues: 0, xidRead: true });

    // The next runs: no other nvidia-smi, a failure that names the stuck one, exit 1.
    for (let run = 0; run < 2; run++) {
      const next = await runCli([...args(stuck.nvidiaSmi), '--timeout', '1s'], {}, 60_000);
      expect(next.exitCode).toBe(1);
      expect(next.stderr).toMatch(
        new RegExp(
          `^gpu-textfile: nvidia_smi_stuck: nvidia-smi \\(pid (${pids.join('|')})\\) has been stuck in the driver for \\d+ min \\(state D[^)]*\\) and cannot be killed; not starting another: .*Xid 79`,
        ),
      );
      expect(next.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(stuck.started()).toEqual(pids);
      expect(fileOf(dir)).toEqual({ problems: [], reason: 'nvidia_smi_stuck', gpuValues: 0, xidRead: true });
    }

    // The driver lets go (a reset, a reboot): the stuck one dies, and the next run runs nvidia-smi again.
    await stuck.free();
    expect(await eventually(async () => pids.every((pid) => stateOf(pid) === undefined || stateOf(pid) === 'Z'), 60_000)).toBe(true);
    const after = await runCli(args(FAKE_SMI), { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') });
    expect([after.exitCode, after.stderr]).toEqual([0, '']);
    expect(fileOf(dir).reason).toBeUndefined();
  });
});

// The units' collect begins its calls from the last run's record before it reads the state
// (src/sources/nvidia-smi/head-start.ts): a call of the record that gets stuck must leave no record
// behind, so that the runs after it meet the stuck check before they start anything.
describe('a call begun by the launcher that gets stuck in the driver', () => {
  it('removes every record: the runs after it start no nvidia-smi', { timeout: 180_000 }, async () => {
    const dir = await tempDir();
    const stuck = await stuckNvidiaSmi(dir);
    const cache = join(dir, 'cache');
    const env = { NODE_COMPILE_CACHE: cache };
    const args = (timeout: string) => [...collectWith(dir, stuck.nvidiaSmi), '--timeout', timeout];
    // As a run that succeeded would have left them: this command line's (the processes call, which a
    // run with no state starts first too) and another's, which the last run below has.
    const record = { command: stuck.nvidiaSmi, calls: [[...COMPUTE_APPS_ARGS]], timeoutMs: 5000 };
    expect(keepRecord(join(cache, headStartName(args('5s'), cliEnv(env))), record)).toBeUndefined();
    expect(keepRecord(join(cache, headStartName(args('1s'), cliEnv(env))), record)).toBeUndefined();

    const first = await runCli(args('5s'), env, 90_000);
    expect([first.exitCode, first.timedOut]).toEqual([1, false]);
    expect(first.stderr).toMatch(/^gpu-textfile: timeout: nvidia-smi .*SIGKILL did not end it: pid \d+ is stuck in the driver/);
    const pids = stuck.started();
    expect(pids.length).toBeGreaterThan(0);
    expect(readdirSync(cache).filter((name) => name.includes('head-start'))).toEqual([]);

    for (const timeout of ['5s', '1s']) {
      const next = await runCli(args(timeout), env, 60_000);
      expect(next.exitCode).toBe(1);
      expect(next.stderr).toMatch(/^gpu-textfile: nvidia_smi_stuck: /);
      expect(stuck.started()).toEqual(pids);
    }
    expect(readdirSync(cache).filter((name) => name.includes('head-start'))).toEqual([]);

    // Records made after it (a run elsewhere that had not met it): the run that claims its own starts
    // that call (the one call a record can cost), meets the stuck check, and removes every record,
    // so another command line's run starts nothing.
    expect(keepRecord(join(cache, headStartName(args('5s'), cliEnv(env))), record)).toBeUndefined();
    expect(keepRecord(join(cache, headStartName(args('1s'), cliEnv(env))), record)).toBeUndefined();
    const claiming = await runCli(args('5s'), env, 60_000);
    expect([claiming.exitCode, claiming.stderr]).toEqual([1, expect.stringMatching(/^gpu-textfile: nvidia_smi_stuck: /)]);
    expect(readdirSync(cache).filter((name) => name.includes('head-start'))).toEqual([]);
    // Killed before the run ended: its pid, if it wrote one, is written by now.
    const afterClaim = stuck.started();
    expect(afterClaim.length).toBeLessThanOrEqual(pids.length + 1);
    expect((await runCli(args('1s'), env, 60_000)).exitCode).toBe(1);
    expect(stuck.started()).toEqual(afterClaim);
  });
});
