import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runReport } from '../../src/commands/report.js';
import { buildReport, type Report, type ReportBy } from '../../src/report/build.js';
import { reportCsvPieces, reportJsonPieces, reportTablePieces } from '../../src/report/formats.js';
import { writeHistory } from '../../src/report/history-generator.js';
import { tempDir } from '../support/helpers.js';

/** The rows a report holds for its --by: what the document's `rows` must list, one for one. */
const rowsOf = (report: Report): readonly unknown[] =>
  report.by === 'hour' || report.by === 'day'
    ? [...report.rows]
    : report.by === 'job'
      ? report.jobs
      : report.by === 'gpu'
        ? report.summaryByGpu
        : report.by === 'host'
          ? report.summaryByHost
          : report.summary;

describe('report text, made a piece at a time', () => {
  // Heavy: twelve days of six GPUs, reported six ways (about 10 s on a quiet 2-core machine, three
  // times that beside other work).
  it('adds up to the whole document, and a long report comes in many pieces, none of them large', { timeout: 180_000 }, async () => {
    const dir = await tempDir();
    // 12 days of 6 GPUs: 1,728 rows by hour, more than one piece's worth.
    writeHistory(dir, {
      days: 12,
      gpus: ['leak', 'idleWithMemory', 'busy', 'waiting', 'training', 'training'],
      jobs: (gpu) => (gpu === 0 ? 'slurm:7001:alice:40000:60' : '-'),
    });
    for (const by of ['hour', 'day', 'task', 'gpu', 'host', 'job'] as ReportBy[]) {
      const report = await buildReport({ csvDirs: [dir], by });
      if ('error' in report) throw new Error(report.error);
      const json = [...reportJsonPieces(report)];
      const document = JSON.parse(json.join(''));
      // Byte for byte what one JSON.stringify of the document writes, with every row in it.
      expect(json.join(''), by).toBe(`${JSON.stringify(document, null, 2)}\n`);
      expect(document.rows.length, by).toBe(rowsOf(report).length);
      expect(document.summary.length, by).toBe(report.summary.length);
      if (by !== 'hour') continue;
      expect([...report.rows].length).toBeGreaterThan(1500);
      for (const pieces of [json, [...reportCsvPieces(report)], [...reportTablePieces(report)]]) {
        expect(pieces.length).toBeGreaterThan(2);
        const whole = pieces.join('').length;
        expect(Math.max(...pieces.map((piece) => piece.length))).toBeLessThan(whole * 0.75);
      }
    }
  });
});

describe('report on a slow reader', () => {
  it('waits for it piece by piece and writes all of it, as --out does', { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    writeHistory(dir, { days: 12, gpus: ['training', 'busy'] });
    const written: string[] = [];
    let waits = 0;
    // A reader that takes each write a turn of the loop later, with room for one small write only.
    const reader = new Writable({
      highWaterMark: 64,
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString());
        setImmediate(done);
      },
    });
    reader.on('drain', () => waits++);
    const err = new PassThrough();
    const args = { csvDir: [dir], by: 'hour', format: 'csv' } as Parameters<typeof runReport>[0];
    expect(await runReport(args, { out: reader, err })).toBe(0);
    // Beside the trail, under a name that is none of its own (report.csv would be task report's live file).
    const out = join(dir, 'report.out');
    expect(await runReport({ ...args, out }, { out: new PassThrough(), err })).toBe(0);
    expect(written.join('')).toBe(await readFile(out, 'utf8'));
    expect(waits).toBeGreaterThan(1);
  });
});

describe('report on a stdout that fails', () => {
  // The launcher stops on a broken pipe and fails on other errors; a caller handing its own stream
  // must not be left waiting for a drain that never comes once the stream is gone.
  it('stops writing at the first failed write instead of waiting forever', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    writeHistory(dir, { days: 12, gpus: ['training', 'busy'] });
    let writes = 0;
    const failing = new Writable({
      highWaterMark: 64,
      write(_chunk: Buffer, _encoding, done) {
        writes++;
        done(Object.assign(new Error('write EIO'), { code: 'EIO' }));
      },
    });
    const errors: string[] = [];
    failing.on('error', (error: NodeJS.ErrnoException) => errors.push(error.code ?? ''));
    const args = { csvDir: [dir], by: 'hour', format: 'csv' } as Parameters<typeof runReport>[0];
    await runReport(args, { out: failing, err: new PassThrough() });
    expect({ writes, errors }).toEqual({ writes: 1, errors: ['EIO'] });
  });
});
