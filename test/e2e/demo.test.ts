import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { CLI, cliEnv, madeDir, ROOT, runCli, tempDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';

// `--source demo` end to end: the built CLI, no nvidia-smi anywhere on PATH, the real promtool and node_exporter.
const NO_SMI = { PATH: '/usr/bin:/bin' };
/** A time at which the demo's replayed series are busy and its processes hold memory. */
const BUSY_MOMENT = 1_764_440_520_000;

const seriesValue = (text: string, name: string, gpu: string) =>
  checkExposition(text).samples.find((s) => s.name === name && s.labels.gpu === gpu)?.value;

describe('collect --source demo', () => {
  it('prints a file promtool accepts, every series labelled source="demo", without nvidia-smi', async () => {
    const result = await runCli(['collect', '--dry-run', '--source', 'demo'], NO_SMI);
    expect({ exit: result.exitCode, err: result.stderr }).toEqual({ exit: 0, err: '' });
    const samples = checkExposition(result.stdout).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => s.labels.gpu)).toEqual(['0', '1']);
    expect(samples.filter((s) => s.labels.source !== 'demo')).toEqual([]);
    const promtool = await execa('promtool', ['check', 'metrics'], { input: result.stdout, reject: false });
    expect({ exit: promtool.exitCode, out: promtool.stdout, err: promtool.stderr }).toEqual({ exit: 0, out: '', err: '' });
  });

  it('is served by the real node_exporter with node_textfile_scrape_error 0', async () => {
    const dir = await tempDir();
    const exporter = await startNodeExporter(join(dir, 'textfile'));
    onTestFinished(() => exporter.stop());
    // At a moment of the demo's busy phase: its processes end while its replayed series is idle (the
    // demo never shows a process holding more than its GPU has in use), so the time is fixed.
    const result = await runCli(
      ['collect', '--source', 'demo', '--textfile-dir', madeDir(join(dir, 'textfile')), '--state-dir', join(dir, 'state')],
      { ...NO_SMI, NODE_OPTIONS: `--import=${join(ROOT, 'test/support/fake-clock.mjs')}`, FAKE_CLOCK_START_MS: String(BUSY_MOMENT) },
    );
    expect({ exit: result.exitCode, err: result.stderr }).toEqual({ exit: 0, err: '' });
    const scraped = checkExposition(await exporter.scrape()).samples;
    const error = scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value;
    expect(error, exporter.log()).toBe(0);
    expect(scraped.find((s) => s.name === 'nvidia_gpu_collector_success')).toMatchObject({ labels: { source: 'demo' }, value: 1 });
    expect(scraped.filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes').length).toBeGreaterThan(0);
  });

  it('appends the CSV trail like any source: a row per GPU, status ok', async () => {
    const dir = await tempDir();
    const args = ['collect', '--source', 'demo', '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's')];
    const result = await runCli([...args, '--csv-dir', join(dir, 'csv'), '--task', 'demo'], NO_SMI);
    expect({ exit: result.exitCode, err: result.stderr }).toEqual({ exit: 0, err: '' });
    const [header, ...rows] = (await readFile(join(dir, 'csv/demo.csv'), 'utf8')).trim().split('\n');
    expect(header).toMatch(/^time,host,task_id,gpu_id,gpu_uuid,gpu_name,status,/);
    expect(rows.map((row) => row.split(',').slice(2, 7))).toEqual([
      ['demo', '0', 'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d', 'NVIDIA H200', 'ok'],
      ['demo', '1', 'GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb', 'NVIDIA H200', 'ok'],
    ]);
  });

  it('in daemon mode publishes samples that move', async () => {
    const dir = await tempDir();
    const child = execa(
      process.execPath,
      [CLI, 'collect', '--source', 'demo', '--interval', '200ms', '--textfile-dir', dir, '--state-dir', join(dir, 'state')],
      {
        env: cliEnv(NO_SMI),
        extendEnv: false,
        reject: false,
        stdin: 'ignore',
      },
    );
    onTestFinished(async () => {
      child.kill('SIGTERM');
      await child;
    });
    const seen = new Set<number | undefined>();
    // Polled with a generous deadline: the series behind GPU 0's power changes every 500 ms.
    for (let i = 0; i < 600 && seen.size < 3; i++) {
      const text = await readFile(join(dir, 'nvidia_gpu.prom'), 'utf8').catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      });
      if (text) seen.add(seriesValue(text, 'nvidia_gpu_power_draw_watts', '0'));
      await sleep(100);
    }
    expect(seen.size).toBeGreaterThanOrEqual(3);
  });

  it('is named in the hint when there is no nvidia-smi', async () => {
    const result = await runCli(['collect', '--dry-run', '--nvidia-smi', 'nvidia-smi'], NO_SMI);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(
      /^gpu-textfile: nvidia_smi_not_found: .*; to see what gpu-textfile produces without a GPU: gpu-textfile collect --dry-run --source demo\n$/,
    );
  });

  it('rejects another source with exit 2', async () => {
    const result = await runCli(['collect', '--dry-run', '--source', 'dcgm'], NO_SMI);
    expect([result.exitCode, result.stderr]).toEqual([2, 'gpu-textfile: --source: "dcgm" is not one of nvidia-smi, demo, nvml\n']);
  });
});

describe('pulse --source demo', () => {
  it('replays a recording for --seconds and gives a verdict', async () => {
    const result = await runCli(['pulse', '--source', 'demo', '--seconds', '1', '--json'], NO_SMI);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ verdict: expect.any(String) });
  });
});
