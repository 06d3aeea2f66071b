import { describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../src/csvlog/read.js';
import type { GpuJob } from '../../src/host/job.js';
import { JobAccount } from '../../src/report/jobs.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 23, 0, 0);
const STEP = 5 * MIN;
const interval = () => STEP;

const row = (i: number, gpu: string, util: number, power: number, jobs: GpuJob[] | undefined, dropped = 0): HistoryRow => ({
  time: T0 + i * STEP,
  host: 'h',
  task: 't',
  gpu,
  uuid: `GPU-${gpu}`,
  status: 'ok',
  utilization: util,
  powerW: power,
  ...(jobs ? { jobs: { jobs, dropped } } : {}),
});
const slurm = (id: string, over: Partial<GpuJob> = {}): GpuJob => ({ kind: 'slurm', id, user: 'alice', memoryMiB: 1000, ...over });

/** 24 samples (2 h) of GPU 0: job 1 busy then idle; GPU 1 shared by jobs 2 and 3 (by SM where known); GPU 2 empty. */
function rows(): HistoryRow[] {
  const out: HistoryRow[] = [];
  for (let i = 0; i < 24; i++) {
    out.push(row(i, '0', i < 12 ? 90 : 0, i < 12 ? 600 : 100, [slurm('1', { memoryMiB: 1000 + i })]));
    out.push(
      row(
        i,
        '1',
        50,
        400,
        i < 6 ? [slurm('2', { smPercent: 30 }), slurm('3', { user: 'bob', smPercent: 10 })] : [slurm('2'), slurm('3', { user: 'bob' })],
      ),
    );
    out.push(row(i, '2', 0, 60, []));
    out.push(row(i, '3', 0, 60, undefined));
  }
  return out;
}

describe('JobAccount', () => {
  it('hours, GPU-hours, busy, idle, energy split by SM where every job has it, else by time, peak memory', () => {
    const account = new JobAccount();
    for (const r of rows()) account.add(r);
    const byId = new Map(account.rows(interval).map((r) => [`${r.job_kind}:${r.job_id}`, r]));
    expect([...byId.keys()].sort()).toEqual(['none:', 'slurm:1', 'slurm:2', 'slurm:3']);
    const one = byId.get('slurm:1')!;
    expect(one).toMatchObject({
      gpus: ['0'],
      hours: 2,
      gpu_hours: 2,
      busy_percent: 45,
      idle_gpu_hours: 1,
      energy_split: 'time',
      peak_memory_mib: 1023,
    });
    // 12 x 600 W + 12 x 100 W, 5 minutes each: 700 Wh.
    expect(one.energy_kwh).toBeCloseTo(0.7, 9);
    // GPU 1, 400 W: 6 samples split 30:10 by SM, 18 split in halves by time.
    expect(byId.get('slurm:2')!.energy_kwh).toBeCloseTo(((6 * 300 + 18 * 200) * 5) / 60 / 1000, 9);
    expect(byId.get('slurm:3')!.energy_kwh).toBeCloseTo(((6 * 100 + 18 * 200) * 5) / 60 / 1000, 9);
    expect(byId.get('slurm:3')).toMatchObject({ user: 'bob', energy_split: 'time+sm', sm_percent: 10 });
    // The empty GPU is `none`: idle and empty, its energy its own; the GPU whose rows do not say is in no row.
    expect(byId.get('none:')).toMatchObject({ gpus: ['2'], gpu_hours: 2, idle_gpu_hours: 2 });
    expect(byId.get('none:')!.energy_kwh).toBeCloseTo(0.12, 9);
  });

  it('held idle: job 1’s hour under 2 % is found, the empty GPU is not', () => {
    const account = new JobAccount();
    for (const r of rows()) account.add(r);
    const found = account.heldIdle(interval);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      kind: 'held_idle',
      gpu_id: '0',
      job_kind: 'slurm',
      job_id: '1',
      user: 'alice',
      longest_idle_hours: 1,
      idle_hours: 1,
    });
    expect(account.heldIdle(interval, 61 * MIN)).toEqual([]);
  });

  it('an idle run joins across the hour, and breaks where the job left the GPU', () => {
    const account = new JobAccount();
    // 23:40 to 00:20 idle (8 samples across midnight's hour), then one sample away, then 4 idle.
    const at = (i: number, jobs: GpuJob[]) =>
      account.add({ ...row(i, '0', 0, 100, jobs), time: Date.UTC(2026, 10, 22, 23, 40) + i * STEP });
    for (let i = 0; i < 8; i++) at(i, [slurm('9')]);
    at(8, []);
    for (let i = 9; i < 13; i++) at(i, [slurm('9')]);
    const [found] = account.heldIdle(interval, 40 * MIN);
    expect(found).toMatchObject({ longest_idle_hours: 0.6667, idle_hours: 1 });
  });

  it('a gap in collection breaks an idle run within an hour as it does across hours', () => {
    // 21 idle minutes, the collector stopped 19 minutes, 16 idle minutes: 21 minutes in a row at most,
    // whether or not the gap straddles an hour's start (the summary's gap: over 2.5 intervals).
    const longest = (start: number) => {
      const account = new JobAccount();
      for (let m = 0; m < 56; m++) if (m <= 20 || m >= 40) account.add({ ...row(0, '0', 0, 100, [slurm('7')]), time: start + m * MIN });
      return account.heldIdle(() => MIN, 20 * MIN)[0]?.longest_idle_hours;
    };
    expect(longest(T0 + 60 * MIN - 30 * MIN)).toBe(0.35);
    expect(longest(T0)).toBe(0.35);
  });

  it('a job that leaves the GPU for the one sample at an hour’s start breaks its run, in one pass and merged by hour', () => {
    // Idle 00:30-00:59, another job's row at 01:00, idle again 01:01-01:30: 30 minutes in a row, not 60.
    const rowsOf = () => {
      const out: HistoryRow[] = [];
      for (let m = 30; m <= 90; m++) out.push({ ...row(0, '0', 0, 100, m === 60 ? [slurm('8')] : [slurm('7')]), time: T0 + m * MIN });
      return out;
    };
    const whole = new JobAccount();
    for (const r of rowsOf()) whole.add(r);
    const longest = (account: JobAccount) => account.heldIdle(() => MIN, 20 * MIN).find((f) => f.job_id === '7')?.longest_idle_hours;
    expect(longest(whole)).toBe(0.5);
    // Two files split inside the hour after the absence: the second saw the row before the job came back.
    const [a, b] = [new JobAccount(), new JobAccount()];
    for (const r of rowsOf()) (r.time < T0 + 75 * MIN ? a : b).add(r);
    expect(longest(a.merge(b))).toBe(0.5);
    // Split inside the run before the hour, one part through JSON: the second part joins the first.
    const [e, f] = [new JobAccount(), new JobAccount()];
    for (const r of rowsOf()) (r.time < T0 + 45 * MIN ? e : f).add(r);
    expect(longest(JobAccount.fromJSON(JSON.parse(JSON.stringify(e))).merge(f))).toBe(0.5);
  });

  it('merged where a file ends with another job and the next starts with this one, the run breaks as in one pass', () => {
    // Idle 00:00-00:19 (job 7), job 8 at 00:20-00:29, job 7 idle again 00:30-00:59, all in one hour:
    // 30 minutes in a row, not 50. The second file starts at 00:30, on job 7's return: that file
    // saw no row before it, so only the first one knows job 7 was not on the GPU's last row.
    const rowsOf = () =>
      Array.from({ length: 60 }, (_, m) => ({
        ...row(0, '0', 0, 100, m >= 20 && m < 30 ? [slurm('8')] : [slurm('7')]),
        time: T0 + m * MIN,
      }));
    const longest = (account: JobAccount) => account.heldIdle(() => MIN, 25 * MIN).find((f) => f.job_id === '7')?.longest_idle_hours;
    const whole = new JobAccount();
    for (const r of rowsOf()) whole.add(r);
    expect(longest(whole)).toBe(0.5);
    const [a, b] = [new JobAccount(), new JobAccount()];
    for (const r of rowsOf()) (r.time < T0 + 30 * MIN ? a : b).add(r);
    const merged = JobAccount.fromJSON(JSON.parse(JSON.stringify(a))).merge(JobAccount.fromJSON(JSON.parse(JSON.stringify(b))));
    expect(longest(merged)).toBe(0.5);
    expect(merged.rows(() => MIN)).toEqual(whole.rows(() => MIN));
    // Files split across a gap in collection (00:30 to 00:45, no row): broken there too, as in one pass.
    const gapped = rowsOf().filter((r) => r.time < T0 + 30 * MIN || r.time >= T0 + 45 * MIN);
    const [c, d] = [new JobAccount(), new JobAccount()];
    for (const r of gapped) (r.time < T0 + 45 * MIN ? c : d).add(r);
    const one = new JobAccount();
    for (const r of gapped) one.add(r);
    expect(c.merge(d).heldIdle(() => MIN, 10 * MIN)).toEqual(one.heldIdle(() => MIN, 10 * MIN));
  });

  it('a job whose biggest process changes user (a root helper, a pid not visible) is one line; a command of two users is two', () => {
    const account = new JobAccount();
    for (let i = 0; i < 12; i++) {
      const user = i < 4 ? 'alice' : i < 8 ? 'root' : '';
      account.add(row(i, '0', 0, 100, [slurm('6', { user }), { kind: 'process', id: 'python3', user: i < 6 ? 'bob' : 'carol' }]));
      account.add(row(i, '1', 0, 100, [slurm('6', { user: i < 6 ? '' : 'alice' })]));
    }
    const lines = account.rows(interval).map((r) => [r.job_kind, r.job_id, r.user, r.gpus, r.gpu_hours]);
    expect(lines).toEqual([
      ['slurm', '6', 'alice', ['0', '1'], 2],
      ['process', 'python3', 'bob', ['0'], 0.5],
      ['process', 'python3', 'carol', ['0'], 0.5],
    ]);
    const revived = JobAccount.fromJSON(JSON.parse(JSON.stringify(account)));
    expect(revived.rows(interval)).toEqual(account.rows(interval));
    expect(account.heldIdle(interval, 55 * MIN).map((f) => [f.job_id, f.gpu_id, f.user, f.longest_idle_hours])).toEqual([
      ['6', '0', 'alice', 1],
      ['6', '1', 'alice', 1],
    ]);
  });

  it('a failed sample or a row that does not say (an older file) neither counts nor breaks an idle run', () => {
    const account = new JobAccount();
    for (let i = 0; i < 12; i++) {
      const r = row(i, '0', 0, 100, [slurm('5')]);
      account.add(i === 5 ? { ...r, status: 'gpu_lost', jobs: undefined } : i === 8 ? { ...r, jobs: undefined } : r);
    }
    const [line] = account.rows(interval);
    expect(line).toMatchObject({ job_id: '5', gpu_hours: 0.8333, idle_gpu_hours: 0.8333 });
    expect(account.heldIdle(interval, 50 * MIN)[0]).toMatchObject({ longest_idle_hours: 0.8333 });
  });

  it('toJSON, fromJSON and merge: accounts of parts add up to the account of the whole', () => {
    const all = rows();
    const whole = new JobAccount();
    for (const r of all) whole.add(r);
    // Split by file as an archiver would: the first hour, then the second.
    const [first, second] = [new JobAccount(), new JobAccount()];
    for (const r of all) (r.time < T0 + 60 * MIN ? first : second).add(r);
    const revived = JobAccount.fromJSON(JSON.parse(JSON.stringify(first))).merge(JobAccount.fromJSON(JSON.parse(JSON.stringify(second))));
    expect(revived.rows(interval)).toEqual(whole.rows(interval));
    expect(revived.heldIdle(interval)).toEqual(whole.heldIdle(interval));
    // Two halves of one hour, merged, give that hour's state.
    const [a, b] = [new JobAccount(), new JobAccount()];
    for (const r of all.filter((r) => r.time < T0 + 60 * MIN)) (r.time < T0 + 30 * MIN ? a : b).add(r);
    expect(JSON.parse(JSON.stringify(a.merge(b))).hours[0][1].map((h: { samples: number; best: number }) => [h.samples, h.best])).toEqual(
      JSON.parse(JSON.stringify(first)).hours[0][1].map((h: { samples: number; best: number }) => [h.samples, h.best]),
    );
  });
});
