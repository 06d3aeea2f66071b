import { FINDING_THRESHOLDS } from './findings.js';
import type { JobHour, SeriesCounter } from './jobs.js';

// How a job's idle runs on one GPU join across hours and files (src/report/jobs.ts): the pieces
// of its account that one pass over every row would have made in one go.

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
