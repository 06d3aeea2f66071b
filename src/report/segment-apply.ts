import { HOUR, periodStart, type Aggregator } from './aggregate.js';
import { mergeBucket } from './bucket.js';
import type { Chain, HoursSegment } from './segment.js';
import { Timeline, type Gap } from './timeline.js';

/** Which rows a report takes: by host and task (time is checked on the segment as a whole). */
export type RowFilter = (host: string, task: string) => boolean;

const hostKey = (host: string, task: string) => `${host}\u0000${task}`;

/** The spacings a chain's head holds, in order. */
const headSpacings = (chain: Chain): number[] => chain.times.slice(1).map((t, i) => t - chain.times[i]!);

/**
 * Whether adding the chain to `timeline` gives what adding its rows would: it starts after the
 * timeline's last sample, and when spacings were left out of it (the short ones past its head),
 * the interval then learned is at least the chain's floor, so none of them can be a gap.
 */
function fits<T>(timeline: Timeline<T> | undefined, chain: Chain): boolean {
  const last = timeline?.lastTime;
  if (last !== undefined && chain.times[0]! <= last) return false;
  if (chain.spacings <= chain.times.length - 1) return true;
  const next = [...(last === undefined ? [] : [chain.times[0]! - last]), ...headSpacings(chain)];
  // A series not seen yet learns as a new timeline would.
  const learned = (timeline ?? new Timeline(() => undefined)).intervalAfter(next);
  return learned !== undefined && chain.floor !== undefined && learned >= chain.floor;
}

/**
 * Adds an archive's per-hour state to the report as reading its rows would have, keeping the
 * rows `keep` takes; false, leaving the aggregator untouched, when it cannot (the archive's rows
 * are then read): its samples do not start after those already added, its hours are not this
 * machine's hours (a zone with a half-hour offset), or a gap could hide in what it left out.
 */
export function applySegment(aggregator: Aggregator, segment: HoursSegment, keep: RowFilter): boolean {
  const hosts = segment.hosts.filter((h) => keep(h.host, h.task));
  const series = segment.series.filter((s) => keep(s.host, s.task));
  // In a zone a whole number of hours off UTC at both ends of an archive of at most two days, its
  // hours are the whole UTC hours (no zone changes its offset twice in two days); otherwise each is
  // asked (periodStart builds a Date).
  const whole = (time: number) => new Date(time).getTimezoneOffset() % 60 === 0;
  const wholeHours = segment.last - segment.first <= 48 * HOUR && whole(segment.first) && whole(segment.last);
  const isHour = (hour: number) => (wholeHours ? hour % HOUR === 0 : periodStart(hour, 'hour') === hour);
  if (!hosts.every((h) => h.hours.every(([hour]) => isHour(hour))) || !series.every((s) => s.hours.every(([hour]) => isHour(hour))))
    return false;
  if (!hosts.every((h) => fits(aggregator.hosts.get(hostKey(h.host, h.task))?.timeline, h.chain))) return false;
  for (const s of series) {
    if (!hosts.some((h) => h.host === s.host && h.task === s.task)) return false;
    const stats = aggregator.series.get(`${hostKey(s.host, s.task)}\u0000${s.gpu}\u0000${s.uuid}`);
    if (!fits(stats?.timeline, s.chain)) return false;
  }

  // A GPU's gap across the archive's start: did the host write rows inside it? Its last time before.
  const hostLast = new Map(hosts.map((h) => [hostKey(h.host, h.task), aggregator.hosts.get(hostKey(h.host, h.task))?.timeline.lastTime]));
  for (const h of hosts) {
    const host = aggregator.hostFor(h);
    for (const [hour, samples] of h.hours) {
      const into = host.hourly.get(hour);
      if (into) into.samples += samples;
      else host.hourly.set(hour, { samples, missingMs: 0 });
    }
    replay(host.timeline, h.chain, () => undefined);
  }
  for (const s of series) {
    const stats = aggregator.seriesFor(s);
    for (const [hour, bucket] of s.hours) {
      const into = stats.hourly.get(hour);
      if (into) mergeBucket(into, bucket);
      // The segment's own bucket, taken over: it is not used again.
      else stats.hourly.set(hour, bucket);
    }
    for (const [reason, count] of s.errors) stats.errorsByReason.set(reason, (stats.errorsByReason.get(reason) ?? 0) + count);
    const before = hostLast.get(hostKey(s.host, s.task));
    const ran = new Set(s.chain.ran);
    replay(stats.timeline, s.chain, (i, gap) =>
      i === -1 ? s.chain.ranAtStart || (before !== undefined && before > gap.from) : ran.has(i),
    );
  }
  return true;
}

function replay<T>(timeline: Timeline<T>, chain: Chain, tagOf: (index: number, gap: Gap) => T): void {
  timeline.replay(
    { times: chain.times, wide: chain.wide.map(({ gap, ran }) => ({ gap, tag: ran as T })), last: chain.last, previous: chain.previous },
    tagOf,
  );
}
