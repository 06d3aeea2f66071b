import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startNodeExporter } from '../../support/node-exporter.js';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';
import { startPrometheus } from '../../support/prometheus.js';
import { CLI, capture, cliEnv, eventually, runCli, tempDir, madeDir } from '../../support/helpers.js';

// The store's door takes a GPU's energy from the board's counter where the store has it
// (`increase(nvidia_gpu_energy_joules_total)`), not from power x time. The NVML stand-in's counter runs
// at 350 W while its power reading says 700 W, so the two routes differ by half and the figure says
// which one it came from: collect --source nvml every second -> node_exporter -> a real Prometheus.

const H200X2 = capture('h200x2__580.159.04__linux-load');
const POWER_W = 700;
const COUNTER_W = 350;

describe('report --prometheus: energy from the counter', () => {
  it("a GPU whose counter runs at 350 W while its power reads 700 W: the store's report says 350 W x the time seen", {
    timeout: 300_000,
  }, async () => {
    const dir = await tempDir('gpu-textfile-energy-store-');
    const config = join(dir, 'stand-in.conf');
    const board = [0, 1].flatMap((gpu) => [
      `${gpu}.power_mw=${POWER_W * 1000}`,
      `${gpu}.energy_mw=${COUNTER_W * 1000}`,
      `${gpu}.energy_mj=${(gpu + 1) * 1e9}`,
      `${gpu}.energy_runs=1`,
    ]);
    await writeFile(config, standInConfig(H200X2, board));
    const textfiles = madeDir(join(dir, 'textfile'));
    const collector = spawn(
      process.execPath,
      [
        CLI,
        'collect',
        '--source',
        'nvml',
        '--nvml-library',
        standInLibrary(),
        '--interval',
        '1s',
        '--textfile-dir',
        textfiles,
        '--state-dir',
        join(dir, 'state'),
      ],
      { env: cliEnv({ NVML_STAND_IN: config }), stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let collectorLog = '';
    collector.stderr.on('data', (chunk) => (collectorLog += chunk));
    const collectorExited = new Promise<void>((resolve) => collector.once('exit', () => resolve()));
    onTestFinished(async () => {
      if (collector.exitCode === null) collector.kill('SIGTERM');
      await collectorExited;
    });
    const exporter = await startNodeExporter(textfiles);
    onTestFinished(() => exporter.stop());
    const prometheus = await startPrometheus(dir, {
      global: { scrape_interval: '1s' },
      scrape_configs: [
        { job_name: 'gpu', static_configs: [{ targets: [new URL(exporter.url).host], labels: { host: 'gpu-node-energy' } }] },
      ],
    });
    onTestFinished(() => prometheus.stop());
    // Until the store holds 90 samples of both counters: enough that the report's three decimals of
    // kWh (2 x 350 W x 90 s = 0.0175 kWh) tell the counter's route from power x time's (twice that).
    const ready = await eventually(async () => {
      const counted = await prometheus.query('count_over_time(nvidia_gpu_energy_joules_total[10m])').catch(() => []);
      return counted.length === 2 && counted.every((s) => Number(s.value[1]) >= 90);
    }, 240_000);
    expect(ready, `${prometheus.log()}\n${collectorLog}`).toBe(true);

    const url = `http://127.0.0.1:${prometheus.port}`;
    const run = await runCli(['report', '--prometheus', url, '--host-label', 'host', '--since', '10m', '--by', 'host', '--format', 'json']);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const [row] = JSON.parse(run.stdout).rows;
    expect(row.host).toBe('gpu-node-energy');
    // The samples the report counted, at the 1 s scrape: the time each GPU was seen.
    const seconds = row.samples;
    const counterKwh = (COUNTER_W * seconds) / 3_600_000;
    const powerKwh = (POWER_W * seconds) / 3_600_000;
    expect(Math.abs(row.energy_kwh / counterKwh - 1), JSON.stringify(row)).toBeLessThan(0.08);
    expect(Math.abs(row.energy_kwh / powerKwh - 1), JSON.stringify(row)).toBeGreaterThan(0.4);
  });
});
