// The pulse recordings in test/fixtures/series, what each one is, which ones tuned the thresholds,
// and the tables docs/pulse.md shows (built here so the doc cannot drift from the code).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { classifyPulse } from '../../src/pulse/classify.js';
import type { PulseVerdict } from '../../src/pulse/verdicts.js';
import { parseSeries, type SeriesSample } from '../../src/sources/nvidia-smi/series-csv.js';
import { FIXTURES } from '../support/helpers.js';

export const SERIES = join(FIXTURES, 'series');
export const RECORDINGS = readdirSync(SERIES)
  .filter((f) => f.endsWith('.csv'))
  .sort();
const VERDICTS: PulseVerdict[] = ['idle', 'saturated', 'data_starved', 'throttled', 'copies_or_tiny_kernels', 'mixed'];

/** The thresholds were tuned on these alone; every other recording is held out. */
export const TUNING = new Set([
  // The recordings the first rules were tuned on.
  ...RECORDINGS.filter(
    (f) => /^h200__580\.159\.04__(idle|saturated|starved-\d+|tiny)__lms(100|200)\.csv$/.test(f) || f.startsWith('h200x2__'),
  ),
  // Of the recordings made for issue 17, the 200 ms ones of these loads.
  ...['bursts-5', 'bursts-10', 'bursts-40', 'h2d-pageable', 'h2d-pinned', 'd2h-pageable', 'both-pinned'].map(
    (load) => `h200__580.159.04__${load}__lms200.csv`,
  ),
]);

/** `h200__580.159.04__bursts-10__lms200.csv` -> the load that ran. */
export const loadOf = (file: string) => file.split('__')[2]!;

/** The verdict each load should get, from what the load did (bench/load.py), not from what pulse said. */
export function expectedVerdict(file: string): PulseVerdict {
  const load = loadOf(file);
  if (load.startsWith('idle')) return 'idle';
  if (load === 'saturated') return 'saturated';
  if (/^(starved|bursts)/.test(load)) return 'data_starved';
  if (/^(tiny|h2d|d2h|both)/.test(load)) return 'copies_or_tiny_kernels';
  throw new Error(`no expected verdict for ${file}`);
}

/** GPU 0 of a recording (the load ran there). */
export function gpu0(file: string): SeriesSample[] {
  const parsed = parseSeries(readFileSync(join(SERIES, file), 'utf8'));
  if ('error' in parsed) throw new Error(parsed.error);
  return parsed.samples.filter((s) => s.gpu === '0');
}

/** docs/pulse.md's tables: each recording x verdict, then the counts of expected x given verdicts per set. */
export function confusionTables(): string {
  const rows = RECORDINGS.map((file) => ({
    file,
    set: TUNING.has(file) ? 'tuning' : 'held out',
    expected: expectedVerdict(file),
    got: classifyPulse(gpu0(file)).verdict,
  }));
  const perRecording = [
    `| recording | set | expected | ${VERDICTS.join(' | ')} |`,
    `|---|---|---|${VERDICTS.map(() => '---').join('|')}|`,
    ...rows.map(
      (r) =>
        `| \`${r.file.replace('.csv', '')}\` | ${r.set} | ${r.expected} | ${VERDICTS.map((v) => (v === r.got ? (v === r.expected ? '✔' : '✘') : '')).join(' | ')} |`,
    ),
  ];
  const counts = (set: string) => [
    `| ${set}: expected \\ given | ${VERDICTS.join(' | ')} |`,
    `|---|${VERDICTS.map(() => '---').join('|')}|`,
    ...VERDICTS.filter((e) => rows.some((r) => r.expected === e)).map(
      (e) =>
        `| ${e} | ${VERDICTS.map((v) => rows.filter((r) => r.set === set && r.expected === e && r.got === v).length || '').join(' | ')} |`,
    ),
  ];
  return [...counts('tuning'), '', ...counts('held out'), '', ...perRecording].join('\n');
}
