import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { HEADER, generateRows } from '../../src/report/history-generator.js';
import { runCli, tempDir } from '../helpers.js';

const DAY = 86_400_000;
const START = Date.UTC(2026, 10, 23);

describe('report over a trail with bad files', () => {
  it('skips a truncated and a garbage .gz (and a directory named like a live file), says which on stderr, counts them, exits 0', async () => {
    const dir = await tempDir();
    const day = (n: number) =>
      generateRows({ start: START + n * DAY, hours: 24, intervalSeconds: 60, seed: n + 1, gpus: ['training', 'training'] });
    const [first, second, third, live] = [day(0), day(1), day(2), day(3)];
    await writeFile(join(dir, 'train-20261123.csv.gz'), gzipSync(`${HEADER}\n${first.join('\n')}\n`));
    // Cut in the middle: gunzip gives the rows before the cut, then "unexpected end of file".
    const whole = gzipSync(`${HEADER}\n${second.join('\n')}\n`);
    await writeFile(join(dir, 'train-20261124.csv.gz'), whole.subarray(0, Math.floor(whole.length / 2)));
    await writeFile(
      join(dir, 'train-20261125.csv.gz'),
      Buffer.from('this is not gzip at all, just text someone saved with the wrong name\n'),
    );
    await writeFile(join(dir, 'train.csv'), `${HEADER}\n${live.join('\n')}\n`);
    await mkdir(join(dir, 'other.csv'));
    expect(third.length).toBeGreaterThan(0);

    const result = await runCli(['report', '--csv-dir', dir, '--format', 'json', '--by', 'day'], { TZ: 'UTC' });
    expect(result.exitCode).toBe(0);
    const stderr = result.stderr.trim().split('\n');
    expect(stderr).toHaveLength(3);
    expect(stderr.find((line) => line.includes('train-20261124.csv.gz'))).toMatch(
      /^gpu-textfile: skipped .*train-20261124\.csv\.gz: .*unexpected end of file.*after \d+ rows/,
    );
    expect(stderr.find((line) => line.includes('train-20261125.csv.gz'))).toMatch(
      /^gpu-textfile: skipped .*train-20261125\.csv\.gz: .*(incorrect header check|not gzip)/,
    );
    expect(stderr.find((line) => line.includes('other.csv'))).toMatch(/EISDIR/);

    const report = JSON.parse(result.stdout) as {
      rows: { period: string; samples: number }[];
      bad_files: { file: string; rows_read: number }[];
      rows_read: number;
    };
    expect(report.bad_files.map((f) => f.file.slice(dir.length + 1)).sort()).toEqual([
      'other.csv',
      'train-20261124.csv.gz',
      'train-20261125.csv.gz',
    ]);
    // The readable start of the truncated archive is kept, no row is counted twice, the good files are whole.
    const truncatedRows = report.bad_files.find((f) => f.file.endsWith('train-20261124.csv.gz'))!.rows_read;
    expect(truncatedRows).toBeGreaterThan(0);
    expect(truncatedRows).toBeLessThan(second.length);
    expect(report.rows_read).toBe(first.length + truncatedRows + live.length);
    expect(report.rows.map((r) => [r.period.slice(0, 10), r.samples])).toEqual([
      ['2026-11-23', first.length / 2],
      ['2026-11-23', first.length / 2],
      ['2026-11-24', truncatedRows / 2],
      ['2026-11-24', truncatedRows / 2],
      ['2026-11-26', live.length / 2],
      ['2026-11-26', live.length / 2],
    ]);
  });
});
