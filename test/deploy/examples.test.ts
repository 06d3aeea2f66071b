import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILURE_REASONS } from '../../src/collection.js';
import { FIELDS } from '../../src/fields/fields.js';
import { metricCatalog } from '../../src/metrics/metrics-catalog.js';
import { HARDWARE_XIDS } from '../../src/xid/codes.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { startPrometheus, type PromSample as Sample } from '../support/prometheus.js';
import { capture, eventually, FAKE_SMI, ROOT, runCli, tempDir, madeDir } from '../support/helpers.js';

const EXAMPLES = join(ROOT, 'examples');
const promtool = (...args: string[]) => execa('promtool', args, { cwd: EXAMPLES, reject: false });

/** Names of our metrics used in a text: nvidia_gpu_* words, not recording rules (they contain ':'). */
const usedMetrics = (text: string) => new Set([...text.matchAll(/(?<![:\w])nvidia_gpu_[a-z_]+(?![\w:])/g)].map((m) => m[0]));

describe('examples', () => {
  it('promtool check rules and config pass', async () => {
    const rules = await promtool('check', 'rules', 'alerts.yml', 'recording-rules.yml');
    expect([rules.exitCode, rules.stderr]).toEqual([0, '']);
    const config = await promtool('check', 'config', 'prometheus.yml');
    expect([config.exitCode, config.stderr]).toEqual([0, '']);
  });

  it('promtool test rules: every alert and recording rule fires where it should and only there', async () => {
    const result = await promtool('test', 'rules', 'tests/alerts.test.yml', 'tests/recording-rules.test.yml');
    expect({ exit: result.exitCode, out: result.stdout + result.stderr }).toMatchObject({ exit: 0 });
    const alerts = [...(await readFile(join(EXAMPLES, 'alerts.yml'), 'utf8')).matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    const tests = await readFile(join(EXAMPLES, 'tests/alerts.test.yml'), 'utf8');
    for (const alert of alerts) expect([alert, tests.includes(`alertname: ${alert}`)]).toEqual([alert, true]);
    const records = [...(await readFile(join(EXAMPLES, 'recording-rules.yml'), 'utf8')).matchAll(/- record: (\S+)/g)].map((m) => m[1]);
    const recordingTests = await readFile(join(EXAMPLES, 'tests/recording-rules.test.yml'), 'utf8');
    for (const record of records) expect([record, recordingTests.includes(`expr: ${record}`)]).toEqual([record, true]);
  });

  it('the Xid alert watches the Xids the collector starts at 0 (src/xid/codes.ts), so it sees their first error', async () => {
    const alerts = await readFile(join(EXAMPLES, 'alerts.yml'), 'utf8');
    const watched = /nvidia_gpu_xid_errors_total\{xid=~"([\d|]+)"\}/.exec(alerts)?.[1]?.split('|').map(Number);
    expect(watched).toEqual([...HARDWARE_XIDS]);
  });

  it('every collector_error reason the rules and the dashboard name is one the collector writes (src/collection.ts)', async () => {
    const texts = await Promise.all(
      ['alerts.yml', 'recording-rules.yml', 'grafana-dashboard.json'].map((file) => readFile(join(EXAMPLES, file), 'utf8')),
    );
    // reason="x" or reason=~"x|y" on nvidia_gpu_collector_error: a renamed reason would silently never match.
    const named = texts.flatMap((text) =>
      [...text.matchAll(/nvidia_gpu_collector_error\{[^}]*reason=~?\\?"([^"\\]+)\\?"/g)].flatMap((m) => (m[1] ?? '').split('|')),
    );
    expect(named).toContain('collector_stopped');
    expect(named.filter((reason) => !(reason in FAILURE_REASONS))).toEqual([]);
  });

  it('rules and the dashboard use only metrics the collector emits', async () => {
    const emitted = new Set(metricCatalog().map((m) => m.name));
    const dashboard = JSON.parse(await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
      templating: unknown;
    };
    const texts = {
      'alerts.yml': await readFile(join(EXAMPLES, 'alerts.yml'), 'utf8'),
      'recording-rules.yml': await readFile(join(EXAMPLES, 'recording-rules.yml'), 'utf8'),
      'prometheus/gpu-textfile-report.rules.yml': await readFile(join(EXAMPLES, 'prometheus/gpu-textfile-report.rules.yml'), 'utf8'),
      'prometheus/gpu-textfile-report-5m.rules.yml': await readFile(join(EXAMPLES, 'prometheus/gpu-textfile-report-5m.rules.yml'), 'utf8'),
      'grafana-dashboard.json': [
        ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
        JSON.stringify(dashboard.templating),
      ].join('\n'),
    };
    for (const [file, text] of Object.entries(texts)) {
      const used = usedMetrics(text);
      expect(used.size).toBeGreaterThan(0);
      expect([file, [...used].filter((name) => !emitted.has(name))]).toEqual([file, []]);
    }
  });

  it('the dashboard covers utilization, memory, power, temperature, clocks with slowdown reasons, processes and collector health', async () => {
    const text = await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8');
    for (const name of [
      'nvidia_gpu_utilization_ratio',
      'nvidia_gpu_memory_used_bytes',
      'nvidia_gpu_power_draw_watts',
      'nvidia_gpu_temperature_celsius',
      'nvidia_gpu_sm_clock_hertz',
      'nvidia_gpu_clocks_event_reason_active',
      'nvidia_gpu_process_memory_used_bytes',
      'nvidia_gpu_collector_success',
    ])
      expect([name, text.includes(name)]).toEqual([name, true]);
  });

  // A panel on a field that is off by default shows nothing on a fresh install: it must say how to turn it on.
  it('every panel on a --slow-fields metric says so', async () => {
    const slow = new Set(FIELDS.filter((field) => field.slow && field.metric).map((field) => field.metric));
    const dashboard = JSON.parse(await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; description?: string; targets?: { expr: string }[] }[];
    };
    const panels = dashboard.panels.filter((panel) =>
      (panel.targets ?? []).some((target) => [...usedMetrics(target.expr)].some((name) => slow.has(name))),
    );
    expect(panels.length).toBeGreaterThan(0);
    for (const panel of panels)
      expect([panel.title, panel.description ?? '']).toEqual([panel.title, expect.stringContaining('--slow-fields')]);
  });

  // The attribution panels, evaluated by promtool on series as gpu-textfile writes them (a label only
  // some processes have is "" on the others) and kube-state-metrics' kube_pod_info from two replicas.
  it('the dashboard sums GPU memory by container, unit, Slurm job and pod, pods named by kube_pod_info{uid}', async () => {
    const dashboard = JSON.parse(await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets?: { refId: string; expr: string }[] }[];
    };
    const expr = (title: string, refId: string) => {
      const target = dashboard.panels.find((panel) => panel.title === title)?.targets?.find((t) => t.refId === refId);
      return target?.expr.replaceAll('$instance', '.*').replaceAll('$gpu', '.*');
    };
    const C1 = 'c1'.repeat(32);
    const POD = '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6';
    const series = (labels: string, value: number) => ({
      series: `nvidia_gpu_process_memory_used_bytes{gpu="0", uuid="GPU-0", process_name="python3", user="u", ${labels}}`,
      values: `${value}x3`,
    });
    const byUnit = 'GPU memory by container, systemd unit and Slurm job';
    const byPod = 'GPU memory by Kubernetes pod';
    const tests = [
      [expr(byUnit, 'A'), [[`{instance="a", container_id="${C1}", container="${C1.slice(0, 12)}"}`, 150]]],
      [expr(byUnit, 'B'), [['{instance="a", systemd_unit="train.service"}', 30]]],
      [expr(byUnit, 'C'), [['{slurm_job="4242"}', 15]]],
      [expr(byPod, 'A'), [['{namespace="ml", pod="trainer-0"}', 150]]],
      [expr(byPod, 'B'), [[`{pod_uid="${POD}"}`, 150]]],
    ] as const;
    for (const [query] of tests) expect(query).toBeDefined();
    const file = {
      rule_files: [],
      tests: [
        {
          interval: '1m',
          input_series: [
            series(`instance="a", pid="1", container_id="${C1}", pod_uid="${POD}", systemd_unit="", slurm_job=""`, 100),
            series(`instance="a", pid="2", container_id="${C1}", pod_uid="${POD}", systemd_unit="", slurm_job=""`, 50),
            series('instance="a", pid="3", container_id="", pod_uid="", systemd_unit="train.service", slurm_job=""', 30),
            series('instance="b", pid="4", slurm_job="4242"', 7),
            series('instance="c", pid="4", slurm_job="4242"', 8),
            series('instance="c", pid="5"', 1),
            ...['ksm-0', 'ksm-1'].map((ksm) => ({
              series: `kube_pod_info{instance="${ksm}", namespace="ml", pod="trainer-0", uid="${POD}", node="a"}`,
              values: '1x3',
            })),
          ],
          promql_expr_test: tests.map(([query, samples]) => ({
            expr: query,
            eval_time: '2m',
            exp_samples: samples.map(([labels, value]) => ({ labels, value })),
          })),
        },
      ],
    };
    const dir = await tempDir();
    // JSON is YAML: promtool reads the test file as written.
    await writeFile(join(dir, 'dashboard.test.yml'), JSON.stringify(file));
    const result = await execa('promtool', ['test', 'rules', join(dir, 'dashboard.test.yml')], { reject: false });
    expect({ exit: result.exitCode, out: result.stdout + result.stderr }).toMatchObject({ exit: 0 });
  });
});

/**
 * The stack as an operator runs it: a default install's textfile (the built program, the stand-in
 * nvidia-smi, no option but the directories) served by a real node_exporter, beside a node_exporter
 * without gpu-textfile; a real Prometheus scraping both under examples/prometheus.yml's job names, with
 * examples/'s rules loaded (evaluated every second instead of every minute).
 */
describe('the examples on a real Prometheus scraping a default install', () => {
  let dir: string;
  const stops: (() => Promise<void>)[] = [];
  let query: (expr: string) => Promise<Sample[]>;
  let withGpus = '';
  let without = '';
  let jobs: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-examples-'));
    const collected = await runCli(
      ['collect', '--textfile-dir', madeDir(join(dir, 'textfile')), '--state-dir', join(dir, 'state'), '--nvidia-smi', FAKE_SMI],
      { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load') },
    );
    expect([collected.exitCode, collected.stderr]).toEqual([0, '']);
    await mkdir(join(dir, 'empty'));
    const gpuHost = await startNodeExporter(join(dir, 'textfile'));
    stops.push(gpuHost.stop);
    const bareHost = await startNodeExporter(join(dir, 'empty'));
    stops.push(bareHost.stop);
    withGpus = new URL(gpuHost.url).host;
    without = new URL(bareHost.url).host;

    const rules = [];
    for (const file of ['alerts.yml', 'recording-rules.yml']) {
      const text = await readFile(join(EXAMPLES, file), 'utf8');
      await writeFile(join(dir, file), text.replaceAll(/^(\s+interval:) \S+$/gm, '$1 1s'));
      rules.push(join(dir, file));
    }
    jobs = [...(await readFile(join(EXAMPLES, 'prometheus.yml'), 'utf8')).matchAll(/job_name:\s*(\S+)/g)].map((m) => m[1]!);
    const config = {
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: rules,
      scrape_configs: jobs.map((job) => ({ job_name: job, static_configs: [{ targets: [withGpus, without] }] })),
    };
    const prometheus = await startPrometheus(dir, config);
    stops.push(prometheus.stop);
    query = prometheus.query;
    // Three scrapes of every target (a rate needs two), and the rules evaluated since.
    const ready = await eventually(async () => {
      const scrapes = await query('count_over_time(up[1m]) >= 3').catch(() => []);
      const recorded = await query('instance_gpu:nvidia_gpu_utilization_ratio:avg1h').catch(() => []);
      return scrapes.length === 2 * jobs.length && recorded.length > 0;
    }, 90_000);
    expect(ready, prometheus.log()).toBe(true);
  }, 150_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('GpuTextfileMissing goes pending for a node_exporter without nvidia_gpu.prom under every job of prometheus.yml, and only there', async () => {
    expect(jobs.length).toBeGreaterThan(0);
    const expected = jobs.map((job) => `${job} ${without}`).sort();
    let got: string[] = [];
    // Waited for, not assumed: the alert rules may not have run since the first scrape yet.
    await eventually(async () => {
      got = (await query('ALERTS{alertname="GpuTextfileMissing"}')).map((s) => `${s.metric.job} ${s.metric.instance}`).sort();
      return JSON.stringify(got) === JSON.stringify(expected);
    }, 30_000);
    expect(got).toEqual(expected);
  });

  // Panels that show nothing on a healthy default host, by design: each says a failure or a label
  // that only a container, unit, Slurm job or Kubernetes pod gives.
  const EMPTY_WHEN_HEALTHY = new Map([
    ['Collector errors', 'rows only for a failed collection'],
    ['Field errors', 'rows only for a field the driver could not read'],
    ['Xid errors (10 min), by GPU and code (see docs/metrics.md#xid-errors)', 'lines only after an Xid'],
    ['GPU memory by container, systemd unit and Slurm job', 'processes in no container, unit or job'],
    ['GPU memory by Kubernetes pod', 'no pod, no kube-state-metrics'],
    ['Jobs that reserved each GPU', 'no Slurm job, pod or container reserved a GPU'],
    ['GPUs reserved and unused, by job', 'no Slurm job, pod or container reserved a GPU'],
  ]);

  it('every dashboard panel shows data from a default install, but those that speak only of failures or attribution', async () => {
    const dashboard = JSON.parse(await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { title: string; targets?: { expr: string }[] }[];
    };
    const panels = dashboard.panels.filter((panel) => (panel.targets ?? []).length > 0);
    expect(panels.map((p) => p.title)).toEqual(expect.arrayContaining([...EMPTY_WHEN_HEALTHY.keys()]));
    const empty: string[] = [];
    for (const panel of panels) {
      const results = await Promise.all(
        panel.targets!.map((t) =>
          query(t.expr.replaceAll('$instance', '.*').replaceAll('$gpu', '.*').replaceAll('$__rate_interval', '1m')),
        ),
      );
      if (results.every((r) => r.length === 0)) empty.push(panel.title);
    }
    expect(empty.sort()).toEqual([...EMPTY_WHEN_HEALTHY.keys()].sort());
  });

  // A rule's level (before the first ':') names the labels it keeps: instance_gpu keeps instance and gpu.
  it('every recording rule over the GPUs answers, carrying the labels its name promises', async () => {
    const text = await readFile(join(EXAMPLES, 'recording-rules.yml'), 'utf8');
    const gpuGroup = text.slice(0, text.indexOf('- name: gpu-textfile-attribution'));
    const records = [...gpuGroup.matchAll(/- record: (\S+)/g)].map((m) => m[1]!);
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      const samples = await query(record);
      const promised = record.split(':')[0]!.split('_');
      expect([record, samples.length > 0]).toEqual([record, true]);
      for (const s of samples) expect([record, promised.filter((label) => !s.metric[label])]).toEqual([record, []]);
    }
  });
});
