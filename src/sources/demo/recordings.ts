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

/** The files of one demo host: all fields once, its processes, and -lms series of the moving fields. */
export const DEMO_FILES = {
  gpus: 'h200x2-load.query-gpu.csv',
  processes: 'h200x2-load.query-compute-apps.csv',
  series: ['h200x2-saturated.lms500.csv', 'h200x2-starved.lms500.csv', 'h200x2-tiny.lms500.csv', 'h200x2-idle.lms500.csv'],
  pulse: 'h200-bursts-10.lms200.csv',
} as const;

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
