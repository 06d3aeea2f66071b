// Generated CSV trails with known patterns: steady training and inference GPUs (noise, evaluation
// dips, allocator warm-up, daily load swings) that must yield no finding, and planted leaks, idle
// stretches, imbalance, gaps and errors that must. Used by the tests and by `npm run bench`.
// Each row is written the way `collect --csv-dir` writes it.

export const HEADER =
  'time,host,task_id,gpu_id,gpu_uuid,gpu_name,status,utilization_percent,memory_used_mib,memory_total_mib,power_draw_w,temperature_c,sm_clock_mhz,mem_clock_mhz';

/** Deterministic noise (mulberry32). */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** Epoch ms -> "2026-11-23T00:00:15.000+08:00" in a fixed zone offset (minutes east of UTC). */
export function isoWithOffset(ms, offsetMinutes) {
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
export const PROFILES = {
  training: (h, r) => {
    const inEval = h % 1 >= 0.9; // evaluation for the last 6 minutes of every hour
    return { util: inEval ? 30 + 10 * r() : 88 + 10 * r(), memory: 61000 + 400 * r() + (inEval ? 2500 : 0) };
  },
  inference: (h, r) => {
    const daily = 35 + 25 * Math.sin(((h % 24) / 24) * 2 * Math.PI);
    const warmUp = Math.min(1, h / 3) * 3000; // the allocator caches for the first hours, then holds
    return { util: Math.max(0, daily + 15 * (r() - 0.5)), memory: 18000 + warmUp + 300 * r() };
  },
  /** 6000 MiB on Monday 00:00, 10200 MiB on Thursday 00:00: 1400 MiB a day, with noise and spikes. */
  leak: (h, r) => ({ util: 40 + 20 * r(), memory: 6000 + (1400 / 24) * h + 250 * r() + (r() < 0.01 ? 3000 : 0) }),
  idleWithMemory: () => ({ util: 0, memory: 30000 }),
  busy: (_h, r) => ({ util: 90 + 8 * r(), memory: 50000 + 200 * r() }),
  waiting: (_h, r) => ({ util: 5 + 8 * r(), memory: 50000 + 200 * r() }),
};

/**
 * Rows of one host and task: `gpus` is a list of profile names (or functions), one per GPU. `skip`
 * and `fail` take (gpu, hoursSinceStart) and drop the sample or make it a failed one.
 * @param {{ start: number, hours: number, intervalSeconds?: number, host?: string, task?: string,
 *   gpus: Array<string | ((h: number, r: () => number) => { util: number, memory: number })>,
 *   offsetMinutes?: number, seed?: number, skip?: (gpu: number, h: number) => boolean,
 *   fail?: (gpu: number, h: number) => string | undefined }} options
 * @returns {string[]}
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
}) {
  const rand = random(seed);
  const rows = [];
  const profiles = gpus.map((g) => (typeof g === 'function' ? g : PROFILES[g]));
  for (let t = 0; t < hours * HOUR; t += intervalSeconds * 1000) {
    const h = t / HOUR;
    const time = isoWithOffset(start + t + Math.floor(rand() * 40), offsetMinutes);
    profiles.forEach((profile, gpu) => {
      if (skip?.(gpu, h)) return;
      const uuid = `GPU-0000000${gpu}-1111-2222-3333-44444444444${gpu}`;
      const failure = fail?.(gpu, h);
      if (failure) {
        rows.push(`${time},${host},${task},${gpu},${uuid},,${failure},,,,,,,`);
        return;
      }
      const { util, memory } = profile(h, rand);
      const u = Math.round(util);
      const power = (80 + 6 * u + 10 * rand()).toFixed(2);
      const temp = Math.round(30 + u * 0.4 + 2 * rand());
      rows.push(
        `${time},${host},${task},${gpu},${uuid},NVIDIA H200,ok,${u},${Math.round(memory)},143771,${power},${temp},${u > 5 ? 1980 : 345},3201`,
      );
    });
  }
  return rows;
}

// As a command: a trail of `days` days of `gpus` training GPUs at 15 s, one gzipped archive per day
// and the last day as the live file, written a day at a time (memory stays flat):
//   node bench/make-history.mjs DIR DAYS [GPUS]     e.g. a year of 8 GPUs: DIR 365 8 (~17 M rows)
if (import.meta.url === `file://${process.argv[1]}`) {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const { gzipSync } = await import('node:zlib');
  const [dir, days = '7', gpus = '8'] = process.argv.slice(2);
  if (!dir) throw new Error('usage: node bench/make-history.mjs DIR DAYS [GPUS]');
  mkdirSync(dir, { recursive: true });
  const start = Date.UTC(2026, 0, 1);
  let total = 0;
  for (let day = 0; day < Number(days); day++) {
    const rows = generateRows({
      start: start + day * 24 * HOUR,
      hours: 24,
      intervalSeconds: 15,
      seed: day + 1,
      gpus: Array(Number(gpus)).fill('training'),
    });
    const text = `${HEADER}\n${rows.join('\n')}\n`;
    const name = isoWithOffset(start + day * 24 * HOUR, 0)
      .slice(0, 10)
      .replace(/-/g, '');
    if (day === Number(days) - 1) writeFileSync(`${dir}/train.csv`, text);
    else writeFileSync(`${dir}/train-${name}.csv.gz`, gzipSync(text));
    total += rows.length;
  }
  console.log(`${total} rows in ${days} files under ${dir}`);
}
