import { Aggregator, compareGpuIds, HOUR, hostRan, periodStart } from '../aggregate.js';
import { emptyBucket, type Bucket } from '../bucket.js';
import { JobAccount, type AccountKind } from '../jobs.js';
import type { JobHour } from '../job-runs.js';
import type { Gap } from '../timeline.js';
import { GPU_ANSWERS, type GpuHour, GpuHourRows, HourSlots } from './gpu-hours.js';
import type { QueryTarget } from './queries.js';

// A store's hourly answers -> the report's per-hour state (aggregate.ts, jobs.ts), as a sidecar's
// hours are (segment-apply.ts): the findings, the summary and the formats then cannot tell which
// door filled it. What a store cannot say sample by sample is rebuilt from the hour's counts: the
// collection interval from the fullest hours, gaps from hours short of samples, a job's idle run
// from its idle hours.

/** Per job, GPU and hour: its samples, and its shares as re-sampled averages. */
interface JobAnswer {
  samples: number;
  util?: number;
  power?: number;
  idle?: number;
}

interface HostHour {
  samples: number;
  failures: number;
  /** Made at the first error: most hours have none, and a map each was 5 MB at 40 hosts' month. */
  errors?: Map<string, number>;
}

/** Jobs' answers by GPU and job: the holders', or the reservations'. */
type JobAnswers = Map<string, { gpu: string; kind: AccountKind; id: string; user: string; hours: Map<number, JobAnswer> }>;

const MIB = 1_048_576;
const key = (...parts: string[]) => parts.join('\u0000');

/** The hour's entry in `hours`, made by `make` the first time. */
function hourIn<T>(hours: Map<number, T>, hour: number, make: () => T): T {
  let h = hours.get(hour);
  if (h === undefined) hours.set(hour, (h = make()));
  return h;
}

/** Hours present in a map, oldest first. */
const sortedHours = <T>(hours: Map<number, T>) => [...hours.keys()].sort((a, b) => a - b);

/** A store's answers, gathered window by window, then made into the report's state. */
export class StoreHours {
  private readonly hosts = new Map<string, { host: string; task: string; hours: Map<number, HostHour> }>();
  private readonly gpus = new Map<string, { host: string; task: string; gpu: string; uuid: string; hours: GpuHourRows }>();
  private readonly jobs: JobAnswers = new Map();
  /** The jobs that reserved each GPU, as `jobs` the ones that held it. */
  private readonly reserving: JobAnswers = new Map();
  /** Raw collection times per host, where the range was short enough to ask for them. */
  private readonly rawTimes = new Map<string, number[]>();

  private readonly slots: HourSlots;

  /** `hours`: the report's hours, where known before the answers (each GPU's rows are then made once). */
  constructor(
    private readonly hostLabel: string,
    hours: readonly number[] = [],
  ) {
    this.slots = new HourSlots(hours);
  }

  /** Where a series belongs: host, task (a series without one is task `default`), GPU. */
  private where(labels: Readonly<Record<string, string>>) {
    return { host: labels[this.hostLabel] ?? '', task: labels.task || 'default', gpu: labels.gpu ?? '', uuid: labels.uuid ?? '' };
  }

  private hostHours(labels: Readonly<Record<string, string>>): Map<number, HostHour> {
    const { host, task } = this.where(labels);
    const k = key(host, task);
    let entry = this.hosts.get(k);
    if (!entry) this.hosts.set(k, (entry = { host, task, hours: new Map() }));
    return entry.hours;
  }

  private gpuHours(labels: Readonly<Record<string, string>>): GpuHourRows {
    const w = this.where(labels);
    const k = key(w.host, w.task, w.gpu, w.uuid);
    let entry = this.gpus.get(k);
    if (!entry) this.gpus.set(k, (entry = { ...w, hours: new GpuHourRows(this.slots) }));
    return entry.hours;
  }

  private jobHours(labels: Readonly<Record<string, string>>, jobs: JobAnswers): Map<number, JobAnswer> {
    const w = this.where(labels);
    const kind = (labels.job_kind ?? '') as AccountKind;
    const [id, user] = [labels.job_id ?? '', labels.user ?? ''];
    const gpuKey = key(w.host, w.task, w.gpu, w.uuid);
    const k = key(gpuKey, kind, id, kind === 'process' ? user : '');
    let entry = jobs.get(k);
    if (!entry) jobs.set(k, (entry = { gpu: gpuKey, kind, id, user, hours: new Map() }));
    return entry.hours;
  }

  /** One answer: the value of question `name` (its target says whose) for the series `labels` in `hour`. */
  take(name: string, target: QueryTarget, labels: Readonly<Record<string, string>>, hour: number, value: number): void {
    this.sink(name, target, labels)(hour, value);
  }

  /**
   * Where the values of question `name` for the series `labels` go, hour by hour. The series' place
   * (its host, GPU or job, and their keys) is found once here, not at each of its points: an answer
   * at 40 hosts x 30 days is 230,000 points per question.
   */
  sink(name: string, target: QueryTarget, labels: Readonly<Record<string, string>>): (hour: number, value: number) => void {
    if (target === 'host') {
      const hours = this.hostHours(labels);
      const reason = labels.reason ?? 'unknown';
      return (hour, value) => {
        if (!Number.isFinite(value)) return;
        const h = hourIn<HostHour>(hours, hour, () => ({ samples: 0, failures: 0, errors: undefined }));
        if (name === 'host_samples') h.samples += value;
        else if (name === 'host_failures') h.failures += value;
        else if (value > 0) {
          h.errors ??= new Map();
          h.errors.set(reason, (h.errors.get(reason) ?? 0) + value);
        }
      };
    }
    if (target === 'job' || target === 'reserved') {
      const hours = this.jobHours(labels, target === 'job' ? this.jobs : this.reserving);
      return (hour, value) => {
        if (!Number.isFinite(value)) return;
        const h = hourIn<JobAnswer>(hours, hour, () => ({ samples: 0 }));
        if (name === 'job_samples' || name === 'reserved_samples') h.samples += value;
        else if (name === 'job_util') h.util = value;
        else if (name === 'job_power') h.power = value;
        else h.idle = value;
      };
    }
    const hours = this.gpuHours(labels);
    const field = GPU_ANSWERS[name];
    return (hour, value) => {
      if (Number.isFinite(value) && field) hours.take(hour, field, value);
    };
  }

  /** A host's collection times, read raw (a short range): its timeline then is exactly the trail's. */
  takeTimes(labels: Readonly<Record<string, string>>, times: number[]): void {
    const { host, task } = this.where(labels);
    const k = key(host, task);
    this.rawTimes.set(
      k,
      [...(this.rawTimes.get(k) ?? []), ...times].sort((a, b) => a - b),
    );
  }

  /** Whether any of our series answered. */
  get empty(): boolean {
    return this.hosts.size === 0 && this.gpus.size === 0;
  }

  /** Each host's collection interval (ms): from its raw times, else from its fullest hour among whole ones. */
  intervals(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, entry] of this.hosts) {
      const raw = this.rawTimes.get(k);
      const fromRaw = raw && raw.length > 1 ? medianSpacing(raw) : undefined;
      const interior = sortedHours(entry.hours).filter((hour) => entry.hours.has(hour - HOUR) && entry.hours.has(nextHour(hour)));
      const fullest = Math.max(0, ...(interior.length > 0 ? interior : [...entry.hours.keys()]).map((h) => entry.hours.get(h)!.samples));
      const interval = fromRaw ?? (fullest > 0 ? Math.round(HOUR / fullest) : undefined);
      if (interval !== undefined) out.set(k, interval);
    }
    return out;
  }

  /**
   * The report's state: the aggregator's series and hosts, and the job account. It takes the
   * answers' hours as it goes (a GPU's are let go once its buckets are made), so that both are
   * never held whole at once: at 40 hosts x 8 GPUs x 30 days each is some 40 MB. The hours let go are
   * garbage until collected: `tidyHeap` (garbage.ts) is called after the job account and after each
   * GPU. Call it once.
   */
  fill(tidyHeap: () => void = () => {}): { aggregator: Aggregator; jobAccount: JobAccount; reservedAccount: JobAccount } {
    const aggregator = new Aggregator();
    const intervals = this.intervals();
    const jobAccount = this.jobAccount(intervals);
    this.jobs.clear();
    const reservedAccount = this.reservedAccount(intervals);
    this.reserving.clear();
    tidyHeap();
    const hostGaps = new Map<string, Gap[]>();
    for (const [k, entry] of this.hosts) {
      const host = aggregator.hostFor(entry);
      for (const [hour, h] of entry.hours) host.hourly.set(hour, { samples: h.samples, missingMs: 0 });
      const interval = intervals.get(k);
      const raw = this.rawTimes.get(k);
      if (raw) for (const t of raw) host.timeline.add(t, () => undefined);
      else if (interval !== undefined && [...entry.hours.values()].some((h) => h.samples > 0)) {
        const chain = hourlyChain(new Map([...entry.hours].map(([hour, h]) => [hour, h.samples])), interval);
        hostGaps.set(k, chain.gaps);
        host.timeline.replay({ ...chain, wide: chain.gaps.map((gap) => ({ gap, tag: undefined })) }, () => undefined);
      }
    }
    // In the trail's order (hosts by name, GPUs by index): the findings come out in the order the rows give them.
    const gpus = [...this.gpus.values()].sort(
      (a, b) => a.host.localeCompare(b.host) || a.task.localeCompare(b.task) || compareGpuIds(a.gpu, b.gpu) || a.uuid.localeCompare(b.uuid),
    );
    for (const entry of gpus) {
      const hostKey = key(entry.host, entry.task);
      const host = this.hosts.get(hostKey);
      const interval = intervals.get(hostKey);
      const stats = aggregator.seriesFor(entry);
      const counts = new Map<number, number>();
      for (const [hour, g] of entry.hours.entries()) {
        const hh = host?.hours.get(hour);
        const bucket = gpuBucket(g, hh, interval);
        stats.hourly.set(hour, bucket);
        counts.set(hour, bucket.samples);
        if (g.down > 0) stats.errorsByReason.set('gpu_down', (stats.errorsByReason.get('gpu_down') ?? 0) + g.down);
        for (const [reason, n] of hh?.errors ?? []) stats.errorsByReason.set(reason, (stats.errorsByReason.get(reason) ?? 0) + n);
      }
      const raw = this.rawTimes.get(hostKey);
      if (raw) {
        const hostStats = aggregator.hosts.get(hostKey)!;
        for (const t of raw) stats.timeline.add(t, (gap) => hostRan(hostStats, gap));
      } else if (interval !== undefined && [...counts.values()].some((c) => c > 0)) {
        const chain = hourlyChain(counts, interval);
        const gaps = hostGaps.get(hostKey) ?? [];
        const ran = (gap: Gap) => !gaps.some((g) => g.from < gap.to && g.to > gap.from);
        stats.timeline.replay({ ...chain, wide: chain.gaps.map((gap) => ({ gap, tag: ran(gap) })) }, () => false);
      }
      entry.hours.clear();
      tidyHeap();
    }
    aggregator.finish();
    return { aggregator, jobAccount, reservedAccount };
  }

  /** Each job's hours on each GPU (`jobs`' answers) into `account`. */
  private addJobs(account: JobAccount, jobs: JobAnswers, intervals: Map<string, number>): void {
    for (const job of jobs.values()) {
      const gpu = this.gpus.get(job.gpu);
      if (!gpu) continue;
      const interval = intervals.get(key(gpu.host, gpu.task)) ?? 0;
      const held = new Map([...job.hours].filter(([, h]) => h.samples > 0).map(([hour, h]) => [hour, h.samples]));
      // One key for all of the job's hours: made per hour, it was a string of its own in each (230,000
      // at 40 hosts x 8 GPUs x 30 days with a job per GPU a day).
      const jobKey = key(job.gpu, job.kind, job.id, job.kind === 'process' ? job.user : '');
      for (const [hour, h] of job.hours) {
        if (h.samples <= 0) continue;
        const idle = Math.round((h.idle ?? 0) * h.samples);
        const jobHour = this.jobHourOf(gpu, job, hour, h.samples, idle, interval, held);
        if (h.util !== undefined) [jobHour.utilSum, jobHour.utilN] = [h.util * 100 * h.samples, h.samples];
        if (h.power !== undefined) [jobHour.powerShareSum, jobHour.powerN] = [h.power * h.samples, h.samples];
        hourIn(account.hours, hour, () => new Map()).set(jobKey, jobHour);
      }
    }
  }

  /**
   * The reservations' account: each reserving job's hours on each GPU (idle: it ran nothing there, or
   * the GPU sat idle), and the GPUs whose samples said who reserved them, so that their tasks' jobs
   * get reserved columns (none, 0 where they reserved nothing), as the trail's `reserved` cell does.
   */
  private reservedAccount(intervals: Map<string, number>): JobAccount {
    const account = new JobAccount(undefined, 'reserved');
    this.addJobs(account, this.reserving, intervals);
    for (const gpu of this.gpus.values())
      for (const [, h] of gpu.hours.entries())
        if ((h.reservedRead ?? 0) > 0) {
          account.noteRead(gpu.host, gpu.task, gpu.gpu, gpu.uuid);
          break;
        }
    return account;
  }

  /** The job account: each job's hours on each GPU, and `none` for the samples no job held the GPU. */
  private jobAccount(intervals: Map<string, number>): JobAccount {
    const account = new JobAccount();
    const hourOf = (hour: number) => hourIn(account.hours, hour, () => new Map<string, JobHour>());
    this.addJobs(account, this.jobs, intervals);
    for (const [gpuKey, gpu] of this.gpus) {
      const interval = intervals.get(key(gpu.host, gpu.task)) ?? 0;
      const freeSamples = new Map<number, number>();
      const noneKey = key(gpuKey, 'none', '');
      const none = { gpu: gpuKey, kind: 'none' as const, id: '', user: '' };
      for (const [hour, g] of gpu.hours.entries())
        if (g.freeShare !== undefined && g.freeShare > 0) freeSamples.set(hour, Math.round(g.freeShare * (g.samples - g.down)));
      for (const [hour, g] of gpu.hours.entries()) {
        const samples = freeSamples.get(hour) ?? 0;
        if (samples <= 0) continue;
        const jobHour = this.jobHourOf(gpu, none, hour, samples, Math.round((g.freeIdle ?? 0) * samples), interval, freeSamples);
        if (g.freeUtil !== undefined) [jobHour.utilSum, jobHour.utilN] = [g.freeUtil * 100 * samples, samples];
        if (g.freePower !== undefined) [jobHour.powerShareSum, jobHour.powerN] = [g.freePower * samples, samples];
        hourOf(hour).set(noneKey, jobHour);
      }
    }
    return account;
  }

  /**
   * A job's hour on a GPU: its samples placed where the hours around say they were (at the hour's
   * end when it held the GPU the hour after, at its start when the hour before), and its idle
   * samples taken as one run at its end, which joins the next hour's when that one began idle.
   */
  private jobHourOf(
    gpu: { host: string; task: string; gpu: string; uuid: string },
    job: { kind: AccountKind; id: string; user: string },
    hour: number,
    samples: number,
    idle: number,
    interval: number,
    held: Map<number, number>,
  ): JobHour {
    const span = Math.max(0, samples - 1) * interval;
    const before = held.has(hour - HOUR);
    const after = held.has(nextHour(hour));
    const first = after && !before ? nextHour(hour) - interval - span : before ? hour : hour + Math.max(0, (HOUR - span) / 2);
    const allIdle = idle >= samples;
    return {
      host: gpu.host,
      task: gpu.task,
      gpu: gpu.gpu,
      uuid: gpu.uuid,
      kind: job.kind,
      id: job.id,
      user: job.user,
      first,
      last: first + span,
      samples,
      utilSum: 0,
      utilN: 0,
      smSum: 0,
      smN: 0,
      powerShareSum: 0,
      powerN: 0,
      smSplit: 0,
      idle,
      lead: allIdle ? samples : 0,
      leadOpen: allIdle,
      tail: idle,
      best: idle,
      lastSeq: 0,
    };
  }
}

const nextHour = (hour: number) => periodStart(hour + HOUR + 1, 'hour');

function medianSpacing(times: number[]): number | undefined {
  const spacings = times
    .slice(1)
    .map((t, i) => t - times[i]!)
    .filter((s) => s > 0)
    .sort((a, b) => a - b);
  return spacings.length === 0 ? undefined : spacings[Math.floor(spacings.length / 2)];
}

/** A GPU's hour as a bucket: its own samples, plus the host's failed collections (an error sample each, as the trail writes them). */
function gpuBucket(g: GpuHour, host: HostHour | undefined, interval: number | undefined): Bucket {
  const b = emptyBucket();
  const failures = host?.failures ?? 0;
  // Counts and whole degrees through Math.round, which gives a small integer as one (a "Smi"):
  // read from GpuHourRows' Float64Array it is a boxed double, and V8 then keeps that field of every
  // bucket boxed, 16 bytes more each (three fields x 230,000 buckets at 40 hosts' month).
  b.samples = Math.round(g.samples + failures);
  b.errors = Math.round(g.down + failures);
  b.utilN = Math.round(g.utilN);
  b.utilMilliSum = Math.round(g.utilSum * 100_000);
  if (g.memMax !== undefined) b.memMax = Math.round(g.memMax / MIB);
  if (g.memTotal !== undefined) b.memTotal = Math.round(g.memTotal / MIB);
  b.powerN = Math.round(g.powerN);
  b.powerMwSum = Math.round(g.powerSum * 1000);
  // The board's own counter where it has one: its energy over the hour, as the power sum that
  // gives it at this interval (the hour's average power stays the energy over the time seen).
  if (g.energy !== undefined && interval && g.powerN > 0) b.powerMwSum = Math.round((g.energy / (interval / 1000)) * 1000);
  if (g.tempMax !== undefined) b.tempMax = Number.isInteger(g.tempMax) ? Math.round(g.tempMax) : g.tempMax;
  b.idleHeld = Math.round((g.idleShare ?? 0) * g.utilN);
  return b;
}

/**
 * A series' samples (some hour has one) as hourly counts say they fell, at `interval`: the hours between its first and
 * last short of samples (by more than noise: 2 samples or 1 %) are gaps, one per run of such hours.
 * Within a run, the first hour's samples are taken at its start and the last one's at its end; the
 * series' first hour's samples at its end, its last hour's at its start.
 */
export function hourlyChain(
  counts: Map<number, number>,
  interval: number,
): { times: number[]; gaps: Gap[]; last: number; previous?: number } {
  const hours = sortedHours(counts).filter((h) => (counts.get(h) ?? 0) > 0);
  const expected = HOUR / interval;
  const noise = Math.max(2, Math.ceil(expected / 100));
  const firstHour = hours[0]!;
  const lastHour = hours[hours.length - 1]!;
  const gaps: Gap[] = [];
  let run: { hour: number; count: number } | undefined;
  let total = 0;
  for (let hour = firstHour; hour <= lastHour; hour = nextHour(hour)) {
    const c = counts.get(hour) ?? 0;
    total += c;
    const edge = hour === firstHour || hour === lastHour;
    const deficit = edge ? 0 : Math.max(0, Math.round(expected - c));
    if (deficit >= noise) {
      run ??= { hour, count: c };
      continue;
    }
    if (!run) continue;
    const end = periodStart(hour - 1, 'hour');
    const endCount = counts.get(end) ?? 0;
    // One hour short: half its samples before the gap, half after.
    const before = end === run.hour ? Math.floor(run.count / 2) : run.count;
    const after = end === run.hour ? run.count - before : endCount;
    gaps.push({ from: run.hour + (before - 1) * interval, to: end + HOUR - after * interval });
    run = undefined;
  }
  const firstCount = counts.get(firstHour)!;
  const lastCount = counts.get(lastHour)!;
  const first = firstHour === lastHour ? firstHour : firstHour + HOUR - firstCount * interval;
  const last = firstHour === lastHour ? first + (firstCount - 1) * interval : lastHour + (lastCount - 1) * interval;
  const times = Array.from({ length: Math.min(65, total) }, (_, i) => first + i * interval);
  return {
    times,
    gaps: gaps.filter((g) => g.to - g.from > interval),
    last,
    ...(last - interval >= first ? { previous: last - interval } : {}),
  };
}
