import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition, type ParsedSample } from '../../src/exposition/check.js';
import { startNodeExporter, type NodeExporter } from '../support/node-exporter.js';
import { CLI, FAKE_BIN, FAKE_SMI, capture, cliEnv, eventually, runCli, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, startDaemonWithStandIn } from '../support/nvml-stand-in.js';

const H200 = capture('h200x2__580.159.04__linux-idle');

interface Seen {
  /** Every reason the textfile gave, in order of first sight ('ok' for a good sample, 'none' before the first write). */
  reasons: Set<string>;
  /** The same, each change of reason in order. */
  changes: string[];
  /** CSV rows (without the header). */
  rows: string[];
  stderr: string;
}

/** Starts `collect --interval`, watches the textfile until `enough` (or 20 s), then stops it with SIGTERM. */
async function runUntil(enough: (seen: Seen) => boolean, env: Record<string, string>, interval = '200ms') {
  const dir = await tempDir();
  // The stand-in through a link in this test's directory: its children are told apart by their command line.
  await symlink(FAKE_SMI, join(dir, 'nvidia-smi'));
  const child = execa(
    process.execPath,
    [
      CLI,
      'collect',
      '--interval',
      interval,
      '--textfile-dir',
      madeDir(join(dir, 't')),
      '--state-dir',
      join(dir, 's'),
      '--csv-dir',
      join(dir, 'c'),
      '--nvidia-smi',
      join(dir, 'nvidia-smi'),
    ],
    {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200, ...env }),
      extendEnv: false,
      reject: false,
    },
  );
  const seen: Seen = { reasons: new Set(), changes: [], rows: [], stderr: '' };
  child.stderr!.on('data', (chunk: Buffer) => (seen.stderr += String(chunk)));
  const csvRows = async () => (await readFile(join(dir, 'c/default.csv'), 'utf8').catch(() => '')).trim().split('\n').slice(1);
  // A generous deadline: on a busy machine start-up alone can take seconds. The test's own
  // assertions then say what was missing.
  for (const deadline = Date.now() + 60_000; !enough(seen) && Date.now() < deadline; await sleep(40)) {
    const text = await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8').catch(() => '');
    const sample = checkExposition(text).samples;
    const reason = sample.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason ?? (sample.length ? 'ok' : 'none');
    seen.reasons.add(reason);
    if (seen.changes.at(-1) !== reason) seen.changes.push(reason);
    seen.rows = await csvRows();
  }
  child.kill('SIGTERM');
  const result = await child;
  return { result, reasons: seen.reasons, changes: seen.changes, rows: await csvRows(), dir };
}

/** Whether `first` was seen and `then` after it. */
const followed = (changes: string[], first: string, then: string) =>
  changes.includes(first) && changes.slice(changes.indexOf(first)).includes(then);

const smiChildren = async (dir: string) => {
  const { stdout } = await promisify(execFile)('ps', ['-eo', 'args']);
  return stdout.split('\n').filter((line) => line.includes('-lms') && line.includes(dir));
};

describe('collect --interval (daemon mode)', () => {
  it('publishes every sample from one nvidia-smi -lms child and stops cleanly on SIGTERM', async () => {
    const { result, reasons, rows, dir } = await runUntil((seen) => seen.rows.length >= 12, {});
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
    const stalled =
      /nvidia-smi -lms stopped: timeout: no line from nvidia-smi -lms for 2000 ms \(3 intervals, 2 s at least\); killed it; restarting in 1 s/;
    const { result, changes, rows } = await runUntil((seen) => stalled.test(seen.stderr) && followed(seen.changes, 'timeout', 'ok'), {
      FAKE_SMI_LOOP_STALL_AFTER: '2',
    });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(stalled);
    expect(followed(changes, 'timeout', 'ok')).toBe(true);
    expect(rows.some((row) => row.split(',')[6] === 'timeout')).toBe(true);
  });

  it('a child that exits saying a GPU is lost is restarted; a one-shot read finds every GPU, and the file keeps them', async () => {
    const { result, reasons, changes } = await runUntil((seen) => (seen.stderr.match(/restarting in/g)?.length ?? 0) >= 2, {
      FAKE_SMI_LOOP_EXIT_AFTER: '2',
    });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(
      /nvidia-smi -lms stopped: gpu_lost: nvidia-smi -lms exited 1: Unable to determine the device handle.*; restarting in 1 s\n/,
    );
    // The child's word is not published over the one-shot read that followed it: both GPUs answered that.
    expect(reasons.has('gpu_lost')).toBe(false);
    expect(changes.at(-1)).toBe('ok');
  });

  it('a child that exits otherwise is restarted after the failure is published', async () => {
    const { result, changes } = await runUntil((seen) => followed(seen.changes, 'nvidia_smi_failed', 'ok'), {
      FAKE_SMI_LOOP_EXIT_AFTER: '2',
      FAKE_SMI_LOOP_EXIT_WORDS: 'Segmentation fault',
    });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: nvidia_smi_failed: nvidia-smi -lms exited 1: Segmentation fault/);
    expect(followed(changes, 'nvidia_smi_failed', 'ok')).toBe(true);
  });

  it('a child that keeps dying is restarted ever more slowly', async () => {
    const { result } = await runUntil((seen) => seen.stderr.match(/restarting in/g)?.length === 2, { FAKE_SMI_LOOP_EXIT_AFTER: '1' });
    expect(result.exitCode).toBe(0);
    const delays = [...result.stderr.matchAll(/restarting in (\d+) s/g)].map((m) => Number(m[1]));
    expect(delays.slice(0, 2)).toEqual([1, 2]);
  });

  it('garbage becomes unparsable_output, never numbers, and three garbage batches restart the child', async () => {
    const { result, reasons } = await runUntil(
      (seen) => /\(3 batches in a row\)/.test(seen.stderr) && seen.reasons.has('unparsable_output'),
      { FAKE_SMI_LOOP_GARBAGE_AFTER: '1' },
    );
    expect(result.exitCode).toBe(0);
    expect(reasons.has('unparsable_output')).toBe(true);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: unparsable_output: .*\(3 batches in a row\)/);
  });

  it('SIGTERM while nvidia-smi is mid-line says the collector stopped, not unparsable_output; the trail keeps good samples', async () => {
    const dir = await tempDir();
    const mark = join(dir, 'mid-line');
    const child = execa(
      process.execPath,
      [
        CLI,
        'collect',
        '--interval',
        '1s',
        '--textfile-dir',
        madeDir(join(dir, 't')),
        '--state-dir',
        join(dir, 's'),
        '--csv-dir',
        join(dir, 'c'),
        '--nvidia-smi',
        join(FAKE_BIN, 'partial-line'),
      ],
      {
        env: cliEnv({ FAKE_SMI_CAPTURE: H200, FAKE_SMI_PARTIAL_MARK: mark }),
        extendEnv: false,
        reject: false,
      },
    );
    // Two rows from the one-shot start, two from the stream's one sample: then it is mid-line.
    const csvRows = async () => (await readFile(join(dir, 'c/default.csv'), 'utf8').catch(() => '')).trim().split('\n').length - 1;
    for (const until = Date.now() + 60_000; !(existsSync(mark) && (await csvRows()) >= 4); await sleep(40)) {
      if (Date.now() > until) throw new Error('the stand-in never got mid-line');
    }
    child.kill('SIGTERM');
    const result = await child;
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const samples = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8')).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_collector_error').map((s) => s.labels.reason)).toEqual(['collector_stopped']);
    expect(
      (await readFile(join(dir, 'c/default.csv'), 'utf8'))
        .trim()
        .split('\n')
        .slice(1)
        .every((row) => row.split(',')[6] === 'ok'),
    ).toBe(true);
  });

  it('rejects an interval under 100 ms', async () => {
    const dir = await tempDir();
    const result = await execa(process.execPath, [CLI, 'collect', '--interval', '50ms', '--textfile-dir', dir], {
      reject: false,
      env: cliEnv(),
      extendEnv: false,
    });
    expect([result.exitCode, result.stderr]).toEqual([2, 'gpu-textfile: --interval: "50ms" must be a duration of at least 100ms']);
  });
});

/** What node_exporter serves of our families, in short: success, the error's reason, each GPU's up and whether it has a power value. */
function served(samples: readonly ParsedSample[]): string {
  const error = samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason ?? '-';
  const success = samples.find((s) => s.name === 'nvidia_gpu_collector_success')?.value;
  const power = (gpu: string | undefined) => samples.some((s) => s.name === 'nvidia_gpu_power_draw_watts' && s.labels.gpu === gpu);
  const gpus = samples
    .filter((s) => s.name === 'nvidia_gpu_up')
    .map((s) => `${s.labels.gpu}=${s.value}${power(s.labels.gpu) ? '+power' : ''}`);
  return `success ${success} error ${error} gpus ${gpus.join(' ')}`;
}

/**
 * Scrapes node_exporter while the daemon rewrites `textfile`, until it was written `writes` times
 * (or 60 s: a loaded machine): each change of what was served, in order, and how many writes were seen.
 */
async function scrapeWhileWritten(exporter: NodeExporter, textfile: string, writes: number) {
  const changes: string[] = [];
  const seen = new Set<string>();
  for (const end = Date.now() + 60_000; seen.size < writes && Date.now() < end; await sleep(40)) {
    // Each write is a new file renamed into place: a new inode, or a new mtime.
    const file = await stat(textfile, { bigint: true }).catch(() => undefined);
    if (!file) continue;
    seen.add(`${file.ino} ${file.mtimeNs}`);
    const scraped = checkExposition(await exporter.scrape()).samples;
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    const now = served(scraped.filter((s) => s.name.startsWith('nvidia_gpu_')));
    if (changes.at(-1) !== now) changes.push(now);
  }
  return { changes, writes: seen.size };
}

// Issue 33: the daemon isolated a lost GPU for one write, then its reader failed on that GPU, the
// failure blanked every GPU and it backed off 2, 4 ... 60 s. It must serve what a one-shot run serves,
// for as long as the GPU stays lost, sample after sample.
describe('collect --interval with one GPU lost', () => {
  const LOST = 'success 1 error - gpus 0=1+power 1=0';

  it('nvidia-smi: the healthy GPU keeps reporting and the lost one is down, every interval', { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    const exporter = await startNodeExporter(join(dir, 't'));
    onTestFinished(() => exporter.stop());
    // The GPUs as a run before the loss saw them (the lost one is found by asking each alone).
    const args = ['--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), '--nvidia-smi', FAKE_SMI];
    const before = await runCli(['collect', ...args], { FAKE_SMI_CAPTURE: H200 });
    expect([before.exitCode, before.stderr]).toEqual([0, '']);
    const child = execa(process.execPath, [CLI, 'collect', '--interval', '200ms', ...args], {
      env: cliEnv({ FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__gpu-lost') }),
      extendEnv: false,
      reject: false,
    });
    const { changes, writes } = await scrapeWhileWritten(exporter, join(dir, 't/nvidia_gpu.prom'), 10);
    child.kill('SIGTERM');
    const result = await child;
    // The healthy file of the run before, then the lost GPU isolated for good.
    expect(changes.slice(1)).toEqual([LOST]);
    expect(writes).toBeGreaterThanOrEqual(10);
    expect(result.exitCode).toBe(0);
    // Said once, not every interval.
    expect(result.stderr.match(/did not answer/g)?.length, result.stderr).toBe(1);
  });

  it('NVML: the healthy GPU keeps reporting and the lost one is down, every interval', { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    const exporter = await startNodeExporter(join(dir, 't'));
    onTestFinished(() => exporter.stop());
    const config = join(dir, 'stand-in.conf');
    // NVML_ERROR_GPU_IS_LOST (15) from GPU 1, as after an Xid 79.
    await writeFile(config, standInConfig(H200, ['rc.nvmlDeviceGetPowerUsage.1=15']));
    const child = startDaemonWithStandIn(config, dir);
    const { changes, writes } = await scrapeWhileWritten(exporter, join(dir, 't/nvidia_gpu.prom'), 10);
    child.kill('SIGTERM');
    const result = await child;
    expect(changes).toEqual([LOST]);
    expect(writes).toBeGreaterThanOrEqual(10);
    expect(result.exitCode).toBe(0);
    expect(result.stderr.match(/did not answer/g)?.length, result.stderr).toBe(1);
  });

  it('nvidia-smi: when the GPU answers again, the reader takes over again', { timeout: 90_000 }, async () => {
    const dir = await tempDir();
    const lost = join(dir, 'capture');
    await cp(capture('h200x2__580.159.04__gpu-lost'), lost, { recursive: true });
    const args = ['--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), '--nvidia-smi', FAKE_SMI];
    await runCli(['collect', ...args], { FAKE_SMI_CAPTURE: H200 });
    const log = join(dir, 'argv.log');
    const child = execa(process.execPath, [CLI, 'collect', '--interval', '200ms', ...args], {
      env: cliEnv({ FAKE_SMI_CAPTURE: lost, FAKE_SMI_LOG: log }),
      extendEnv: false,
      reject: false,
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += String(chunk)));
    expect(await eventually(async () => /did not answer/.test(stderr))).toBe(true);
    await rm(join(lost, 'lost-gpu.txt'));
    const streaming = async () => (await readFile(log, 'utf8')).split('\n').filter((line) => line.includes('-lms')).length;
    const started = await streaming();
    // A reader that runs: an -lms child started after the GPU came back, and samples from it.
    const back = await eventually(async () => /every GPU answers again/.test(stderr) && (await streaming()) > started);
    child.kill('SIGTERM');
    const result = await child;
    expect(back, stderr).toBe(true);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).not.toMatch(/restarting in/);
  });
});

// Issue 33: after systemctl stop the file kept collector_success 1 and every GPU series, served as
// current until the staleness alert fired minutes later.
describe('collect --interval stopped cleanly', () => {
  const start = (dir: string, ...more: string[]) =>
    execa(
      process.execPath,
      [CLI, 'collect', '--interval', '200ms', '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), ...more],
      { env: cliEnv({ FAKE_SMI_CAPTURE: H200 }), extendEnv: false, reject: false, stdin: 'ignore' },
    );

  it('says collector_stopped with the health block only, and a restart publishes the GPUs again', { timeout: 90_000 }, async () => {
    const dir = await tempDir();
    await symlink(FAKE_SMI, join(dir, 'nvidia-smi'));
    await mkdir(join(dir, 't'));
    const exporter = await startNodeExporter(join(dir, 't'));
    onTestFinished(() => exporter.stop());
    const scrape = async () => {
      const scraped = checkExposition(await exporter.scrape()).samples;
      expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
      return served(scraped.filter((s) => s.name.startsWith('nvidia_gpu_')));
    };
    const running = 'success 1 error - gpus 0=1+power 1=1+power';
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      const child = start(dir, '--nvidia-smi', join(dir, 'nvidia-smi'));
      expect(await eventually(async () => (await scrape()) === running), `${signal}: ${await scrape()}`).toBe(true);
      child.kill(signal);
      const result = await child;
      expect([result.exitCode, result.stderr]).toEqual([0, '']);
      expect(await scrape()).toBe('success 0 error collector_stopped gpus ');
      const text = await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8');
      // The last good sample's time is kept: how long ago the collector last saw the GPUs.
      const lastSuccess = checkExposition(text).samples.find((s) => s.name === 'nvidia_gpu_collector_last_success_timestamp_seconds');
      expect(lastSuccess?.value).toBeGreaterThan(0);
    }
  });

  it('--dry-run prints no stop: it wrote nothing to take back', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const child = start(dir, '--dry-run', '--nvidia-smi', FAKE_SMI);
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += String(chunk)));
    expect(await eventually(async () => (stdout.match(/^nvidia_gpu_collector_success 1$/gm)?.length ?? 0) >= 2)).toBe(true);
    child.kill('SIGTERM');
    const result = await child;
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(stdout).not.toMatch(/collector_stopped|nvidia_gpu_collector_success 0/);
  });
});
