import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../../support/helpers.js';
import { emptyStore, fakeStore, json } from './fake-store.js';

// The recording rules shipped for the report (examples/prometheus/): promtool takes them and their
// unit tests, and the report reads them instead of its subqueries when the store has them.

const DIR = join(ROOT, 'examples/prometheus');

describe('examples/prometheus/gpu-textfile-report.rules.yml', () => {
  it('passes promtool check rules and its unit tests', { timeout: 60_000 }, async () => {
    const check = await execa('promtool', ['check', 'rules', 'gpu-textfile-report.rules.yml'], { cwd: DIR, reject: false });
    expect(check.exitCode, check.stdout + check.stderr).toBe(0);
    const test = await execa('promtool', ['test', 'rules', 'gpu-textfile-report.rules.test.yml'], { cwd: DIR, reject: false });
    expect(test.exitCode, test.stdout + test.stderr).toBe(0);
  });

  /**
   * A store with one host's series and no samples, whose rule sets named by their markers (`present`)
   * were loaded at `loaded`: the series API names them, and a probe of a window after it finds a sample.
   */
  const storeWithRules = (present: string[], loaded: number) => {
    const empty = emptyStore();
    return fakeStore((path, form, req, res) => {
      // The report asks the series API for our series, then for the recorded ones.
      if (path.endsWith('/series') && form.getAll('match[]').some((m) => m.startsWith('gpu_textfile:')))
        return json(res, 200, { status: 'success', data: present.map((name) => ({ __name__: name, instance: 'h1' })) });
      const probed = /^count\(count_over_time\((gpu_textfile:[a-z_]+:bool)\{/.exec(form.get('query') ?? '');
      if (path.endsWith('/query') && probed) {
        const time = Number(form.get('time')) * 1000;
        const found = present.includes(probed[1]!) && time >= loaded;
        const result = found ? [{ metric: {}, value: [time / 1000, '1'] }] : [];
        return json(res, 200, { status: 'success', data: { resultType: 'vector', result } });
      }
      return empty(path, form, req, res);
    });
  };

  // Which questions read which rule, and the subquery each replaces.
  const idleRules = ['gpu_textfile:idle_held:bool', 'gpu_textfile:holder_idle:bool'];
  const holderRules = [
    'gpu_textfile:free:bool',
    'gpu_textfile:holder_utilization:ratio',
    'gpu_textfile:holder_power:watts',
    'gpu_textfile:free_utilization:ratio',
    'gpu_textfile:free_power:watts',
    'gpu_textfile:free_idle:bool',
    'gpu_textfile:reservation_idle:bool',
  ];
  const idleSubqueries = [
    '(nvidia_gpu_utilization_ratio < bool 0.02) * (nvidia_gpu_memory_used_bytes',
    'group_left() (nvidia_gpu_utilization_ratio < bool 0.02)',
  ];
  const holderSubqueries = [
    'nvidia_gpu_holders == bool 0',
    'group_left() nvidia_gpu_utilization_ratio)[',
    'group_left() (nvidia_gpu_power_draw_watts /',
    'nvidia_gpu_utilization_ratio and on(',
    'nvidia_gpu_power_draw_watts and on(',
    '(nvidia_gpu_utilization_ratio < bool 0.02) and on(',
    '1 - ((last_over_time(nvidia_gpu_reservation_info',
  ];

  it.each([
    [[], 'none: every question re-samples'],
    [['gpu_textfile:idle_held:bool'], "the first file's (idle) set only: the holder questions re-sample"],
    [['gpu_textfile:idle_held:bool', 'gpu_textfile:free:bool'], 'both sets: no subquery at all'],
  ])('recorded series in the store: %j: %s', { timeout: 60_000 }, async (present: string[]) => {
    const { url, seen } = await storeWithRules(present, Date.parse('2026-10-01'));
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01', '--until', '2026-11-02']);
    expect(run.exitCode, run.stderr).toBe(0);
    const queries = seen.map((s) => s.form.get('query') ?? '').filter((q) => q !== '');
    const asked = (part: string) => queries.some((q) => q.includes(part));
    const idle = present.includes('gpu_textfile:idle_held:bool');
    const holders = present.includes('gpu_textfile:free:bool');
    for (const rule of idleRules) expect(asked(`avg_over_time(${rule}[`), rule).toBe(idle);
    for (const rule of holderRules) expect(asked(`avg_over_time(${rule}[`), rule).toBe(holders);
    for (const subquery of idleSubqueries) expect(asked(subquery), subquery).toBe(!idle);
    for (const subquery of holderSubqueries) expect(asked(subquery), subquery).toBe(!holders);
    // Where a rule answers, no subquery is left (`[R:S]`).
    expect(queries.some((q) => /\[\d+ms:\d+ms\]/.test(q))).toBe(!(idle && holders));
  });

  it('rules loaded in the middle of the range: the hours before are asked with subqueries, those after read the rules', {
    timeout: 60_000,
  }, async () => {
    // Loaded at 09:20 UTC: the probe finds them from the window ending 10:00; they are read from 10:00.
    const loaded = Date.parse('2026-11-01T09:20:00Z');
    const { url, seen } = await storeWithRules(['gpu_textfile:idle_held:bool', 'gpu_textfile:free:bool'], loaded);
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01T00:00:00Z', '--until', '2026-11-02T00:00:00Z']);
    expect(run.exitCode, run.stderr).toBe(0);
    const ranges = seen
      .filter((s) => s.path.endsWith('/query_range'))
      .map((s) => ({ query: s.form.get('query')!, start: Number(s.form.get('start')) * 1000 }));
    const idleHeld = ranges.filter(
      (r) => r.query.includes('gpu_textfile:idle_held:bool') || r.query.includes('(nvidia_gpu_utilization_ratio < bool 0.02) * ('),
    );
    // Two chunks of the idle-held question: 00:00-10:00 re-sampled, 10:00-24:00 from the rule.
    expect(idleHeld.map((r) => [new Date(r.start).toISOString(), r.query.includes('gpu_textfile:')]).sort()).toEqual([
      ['2026-11-01T00:59:59.999Z', false],
      ['2026-11-01T10:59:59.999Z', true],
    ]);
    for (const rule of [...idleRules, ...holderRules])
      expect(
        ranges.some((r) => r.query.includes(rule) && r.start < Date.parse('2026-11-01T10:00:00Z')),
        rule,
      ).toBe(false);
  });
});
