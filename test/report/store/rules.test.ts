import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { FIVE_MINUTE } from '../../../src/report/store/queries.js';
import { ROOT, runCli } from '../../support/helpers.js';
import { emptyStore, fakeStore, json } from './fake-store.js';

// The recording rules shipped for the report (examples/prometheus/): promtool takes them and their
// unit tests, and the report reads them instead of its subqueries when the store has them; the
// five-minute set instead of every question's samples.

const DIR = join(ROOT, 'examples/prometheus');
const HOUR = 3_600_000;

describe('examples/prometheus/gpu-textfile-report.rules.yml and gpu-textfile-report-5m.rules.yml', () => {
  it.each(['gpu-textfile-report', 'gpu-textfile-report-5m'])(
    '%s passes promtool check rules and its unit tests',
    { timeout: 60_000 },
    async (name) => {
      const check = await execa('promtool', ['check', 'rules', `${name}.rules.yml`], { cwd: DIR, reject: false });
      expect(check.exitCode, check.stdout + check.stderr).toBe(0);
      const test = await execa('promtool', ['test', 'rules', `${name}.rules.test.yml`], { cwd: DIR, reject: false });
      expect(test.exitCode, test.stdout + test.stderr).toBe(0);
    },
  );

  it('the five-minute file records every rule the report reads of it, and nothing else', async () => {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(join(DIR, 'gpu-textfile-report-5m.rules.yml'), 'utf8');
    const recorded = [...text.matchAll(/^\s+- record: (\S+)$/gm)].map((m) => m[1]).sort();
    expect(recorded).toEqual(Object.values(FIVE_MINUTE).sort());
  });

  /**
   * A store with one host's series and no samples, whose rule sets named by their markers (`present`)
   * were loaded at `loaded` (or as `loadedAt` has it, by marker) and were missing again in `hole` (a gap
   * backfilled after): the series API names them, and a set's coverage of an hour is the share of it
   * they ran in.
   */
  const storeWithRules = (
    present: string[],
    loaded: number,
    hole?: { from: number; to: number },
    loadedAt: Record<string, number> = {},
  ) => {
    const empty = emptyStore();
    const ran = (marker: string, from: number, to: number) =>
      Math.max(0, to - Math.max(from, loadedAt[marker] ?? loaded)) -
      (hole ? Math.max(0, Math.min(to, hole.to) - Math.max(from, hole.from)) : 0);
    return fakeStore((path, form, req, res) => {
      // The report asks the series API for our series, then for the recorded ones.
      if (path.endsWith('/series') && form.getAll('match[]').some((m) => m.startsWith('gpu_textfile:')))
        return json(res, 200, { status: 'success', data: present.map((name) => ({ __name__: name, instance: 'h1' })) });
      const marker = /^\(sum by\(instance,task\) \((?:count|sum)_over_time\((gpu_textfile:[a-z_]+:[a-z_0-9]+)\{/.exec(
        form.get('query') ?? '',
      );
      if (path.endsWith('/query_range') && marker) {
        expect(present).toContain(marker[1]);
        const [start, end, step] = ['start', 'end', 'step'].map((k) => Number(form.get(k)) * 1000) as [number, number, number];
        const values: [number, string][] = [];
        for (let t = start; t <= end; t += step)
          if (ran(marker[1]!, t - HOUR, t) > 0) values.push([t / 1000, String(ran(marker[1]!, t - HOUR, t) / HOUR)]);
        return json(res, 200, { status: 'success', data: { resultType: 'matrix', result: [{ metric: { instance: 'h1' }, values }] } });
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
  ];
  const reservationRules = ['gpu_textfile:reservation_idle:bool'];
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
  const reservationSubqueries = ['1 - ((last_over_time(nvidia_gpu_reservation_info'];
  const MARKERS = {
    idle: 'gpu_textfile:idle_held:bool',
    holders: 'gpu_textfile:free:bool',
    reservations: 'gpu_textfile:reservations_read:bool',
    fiveMinute: FIVE_MINUTE.successCount,
  };
  const fiveMinuteRules = Object.values(FIVE_MINUTE);
  /** The sets evaluated at every collection (gpu-textfile-report.rules.yml). */
  const EVERY_COLLECTION = [MARKERS.idle, MARKERS.holders, MARKERS.reservations];

  it.each([
    [[], 'none: every question re-samples'],
    [[MARKERS.idle], "the first file's (idle) set only: the holder and reservation questions re-sample"],
    [
      [MARKERS.idle, MARKERS.holders],
      'the idle and holder sets (a file with the reservation rule but not its marker): reservations re-sample',
    ],
    [[MARKERS.idle, MARKERS.holders, MARKERS.reservations], 'all three sets: no subquery at all'],
    [[MARKERS.fiveMinute], 'the five-minute set alone: every question from it but in the first and last hours (subqueries)'],
    [Object.values(MARKERS), 'all four: the five-minute set answers but in the first and last hours, which the others answer'],
  ])('recorded series in the store: %j: %s', { timeout: 60_000 }, async (present: string[]) => {
    const { url, seen } = await storeWithRules(present, Date.parse('2026-10-01'));
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01', '--until', '2026-11-02']);
    expect(run.exitCode, run.stderr).toBe(0);
    const queries = seen.map((s) => s.form.get('query') ?? '').filter((q) => q !== '');
    const asked = (part: string) => queries.some((q) => q.includes(part));
    const five = present.includes(MARKERS.fiveMinute);
    const sets = [
      { on: present.includes(MARKERS.idle), rules: idleRules, subqueries: idleSubqueries },
      { on: present.includes(MARKERS.holders), rules: holderRules, subqueries: holderSubqueries },
      { on: present.includes(MARKERS.reservations), rules: reservationRules, subqueries: reservationSubqueries },
    ];
    // Each set's rules where it is there, its subqueries where not: over the whole day, or, where the
    // five-minute set answers, over the day's first and last hours only (fiveMinuteWindows).
    for (const set of sets) {
      for (const rule of set.rules) expect(asked(`avg_over_time(${rule}[`), rule).toBe(set.on);
      for (const subquery of set.subqueries) expect(asked(subquery), subquery).toBe(!set.on);
    }
    for (const rule of fiveMinuteRules) expect(asked(`_over_time(${rule}{`) || asked(`_over_time(${rule}[`), rule).toBe(five);
    for (const marker of [MARKERS.idle, MARKERS.holders, MARKERS.reservations])
      expect(asked(`(count_over_time(${marker}{`), marker).toBe(present.includes(marker));
    // Where a rule answers, no subquery is left (`[R:S]`).
    expect(queries.some((q) => /\[\d+ms:\d+ms\]/.test(q))).toBe(!sets.every((set) => set.on));
    // With the five-minute set, nothing else is asked of the hours between the first and the last.
    const ranged = seen.filter((s) => s.path.endsWith('/query_range'));
    const [first, last] = ['2026-11-01T00:59:59.999Z', '2026-11-01T23:59:59.999Z'].map((t) => String(Date.parse(t) / 1000));
    const other = ranged.filter((s) => !fiveMinuteRules.some((rule) => s.form.get('query')!.includes(rule)));
    if (five)
      expect(other.filter((s) => s.form.get('start') !== s.form.get('end') || ![first, last].includes(s.form.get('start')!))).toEqual([]);
    else expect(other.some((s) => s.form.get('start') === first && s.form.get('end') === last)).toBe(true);
  });

  it('the five-minute set loaded in the middle of the range: the hours before read the other sets, their coverage asked only there', {
    timeout: 60_000,
  }, async () => {
    // The 15 s sets held all along (loaded at 2026-10-01), the five-minute one from 09:20.
    const loaded = Date.parse('2026-11-01T09:20:00Z');
    const { url, seen } = await storeWithRules(Object.values(MARKERS), Date.parse('2026-10-01'), undefined, {
      [MARKERS.fiveMinute]: loaded,
    });
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01T00:00:00Z', '--until', '2026-11-02T00:00:00Z']);
    expect(run.exitCode, run.stderr).toBe(0);
    const ranges = seen
      .filter((s) => s.path.endsWith('/query_range'))
      .map((s) => ({ query: s.form.get('query')!, start: s.form.get('start'), end: s.form.get('end') }));
    const iso = (seconds: string | null) => new Date(Number(seconds) * 1000).toISOString();
    // [first evaluation, last evaluation] of each chunk of range queries asking it.
    const chunks = (test: (q: string) => boolean) =>
      ranges
        .filter((r) => test(r.query))
        .map((r) => [iso(r.start), iso(r.end)])
        .sort();
    // The last hour too: a range's first and last are read from every collection.
    expect(chunks((q) => q.startsWith('avg_over_time(gpu_textfile:idle_held:bool['))).toEqual([
      ['2026-11-01T00:59:59.999Z', '2026-11-01T09:59:59.999Z'],
      ['2026-11-01T23:59:59.999Z', '2026-11-01T23:59:59.999Z'],
    ]);
    expect(chunks((q) => q.startsWith(`sum_over_time(${FIVE_MINUTE.idleHeldSum}[`))).toEqual([
      ['2026-11-01T10:59:59.999Z', '2026-11-01T22:59:59.999Z'],
    ]);
    expect(chunks((q) => q.includes(`(count_over_time(${MARKERS.idle}{`))).toEqual([
      ['2026-11-01T00:59:59.999Z', '2026-11-01T09:59:59.999Z'],
      ['2026-11-01T23:59:59.999Z', '2026-11-01T23:59:59.999Z'],
    ]);
    // Its own coverage asked of the hours between the first and the last only.
    expect(chunks((q) => q.includes(`(sum_over_time(${MARKERS.fiveMinute}{`))).toEqual([
      ['2026-11-01T01:59:59.999Z', '2026-11-01T22:59:59.999Z'],
    ]);
  });

  /** The chunks of range queries asking the idle-held question, from their first evaluation: [time, from the rule]. */
  const idleHeldChunks = (seen: { path: string; form: URLSearchParams }[]) =>
    seen
      .filter((s) => s.path.endsWith('/query_range'))
      .map((s) => ({ query: s.form.get('query')!, start: Number(s.form.get('start')) * 1000 }))
      .filter(
        (r) =>
          r.query.startsWith('avg_over_time(gpu_textfile:idle_held:bool[') ||
          r.query.includes('(nvidia_gpu_utilization_ratio < bool 0.02) * ('),
      )
      .map((r) => [new Date(r.start).toISOString(), r.query.includes('gpu_textfile:')])
      .sort();

  it('rules loaded in the middle of the range: the hours before, and the hour they were loaded in, are asked with subqueries', {
    timeout: 60_000,
  }, async () => {
    // Loaded at 09:20 UTC: 09:00-10:00 is two thirds covered; the rules are read from 10:00.
    const { url, seen } = await storeWithRules(EVERY_COLLECTION, Date.parse('2026-11-01T09:20:00Z'));
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01T00:00:00Z', '--until', '2026-11-02T00:00:00Z']);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(idleHeldChunks(seen)).toEqual([
      ['2026-11-01T00:59:59.999Z', false],
      ['2026-11-01T10:59:59.999Z', true],
    ]);
  });

  it('a gap backfilled after the rules were loaded (no rule ran over it): its hours are asked with subqueries', {
    timeout: 60_000,
  }, async () => {
    const hole = { from: Date.parse('2026-11-01T05:00:00Z'), to: Date.parse('2026-11-01T07:30:00Z') };
    const { url, seen } = await storeWithRules(EVERY_COLLECTION, Date.parse('2026-10-01'), hole);
    const run = await runCli(['report', '--prometheus', url, '--since', '2026-11-01T00:00:00Z', '--until', '2026-11-02T00:00:00Z']);
    expect(run.exitCode, run.stderr).toBe(0);
    // 05:00-08:00 re-sampled (07:00-08:00 half covered), the rest from the rules.
    expect(idleHeldChunks(seen)).toEqual([
      ['2026-11-01T00:59:59.999Z', true],
      ['2026-11-01T05:59:59.999Z', false],
      ['2026-11-01T08:59:59.999Z', true],
    ]);
  });
});
