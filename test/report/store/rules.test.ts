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

  // Which questions read which rule, and the subquery each replaces.
  const idleRules = ['gpu_textfile:idle_held:bool', 'gpu_textfile:holder_idle:bool'];
  const holderRules = [
    'gpu_textfile:free:bool',
    'gpu_textfile:holder_utilization:ratio',
    'gpu_textfile:holder_power:watts',
    'gpu_textfile:free_utilization:ratio',
    'gpu_textfile:free_power:watts',
    'gpu_textfile:free_idle:bool',
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
  ];

  it.each([
    [[], 'none: every question re-samples'],
    [['gpu_textfile:idle_held:bool'], "the first file's (idle) set only: the holder questions re-sample"],
    [['gpu_textfile:idle_held:bool', 'gpu_textfile:free:bool'], 'both sets: no subquery at all'],
  ])('recorded series in the store: %j: %s', { timeout: 60_000 }, async (present: string[]) => {
    const empty = emptyStore();
    const { url, seen } = await fakeStore((path, form, req, res) =>
      // The report asks the series API for our series, then for the recorded ones.
      path.endsWith('/series') && form.getAll('match[]').some((m) => m.startsWith('gpu_textfile:'))
        ? json(res, 200, { status: 'success', data: present.map((name) => ({ __name__: name, instance: 'h1' })) })
        : empty(path, form, req, res),
    );
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
});
