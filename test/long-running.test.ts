import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../src/exposition/check.js';
import { backoffMs } from '../src/long-running.js';
import { CLI, FAKE_SMI, capture, cliEnv, tempDir } from './helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');

/** Starts `collect --interval`, watches the textfile, stops it with SIGTERM. */
async function runFor(ms: number, env: Record<string, string>, interval = '200ms') {
  const dir = await tempDir();
  const child = execa(process.execPath, [CLI, 'collect', '--interval', interval, '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's'), '--csv-dir', join(dir, 'c'), '--nvidia-smi', FAKE_SMI], {
    env: cliEnv({ FAKE_SMI_CAPTURE: H200, ...env }),
    extendEnv: false,
    reject: false,
  });
  const reasons = new Set<string>();
  const started = Date.now();
  while (Date.now() - started < ms) {
    const text = await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8').catch(() => '');
    const sample = checkExposition(text).samples;
    reasons.add(sample.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason ?? (sample.length ? 'ok' : 'none'));
    await sleep(40);
  }
  child.kill('SIGTERM');
  const result = await child;
  const rows = (await readFile(join(dir, 'c/default.csv'), 'utf8')).trim().split('\n').slice(1);
  return { result, reasons, rows, dir };
}

const smiChildren = async (dir: string) => {
  const { stdout } = await promisify(execFile)('ps', ['-eo', 'args']);
  return stdout.split('\n').filter((line) => line.includes('-lms') && line.includes(dir));
};

describe('collect --interval (long-running)', () => {
  it('publishes every sample from one nvidia-smi -lms child and stops cleanly on SIGTERM', async () => {
    const { result, reasons, rows, dir } = await runFor(2500, {});
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('');
    expect([...reasons].filter((r) => r !== 'none')).toEqual(['ok']);
    // The first sample comes from a one-shot run, the rest from the stream: about one per 200 ms.
    expect(rows.length / 2).toBeGreaterThanOrEqual(6);
    expect(rows.every((row) => row.split(',')[6] === 'ok')).toBe(true);
    expect(await readdir(join(dir, 't'))).toEqual(['nvidia_gpu.prom']);
    expect(await smiChildren(dir)).toEqual([]);
  });

  it('a child that stalls is killed, the file says timeout meanwhile, and a new child takes over', async () => {
    const { result, reasons, rows } = await runFor(3500, { FAKE_SMI_LOOP_STALL_AFTER: '2' });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: timeout: no line from nvidia-smi -lms for 600 ms \(3 intervals\); killed it; restarting in 1 s/);
    expect(reasons.has('timeout')).toBe(true);
    expect(reasons.has('ok')).toBe(true);
    expect(rows.some((row) => row.split(',')[6] === 'timeout')).toBe(true);
  });

  it('a child that exits is restarted after the failure is published', async () => {
    const { result, reasons } = await runFor(3000, { FAKE_SMI_LOOP_EXIT_AFTER: '2' });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: gpu_lost: nvidia-smi -lms exited 1: Unable to determine the device handle/);
    expect(reasons.has('gpu_lost')).toBe(true);
    expect(reasons.has('ok')).toBe(true);
  });

  it('a child that keeps dying is restarted ever more slowly', async () => {
    const { result } = await runFor(4500, { FAKE_SMI_LOOP_EXIT_AFTER: '1' });
    expect(result.exitCode).toBe(0);
    const delays = [...result.stderr.matchAll(/restarting in (\d+) s/g)].map((m) => Number(m[1]));
    expect(delays.slice(0, 2)).toEqual([1, 2]);
  });

  it('garbage becomes unparsable_output, never numbers, and three garbage batches restart the child', async () => {
    const { result, reasons } = await runFor(2500, { FAKE_SMI_LOOP_GARBAGE_AFTER: '1' });
    expect(result.exitCode).toBe(0);
    expect(reasons.has('unparsable_output')).toBe(true);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: unparsable_output: .*\(3 batches in a row\)/);
  });

  it('rejects an interval under 100 ms', async () => {
    const dir = await tempDir();
    const result = await execa(process.execPath, [CLI, 'collect', '--interval', '50ms', '--textfile-dir', dir], { reject: false, env: cliEnv(), extendEnv: false });
    expect([result.exitCode, result.stderr]).toEqual([2, 'gpu-textfile: --interval: "50ms" must be a duration of at least 100ms']);
  });
});

describe('backoffMs', () => {
  it.each([
    [250, 1, 1000],
    [250, 2, 2000],
    [15_000, 1, 15_000],
    [15_000, 3, 60_000],
    [250, 20, 60_000],
  ])('interval %d ms, failure %d -> %d ms', (interval, failures, expected) => expect(backoffMs(interval, failures)).toBe(expected));
});
