import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attributionHost } from '../support/attribution-host.js';
import { FAKE_SMI, ROOT, capture, eventually, runCli, madeDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { startPrometheus, type PromSample as Sample } from '../support/prometheus.js';

// The per-job rules and GpuHeldIdle on a real Prometheus, over what a real node_exporter served:
// two moments of the recorded 2 x H200 host under --host-root (a Kubernetes pod, train.service and
// Slurm job 4242 on GPU 0; nothing on GPU 1), scraped from node_exporter, then laid out as 96
// minutes of samples ending now (busy for 30 minutes, then GPU 0 idle while the jobs hold it) and
// backfilled with `promtool tsdb create-blocks-from openmetrics`. Prometheus loads the blocks and
// evaluates examples/recording-rules.yml and alerts.yml (group intervals at 1 s) as it would live.

const EXAMPLES = join(ROOT, 'examples');
const FAMILIES = ['nvidia_gpu_holder_info', 'nvidia_gpu_holders', 'nvidia_gpu_power_draw_watts', 'nvidia_gpu_utilization_ratio'];
const MINUTES = 96;
const BUSY_MINUTES = 30;
const JOBS = ['7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6', 'train.service', '4242'];

/** The stand-in's capture at one moment: GPU 0's utilization and power, and only GPU 0's processes. */
async function moment(cap: string, recorded: { gpu: string; apps: string }, util: number, watts: number): Promise<void> {
  const [header, ...rows] = recorded.gpu.trimEnd().split('\n');
  const names = header!.split(', ');
  const lines = rows.map((row, g) => {
    const cells = row.split(', ');
    cells[names.indexOf('utilization.gpu [%]')] = `${g === 0 ? util : 0} %`;
    cells[names.indexOf('power.draw [W]')] = `${g === 0 ? watts : 60}.00 W`;
    return cells.join(', ');
  });
  await writeFile(join(cap, 'query-gpu.csv'), `${[header, ...lines].join('\n')}\n`);
  const apps = recorded.apps.split('\n').filter((line) => !line.includes('00000000:00:07.0'));
  await writeFile(join(cap, 'query-compute-apps.csv'), apps.join('\n'));
}

/** node_exporter's answer -> our four families' sample lines. */
const ours = (text: string) => text.split('\n').filter((line) => FAMILIES.some((f) => line.startsWith(`${f}{`)));

/** Sample lines of two moments -> OpenMetrics for MINUTES minutes ending at `end` (s), with an instance label. */
function openMetrics(busy: string[], idle: string[], end: number): string {
  const out: string[] = [];
  for (const family of FAMILIES) {
    out.push(`# TYPE ${family} gauge`);
    for (let m = 0; m < MINUTES; m++) {
      const time = end - (MINUTES - 1 - m) * 60;
      for (const line of m < BUSY_MINUTES ? busy : idle)
        if (line.startsWith(`${family}{`)) out.push(`${line.replace('}', ',instance="gpu-host"}')} ${time}`);
    }
  }
  return `${out.join('\n')}\n# EOF\n`;
}

describe('per-job rules and GpuHeldIdle on a real Prometheus, over node_exporter samples backfilled with promtool tsdb', () => {
  let dir: string;
  const stops: (() => Promise<void>)[] = [];
  let query: (expr: string, time?: number) => Promise<Sample[]>;
  let end = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-jobs-rules-'));
    const host = await attributionHost(join(dir, 'host'));
    const cap = join(dir, 'capture');
    await cp(capture('h200x2__580.159.04__linux-load'), cap, { recursive: true });
    const recorded = {
      gpu: await readFile(join(cap, 'query-gpu.csv'), 'utf8'),
      apps: await readFile(join(cap, 'query-compute-apps.csv'), 'utf8'),
    };
    const exporter = await startNodeExporter(join(dir, 'textfile'));
    stops.push(exporter.stop);
    const scrapeAt = async (util: number, watts: number) => {
      await moment(cap, recorded, util, watts);
      const args = ['collect', '--textfile-dir', madeDir(join(dir, 'textfile')), '--state-dir', join(dir, 'state'), '--host-root', host];
      const result = await runCli([...args, '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: cap });
      expect([result.exitCode, result.stderr]).toEqual([0, '']);
      return ours(await exporter.scrape());
    };
    const busy = await scrapeAt(80, 300);
    const idle = await scrapeAt(0, 100);
    expect(busy.filter((line) => line.startsWith('nvidia_gpu_holder_info{'))).toHaveLength(3);

    end = Math.floor(Date.now() / 60_000) * 60;
    await writeFile(join(dir, 'samples.om'), openMetrics(busy, idle, end));
    const backfill = await execa('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', join(dir, 'samples.om'), join(dir, 'tsdb')], {
      reject: false,
    });
    expect([backfill.exitCode, backfill.stderr]).toEqual([0, '']);

    const rules = [];
    for (const file of ['alerts.yml', 'recording-rules.yml']) {
      const text = await readFile(join(EXAMPLES, file), 'utf8');
      await writeFile(join(dir, file), text.replaceAll(/^(\s+interval:) \S+$/gm, '$1 1s'));
      rules.push(join(dir, file));
    }
    const prometheus = await startPrometheus(dir, { global: { evaluation_interval: '1s' }, rule_files: rules, scrape_configs: [] });
    stops.push(prometheus.stop);
    query = prometheus.query;
    const ready = await eventually(async () => {
      const recorded = await query('instance_job:nvidia_gpu_energy_joules:sum1h').catch(() => []);
      const alerts = await query('ALERTS{alertname="GpuHeldIdle"}').catch(() => []);
      return recorded.length === 3 && alerts.length === 3;
    }, 90_000);
    expect(ready, prometheus.log()).toBe(true);
  }, 180_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const byJob = (samples: Sample[]) => Object.fromEntries(samples.map((s) => [s.metric.job_id, Number(s.value[1])]));

  it('the backfill is what node_exporter served: one info series per job on GPU 0, none on GPU 1, the GPU series not multiplied', async () => {
    const info = await query('nvidia_gpu_holder_info', end);
    expect(info.map((s) => `${s.metric.gpu} ${s.metric.job_kind} ${s.metric.job_id} ${s.metric.user ?? ''}`).sort()).toEqual([
      '0 pod 7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6 alice',
      '0 slurm 4242 1234',
      '0 unit train.service ',
    ]);
    expect((await query('nvidia_gpu_utilization_ratio', end)).length).toBe(2);
  });

  it('GPUs held, power share, and over the last hour (all of it idle at 100 W on GPU 0) 1 GPU-hour and 120 000 J per job', async () => {
    const everyJob = (value: number) => Object.fromEntries(JOBS.map((job) => [job, value]));
    expect(byJob(await query('instance_job:nvidia_gpu_job_gpus:count'))).toEqual(everyJob(1));
    const share = byJob(await query('instance_job:nvidia_gpu_power_draw_watts:share'));
    for (const job of JOBS) expect(share[job]).toBeCloseTo(100 / 3, 9);
    expect(byJob(await query('instance_job:nvidia_gpu_hours:sum1h'))).toEqual(everyJob(1));
    const energy = byJob(await query('instance_job:nvidia_gpu_energy_joules:sum1h'));
    for (const job of JOBS) expect(energy[job]).toBeCloseTo(120_000, 6);
  });

  it('the dashboard row "Jobs on this host" answers with the jobs on GPU 0', async () => {
    const dashboard = JSON.parse(await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { type: string; title: string; gridPos: { y: number }; targets?: { expr: string }[] }[];
    };
    const row = dashboard.panels.find((p) => p.type === 'row' && p.title === 'Jobs on this host')!;
    // Down to the next row (the jobs that reserved GPUs: test/deploy/examples.test.ts).
    const next = Math.min(...dashboard.panels.filter((p) => p.type === 'row' && p.gridPos.y > row.gridPos.y).map((p) => p.gridPos.y));
    const below = dashboard.panels.filter((p) => p.gridPos.y > row.gridPos.y && p.gridPos.y < next && p.type !== 'row');
    expect(below.length).toBeGreaterThanOrEqual(3);
    for (const panel of below)
      for (const target of panel.targets ?? []) {
        const samples = await query(target.expr.replaceAll('$instance', '.*').replaceAll('$gpu', '.*'), end);
        expect([panel.title, samples.map((s) => s.metric.job_id).sort()]).toEqual([panel.title, [...JOBS].sort()]);
      }
  });

  it('GpuHeldIdle names the three jobs on idle GPU 0, not the idle and empty GPU 1; its condition has held since the load stopped', async () => {
    const alerts = await query('ALERTS{alertname="GpuHeldIdle"}');
    expect(alerts.map((a) => `${a.metric.gpu} ${a.metric.job_id}`).sort()).toEqual(JOBS.map((job) => `0 ${job}`).sort());
    // The rule engine starts its `for: 30m` at its first evaluation (promtool's test covers the wait);
    // the condition itself must hold from 5 minutes after the load stopped on, and not before.
    const expr = (await readFile(join(EXAMPLES, 'alerts.yml'), 'utf8')).match(/alert: GpuHeldIdle\n\s+expr: \|\n([\s\S]*?)\n\s+for:/)![1]!;
    const loadStopped = end - (MINUTES - BUSY_MINUTES) * 60;
    expect((await query(expr, loadStopped + 3 * 60)).length).toBe(0);
    for (const minutes of [6, 30, 60]) expect([minutes, (await query(expr, loadStopped + minutes * 60)).length]).toEqual([minutes, 3]);
  });
});
