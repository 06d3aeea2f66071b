import type { ArchiveSections } from './sidecar-sections.js';
import type { Bucket } from './bucket.js';
import type { Chain } from './segment.js';

// A sidecar is a file: its numbers are checked for type when read (sidecar-sections.ts, segment.ts),
// and here for range. A count below 0 or past the archive's rows, a sum no sample could make
// (1e308 W), an hour outside the archive's own first and last sample or outside the days its name
// allows (a day moved a year): the sidecar is not trusted, and the report reads the archive's rows,
// as for a missing one, and says so. The bounds are wide on purpose: a sidecar wrongly refused only
// costs the read of its rows; one wrongly trusted prints its numbers as the trail's.

const HOUR = 3_600_000;
/** More than any board draws (an H200 is 700 W; a whole 8-GPU board under 10 kW): milliwatts. */
const MAX_POWER_MW = 100_000_000;
/** More memory than any GPU has (MiB). */
const MAX_MEMORY_MIB = 1 << 30;
/** Temperatures a sensor can report (°C). */
const TEMPERATURE = [-100, 300] as const;

/** The times an archive's rows may lie in, from its name and the archive before it (trail-files.ts). */
export interface ArchiveWindow {
  lower: number;
  upper: number;
}

const count = (n: number, most: number) => Number.isInteger(n) && n >= 0 && n <= most;
const within = (n: number, [low, high]: readonly [number, number]) => n >= low && n <= high;

/** Why the sections' numbers cannot be the archive's, or undefined when they can. */
export function sectionsOutOfRange({ hours: segment, jobs }: ArchiveSections, window: ArchiveWindow): string | undefined {
  const rows = segment.rows;
  if (!count(rows, Number.MAX_SAFE_INTEGER) || !count(segment.odd.count, rows)) return `row counts ${rows}, ${segment.odd.count}`;
  const span: [number, number] = [segment.first, segment.last];
  if (!(span[0] <= span[1]) || span[0] < window.lower || span[1] > window.upper)
    return `samples from ${iso(span[0])} to ${iso(span[1])}, outside the days its archive's name allows (${iso(window.lower)} to ${iso(window.upper)})`;
  // An hour's start lies at most an hour before its first sample (a zone a half hour off included).
  const hours: [number, number] = [span[0] - HOUR, span[1]];
  for (const host of segment.hosts) {
    for (const [hour, samples] of host.hours) {
      if (!within(hour, hours)) return `host ${host.host}: hour ${iso(hour)} outside its samples' span`;
      if (!count(samples, rows)) return `host ${host.host}: ${samples} samples in an hour`;
    }
    const chain = chainProblem(host.chain, span);
    if (chain) return `host ${host.host}: ${chain}`;
  }
  for (const series of segment.series) {
    for (const [hour, bucket] of series.hours) {
      if (!within(hour, hours)) return `GPU ${series.gpu}: hour ${iso(hour)} outside its samples' span`;
      const problem = bucketProblem(bucket, rows);
      if (problem) return `GPU ${series.gpu}, hour ${iso(hour)}: ${problem}`;
    }
    for (const [reason, n] of series.errors) if (!count(n, rows)) return `GPU ${series.gpu}: ${n} ${reason} errors`;
    const chain = chainProblem(series.chain, span);
    if (chain) return `GPU ${series.gpu}: ${chain}`;
  }
  for (const [hour, byJob] of jobs.hours) {
    if (!within(hour, hours)) return `jobs: hour ${iso(hour)} outside the samples' span`;
    for (const job of byJob.values()) {
      const ok =
        within(job.first, span) &&
        within(job.last, span) &&
        [job.samples, job.utilN, job.smN, job.powerN, job.smSplit, job.idle].every((n) => count(n, rows)) &&
        within(job.utilSum, [0, 100 * job.utilN]) &&
        within(job.smSum, [0, 100 * job.smN]) &&
        within(job.powerShareSum, [0, (MAX_POWER_MW / 1000) * job.powerN]) &&
        (job.memMax === undefined || within(job.memMax, [0, MAX_MEMORY_MIB]));
      if (!ok) return `jobs: ${job.kind} ${job.id} on GPU ${job.gpu}, hour ${iso(hour)}: numbers no samples could make`;
    }
  }
  return undefined;
}

/** What is wrong with an hour's bucket, if anything. */
function bucketProblem(b: Bucket, rows: number): string | undefined {
  for (const field of ['samples', 'errors', 'utilN', 'powerN', 'idleHeld'] as const)
    if (!count(b[field], rows)) return `${b[field]} ${field}`;
  if (!within(b.utilMilliSum, [0, 100_000 * b.utilN])) return `utilization sum ${b.utilMilliSum} over ${b.utilN} samples`;
  if (!within(b.powerMwSum, [0, MAX_POWER_MW * b.powerN])) return `power sum ${b.powerMwSum} mW over ${b.powerN} samples`;
  for (const field of ['memMax', 'memTotal'] as const)
    if (b[field] !== undefined && !within(b[field], [0, MAX_MEMORY_MIB])) return `${field} ${b[field]} MiB`;
  if (b.tempMax !== undefined && !within(b.tempMax, TEMPERATURE)) return `temperature ${b.tempMax} °C`;
  return undefined;
}

/** A chain's sample times must lie in the samples' span. */
function chainProblem(chain: Chain, span: [number, number]): string | undefined {
  const times = [...chain.times, chain.last, ...chain.wide.flatMap(({ gap }) => [gap.from, gap.to])];
  return times.every((t) => within(t, span)) ? undefined : "sample times outside the samples' span";
}

const iso = (ms: number): string => (Number.isFinite(ms) && Math.abs(ms) < 8.64e15 ? new Date(ms).toISOString() : String(ms));
