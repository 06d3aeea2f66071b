import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { outputLines, splitCells } from '../nvidia-smi/cells.js';

// The recordings the demo replays, as the package ships them (scripts/build.mjs copies them from
// test/fixtures into dist/demo/): real nvidia-smi --format=csv output, header and units included.

/** A recorded --format=csv table: column names without their " [unit]", and rows of unit-less cells. */
export interface Recorded {
  names: string[];
  rows: string[][];
}

/** One demo host's files: all fields once, its processes, and -lms series (every `stepMs`) of the moving fields. */
export interface DemoHostFiles {
  gpus: string;
  processes: string;
  series: readonly string[];
  stepMs: number;
}

/**
 * The demo hosts (--demo-host), each real recordings: two H200s under load (their series cycle
 * through saturated, tiny-kernel and idle work), the same two idle, and one H200 (another
 * driver) cycling through saturated, data-starved, copy-bound and idle work.
 */
export const DEMO_HOSTS = {
  'h200x2-load': {
    gpus: 'h200x2-load.query-gpu.csv',
    processes: 'h200x2-load.query-compute-apps.csv',
    // Not the "starved" series of this capture: it reads 0 % busy at 330 W throughout, true of that
    // run but a contradiction to anyone seeing the demo first (h200's starved-30 swings, and stays).
    series: ['h200x2-saturated.lms500.csv', 'h200x2-tiny.lms500.csv', 'h200x2-idle.lms500.csv'],
    stepMs: 500,
  },
  'h200x2-idle': {
    gpus: 'h200x2-idle.query-gpu.csv',
    processes: 'h200x2-idle.query-compute-apps.csv',
    series: ['h200x2-idle.lms500.csv'],
    stepMs: 500,
  },
  h200: {
    gpus: 'h200.query-gpu.csv',
    processes: 'h200.query-compute-apps.csv',
    series: ['h200-saturated.lms200.csv', 'h200-starved-30.lms200.csv', 'h200-h2d-pinned.lms200.csv', 'h200-idle.lms200.csv'],
    stepMs: 200,
  },
} as const satisfies Record<string, DemoHostFiles>;

export type DemoHostName = keyof typeof DEMO_HOSTS;

/** The recording pulse --source demo replays. */
export const DEMO_FILES = { pulse: 'h200-bursts-10.lms200.csv' } as const;

/**
 * --format=csv text -> names and cells, each cell stripped of its column's unit ("1980 MHz" -> "1980"),
 * as --format=csv,nounits prints it. Rows with the wrong number of cells are left out, not guessed at.
 */
export function parseRecorded(text: string): Recorded {
  const [header = '', ...lines] = outputLines(text);
  const columns = splitCells(header).map((cell) => ({ name: cell.replace(/ \[.*\]$/, ''), unit: /\[(.*)\]$/.exec(cell)?.[1] }));
  const rows = lines
    .map(splitCells)
    .filter((cells) => cells.length === columns.length)
    .map((cells) =>
      cells.map((cell, i) =>
        columns[i]!.unit && cell.endsWith(` ${columns[i]!.unit}`) ? cell.slice(0, -columns[i]!.unit!.length - 1) : cell,
      ),
    );
  return { names: columns.map((column) => column.name), rows };
}

/** Reads one recording of the demo folder `dir`. */
export const readRecording = (dir: string, name: string): string => readFileSync(join(dir, name), 'utf8');
