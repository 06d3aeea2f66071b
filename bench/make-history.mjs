// The trail generator (src/report/history-generator.ts) for scripts: `npm run build` bundles it as
// dist/history-generator.js. As a command: a trail of `days` days of `gpus` training GPUs at 15 s,
// one gzipped archive per day and the last day as the live file, written a day at a time:
//   node bench/make-history.mjs DIR DAYS [GPUS]     e.g. a year of 8 GPUs: DIR 365 8 (~17 M rows)
import { createRequire } from 'node:module';

const generator = createRequire(import.meta.url)('../dist/history-generator.js');
export const { HEADER, PROFILES, generateRows, isoWithOffset, random, writeHistory } = generator;

if (import.meta.url === `file://${process.argv[1]}`) {
  const [dir, days = '7', gpus = '8'] = process.argv.slice(2);
  if (!dir) throw new Error('usage: node bench/make-history.mjs DIR DAYS [GPUS]');
  const total = writeHistory(dir, { days: Number(days), gpus: Array(Number(gpus)).fill('training') });
  console.log(`${total} rows in ${days} files under ${dir}`);
}
