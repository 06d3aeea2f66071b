import { FINDING_THRESHOLDS } from './findings.js';
import { median } from '../stats.js';

/** No sample strictly between two samples at `from` and `to` (epoch ms). */
export interface Gap {
  from: number;
  to: number;
}

/** Gaps of one kind, summed: how many, how many samples they lost, and the longest. */
export interface GapTotals {
  gaps: number;
  missing: number;
  longest?: Gap;
}

/** How many spacings the interval is learned from. */
const LEARN = 64;

export const emptyTotals = (): GapTotals => ({ gaps: 0, missing: 0 });

/** Adds one gap of `missing` samples to `totals`. */
export function countGap(totals: GapTotals, gap: Gap, missing: number): void {
  totals.gaps++;
  totals.missing += missing;
  if (!totals.longest || gap.to - gap.from > totals.longest.to - totals.longest.from) totals.longest = gap;
}

/**
 * The sample times of one series, in arrival order, in bounded memory: the collection interval is the
 * median of the first 64 spacings (kept while learning, with the gap each might be, tagged as it
 * arrived), then every spacing longer than `gapIntervals` intervals is a gap, judged and passed to
 * `onGap` at once. Nothing is kept per sample, whatever the spacing: a stray sample a second after
 * another (a hand-run collect beside the timer) does not make every later spacing a candidate.
 */
export class Timeline<Tag> {
  interval?: number;
  /** How many spacings the interval was learned from (up to 64). */
  learnedFrom = 0;
  firstTime?: number;
  lastTime?: number;
  /** The last distinct time before `lastTime`. */
  previousTime?: number;
  readonly totals: GapTotals = emptyTotals();
  /** Told of every spacing as it arrives, with its tag: how a sidecar records a day (segment.ts). */
  onSpacing?: (gap: Gap, tag: Tag) => void;
  private learning: { gap: Gap; tag: Tag }[] = [];

  constructor(
    private readonly onGap: (gap: Gap, missing: number, tag: Tag, interval: number) => void,
    private readonly gapIntervals = FINDING_THRESHOLDS.gapIntervals,
  ) {}

  /** One sample at `time`; `tag` says what a gap ending here is (asked only when there is a spacing). */
  add(time: number, tag: (gap: Gap) => Tag): void {
    const last = this.lastTime;
    if (this.firstTime === undefined || time < this.firstTime) this.firstTime = time;
    if (last !== undefined && time <= last) return; // same run, or out of order: no spacing to learn from
    this.previousTime = last;
    this.lastTime = time;
    if (last === undefined) return;
    const gap = { from: last, to: time };
    this.spacing(gap, tag(gap));
  }

  /** One spacing of the chain, learned from or judged. */
  private spacing(gap: Gap, tag: Tag): void {
    this.onSpacing?.(gap, tag);
    if (this.interval !== undefined) {
      this.judge(gap, tag);
      return;
    }
    this.learning.push({ gap, tag });
    if (this.learning.length >= LEARN) this.settle();
  }

  /**
   * The interval this timeline will have once the spacings `next` (in order) are added, if that
   * settles it: undefined while it would still be learning.
   */
  intervalAfter(next: readonly number[]): number | undefined {
    if (this.interval !== undefined) return this.interval;
    const wanted = LEARN - this.learning.length;
    if (next.length < wanted) return undefined;
    return median([...this.learning.map(({ gap }) => gap.to - gap.from), ...next.slice(0, wanted)]);
  }

  /**
   * A stretch of samples recorded elsewhere (a sidecar's chain), as if its samples had been added
   * one by one: `times` the stretch's first samples in order (the first one included), `wide` the
   * later spacings that may be gaps, `last` and `previous` its last two sample times. The caller has
   * checked that it starts after `lastTime` and that no spacing left out could be a gap
   * (segment.ts).
   */
  replay(
    stretch: { times: readonly number[]; wide: readonly { gap: Gap; tag: Tag }[]; last: number; previous?: number },
    tagOf: (index: number, gap: Gap) => Tag,
  ): void {
    const start = stretch.times[0]!;
    if (this.firstTime === undefined || start < this.firstTime) this.firstTime = start;
    if (this.lastTime !== undefined) this.spacing({ from: this.lastTime, to: start }, tagOf(-1, { from: this.lastTime, to: start }));
    for (let i = 0; i + 1 < stretch.times.length; i++) {
      const gap = { from: stretch.times[i]!, to: stretch.times[i + 1]! };
      this.spacing(gap, tagOf(i, gap));
    }
    for (const { gap, tag } of stretch.wide) this.spacing(gap, tag);
    this.previousTime = stretch.previous ?? this.lastTime;
    this.lastTime = stretch.last;
  }

  /** Ends learning early (fewer than 64 spacings): the interval from what there is. */
  finish(): void {
    if (this.interval === undefined && this.learning.length > 0) this.settle();
  }

  /** Spacings still held while learning (at most 64). */
  get held(): number {
    return this.learning.length;
  }

  private settle(): void {
    // settle() runs with at least one spacing held.
    this.interval = median(this.learning.map(({ gap }) => gap.to - gap.from))!;
    this.learnedFrom = this.learning.length;
    const learned = this.learning;
    this.learning = [];
    for (const { gap, tag } of learned) this.judge(gap, tag);
  }

  private judge(gap: Gap, tag: Tag): void {
    const interval = this.interval!;
    if (gap.to - gap.from <= this.gapIntervals * interval) return;
    const missing = Math.round((gap.to - gap.from) / interval) - 1;
    countGap(this.totals, gap, missing);
    this.onGap(gap, missing, tag, interval);
  }
}
