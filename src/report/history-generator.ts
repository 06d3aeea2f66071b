import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { csvCell } from '../csvlog/columns.js';
import { archiveDirectory } from '../csvlog/rotate.js';
import { REPORT_SIDECARS } from './sidecar-sections.js';

// Generated CSV trails with known patterns: steady training and inference GPUs (noise, evaluation
// dips, allocator warm-up, daily load swings) that must yield no finding, and planted leaks, idle
// stretches, imbalance, gaps and errors that must. Used by the tests, by `report --demo` and (through
// dist/history-generator.js, bench/make-history.mjs) by `npm run bench`. Each row is written the way
// `collect --csv-dir` writes it.

export const HEADER =
  'time,host,task_id,gpu_id,gpu_uuid,gpu_name,status,utilization_percent,memory_used_mib,memory_total_mib,power_draw_w,temperature_c,sm_clock_mhz,mem_clock_mhz';

/** Deterministic noise (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Epoch ms -> "2026-11-23T00:00:15.000+08:00" in a fixed zone offset (minutes east of UTC). */
export function isoWithOffset(ms: number, offsetMinutes: number): string {
  const d = new Date(ms + offsetMinutes * 60_000);
  const sign = offsetMinutes >= 0 ? '+' : '-';
  const abs = Math.abs(offsetMinutes);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

const HOUR = 3_600_000;

/**
 * Profiles: (hoursSinceStart, rand) -> { util, memory } or undefined (no sample), or { status } for a
 * failed sample. Steady ones carry realistic noise.
 */
/** One GPU's load at an hour of the trail. */
export type Profile = (hours: number, rand: () => number) => { util: number; memory: number };

export const PROFILES = {
  training: (h: number, r: () => number) => {
    const inEval = h % 1 >= 0.9; // evaluation for the last 6 minutes of every hour
    return { util: inEval ? 30 + 10 * r() : 88 + 10 * r(), memory: 61000 + 400 * r() + (inEval ? 2500 : 0) };
  },
  inference: (h: number, r: () => number) => {
    const daily = 35 + 25 * Math.sin(((h % 24) / 24) * 2 * Math.PI);
    const warmUp = Math.min(1, h / 3) * 3000; // the allocator caches for the first hours, then holds
    return { util: Math.max(0, daily + 15 * (r() - 0.5)), memory: 18000 + warmUp + 300 * r() };
  },
  /** 6000 MiB on Monday 00:00, 10200 MiB on Thursday 00:00: 1400 MiB a day, with noise and spikes. */
  leak: (h: number, r: () => number) => ({ util: 40 + 20 * r(), memory: 6000 + (1400 / 24) * h + 250 * r() + (r() < 0.01 ? 3000 : 0) }),
  idleWithMemory: () => ({ util: 0, memory: 30000 }),
  busy: (_h: number, r: () => number) => ({ util: 90 + 8 * r(), memory: 50000 + 200 * r() }),
  waiting: (_h: number, r: () => number) => ({ util: 5 + 8 * r(), memory: 50000 + 200 * r() }),
} satisfies Record<string, Profile>;

/** What generateRows writes: one host and task's rows. */
export interface HistoryOptions {
  start: number;
  hours: number;
  intervalSeconds?: number;
  host?: string;
  task?: string;
  /** A profile name or function per GPU. */
  gpus: (string | Profile)[];
  offsetMinutes?: number;
  seed?: number;
  /** Drops a sample of `gpu` at hour `h` of the trail. */
  skip?: (gpu: number, h: number) => boolean;
  /** Makes a sample a failed one with this status. */
  fail?: (gpu: number, h: number) => string | undefined;
  /** Hours since the trail began at `start` (a trail written a day at a time). */
  hourOffset?: number;
  /**
   * The `jobs` cell of `gpu`'s sample at hour `h` (as csv.md writes it), given that sample's load so
   * that a job's memory and SM share can follow the GPU's; without it, the trail has no jobs column.
   */
  jobs?: (gpu: number, h: number, load: { util: number; memory: number }) => string;
  /** The `reserved` cell of `gpu`'s sample at hour `h` (csv.md); without it, the trail has no reserved column. */
  reserved?: (gpu: number, h: number) => string;
}

/** The header of a generated trail: with the jobs and reserved columns when its rows name them. */
const headerFor = (trail: Pick<HistoryOptions, 'jobs' | 'reserved'>) =>
  `${HEADER}${trail.jobs ? ',jobs' : ''}${trail.reserved ? ',reserved' : ''}`;

/**
 * Rows of one host and task: `gpus` is a list of profile names (or functions), one per GPU. `skip`
 * and `fail` take (gpu, hoursSinceStart) and drop the sample or make it a failed one.
 */
export function generateRows({
  start,
  hours,
  intervalSeconds = 15,
  host = 'gpu-node-01',
  task = 'train',
  gpus,
  offsetMinutes = 0,
  seed = 1,
  skip,
  fail,
  jobs,
  reserved,
  hourOffset = 0,
}: HistoryOptions): string[] {
  const rand = random(seed);
  const rows: string[] = [];
  const profiles = gpus.map((g) => {
    const profile: Profile | undefined = typeof g === 'function' ? g : (PROFILES as Record<string, Profile>)[g];
    if (!profile) throw new Error(`no such profile: ${String(g)}`);
    return profile;
  });
  for (let t = 0; t < hours * HOUR; t += intervalSeconds * 1000) {
    // Hours since the trail began: a trail written a day at a time goes on where the last day ended.
    const h = t / HOUR + hourOffset;
    const time = isoWithOffset(start + t + Math.floor(rand() * 40), offsetMinutes);
    profiles.forEach((profile, gpu) => {
      if (skip?.(gpu, h)) return;
      const uuid = `GPU-0000000${gpu}-1111-2222-3333-44444444444${gpu}`;
      const failure = fail?.(gpu, h);
      if (failure) {
        rows.push(`${time},${host},${task},${gpu},${uuid},,${failure},,,,,,,${jobs ? ',' : ''}${reserved ? ',' : ''}`);
        return;
      }
      const { util, memory } = profile(h, rand);
      const u = Math.round(util);
      const power = (80 + 6 * u + 10 * rand()).toFixed(2);
      const temp = Math.round(30 + u * 0.4 + 2 * rand());
      rows.push(
        `${time},${host},${task},${gpu},${uuid},NVIDIA H200,ok,${u},${Math.round(memory)},143771,${power},${temp},${u > 5 ? 1980 : 345},3201${jobs ? `,${csvCell(jobs(gpu, h, { util: u, memory: Math.round(memory) }))}` : ''}${reserved ? `,${csvCell(reserved(gpu, h))}` : ''}`,
      );
    });
  }
  return rows;
}

/** Day `day` (from 0) of a trail that began at `start`: 24 hours at 15 s, its own seed, hours counted from `start`. */
const dayOfRows = (day: number, options: Omit<HistoryOptions, 'hours' | 'seed' | 'hourOffset'>): string[] =>
  generateRows({ ...options, start: options.start + day * 24 * HOUR, hours: 24, intervalSeconds: 15, seed: day + 1, hourOffset: day * 24 });

/** What a trail of whole days takes: every HistoryOptions but those each day sets, and how many days. */
export type TrailOptions = Partial<Omit<HistoryOptions, 'hours' | 'seed' | 'hourOffset'>> & { days?: number };

/** A trail's options with their defaults: 7 days of one training GPU from 2026-01-01, task `train`. */
const trailDefaults = ({ days = 7, gpus = ['training'], start = Date.UTC(2026, 0, 1), task = 'train', ...rest }: TrailOptions) => ({
  days,
  day: { ...rest, gpus, start, task },
});

/** Writes `days` days of `gpus` GPUs' rows at 15 s under `dir`: a gzipped archive per day, the last day live; returns the rows written. */
export function writeHistory(dir: string, options: TrailOptions = {}): number {
  const { days, day: trail } = trailDefaults(options);
  const { start, task } = trail;
  mkdirSync(dir, { recursive: true });
  let total = 0;
  for (let day = 0; day < days; day++) {
    const rows = dayOfRows(day, trail);
    const text = `${headerFor(trail)}\n${rows.join('\n')}\n`;
    const name = isoWithOffset(start + day * 24 * HOUR, 0)
      .slice(0, 10)
      .replace(/-/g, '');
    if (day === days - 1) writeFileSync(`${dir}/${task}.csv`, text);
    else writeFileSync(`${dir}/${task}-${name}.csv.gz`, gzipSync(text));
    total += rows.length;
  }
  return total;
}

/**
 * The same trail as writeHistory, archived the way the daily timer does: each day's rows are
 * appended to the live file, then the real archiver runs just after midnight (UTC) of the next day,
 * with --compress and, unless `sidecars` is false, the report's sidecars. The last day stays live.
 */
export async function writeArchivedHistory(dir: string, options: TrailOptions & { sidecars?: boolean } = {}): Promise<number> {
  const { sidecars = true, ...rest } = options;
  const { days, day: trail } = trailDefaults(rest);
  const { start, task } = trail;
  mkdirSync(dir, { recursive: true });
  let total = 0;
  for (let day = 0; day < days; day++) {
    const rows = dayOfRows(day, trail);
    // The archiver leaves the live file empty; the collector starts it again with the header.
    appendFileSync(`${dir}/${task}.csv`, `${headerFor(trail)}\n${rows.join('\n')}\n`);
    total += rows.length;
    if (day === days - 1) break;
    const result = await archiveDirectory(dir, {
      keep: 100_000,
      compress: true,
      delayCompress: false,
      minSize: 0,
      now: new Date(start + (day + 1) * 24 * HOUR + 5_000),
      ...(sidecars ? { sidecars: REPORT_SIDECARS } : {}),
    });
    if ('error' in result || result.problems.length > 0) throw new Error(`archive: ${JSON.stringify(result)}`);
  }
  return total;
}
