import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One column of a capture's query-gpu.csv per GPU, as recorded ("1980 MHz" -> 1980): the expected values, read apart from the code under test. */
export function recorded(captureDir: string, column: string): number[] {
  const [header, ...rows] = readFileSync(join(captureDir, 'query-gpu.csv'), 'utf8').trim().split('\n');
  const at = header!.split(', ').findIndex((name) => name.replace(/ \[.*\]$/, '').trim() === column);
  if (at < 0) throw new Error(`${column} is not in ${captureDir}`);
  return rows.map((row) => Number.parseFloat(row.split(', ')[at]!));
}
