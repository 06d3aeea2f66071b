// The trail generator (src/report/history-generator.ts) for scripts: `npm run build` bundles it as
// dist/history-generator.js. As a command: a trail of `days` days of `gpus` training GPUs at 15 s,
// archived a day at a time by the real archiver (`gpu-textfile archive --compress`, run at 00:00:05
// UTC of the next day, so each archive is named after its rotation day and gets its sidecar), the
// last day left as the live file:
//   node bench/make-history.mjs DIR DAYS [GPUS] [--hosts N] [--no-sidecars]
//     e.g. a year of 8 GPUs: DIR 365 8 (~17 M rows; minutes, each day is gzipped and aggregated)
//     --hosts N: a fleet, DIR/host-01 ... DIR/host-N, each its own host's trail (as rsync gathers them)
//     --no-sidecars: archives as an older version wrote them (no sidecars; `report` reads their rows)
import { createRequire } from 'node:module';
import { join } from 'node:path';

const generator = createRequire(import.meta.url)('../dist/history-generator.js');
export const { HEADER, PROFILES, generateRows, isoWithOffset, random, writeHistory, writeArchivedHistory } = generator;

if (import.meta.url === `file://${process.argv[1]}`) {
  const flags = process.argv.slice(2);
  const hostsAt = flags.indexOf('--hosts');
  const hosts = hostsAt >= 0 ? Number(flags.splice(hostsAt, 2)[1]) : 0;
  const sidecars = !flags.includes('--no-sidecars');
  const [dir, days = '7', gpus = '8'] = flags.filter((f) => f !== '--no-sidecars');
  if (!dir || !(Number(days) > 0) || !(Number(gpus) > 0) || Number.isNaN(hosts))
    throw new Error('usage: node bench/make-history.mjs DIR DAYS [GPUS] [--hosts N] [--no-sidecars]');
  const trails = hosts > 0 ? Array.from({ length: hosts }, (_, i) => `host-${String(i + 1).padStart(2, '0')}`) : [undefined];
  let total = 0;
  for (const host of trails) {
    total += await writeArchivedHistory(host ? join(dir, host) : dir, {
      days: Number(days),
      gpus: Array(Number(gpus)).fill('training'),
      ...(host ? { host } : {}),
      sidecars,
    });
  }
  console.log(`${total} rows, ${days} days of ${gpus} GPUs${hosts ? ` on each of ${hosts} hosts` : ''}, under ${dir}`);
}
