import { localIsoTime } from '../csvlog/columns.js';
import type { HistoryRow } from '../csvlog/read.js';
import type { GpuJob, JobKind } from '../host/job.js';
import type { ReservingJob } from '../host/reservation.js';
import type { RowJobs } from '../csvlog/jobs-cell.js';
import { compareGpuIds, HOUR, periodStart } from './aggregate.js';
import { FINDING_THRESHOLDS, type Finding } from './findings.js';
import { printable } from './printable.js';
import { chain, firstAfter, maxOf, mergeHour, type JobHour, type SeriesCounter } from './job-runs.js';
import type { RowReserved } from '../csvlog/jobs-cell.js';

// Per-job accounting over the CSV trail's `jobs` column (docs/jobs.md). The state is per local hour
// and plain data (numbers and strings in Maps), so that a day's hours can be saved as JSON beside its
// archive and merged back instead of reading its rows again. Times become hours only at the end,
// as samples x the GPU's collection interval, the way the summary counts GPU-hours.

/** A job, or `none`: rows whose processes were read and nothing was on the GPU. */
export type AccountKind = JobKind | 'none';

/** What toJSON gives and fromJSON takes. */
export interface JobAccountJson {
  hours: [hour: number, jobs: JobHour[]][];
  /** Per GPU series (host, task, gpu, uuid joined by NUL): rows seen, the last one's time, the spacing before it. */
  seq?: [series: string, counter: SeriesCounter][];
}

/** One line of `report --by job`: a job of one host and task, over every GPU it held. */
export interface JobRow {
  host: string;
  task_id: string;
  job_kind: AccountKind;
  job_id: string;
  user: string;
  gpus: string[];
  /** The longest any one of its GPUs was held: samples x interval. */
  hours: number;
  gpu_hours: number;
  /** GPU utilization averaged over the samples it held a GPU (the GPU's, whoever ran on it). */
  busy_percent?: number;
  /** Its processes' own SM utilisation (NVML), where recorded. */
  sm_percent?: number;
  /** GPU-hours held under the idle utilization. */
  idle_gpu_hours: number;
  energy_kwh?: number;
  /** How its energy was split from the GPU's: `time` (equal shares of concurrent jobs), `sm` (by per-process SM utilisation), or both. */
  energy_split?: 'time' | 'sm' | 'time+sm';
  peak_memory_mib?: number;
  first_seen: string;
  last_seen: string;
  /** The GPUs it reserved (the trail's `reserved` column), running on them or not; absent where the trail does not say. */
  reserved_gpus?: string[];
  /** GPU-hours reserved, added over its GPUs: beside gpu_hours, the GPU-hours it used. */
  reserved_gpu_hours?: number;
  /** Of those, the GPU-hours it ran nothing on, or kept under the idle utilization. */
  reserved_idle_gpu_hours?: number;
}

/** The collection interval (ms) of a GPU series, as the Aggregator learned it. */
export type IntervalOf = (host: string, task: string, gpu: string, uuid: string) => number | undefined;

/** A job holds a GPU idle this long in a row before it is a finding (docs/jobs.md says why 30 minutes). */
export const HELD_IDLE_MIN_MS = 30 * 60_000;

/** The GPU series a job's hour is of, keyed as the row counter is. */
const seriesOf = (h: JobHour): string => `${h.host}\u0000${h.task}\u0000${h.gpu}\u0000${h.uuid}`;

/** A copy that owns its characters (a slice would keep the read chunk alive). */
const own = (text: string): string => Buffer.from(text, 'utf8').toString('utf8');

/**
 * A job's key in an hour: a process job is told apart by its user (two users' `python3`), any other
 * by its id alone, so that one whose biggest process changes user (a root helper, a pid not
 * visible) stays one job. Its `user` is the first one seen that is not empty.
 */
const hourKey = (series: string, kind: AccountKind, id: string, user: string): string =>
  `${series}\u0000${kind}\u0000${id}${kind === 'process' ? `\u0000${user}` : ''}`;

/**
 * Rows -> per hour, per job and GPU: samples, utilization, the job's share of energy, peak memory,
 * idle runs. Fed from the report's row loop beside the Aggregator; memory bounded by hours x GPUs x
 * jobs per GPU (at most 8 named per row).
 */
export class JobAccount {
  readonly hours = new Map<number, Map<string, JobHour>>();
  /**
   * Per GPU series: rows seen (to tell whether a job was on the GPU at its previous row), the last
   * row's time and the spacing before it (to tell a gap in collection).
   */
  private readonly seq = new Map<string, SeriesCounter>();

  /**
   * `mode`: `held` accounts the jobs whose processes held each GPU (the `jobs` column); `reserved`
   * the jobs that reserved it (the `reserved` column), a sample being idle for a job that ran
   * nothing on the GPU at it, whatever the GPU's utilization (another job may keep it busy).
   */
  constructor(
    private readonly idleMaxUtilization = FINDING_THRESHOLDS.idleMaxUtilization,
    readonly mode: 'held' | 'reserved' = 'held',
  ) {}

  add(row: HistoryRow): void {
    const cell: RowJobs | RowReserved | undefined = this.mode === 'held' ? row.jobs : row.reserved;
    // A row that does not say who held the GPU (an older file, a failed sample) costs nothing, and
    // says nothing either: a job seen before and after a failed sample held the GPU throughout.
    if (cell === undefined || row.status !== 'ok') return;
    const series = `${row.host}\u0000${row.task}\u0000${row.gpu}\u0000${row.uuid}`;
    const prev = this.seq.get(series);
    const step = prev ? row.time - prev.time : 0;
    // A gap in collection (a spacing over gapIntervals times the one before it, as the summary judges
    // a gap against the interval) breaks an idle run as an absence of the job does: the row counter
    // skips one. Against the spacing before, not the shortest seen: a cadence changed at a restart
    // breaks once, not at every row after.
    const gap = prev !== undefined && prev.step > 0 && step > FINDING_THRESHOLDS.gapIntervals * prev.step;
    const seq = (prev?.n ?? 0) + (gap ? 2 : 1);
    this.seq.set(series, { n: seq, time: Math.max(row.time, prev?.time ?? row.time), step: step > 0 ? step : (prev?.step ?? 0) });
    const named: readonly (GpuJob | ReservingJob)[] = cell.jobs;
    // The time nothing held the GPU is a line of its own; nothing reserving it is not (it is that line's time too).
    const jobs = this.mode === 'held' && named.length === 0 && cell.dropped === 0 ? [{ kind: 'none' as const, id: '', user: '' }] : named;
    const idle = row.utilization !== undefined && row.utilization < this.idleMaxUtilization;
    const ranNothing = (job: { kind: AccountKind; id: string }) =>
      this.mode === 'reserved' && row.jobs !== undefined && !row.jobs.jobs.some((held) => held.kind === job.kind && held.id === job.id);
    // Energy by SM utilisation only where every job on the GPU has it and they add up to something.
    const smTotal = named.reduce((sum, job) => sum + (('smPercent' in job ? job.smPercent : undefined) ?? Number.NaN), 0);
    const bySm = cell.dropped === 0 && smTotal > 0;
    const sharers = jobs.length + cell.dropped;
    const hour = periodStart(row.time, 'hour');
    let inHour = this.hours.get(hour);
    if (!inHour) this.hours.set(hour, (inHour = new Map()));
    for (const job of jobs) {
      const key = hourKey(series, job.kind, job.id, job.user);
      let h = inHour.get(key);
      if (!h) {
        inHour.set(own(key), (h = this.fresh(row, job, seq)));
        if (prev !== undefined) h.after = gap ? null : prev.time;
      }
      if (h.user === '' && job.user !== '') h.user = own(job.user);
      const smPercent = 'smPercent' in job ? job.smPercent : undefined;
      if (h.samples > 0 && h.lastSeq !== seq - 1) {
        h.leadOpen = false;
        h.tail = 0;
      }
      h.lastSeq = seq;
      h.samples++;
      h.first = Math.min(h.first, row.time);
      h.last = Math.max(h.last, row.time);
      if (row.utilization !== undefined) {
        h.utilSum += row.utilization;
        h.utilN++;
      }
      if (smPercent !== undefined) {
        h.smSum += smPercent;
        h.smN++;
      }
      if (row.powerW !== undefined) {
        h.powerShareSum += row.powerW * (bySm ? (smPercent ?? 0) / smTotal : 1 / sharers);
        h.powerN++;
        if (bySm) h.smSplit++;
      }
      h.memMax = maxOf(h.memMax, 'memoryMiB' in job ? job.memoryMiB : undefined);
      if (idle || ranNothing(job)) {
        h.idle++;
        h.tail++;
        if (h.leadOpen) h.lead++;
        h.best = Math.max(h.best, h.tail);
      } else {
        h.tail = 0;
        h.leadOpen = false;
      }
    }
  }

  /**
   * Another account's hours added into this one (another file's rows, or a saved day), read after
   * this one's: its row counts continue this one's, so a job on the GPU's last row here and on its
   * first row there keeps one run, as one pass over both files' rows would.
   */
  merge(other: JobAccount): this {
    const offsets = new Map<string, number>();
    const mineBefore = new Map<string, SeriesCounter>();
    for (const [series, theirs] of other.seq) {
      const mine = this.seq.get(series);
      const before = mine?.n ?? 0;
      offsets.set(series, before);
      if (mine) mineBefore.set(series, mine);
      this.seq.set(series, {
        n: before + theirs.n,
        time: Math.max(theirs.time, mine?.time ?? theirs.time),
        step: theirs.step > 0 ? theirs.step : (mine?.step ?? 0),
      });
    }
    for (const [hour, jobs] of other.hours) {
      let inHour = this.hours.get(hour);
      if (!inHour) this.hours.set(hour, (inHour = new Map()));
      for (const [key, from] of jobs) {
        const shifted = { ...from, lastSeq: from.lastSeq + (offsets.get(seriesOf(from)) ?? 0) };
        // The GPU's first row there, whose row before is this account's last: one pass would have
        // known it, so the job's run goes on only if it was on that row (and no gap came between).
        const mine = mineBefore.get(seriesOf(from));
        if (from.after === undefined && mine !== undefined) shifted.after = firstAfter(mine, from.first);
        const into = inHour.get(key);
        if (into) mergeHour(into, shifted);
        else inHour.set(key, shifted);
      }
    }
    return this;
  }

  /** The part of this account `keep` takes, by host and task. */
  only(keep: (host: string, task: string) => boolean): JobAccount {
    const part = new JobAccount(this.idleMaxUtilization, this.mode);
    for (const [hour, jobs] of this.hours) {
      const kept = [...jobs].filter(([, h]) => keep(h.host, h.task));
      if (kept.length > 0) part.hours.set(hour, new Map(kept));
    }
    for (const [series, counter] of this.seq)
      if (keep(...(series.split('\u0000') as [string, string]))) part.seq.set(series, { ...counter });
    return part;
  }

  /**
   * A GPU series whose samples said who held, or reserved, it, with no row to add: a store's
   * answers (store/fill.ts) say it per hour, not per row. Its task is then one tasksSeen names.
   */
  noteRead(host: string, task: string, gpu: string, uuid: string): void {
    const series = `${host}\u0000${task}\u0000${gpu}\u0000${uuid}`;
    if (!this.seq.has(series)) this.seq.set(series, { n: 0, time: 0, step: 0 });
  }

  /** The hosts and tasks (host NUL task) whose rows said who held, or reserved, their GPUs. */
  tasksSeen(): Set<string> {
    return new Set([...this.seq.keys()].map((series) => series.split('\u0000', 2).join('\u0000')));
  }

  toJSON(): JobAccountJson {
    return { hours: [...this.hours].map(([hour, jobs]) => [hour, [...jobs.values()]]), seq: [...this.seq] };
  }

  static fromJSON(json: JobAccountJson, mode: JobAccount['mode'] = 'held'): JobAccount {
    const account = new JobAccount(undefined, mode);
    for (const [hour, jobs] of json.hours)
      account.hours.set(hour, new Map(jobs.map((h) => [hourKey(seriesOf(h), h.kind, h.id, h.user), { ...h }])));
    for (const [series, counter] of json.seq ?? []) account.seq.set(series, { ...counter });
    return account;
  }

  /** The hours of each job on each GPU, oldest first. */
  private byJobGpu(): Map<string, JobHour[]> {
    const out = new Map<string, JobHour[]>();
    for (const hour of [...this.hours.keys()].sort((a, b) => a - b))
      for (const [key, h] of this.hours.get(hour)!) {
        const hours = out.get(key);
        if (hours) hours.push(h);
        else out.set(key, [h]);
      }
    return out;
  }

  /** One row per job of each host and task, first seen first. */
  rows(intervalOf: IntervalOf): JobRow[] {
    const jobs = new Map<
      string,
      {
        row: JobRow;
        utilMs: number;
        utilW: number;
        smMs: number;
        smW: number;
        energyWms: number;
        powerN: number;
        smSplit: number;
        perGpuMs: Map<string, number>;
        userAt: number;
      }
    >();
    for (const hours of this.byJobGpu().values()) {
      const h0 = hours[0]!;
      const interval = intervalOf(h0.host, h0.task, h0.gpu, h0.uuid) ?? 0;
      const key = hourKey(`${h0.host}\u0000${h0.task}`, h0.kind, h0.id, h0.user);
      let job = jobs.get(key);
      if (!job) {
        job = {
          row: {
            host: h0.host,
            task_id: h0.task,
            job_kind: h0.kind,
            job_id: h0.id,
            user: h0.user,
            gpus: [],
            hours: 0,
            gpu_hours: 0,
            idle_gpu_hours: 0,
            first_seen: '',
            last_seen: '',
          },
          utilMs: 0,
          utilW: 0,
          smMs: 0,
          smW: 0,
          energyWms: 0,
          powerN: 0,
          smSplit: 0,
          perGpuMs: new Map(),
          userAt: Number.POSITIVE_INFINITY,
        };
        jobs.set(key, job);
      }
      for (const h of hours) {
        const gpuMs = h.samples * interval;
        job.perGpuMs.set(h.uuid || h.gpu, (job.perGpuMs.get(h.uuid || h.gpu) ?? 0) + gpuMs);
        job.row.gpu_hours += gpuMs / HOUR;
        job.row.idle_gpu_hours += (h.idle * interval) / HOUR;
        job.utilMs += h.utilSum * interval;
        job.utilW += h.utilN * interval;
        job.smMs += h.smSum * interval;
        job.smW += h.smN * interval;
        job.energyWms += h.powerShareSum * interval;
        job.powerN += h.powerN;
        job.smSplit += h.smSplit;
        job.row.peak_memory_mib = maxOf(job.row.peak_memory_mib, h.memMax);
        // The user first seen, over all its GPUs (its hours on each GPU come oldest first).
        if (h.user && (job.row.user === '' || h.first < job.userAt)) [job.row.user, job.userAt] = [h.user, h.first];
        if (!job.row.gpus.includes(h.gpu)) job.row.gpus.push(h.gpu);
        if (job.row.first_seen === '' || h.first < Date.parse(job.row.first_seen)) job.row.first_seen = localIsoTime(new Date(h.first));
        if (job.row.last_seen === '' || h.last > Date.parse(job.row.last_seen)) job.row.last_seen = localIsoTime(new Date(h.last));
      }
    }
    const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;
    return [...jobs.values()]
      .map(({ row, userAt: _, ...s }) => ({
        ...row,
        gpus: row.gpus.sort((a, b) => Number(a) - Number(b) || a.localeCompare(b)),
        hours: round(Math.max(0, ...s.perGpuMs.values()) / HOUR, 4),
        gpu_hours: round(row.gpu_hours, 4),
        idle_gpu_hours: round(row.idle_gpu_hours, 4),
        ...(s.utilW > 0 ? { busy_percent: round(s.utilMs / s.utilW, 2) } : {}),
        ...(s.smW > 0 ? { sm_percent: round(s.smMs / s.smW, 2) } : {}),
        ...(s.powerN > 0
          ? {
              energy_kwh: round(s.energyWms / 3_600_000_000, 6),
              energy_split: s.smSplit === 0 ? ('time' as const) : s.smSplit === s.powerN ? ('sm' as const) : ('time+sm' as const),
            }
          : {}),
      }))
      .sort(
        (a, b) =>
          a.host.localeCompare(b.host) ||
          a.task_id.localeCompare(b.task_id) ||
          a.first_seen.localeCompare(b.first_seen) ||
          a.job_id.localeCompare(b.job_id),
      );
  }

  /**
   * Held but idle: a job whose processes held a GPU under the idle utilization for HELD_IDLE_MIN_MS
   * in a row (runs join across hours when the job's samples are no more than a gap apart). A GPU
   * idle with nothing on it is not one: it is free, and `report --by job` shows it as `none`.
   */
  heldIdle(intervalOf: IntervalOf, minMs = HELD_IDLE_MIN_MS): Finding[] {
    const found: Finding[] = [];
    const firstSeen = new Map<Finding, number>();
    for (const hours of this.byJobGpu().values()) {
      const h0 = hours[0]!;
      const interval = intervalOf(h0.host, h0.task, h0.gpu, h0.uuid);
      if (h0.kind === 'none' || !interval) continue;
      let run = { ...h0 };
      let idle = h0.idle;
      for (const h of hours.slice(1)) {
        // The row before it known (one pass): the run goes on only from the job's last sample; else
        // (hours of another file) by time, as the summary tells a gap.
        const join = h.after === undefined ? h.first - run.last <= FINDING_THRESHOLDS.gapIntervals * interval : h.after === run.last;
        run = { ...run, ...chain(run, h, join), last: h.last };
        idle += h.idle;
      }
      const longestMs = run.best * interval;
      if (longestMs < minMs) continue;
      // Printable: the summary is printed as it is on a terminal, and a process names itself.
      const user = hours.find((h) => h.user)?.user ?? '';
      const who = printable(`${h0.kind} ${h0.id}${user ? ` (${user})` : ''}`);
      const what =
        this.mode === 'held'
          ? `held by ${who} under ${this.idleMaxUtilization} % utilization`
          : `reserved by ${who}, which ran nothing on it or kept it under ${this.idleMaxUtilization} % utilization,`;
      found.push({
        kind: this.mode === 'held' ? 'held_idle' : 'reserved_idle',
        host: h0.host,
        task_id: h0.task,
        gpu_id: h0.gpu,
        gpu_uuid: h0.uuid,
        summary: `${what} for ${(longestMs / HOUR).toFixed(2)} h in a row (${((idle * interval) / HOUR).toFixed(2)} h in all)`,
        job_kind: h0.kind,
        job_id: h0.id,
        user,
        longest_idle_hours: Math.round((longestMs / HOUR) * 10_000) / 10_000,
        idle_hours: Math.round(((idle * interval) / HOUR) * 10_000) / 10_000,
      });
      firstSeen.set(found[found.length - 1]!, h0.first);
    }
    // In the trail's order (hosts by name, GPUs by index, a GPU's jobs as they came), not the order
    // the account was filled in: a store's answers arrive in any order.
    return found.sort(
      (a, b) =>
        a.host.localeCompare(b.host) ||
        a.task_id.localeCompare(b.task_id) ||
        compareGpuIds(a.gpu_id, b.gpu_id) ||
        a.gpu_uuid.localeCompare(b.gpu_uuid) ||
        firstSeen.get(a)! - firstSeen.get(b)!,
    );
  }

  private fresh(row: HistoryRow, job: { kind: AccountKind; id: string; user: string }, seq: number): JobHour {
    return {
      host: own(row.host),
      task: own(row.task),
      gpu: own(row.gpu),
      uuid: own(row.uuid),
      kind: job.kind,
      id: own(job.id),
      user: own(job.user),
      first: row.time,
      last: row.time,
      samples: 0,
      utilSum: 0,
      utilN: 0,
      smSum: 0,
      smN: 0,
      powerShareSum: 0,
      powerN: 0,
      smSplit: 0,
      idle: 0,
      lead: 0,
      leadOpen: true,
      tail: 0,
      best: 0,
      lastSeq: seq,
    };
  }
}
