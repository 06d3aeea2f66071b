import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { CLI, capture, cliEnv, eventually, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// run and pulse with --source nvml while an NVML call hangs (the stand-in's hang.<function>=N: that
// call never returns, as a driver stuck in the kernel): the built program, the real node_exporter
// scraping run's textfile meanwhile. Nothing is timed: a run that hung would end only at the test's
// generous deadlines, and fail.

const IDLE = capture('h200x2__580.159.04__linux-idle');

async function standIn(dir: string, more: string[]): Promise<string> {
  const config = join(dir, 'stand-in.conf');
  await writeFile(config, standInConfig(IDLE, more));
  return config;
}

describe('a hung NVML call', () => {
  it("run: the job's output still flows, node_exporter serves the timeout, SIGTERM reaches the job, run returns its status", async () => {
    const dir = await tempDir();
    const textfiles = madeDir(join(dir, 't'));
    const exporter = await startNodeExporter(textfiles);
    onTestFinished(() => exporter.stop());
    // The tenth power reading (the fifth sample of two GPUs) never returns.
    const config = await standIn(dir, ['hang.nvmlDeviceGetPowerUsage=10']);
    const go = join(dir, 'go');
    const job = [
      "trap 'echo got TERM; exit 5' TERM",
      `while [ ! -e "${go}" ]; do sleep 0.05; done`,
      'echo after the hang',
      'while :; do sleep 0.05; done',
    ].join('\n');
    const options = ['--source', 'nvml', '--nvml-library', standInLibrary(), '--interval', '100ms', '--timeout', '2s', '--task', 'hung'];
    const where = ['--textfile-dir', textfiles, '--state-dir', join(dir, 's')];
    const run = execa(process.execPath, [CLI, 'run', ...options, ...where, '--', 'sh', '-c', job], {
      env: cliEnv({ NVML_STAND_IN: config }),
      extendEnv: false,
      reject: false,
      timeout: 90_000,
      stdin: 'ignore',
    });
    let stdout = '';
    run.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    const health = async () => {
      const { samples } = checkExposition(await exporter.scrape());
      const of = (name: string) => samples.find((s) => s.name === name && s.labels.task === 'hung');
      return { success: of('nvidia_gpu_collector_success')?.value, reason: of('nvidia_gpu_collector_error')?.labels.reason };
    };
    // First the samples, then the hang's failure: published, and served while the job runs on.
    expect(await eventually(async () => (await health()).success === 1)).toBe(true);
    expect(await eventually(async () => (await health()).success === 0), exporter.log()).toBe(true);
    expect(await health()).toEqual({ success: 0, reason: 'timeout' });
    await writeFile(go, '');
    expect(await eventually(async () => stdout.includes('after the hang\n'))).toBe(true);
    run.kill('SIGTERM');
    const result = await run;
    expect([result.exitCode, result.timedOut, stdout]).toEqual([5, false, 'after the hang\ngot TERM\n']);
    expect(result.stderr).toMatch(
      /^gpu-textfile run: sampling stopped: timeout: NVML did not return within 2100 ms \(a call into the driver hung\) \(wrote .*hung\.prom with the health block only; stopped the GPU reader; try: gpu-textfile doctor\); the job runs on/m,
    );
    expect(result.stderr).toContain('gpu-textfile run: hung: exit status 5');
    // Its file is gone: no "running" job is left behind.
    expect(await readdir(textfiles)).toEqual([]);
  }, 120_000);

  /** `run --source nvml --interval 10s MORE -- sh -c JOB` against the stand-in answering `config`. */
  const runNvmlJob = (dir: string, config: string, job: string, more: string[]) =>
    execa(
      process.execPath,
      [
        CLI,
        'run',
        '--source',
        'nvml',
        '--nvml-library',
        standInLibrary(),
        '--interval',
        '10s',
        ...more,
        '--state-dir',
        join(dir, 's'),
        '--',
        'sh',
        '-c',
        job,
      ],
      { env: cliEnv({ NVML_STAND_IN: config }), extendEnv: false, reject: false, timeout: 90_000, stdin: 'ignore' },
    );

  it('run: the energy counter is read once more when the job ends, by the reader, under its watchdog', async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    const config = await standIn(dir, ['0.energy_mj=1000', `calls=${calls}`]);
    // The job ends once the stream's first sample has read the counter (the one-shot before it reads it
    // too); with a 10 s interval, no sample of the stream's falls between the job's end and run's.
    const energyReads = `grep -c '^nvmlDeviceGetTotalEnergyConsumption$' "${calls}"`;
    const job = `i=0; while [ $i -lt 600 ] && [ "$(${energyReads})" -lt 4 ]; do sleep 0.05; i=$((i+1)); done; echo JOB-ENDED >> "${calls}"`;
    const result = await runNvmlJob(dir, config, job, ['--task', 'final']);
    expect([result.exitCode, result.timedOut]).toEqual([0, false]);
    const after = (await readFile(calls, 'utf8')).split('JOB-ENDED\n')[1] ?? '';
    expect(after.split('\n')).toContain('nvmlDeviceGetTotalEnergyConsumption');
  }, 120_000);

  it("run: a read at the job's end that hangs is said as that, not as sampling stopping while the job runs on", async () => {
    const dir = await tempDir();
    const calls = join(dir, 'calls');
    // The one-shot's and the stream's first reads of the counter answer; the third, at the job's end, hangs.
    const config = await standIn(dir, ['0.energy_mj=1000', `calls=${calls}`, 'hang.nvmlDeviceGetTotalEnergyConsumption=3']);
    const energyReads = `grep -c '^nvmlDeviceGetTotalEnergyConsumption$' "${calls}"`;
    const job = `i=0; while [ $i -lt 600 ] && [ "$(${energyReads})" -lt 2 ]; do sleep 0.05; i=$((i+1)); done`;
    const result = await runNvmlJob(dir, config, job, ['--timeout', '2s', '--task', 'end']);
    expect([result.exitCode, result.timedOut]).toEqual([0, false]);
    expect(result.stderr).toMatch(/^gpu-textfile run: the read at the job's end failed: timeout: /m);
    expect(result.stderr).not.toMatch(/the job runs on/);
  }, 120_000);

  it('pulse: ends at --timeout with one line and status 1, no verdict', async () => {
    const dir = await tempDir();
    const config = await standIn(dir, ['hang.nvmlDeviceGetPowerUsage=3']);
    const options = [
      '--source',
      'nvml',
      '--nvml-library',
      standInLibrary(),
      '--interval',
      '100ms',
      '--seconds',
      '30',
      '--timeout',
      '500ms',
    ];
    const result = await execa(process.execPath, [CLI, 'pulse', ...options], {
      env: cliEnv({ NVML_STAND_IN: config }),
      extendEnv: false,
      reject: false,
      timeout: 90_000,
      stdin: 'ignore',
    });
    expect([result.exitCode, result.timedOut, result.stdout]).toEqual([1, false, '']);
    expect(result.stderr.split('\n').slice(1)).toEqual([
      'gpu-textfile: timeout: NVML did not return within 600 ms (a call into the driver hung) (stopped the GPU reader; try: gpu-textfile doctor)',
    ]);
  }, 120_000);

  it('pulse: SIGINT while the call hangs ends pulse by that signal, and its reader with it', async () => {
    const dir = await tempDir();
    const config = await standIn(dir, ['hang.nvmlDeviceGetPowerUsage=1']);
    const options = ['--source', 'nvml', '--nvml-library', standInLibrary(), '--seconds', '60', '--timeout', '60s'];
    const pulse = execa(process.execPath, [CLI, 'pulse', ...options], {
      env: cliEnv({ NVML_STAND_IN: config }),
      extendEnv: false,
      reject: false,
      timeout: 90_000,
      stdin: 'ignore',
    });
    let reader: number | undefined;
    expect(await eventually(async () => (reader = await childReading(pulse.pid!)) !== undefined)).toBe(true);
    pulse.kill('SIGINT');
    const result = await pulse;
    expect([result.signal, result.timedOut]).toEqual(['SIGINT', false]);
    expect(await eventually(async () => !(await readFile(`/proc/${reader}/stat`, 'utf8').then(isLive, () => false)))).toBe(true);
  }, 120_000);
});

/** Whether a /proc/PID/stat is of a process that still runs (a zombie has ended). */
const isLive = (stat: string) => !/^\d+ \(.*\) Z /.test(stat);

/** The pid of the reader process (dist/gpu-reader.js) `parent` started, once it is there. */
async function childReading(parent: number): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(join('/proc', entry, 'status'), 'utf8').catch(() => '');
    const cmdline = await readFile(join('/proc', entry, 'cmdline'), 'utf8').catch(() => '');
    if (status.includes(`\nPPid:\t${parent}\n`) && cmdline.includes('gpu-reader.js')) return Number(entry);
  }
  return undefined;
}
