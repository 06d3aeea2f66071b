import { FINDING_THRESHOLDS } from './findings.js';
import type { JobKind } from '../host/job.js';

// How a job's idle runs on one GPU join across hours and files (src/report/jobs.ts): the pieces
// of its account that one pass over every row would have made in one go.

/** One job on one GPU of one host and task, within one hour. Plain data: it goes to JSON as it is. */
export interface JobHour {
  host: string;
  task: string;
  gpu: string;
  uuid: string;
  kind: JobKind | 'none';
  id: string;
  user: string;
  first: number;
  last: number;
  samples: number;
  utilSum: number;
  utilN: number;
  /** The job's own SM utilisation (its processes', NVML only), summed over the samples that had it. */
  smSum: number;
  smN: number;
  /** The job's share of the board's power, summed (W) over the samples with a power reading. */
  powerShareSum: number;
  powerN: number;
  /** Of those, the samples whose share came from per-process SM utilisation (the rest: split by time). */
  smSplit: number;
  memMax?: number;
  /** Samples under the idle utilization while the job held the GPU. */
  idle: number;
  /** Idle samples in a row: from the hour's first sample of the job (while `leadOpen`), at the end, the longest. */
  lead: number;
  leadOpen: boolean;
  tail: number;
  best: number;
  /** The GPU's row counter at the job's last sample here, to tell a run broken by an absence. */
  lastSeq: number;
  /**
   * The time of the GPU's row before the job's first sample in this hour, where this account saw
   * one: the job's previous sample (another hour's `last`) if it held the GPU throughout. null after
   * a gap in collection; absent where this account saw no row before (another file: joined by time).
   */
  after?: number | null;
}

/** A GPU series' row counter: rows seen, the last row's time, the spacing before it. */
export interface SeriesCounter {
  n: number;
  time: number;
  step: number;
}

/** The larger of two, either unknown. */
export const maxOf = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.max(a, b));

/** Two idle runs of one job on one GPU, `a` before `b`, as one summary (their runs join when `join`). */
export function chain(a: JobHour, b: JobHour, join: boolean): Pick<JobHour, 'lead' | 'leadOpen' | 'tail' | 'best'> {
  const middle = join ? a.tail + b.lead : b.lead;
  return {
    lead: a.leadOpen && join ? a.lead + b.lead : a.lead,
    leadOpen: a.leadOpen && join && b.leadOpen,
    tail: b.leadOpen ? middle : b.tail,
    best: Math.max(a.best, b.best, middle),
  };
}

/** What `after` one pass would have given a job's hour whose first sample, at `first`, followed the row `before` counts last. */
export const firstAfter = (before: SeriesCounter, first: number): number | null =>
  before.step > 0 && first - before.time > FINDING_THRESHOLDS.gapIntervals * before.step ? null : before.time;

/** `from` added into `into` (the same job, GPU and hour; `from` read from other rows). */
export function mergeHour(into: JobHour, from: JobHour): void {
  const [a, b] = into.first <= from.first ? [{ ...into }, from] : [from, { ...into }];
  // Where `b`'s account saw the row before the job came, the run goes on only from `a`'s last sample.
  Object.assign(into, chain(a, b, b.after === undefined || b.after === a.last));
  into.user = a.user || b.user;
  if (a.after === undefined) delete into.after;
  else into.after = a.after;
  into.first = Math.min(into.first, from.first);
  into.last = Math.max(into.last, from.last);
  into.samples += from.samples;
  into.utilSum += from.utilSum;
  into.utilN += from.utilN;
  into.smSum += from.smSum;
  into.smN += from.smN;
  into.powerShareSum += from.powerShareSum;
  into.powerN += from.powerN;
  into.smSplit += from.smSplit;
  into.memMax = maxOf(into.memMax, from.memMax);
  into.idle += from.idle;
  into.lastSeq = Math.max(into.lastSeq, from.lastSeq);
}
