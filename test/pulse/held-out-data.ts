import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { classifyPulse } from '../../src/pulse/classify.js';
import type { PulseVerdict } from '../../src/pulse/verdicts.js';
import { parseSeries, type SeriesSample } from '../../src/sources/nvidia-smi/series-csv.js';
import { CAPTURES } from '../support/helpers.js';

// The held-out data pulse's thresholds never saw (docs/pulse.md, "Held out"), read for
// test/pulse/held-out.test.ts, and the tables docs/pulse.md shows of it (built here so the doc cannot drift).

/** A recording's text with the named columns taken out (as a recorder that did not ask for them). */
export function without(text: string, columns: readonly string[]): string {
  const lines = text.trim().split('\n');
  const header = lines[0]!.split(', ');
  const drop = new Set(header.flatMap((name, i) => (columns.includes(name.replace(/ \[.*\]$/, '')) ? [i] : [])));
  expect(drop.size).toBe(columns.length);
  return `${lines
    .map((line) =>
      line
        .split(', ')
        .filter((_, i) => !drop.has(i))
        .join(', '),
    )
    .join('\n')}\n`;
}

/** GPU 0 of a parsed recording text. */
export function samplesOf(text: string): SeriesSample[] {
  const parsed = parseSeries(text);
  if ('error' in parsed) throw new Error(parsed.error);
  return parsed.samples.filter((s) => s.gpu === '0');
}

/** A one-row capture of another GPU (test/fixtures/captures) as 30 samples a second apart: a steady load. */
export function steady(captureName: string): SeriesSample[] {
  const [header, row] = readFileSync(join(CAPTURES, captureName, 'query-gpu.csv'), 'utf8')
    .trim()
    .split('\n');
  const start = Date.UTC(2026, 0, 1);
  const rows = Array.from({ length: 30 }, (_, i) => {
    const time = new Date(start + i * 1000).toISOString().replace('T', ' ').replace('Z', '').replaceAll('-', '/');
    return row!.replace(/^[^,]*/, time);
  });
  return samplesOf([header, ...rows].join('\n'));
}

/** Other GPUs' captures and what ran on them (their SOURCE.md): idle, or gpu-burn on the H100. */
export const OTHER_GPUS: [capture: string, is: PulseVerdict][] = [
  ['geforce-rtx-2080-super__595.71.05__linux-idle', 'idle'],
  ['geforce-rtx-4080-super__595.71.05__linux-idle', 'idle'],
  ['h100-80gb-hbm3__590.48.01__linux-idle', 'idle'],
  ['h100-80gb-hbm3__590.48.01__linux-load', 'saturated'],
];

/** docs/pulse.md's table of other GPUs: each capture held steady for 30 s, and what pulse says. */
export function otherGpusTable(): string {
  const rows = OTHER_GPUS.map(([name, is]) => {
    const pulse = classifyPulse(steady(name));
    return `| \`${name}\` | ${is} | ${pulse.verdict} ${pulse.verdict === is ? '✔' : '✘'} |`;
  });
  return ['| capture, held 30 s | is | pulse |', '|---|---|---|', ...rows].join('\n');
}

/** The real trail (h200__580.159.04__load-trail): each load's samples, cut by bench/load.py's phase lines. */
export function trailPhases(): { load: string; samples: SeriesSample[] }[] {
  const dir = join(CAPTURES, 'h200__580.159.04__load-trail');
  const [header, ...rows] = readFileSync(join(dir, 'h200-load.csv'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(','));
  const at = (name: string) => header!.indexOf(name);
  const samples: SeriesSample[] = rows.map((row) => ({
    time: Date.parse(row[at('time')]!),
    gpu: row[at('gpu_id')]!,
    utilization: Number(row[at('utilization_percent')]),
    powerW: Number(row[at('power_draw_w')]),
    smClockMHz: Number(row[at('sm_clock_mhz')]),
  }));
  const phases = readFileSync(join(dir, 'phases.txt'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.split(' '))
    .map(([, load, seconds]) => ({ load: load!, from: Number(seconds) * 1000 }));
  return phases.slice(0, -1).flatMap(({ load, from }, i) => {
    const to = phases[i + 1]!.from;
    return load === 'rest' ? [] : [{ load, samples: samples.filter((s) => s.time >= from && s.time < to) }];
  });
}

/** What each load of bench/load.py is. */
export const LOAD_VERDICT: Record<string, PulseVerdict> = {
  idle: 'idle',
  saturated: 'saturated',
  'starved-30': 'data_starved',
  'starved-60': 'data_starved',
  tiny: 'copies_or_tiny_kernels',
  'h2d-pinned': 'copies_or_tiny_kernels',
  'bursts-10': 'data_starved',
};

/** docs/pulse.md's table of the trail: each load, what it is, and what pulse says, as recorded (no limit) and with the H200's 700 W limit. */
export function trailTable(): string {
  const rows = trailPhases().map(({ load, samples }) => {
    const given = classifyPulse(samples).verdict;
    const withLimit = classifyPulse(samples.map((s) => ({ ...s, powerLimitW: 700 }))).verdict;
    const mark = (v: PulseVerdict) => (v === LOAD_VERDICT[load] ? `${v} ✔` : `${v} ✘`);
    return `| ${load} | ${samples.length} | ${LOAD_VERDICT[load]} | ${mark(given)} | ${mark(withLimit)} |`;
  });
  return ['| load | samples | is | pulse, as recorded (no limit) | pulse, with the 700 W limit |', '|---|---|---|---|---|', ...rows].join(
    '\n',
  );
}
