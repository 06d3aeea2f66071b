import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';
import { capture, eventually, runCli, tempDir } from '../../support/helpers.js';
import { startLiveStore } from './live-store.js';

// The store's door takes a GPU's energy from the board's counter where the store has it
// (`increase(nvidia_gpu_energy_joules_total)`), not from power x time. The NVML stand-in's counter runs
// at 350 W while its power reading says 700 W, so the two routes differ by half and the figure says
// which one it came from: collect --source nvml every second -> node_exporter -> a real Prometheus.

const H200X2 = capture('h200x2__580.159.04__linux-load');
const POWER_W = 700;
const COUNTER_W = 350;

describe('report --prometheus: energy from the counter', () => {
  it("a GPU whose counter runs at 350 W while its power reads 700 W: the store's report says 350 W x the time seen", {
    timeout: 480_000,
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
    const { prometheus, collectorLog } = await startLiveStore(
      dir,
      { args: ['--source', 'nvml', '--nvml-library', standInLibrary()], env: { NVML_STAND_IN: config } },
      { host: 'gpu-node-energy' },
    );
    // Until the store holds 150 samples of both counters: enough that the report's three decimals of
    // kWh (2 x 350 W x 150 s = 0.029 kWh) tell the counter's route from power x time's (twice that).
    const ready = await eventually(async () => {
      const counted = await prometheus.query('count_over_time(nvidia_gpu_energy_joules_total[10m])').catch(() => []);
      return counted.length === 2 && counted.every((s) => Number(s.value[1]) >= 150);
    }, 360_000);
    expect(ready, `${prometheus.log()}\n${collectorLog()}`).toBe(true);

    const url = `http://127.0.0.1:${prometheus.port}`;
    const run = await runCli(['report', '--prometheus', url, '--host-label', 'host', '--since', '10m', '--by', 'host', '--format', 'json']);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const [row] = JSON.parse(run.stdout).rows;
    expect(row.host).toBe('gpu-node-energy');
    // What the counters rose by in the store, read apart from the report's increase(): the daemon reads
    // the counter at a cadence of its own, slower than its samples, so this is the energy to expect.
    const rose = await prometheus.query(
      'max_over_time(nvidia_gpu_energy_joules_total[10m]) - min_over_time(nvidia_gpu_energy_joules_total[10m])',
    );
    const counterKwh = rose.reduce((sum, s) => sum + Number(s.value[1]), 0) / 3_600_000;
    // Power x time would be 700 W for every sample the report counted (one a second per GPU).
    const powerKwh = (POWER_W * row.samples) / 3_600_000;
    expect(rose.length).toBe(2);
    expect(Math.abs(row.energy_kwh / counterKwh - 1), `${JSON.stringify(row)} counters rose ${counterKwh} kWh`).toBeLessThan(0.06);
    expect(Math.abs(row.energy_kwh / powerKwh - 1), JSON.stringify(row)).toBeGreaterThan(0.4);
  });
});
