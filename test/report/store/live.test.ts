import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventually, ROOT, runCli, tempDir } from '../../support/helpers.js';
import { startLiveStore } from './live-store.js';

// The store's door, live: the demo collector every second -> node_exporter -> a real Prometheus
// scraping it every second -> `report --prometheus` over the last minutes names that host and its
// GPUs, with their samples.

describe('report --prometheus on a live Prometheus', () => {
  it('names the scraped host and its GPUs', { timeout: 180_000 }, async () => {
    const dir = await tempDir('gpu-textfile-live-');
    // With the report's recording rules loaded: the report then reads them (rules.test.ts says when).
    await copyFile(join(ROOT, 'examples/prometheus/gpu-textfile-report.rules.yml'), join(dir, 'report.rules.yml'));
    const { prometheus, target, collectorLog } = await startLiveStore(
      dir,
      { args: ['--source', 'demo'] },
      { host: 'gpu-node-live', ruleFiles: [join(dir, 'report.rules.yml')] },
    );
    // Until the store holds a few seconds of both GPUs' samples (a busy machine: a generous deadline).
    const ready = await eventually(async () => {
      const answer = await prometheus.query('count_over_time(nvidia_gpu_up[5m])').catch(() => []);
      const recorded = await prometheus.query('gpu_textfile:idle_held:bool').catch(() => []);
      return answer.length === 2 && answer.every((s) => Number(s.value[1]) >= 5) && recorded.length === 2;
    }, 150_000);
    expect(ready, `${prometheus.log()}\n${collectorLog()}`).toBe(true);

    const url = `http://127.0.0.1:${prometheus.port}`;
    const byGpu = await runCli(['report', '--prometheus', url, '--host-label', 'host', '--since', '5m', '--by', 'gpu', '--format', 'csv']);
    expect(byGpu.stderr).toBe('');
    expect(byGpu.exitCode).toBe(0);
    const [header, ...rows] = byGpu.stdout.trim().split('\n');
    const columns = header!.split(',');
    const cells = rows.map((row) => Object.fromEntries(row.split(',').map((cell, i) => [columns[i], cell])));
    expect(cells.map((c) => [c.host, c.task_id, c.gpu_id])).toEqual([
      ['gpu-node-live', 'default', '0'],
      ['gpu-node-live', 'default', '1'],
    ]);
    for (const c of cells) {
      expect(Number(c.samples)).toBeGreaterThanOrEqual(5);
      expect(c.gpu_uuid).toMatch(/^GPU-/);
      expect(Number(c.peak_memory_used_mib)).toBeGreaterThan(0);
    }
    // Every --by and every --format from the store, whole (the formats' own tests say what each holds).
    for (const [by, format] of [
      ...['hour', 'day', 'task', 'job', 'host'].map((by) => [by, 'json']),
      ...['table', 'csv', 'html'].map((format) => ['hour', format]),
    ]) {
      const run = await runCli(['report', '--prometheus', url, '--host-label', 'host', '--since', '5m', '--by', by!, '--format', format!]);
      expect(run.stderr, `${by} ${format}`).toBe('');
      expect(run.exitCode).toBe(0);
      expect(run.stdout, `${by} ${format}`).toContain(format === 'html' ? '</html>' : 'gpu-node-live');
      if (format === 'json') expect(JSON.parse(run.stdout).summary[0].host).toBe('gpu-node-live');
    }
    // The scrape's instance names the host by default.
    const byHost = await runCli(['report', '--prometheus', url, '--since', '5m', '--by', 'host', '--format', 'json']);
    expect(byHost.exitCode, byHost.stderr).toBe(0);
    expect(byHost.stdout).toContain(`"host": "${target}"`);
  });
});
