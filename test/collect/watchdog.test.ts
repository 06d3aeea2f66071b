import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { CLI, capture, cliEnv, eventually, runCli, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// The deadline on NVML's calls (src/collect/watchdog.ts): the stand-in's hang.<function>=N blocks
// that call for good, as a driver stuck in the kernel does; the watchdog thread then publishes the
// timeout failure and ends the process. Nothing here is timed: a run that were not ended would
// only end at the generous deadlines of the test's own waits, and fail.

async function setUp() {
  const dir = await tempDir();
  const write = async (name: string, more: string[] = []) => {
    const file = join(dir, name);
    await writeFile(file, standInConfig(capture('h200x2__580.159.04__linux-idle'), more));
    return file;
  };
  const args = [
    '--source',
    'nvml',
    '--nvml-library',
    standInLibrary(),
    '--textfile-dir',
    madeDir(join(dir, 't')),
    '--state-dir',
    join(dir, 's'),
  ];
  const collect = (config: string, ...more: string[]) => runCli(['collect', ...args, ...more], { NVML_STAND_IN: config }, 60_000);
  return { dir, args, write, collect, good: await write('good.conf') };
}

/** The health part of the file: success, the error's reason, last success; and whether any GPU value is left. */
async function health(dir: string) {
  const { samples, problems } = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8'));
  const value = (name: string) => samples.find((s) => s.name === `nvidia_gpu_collector_${name}`);
  return {
    problems,
    success: value('success')?.value,
    reason: value('error')?.labels.reason,
    lastSuccess: value('last_success_timestamp_seconds')?.value,
    gpuValues: samples.filter((s) => !s.name.startsWith('nvidia_gpu_collector_')).length,
  };
}

/** Each --compat file's GPU series (none may survive a failure) and nvidia_gpu_exporter's success. */
async function peers(dir: string) {
  const dcgm = checkExposition(await readFile(join(dir, 't/nvidia_gpu_dcgm.prom'), 'utf8'));
  const peer = checkExposition(await readFile(join(dir, 't/nvidia_gpu_nvidia_gpu_exporter.prom'), 'utf8'));
  return {
    problems: [...dcgm.problems, ...peer.problems],
    dcgmGpuValues: dcgm.samples.filter((s) => s.name.startsWith('DCGM_FI_DEV_')).length,
    peerGpuValues: peer.samples.filter((s) => !s.name.startsWith('nvidia_smi_last_collect_')).length,
    peerSuccess: peer.samples.find((s) => s.name === 'nvidia_smi_last_collect_success')?.value,
  };
}

const COMPAT = ['--compat', 'dcgm,nvidia_gpu_exporter'];
const FAILED_PEERS = { problems: [], dcgmGpuValues: 0, peerGpuValues: 0, peerSuccess: 0 };

/** What is left in the textfile directory besides the file and its lock: a temp file would show here. */
const leftovers = async (dir: string) =>
  (await readdir(join(dir, 't'))).filter(
    (name) => !['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom', 'nvidia_gpu_nvidia_gpu_exporter.prom', '.nvidia_gpu.prom.lock'].includes(name),
  );

describe('a hung NVML call', () => {
  it('one-shot, hung in nvmlInit_v2: the timeout failure file, last success kept, one line, killed; the next run proceeds', async () => {
    const { dir, write, collect, good } = await setUp();
    expect((await collect(good)).exitCode).toBe(0);
    const before = await health(dir);

    const hung = await collect(await write('hang.conf', ['hang.nvmlInit_v2=1']), '--timeout', '500ms');
    expect([hung.signal, hung.timedOut]).toEqual(['SIGKILL', false]);
    expect(hung.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(hung.stderr).toMatch(
      /^gpu-textfile: timeout: NVML did not return within 600 ms \(a call into the driver hung\) \(wrote .*nvidia_gpu\.prom with the health block only; killed the process; try: gpu-textfile doctor\)\n$/,
    );
    expect(await health(dir)).toEqual({ problems: [], success: 0, reason: 'timeout', lastSuccess: before.lastSuccess, gpuValues: 0 });
    expect(await leftovers(dir)).toEqual([]);

    // The lock's owner is gone: the next run takes it over at once.
    const next = await collect(good);
    expect([next.exitCode, next.stderr]).toEqual([0, '']);
    expect((await health(dir)).success).toBe(1);
  });

  it('one-shot with --compat, hung: the peer files lose their GPU values too (nvidia_smi_last_collect_success 0)', {
    timeout: 120_000,
  }, async () => {
    const { dir, write, collect, good } = await setUp();
    expect((await collect(good, ...COMPAT)).exitCode).toBe(0);
    const before = await peers(dir);
    expect([before.dcgmGpuValues > 0, before.peerGpuValues > 0, before.peerSuccess]).toEqual([true, true, 1]);

    const hung = await collect(await write('hang.conf', ['hang.nvmlDeviceGetPowerUsage=1']), '--timeout', '500ms', ...COMPAT);
    expect([hung.signal, hung.timedOut]).toEqual(['SIGKILL', false]);
    expect(hung.stderr).toMatch(/^gpu-textfile: timeout: .*wrote .*nvidia_gpu\.prom with the health block only; killed the process/);
    expect((await health(dir)).reason).toBe('timeout');
    expect(await peers(dir)).toEqual(FAILED_PEERS);
    expect(await leftovers(dir)).toEqual([]);
  });

  it('--dry-run: the failure file is printed instead', async () => {
    const { write, collect } = await setUp();
    const hung = await collect(await write('hang.conf', ['hang.nvmlDeviceGetCount_v2=1']), '--timeout', '300ms', '--dry-run');
    expect([hung.signal, hung.timedOut]).toEqual(['SIGKILL', false]);
    expect(hung.stderr).toMatch(/^gpu-textfile: timeout: NVML did not return within 400 ms .*printed the health block only/);
    expect(checkExposition(hung.stdout).samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason).toBe('timeout');
  });

  it('daemon mode, a call hung after some samples: the timeout failure file, one line, the process killed (systemd restarts it)', async () => {
    const { dir, args, write, collect, good } = await setUp();
    // The tenth power reading (the fifth sample of two GPUs) never returns.
    const config = await write('hang.conf', ['hang.nvmlDeviceGetPowerUsage=10']);
    const result = await execa(process.execPath, [CLI, 'collect', '--interval', '100ms', '--timeout', '2s', ...args], {
      env: cliEnv({ NVML_STAND_IN: config }),
      extendEnv: false,
      reject: false,
      timeout: 60_000,
    });
    expect([result.signal, result.timedOut]).toEqual(['SIGKILL', false]);
    expect(result.stderr).toMatch(/^gpu-textfile: timeout: NVML did not return within 2100 ms .*killed the process.*\n?$/);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    const after = await health(dir);
    expect(after).toEqual({ problems: [], success: 0, reason: 'timeout', lastSuccess: expect.any(Number), gpuValues: 0 });
    expect(await leftovers(dir)).toEqual([]);
    expect((await collect(good)).exitCode).toBe(0);
  });

  it('daemon mode with --compat, a call hung after some samples: the peer files say the failure too', { timeout: 120_000 }, async () => {
    const { dir, args, write } = await setUp();
    const config = await write('hang.conf', ['hang.nvmlDeviceGetPowerUsage=10']);
    const daemon = execa(process.execPath, [CLI, 'collect', '--interval', '100ms', '--timeout', '2s', ...COMPAT, ...args], {
      env: cliEnv({ NVML_STAND_IN: config }),
      extendEnv: false,
      reject: false,
      timeout: 60_000,
    });
    // The peers' files held GPU values before the hang (the first samples are good).
    let sawValues = false;
    const seen = async () => {
      const now = await peers(dir).catch(() => undefined);
      if (now?.dcgmGpuValues && now.peerSuccess === 1) sawValues = true;
      return sawValues || daemon.exitCode !== null;
    };
    await eventually(seen, 50_000);
    const result = await daemon;
    expect(sawValues).toBe(true);
    expect([result.signal, result.timedOut]).toEqual(['SIGKILL', false]);
    expect((await health(dir)).reason).toBe('timeout');
    expect(await peers(dir)).toEqual(FAILED_PEERS);
    expect(await leftovers(dir)).toEqual([]);
  });
});
