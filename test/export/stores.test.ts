import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateRows, HEADER } from '../../src/report/history-generator.js';
import { runCli, tempDir } from '../support/helpers.js';
import { backfill, type PromSample, startPrometheus } from '../support/prometheus.js';
import { startVictoriaMetrics } from '../support/victoria-metrics.js';

// The round trip the export is for: a generated fleet trail -> export -> each store's own import
// (promtool's blocks for a real Prometheus, the import API of a real VictoriaMetrics) -> the
// store's query API, whose counts, sums and maxima must be the trail's, worked out here from its rows.

const START = Date.UTC(2026, 0, 5);
const HOUR = 3_600_000;
const HOSTS = ['gpu-a', 'gpu-b', 'gpu-c'];
/** The instant the stores are asked at, and a window holding the whole trail (six hours). */
const AT = (START + 6 * HOUR + 60_000) / 1000;
const WINDOW = '7h';

/** 3 hosts x 2 GPUs x 6 hours at 15 s: gpu-b misses half an hour, every host fails for six minutes, GPU 0 runs a Slurm job per host. */
function fleetRows(): Map<string, string[]> {
  return new Map(
    HOSTS.map((host, i) => [
      host,
      generateRows({
        start: START,
        hours: 6,
        host,
        task: 'train',
        seed: i + 1,
        gpus: ['training', 'inference'],
        skip: (_gpu, h) => host === 'gpu-b' && h >= 2 && h < 2.5,
        fail: (_gpu, h) => (h >= 4 && h < 4.1 ? 'nvidia_smi_failed' : undefined),
        jobs: (gpu) => (gpu === 0 ? `slurm:${100 + i}:user${i}:60000:90` : '-'),
      }),
    ]),
  );
}

async function writeFleet(rows: Map<string, string[]>): Promise<string> {
  const dir = await tempDir('gpu-textfile-stores-');
  for (const [host, lines] of rows) {
    await mkdir(join(dir, host));
    await writeFile(join(dir, host, 'train.csv'), `${HEADER},jobs\n${lines.join('\n')}\n`);
  }
  return dir;
}

/** What the trail says, per "host/gpu" (and per host for the collections): counted from its cells. */
function expected(rows: Map<string, string[]>) {
  const perGpu = new Map<string, { ok: number; memory: number; maxPower: number }>();
  const perHost = new Map<string, { collections: number; ok: number }>();
  for (const [host, lines] of rows) {
    const times = new Map<string, boolean>();
    for (const line of lines) {
      const cells = line.split(',');
      times.set(cells[0]!, (times.get(cells[0]!) ?? false) || cells[6] === 'ok');
      if (cells[6] !== 'ok') continue;
      const key = `${host}/${cells[3]}`;
      const entry = perGpu.get(key) ?? { ok: 0, memory: 0, maxPower: 0 };
      entry.ok++;
      entry.memory += Number(cells[8]) * 1024 * 1024;
      entry.maxPower = Math.max(entry.maxPower, Number(cells[10]));
      perGpu.set(key, entry);
    }
    perHost.set(host, { collections: times.size, ok: [...times.values()].filter(Boolean).length });
  }
  return { perGpu, perHost };
}

type Query = (expr: string, time?: number) => Promise<PromSample[]>;

/** A query's answer as "instance/gpu" (or "instance") -> value. */
async function byKey(query: Query, expr: string): Promise<Map<string, number>> {
  const samples = await query(expr, AT);
  return new Map(
    samples.map((s) => [s.metric.gpu === undefined ? s.metric.instance! : `${s.metric.instance}/${s.metric.gpu}`, Number(s.value[1])]),
  );
}

/** What every store must answer for the trail. */
async function expectTrail(query: Query, rows: Map<string, string[]>): Promise<void> {
  const { perGpu, perHost } = expected(rows);
  expect(perGpu.size).toBe(6);
  const counts = await byKey(query, `count_over_time(nvidia_gpu_utilization_ratio[${WINDOW}])`);
  expect(counts).toEqual(new Map([...perGpu].map(([key, e]) => [key, e.ok])));
  const memory = await byKey(query, `sum_over_time(nvidia_gpu_memory_used_bytes[${WINDOW}])`);
  for (const [key, e] of perGpu) expect(memory.get(key)! / e.memory).toBeCloseTo(1, 9);
  const power = await byKey(query, `max_over_time(nvidia_gpu_power_draw_watts[${WINDOW}])`);
  expect(power).toEqual(new Map([...perGpu].map(([key, e]) => [key, e.maxPower])));
  // Every collection is there, the failed ones as 0: the gap stays a gap, the failures failures.
  const collections = await byKey(query, `count_over_time(nvidia_gpu_collector_success[${WINDOW}])`);
  const succeeded = await byKey(query, `sum_over_time(nvidia_gpu_collector_success[${WINDOW}])`);
  expect(collections).toEqual(new Map([...perHost].map(([host, e]) => [host, e.collections])));
  expect(succeeded).toEqual(new Map([...perHost].map(([host, e]) => [host, e.ok])));
  expect(perHost.get('gpu-b')!.collections).toBe(perHost.get('gpu-a')!.collections - 120);
  expect(perHost.get('gpu-a')!.ok).toBe(perHost.get('gpu-a')!.collections - 24);
  // The jobs column: one holder series per host's job on GPU 0, a sample per ok row.
  const holders = await query(`count_over_time(nvidia_gpu_holder_info[${WINDOW}])`, AT);
  expect(
    new Set(holders.map((s) => `${s.metric.instance}/${s.metric.gpu}/${s.metric.job_kind}:${s.metric.job_id}:${s.metric.user}`)),
  ).toEqual(new Set(HOSTS.map((host, i) => `${host}/0/slurm:${100 + i}:user${i}`)));
  for (const s of holders) expect(Number(s.value[1])).toBe(perGpu.get(`${s.metric.instance}/0`)!.ok);
}

describe('export -> a real store -> its query API', () => {
  it('Prometheus: promtool tsdb create-blocks-from openmetrics, then the blocks queried', { timeout: 600_000 }, async () => {
    const rows = fleetRows();
    const trail = await writeFleet(rows);
    const data = await tempDir('gpu-textfile-prometheus-');
    const file = join(data, 'trail.om');
    const exported = await runCli(['export', '--csv-dir', trail, '--until', '2026-01-06', '--out', file], {}, 300_000);
    expect(exported.stderr).toMatch(/exported \d+ rows/);
    expect(exported.exitCode).toBe(0);
    await backfill(file, data);
    const prometheus = await startPrometheus(data, { scrape_configs: [] }, { args: ['--storage.tsdb.retention.time=100y'] });
    onTestFinished(() => prometheus.stop());
    await prometheus.ready();
    await expectTrail(prometheus.query, rows);
  });

  it('VictoriaMetrics: /api/v1/import/prometheus, then queried', { timeout: 600_000 }, async () => {
    const rows = fleetRows();
    const trail = await writeFleet(rows);
    const exported = await runCli(['export', '--csv-dir', trail, '--until', '2026-01-06', '--format', 'prometheus'], {}, 300_000);
    expect(exported.exitCode).toBe(0);
    const victoria = await startVictoriaMetrics(await tempDir('gpu-textfile-victoria-'));
    onTestFinished(() => victoria.stop());
    await victoria.importPrometheus(exported.stdout);
    await victoria.flush();
    await expectTrail(victoria.query, rows);
  });
});
