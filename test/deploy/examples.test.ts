import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../src/fields.js';
import { metricCatalog } from '../../src/metrics-catalog.js';
import { HARDWARE_XIDS } from '../../src/xid/codes.js';
import { ROOT } from '../helpers.js';

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

  it('rules and the dashboard use only metrics the collector emits', async () => {
    const emitted = new Set(metricCatalog().map((m) => m.name));
    const dashboard = JSON.parse(await readFile(join(EXAMPLES, 'grafana-dashboard.json'), 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
      templating: unknown;
    };
    const texts = {
      'alerts.yml': await readFile(join(EXAMPLES, 'alerts.yml'), 'utf8'),
      'recording-rules.yml': await readFile(join(EXAMPLES, 'recording-rules.yml'), 'utf8'),
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
});
