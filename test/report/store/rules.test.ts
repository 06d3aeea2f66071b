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

  it.each([
    [true, 'the recorded series, no subquery'],
    [false, 'subqueries re-sampling at the collection interval'],
  ])('recorded series present: %s: the idle questions read %s', { timeout: 60_000 }, async (recorded) => {
    const empty = emptyStore();
    const { url, seen } = await fakeStore((path, form, req, res) =>
      // The report asks the series API for our series, then for the recorded ones.
      path.endsWith('/series') && form.getAll('match[]').some((m) => m.startsWith('gpu_textfile:'))
        ? json(res, 200, { status: 'success', data: recorded ? [{ __name__: 'gpu_textfile:idle_held:bool', instance: 'h1' }] : [] })
        : empty(path, form, req, res),
    );
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01', '--until', '2026-11-02']);
    expect(run.exitCode, run.stderr).toBe(0);
    const queries = seen.map((s) => s.form.get('query') ?? '').filter((q) => q !== '');
    const idle = queries.filter((q) => q.includes('< bool 0.02') || q.includes('gpu_textfile:'));
    expect(idle.length).toBeGreaterThan(0);
    const usesRecorded = (q: string) => q.includes('gpu_textfile:idle_held:bool') || q.includes('gpu_textfile:holder_idle:bool');
    expect(queries.filter(usesRecorded).length > 0).toBe(recorded);
    // The GPU's idle share and the job's: from the rules when there, else re-sampled.
    expect(queries.some((q) => q.includes('(nvidia_gpu_utilization_ratio < bool 0.02) * (nvidia_gpu_memory_used_bytes'))).toBe(!recorded);
  });
});
