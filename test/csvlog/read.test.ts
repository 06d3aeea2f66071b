import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER } from '../../src/csvlog/columns.js';
import {
  type BadFile,
  csvCells,
  decimalAt,
  type HistoryRow,
  historyFiles,
  type Line,
  type OddRows,
  readHistory,
  splitLines,
} from '../../src/csvlog/read.js';
import { HEADER, generateRows } from '../../src/report/history-generator.js';
import { runCli, tempDir } from '../support/helpers.js';

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

/** A CSV trail row in CSV_HEADER's order, from the cells it names; the rest empty. */
const trailRow = (cells: Partial<Record<string, string>>, header: readonly string[] = CSV_HEADER): string =>
  header.map((name) => cells[name] ?? '').join(',');
const HEAD = CSV_HEADER.join(',');
const T0 = '2026-11-29T18:22:01.209+08:00';
/** T0 as milliseconds since the epoch, written out by hand: 10:22:01.209 UTC. */
const T0_MS = Date.UTC(2026, 10, 29, 10, 22, 1, 209);
const ok = (gpu: string, time = T0) =>
  trailRow({ time, host: 'node1', task_id: 'train', gpu_id: gpu, gpu_uuid: `GPU-${gpu}`, status: 'ok' });

/** Every row read from `files` (written to a temp dir first, each name -> text or bytes), and what was skipped. */
async function readAll(files: Record<string, string | Buffer>, order = Object.keys(files)) {
  const dir = await tempDir();
  for (const [name, data] of Object.entries(files)) await writeFile(join(dir, name), data);
  const odd: OddRows = { count: 0, examples: [] };
  const badFiles: BadFile[] = [];
  const rows: HistoryRow[] = [];
  const paths = order.map((name) => ({ path: join(dir, name), task: 'train' }));
  for await (const row of readHistory(paths, odd, badFiles)) rows.push(row);
  return { dir, rows, odd, badFiles: badFiles.map((b) => ({ ...b, file: b.file.slice(dir.length + 1) })) };
}

/** The lines splitLines makes of `chunks`, flattened. */
async function linesOf(chunks: (string | Buffer)[], maxLine?: number): Promise<Line[]> {
  async function* source() {
    for (const chunk of chunks) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
  }
  const lines: Line[] = [];
  for await (const batch of splitLines(source(), maxLine)) lines.push(...batch);
  return lines;
}
const plain = (...texts: string[]): Line[] => texts.map((text) => ({ text, tooLong: false }));

describe('historyFiles', () => {
  it('lists archives by task, day and counter (as a number), then the live files; skips locks, temps and other files', async () => {
    const dir = await tempDir();
    const names = [
      'train.csv',
      'train-20261120-10.csv.gz',
      'train-20261120-2.csv.gz',
      'train-20261120.csv.gz',
      'train-20261119-3.csv',
      'eval-20261125.csv',
      'eval.csv',
      '.train.csv.lock',
      '.hidden.csv',
      '.train-20261121.csv.gz.0123456789abcdef.tmp',
      'notes.txt',
    ];
    for (const name of names) await writeFile(join(dir, name), '');
    const all = await historyFiles(dir);
    const shown = all.map((f) => [f.path.slice(dir.length + 1), f.task]);
    expect(shown.slice(0, 5)).toEqual([
      ['eval-20261125.csv', 'eval'],
      ['train-20261119-3.csv', 'train'],
      ['train-20261120.csv.gz', 'train'],
      ['train-20261120-2.csv.gz', 'train'],
      ['train-20261120-10.csv.gz', 'train'],
    ]);
    // Live files last, in no particular order among themselves.
    expect(shown.slice(5).sort()).toEqual([
      ['eval.csv', 'eval'],
      ['train.csv', 'train'],
    ]);
    expect(all[0]!.path).toBe(join(dir, 'eval-20261125.csv'));
  });

  it('an archive both plain and gzipped (compression stopped before the plain one was removed): the plain one only, its rows once', async () => {
    const dir = await tempDir();
    for (const name of ['train-20261120.csv', 'train-20261120.csv.gz', 'train-20261121.csv.gz', 'train.csv'])
      await writeFile(join(dir, name), '');
    expect((await historyFiles(dir)).map((f) => f.path.slice(dir.length + 1))).toEqual([
      'train-20261120.csv',
      'train-20261121.csv.gz',
      'train.csv',
    ]);
  });

  it('with a task, only that task: its archives, then its live file', async () => {
    const dir = await tempDir();
    for (const name of ['train.csv', 'train-20261120.csv', 'eval.csv', 'eval-20261119.csv', 'trainer.csv', 'trainer-20261118.csv'])
      await writeFile(join(dir, name), '');
    const files = await historyFiles(dir, 'train');
    expect(files).toEqual([
      { path: join(dir, 'train-20261120.csv'), task: 'train', archive: { file: 'train-20261120.csv', day: '20261120' } },
      { path: join(dir, 'train.csv'), task: 'train' },
    ]);
    expect(await historyFiles(dir, 'none')).toEqual([]);
  });
});

describe('splitLines', () => {
  it('splits at LF across chunk boundaries, takes CRLF as LF, and yields a torn last line as it is', async () => {
    expect(await linesOf(['a,b\r\nc', 'd\n\ne', 'f\r', '\ng\rh\nlast'])).toEqual(plain('a,b', 'cd', '', 'ef', 'g\rh', 'last'));
  });

  it('yields nothing for nothing, and no empty line after a final newline', async () => {
    expect(await linesOf([])).toEqual([]);
    expect(await linesOf(['', 'x\n'])).toEqual(plain('x'));
  });

  it('decodes a UTF-8 character split between chunks', async () => {
    const bytes = Buffer.from('née\nçà\n');
    expect(await linesOf([bytes.subarray(0, 2), bytes.subarray(2, 7), bytes.subarray(7)])).toEqual(plain('née', 'çà'));
    // Cut inside the last character of a file without a final newline.
    const torn = Buffer.from('x\né');
    expect(await linesOf([torn.subarray(0, 3), torn.subarray(3)])).toEqual(plain('x', 'é'));
  });

  it('cuts a line longer than maxLine there, marks it, drops its rest, and reads on', async () => {
    expect(await linesOf(['abcd', 'efgh\r\nok\n'], 5)).toEqual([{ text: 'abcde', tooLong: true }, ...plain('ok')]);
    // The rest is dropped across chunks, however many, and the line after is whole.
    expect(await linesOf(['abcdefgh', 'ijkl', 'mnop', 'q\nrst\n'], 5)).toEqual([{ text: 'abcde', tooLong: true }, ...plain('rst')]);
    // A long last line without its newline is marked too.
    expect(await linesOf(['ok\nabcdefgh'], 5)).toEqual([...plain('ok'), { text: 'abcde', tooLong: true }]);
  });

  it('a line without an end does not gather in memory: what is past maxLine is dropped as it comes', async () => {
    // 600 MiB without a newline: held whole it would pass V8's longest string (about 512 Mi characters).
    const mib = Buffer.alloc(2 ** 20, 'x');
    async function* endless() {
      for (let i = 0; i < 600; i++) yield mib;
      yield Buffer.from('\nok\n');
    }
    const lines: Line[] = [];
    for await (const batch of splitLines(endless(), 5)) lines.push(...batch);
    expect(lines).toEqual([{ text: 'xxxxx', tooLong: true }, ...plain('ok')]);
  });

  it('keeps a line of exactly maxLine, and cuts one a byte longer', async () => {
    expect(await linesOf(['abcde', '\n'], 5)).toEqual(plain('abcde'));
    expect(await linesOf(['abcde'], 5)).toEqual(plain('abcde'));
    expect(await linesOf(['abcdef', '\n'], 5)).toEqual([{ text: 'abcde', tooLong: true }]);
  });

  it('takes 64 KiB as the longest line by default', async () => {
    const long = 'x'.repeat(64 * 1024);
    expect(await linesOf([`${long}\n${long}y\n`])).toEqual([
      { text: long, tooLong: false },
      { text: long, tooLong: true },
    ]);
  });
});

describe('csvCells (RFC 4180)', () => {
  const cases: [title: string, record: string, cells: string[] | undefined][] = [
    ['0: plain', 'a,b,,c', ['a', 'b', '', 'c']],
    ['1: quoted comma', 'a,"b,c",d', ['a', 'b,c', 'd']],
    ['2: doubled quote', '"say ""hi""",x', ['say "hi"', 'x']],
    ['3: quoted empty and quoted last', '"",x,"y"', ['', 'x', 'y']],
    ['4: quoted newline', '"a\nb",c', ['a\nb', 'c']],
    ['5: open quote', 'a,"b,c', undefined],
    ['6: open after a doubled quote', 'a,"b""', undefined],
    ['7: only a quote', '"', undefined],
  ];
  for (const [title, record, cells] of cases) it(title, () => expect(csvCells(record)).toEqual(cells));
});

describe('readHistory', () => {
  it('reads a row: identity cells, the values in their units, the time with its zone offset applied', async () => {
    const row = trailRow({
      time: T0,
      host: 'node1',
      task_id: 'train',
      gpu_id: '1',
      gpu_uuid: 'GPU-abc',
      gpu_name: 'NVIDIA H200',
      status: 'ok',
      utilization_percent: '87',
      memory_used_mib: '1024',
      memory_total_mib: '143771',
      power_draw_w: '412.5',
      temperature_c: '55',
    });
    const { rows, odd, badFiles } = await readAll({ 'train.csv': `${HEAD}\n${row}\n` });
    expect(rows).toEqual([
      {
        time: T0_MS,
        host: 'node1',
        task: 'train',
        gpu: '1',
        uuid: 'GPU-abc',
        status: 'ok',
        utilization: 87,
        memoryUsedMiB: 1024,
        memoryTotalMiB: 143771,
        powerW: 412.5,
        temperatureC: 55,
      },
    ]);
    expect(odd).toEqual({ count: 0, examples: [] });
    expect(badFiles).toEqual([]);
  });

  it('an empty, non-numeric or infinite value cell is absent, never 0', async () => {
    const row = trailRow({
      time: T0,
      status: 'gpu_lost',
      utilization_percent: '',
      memory_used_mib: '[N/A]',
      memory_total_mib: 'Infinity',
      power_draw_w: 'abc',
      temperature_c: '0',
    });
    const { rows } = await readAll({ 'train.csv': `${HEAD}\n${row}\n` });
    expect(rows).toHaveLength(1);
    const [read] = rows;
    for (const key of ['utilization', 'memoryUsedMiB', 'memoryTotalMiB', 'powerW'] as const) expect(read![key], key).toBeUndefined();
    expect(read!.temperatureC).toBe(0);
    expect(read!.status).toBe('gpu_lost');
  });

  it('times: Z and offsets, with or without a fraction; anything else is an odd row', async () => {
    const good = ['2026-11-29T10:22:01Z', '2026-11-29T05:22:01.5-05:00', T0];
    const bad = [
      '2026-11-29 10:22:01Z',
      '2026-11-29T10:22:01',
      '2026-11-29T10:22:01+0800',
      'x2026-11-29T10:22:01Z',
      '2026-11-29T10:22:01Zx',
      '2026-11-29T10:22:01.+08:00',
      '26-11-29T10:22:01Z',
    ];
    const text = [HEAD, ...[...good, ...bad].map((time) => ok('0', time))].join('\n');
    const { rows, odd } = await readAll({ 'train.csv': `${text}\n` });
    expect(rows.map((r) => r.time)).toEqual([Date.UTC(2026, 10, 29, 10, 22, 1), Date.UTC(2026, 10, 29, 10, 22, 1, 500), T0_MS]);
    expect(odd.count).toBe(bad.length);
    expect(odd.examples[0]).toMatch(/train\.csv: no ISO 8601 time with zone: 2026-11-29 10:22:01Z,node1,/);
  });

  it('quoted cells: a comma, a quote or a newline in a GPU name does not shift a column; CRLF files read the same', async () => {
    const row = (name: string) =>
      trailRow({ time: T0, host: 'h', task_id: 't', gpu_id: '0', gpu_uuid: 'GPU-q', gpu_name: name, status: 'ok', temperature_c: '41' });
    const text = [HEAD, row('"A, ""B"""'), row('"two\nlines"'), row('plain')].join('\r\n');
    const { rows, odd } = await readAll({ 'train.csv': `${text}\r\n` });
    expect(odd.count).toBe(0);
    expect(rows.map((r) => [r.uuid, r.status, r.temperatureC])).toEqual([
      ['GPU-q', 'ok', 41],
      ['GPU-q', 'ok', 41],
      ['GPU-q', 'ok', 41],
    ]);
  });

  it('a torn last line (a crash mid-write) is an odd row; the rows before it are read', async () => {
    const { rows, odd } = await readAll({ 'train.csv': `${HEAD}\n${ok('0')}\n${ok('1')}\n${ok('2').slice(0, 40)}` });
    expect(rows.map((r) => r.gpu)).toEqual(['0', '1']);
    expect(odd.count).toBe(1);
    expect(odd.examples[0]).toMatch(
      new RegExp(`train\\.csv: 3 cells, header has ${CSV_HEADER.length}: ${T0.replace(/[.+]/g, '\\$&')},node1,`),
    );
  });

  it('a header anywhere is taken by name: columns moved, added or left out after a field change', async () => {
    const moved = ['time', 'gpu_id', 'status', 'temperature_c', 'task_id', 'gpu_uuid', 'utilization_percent', 'extra'];
    const text = [
      HEAD,
      ok('0'),
      moved.join(','),
      trailRow(
        {
          time: T0,
          gpu_id: '7',
          status: 'ok',
          temperature_c: '60',
          task_id: 'tt',
          gpu_uuid: 'GPU-7',
          utilization_percent: '3',
          extra: 'x',
        },
        moved,
      ),
    ].join('\n');
    const { rows, odd } = await readAll({ 'train.csv': `${text}\n` });
    expect(odd.count).toBe(0);
    expect(rows[0]).toMatchObject({ gpu: '0', host: 'node1', task: 'train' });
    // host is not among the new columns: empty, as are the values not logged.
    expect(rows[1]).toEqual({ time: T0_MS, host: '', task: 'tt', gpu: '7', uuid: 'GPU-7', status: 'ok', utilization: 3, temperatureC: 60 });
  });

  it("a row with fewer cells than its header is odd, one with more (run's extra columns) is read", async () => {
    const { rows, odd } = await readAll({ 'train.csv': `${HEAD}\n${ok('0')},step,mark\n${ok('1').split(',').slice(0, -1).join(',')}\n` });
    expect(rows.map((r) => r.gpu)).toEqual(['0']);
    expect(odd.count).toBe(1);
    expect(odd.examples[0]).toContain(`${CSV_HEADER.length - 1} cells, header has ${CSV_HEADER.length}`);
  });

  it('a file without a header (rows copied after a truncate) is read in the default columns; each file starts afresh', async () => {
    const moved = ['time', 'gpu_id', 'status', 'host', 'task_id', 'gpu_uuid'];
    const { rows } = await readAll({
      'train-20261128.csv': `${moved.join(',')}\n${trailRow({ time: T0, gpu_id: '3', status: 'ok', host: 'a', task_id: 'b', gpu_uuid: 'c' }, moved)}\n`,
      'train.csv': `${ok('0')}\n`,
    });
    expect(rows.map((r) => [r.gpu, r.host, r.uuid])).toEqual([
      ['3', 'a', 'c'],
      ['0', 'node1', 'GPU-0'],
    ]);
  });

  it('blank lines are passed over without counting them odd', async () => {
    const { rows, odd } = await readAll({ 'train.csv': `\n${HEAD}\n\n${ok('0')}\n\r\n` });
    expect(rows).toHaveLength(1);
    expect(odd.count).toBe(0);
  });

  it('counts every odd row and keeps the first five as examples, each cut at 100 characters', async () => {
    const junk = Array.from({ length: 7 }, (_, i) => `garbage ${i} ${'z'.repeat(200)}`);
    const { rows, odd } = await readAll({ 'train.csv': `${HEAD}\n${junk.join('\n')}\n${ok('0')}\n` });
    expect(rows).toHaveLength(1);
    expect(odd.count).toBe(7);
    expect(odd.examples).toHaveLength(5);
    expect(odd.examples[4]).toMatch(/train\.csv: 1 cells, header has \d+: garbage 4 z+$/);
    expect(odd.examples[4]!.split(': ').at(-1)).toHaveLength(100);
  });

  it('a line over 64 KiB is one odd row, and the row after it is read', async () => {
    const { rows, odd } = await readAll({ 'train.csv': `${HEAD}\n${'y'.repeat(70_000)}\n${ok('0')}\n` });
    expect(rows.map((r) => r.gpu)).toEqual(['0']);
    expect(odd.count).toBe(1);
    expect(odd.examples[0]).toContain('train.csv: line longer than 65536 bytes: yyy');
  });

  it('a quote never closed does not swallow the file: past 64 KiB it is an odd row, and the rows after are read', async () => {
    // Long lines: each line of an open record re-reads the record so far (quadratic in its lines, up to 64 KiB).
    const filler = Array.from({ length: 8 }, (_, i) => `filler line ${i} ${'f'.repeat(9000)}`);
    const text = [HEAD, `${T0},h,t,0,GPU-0,"open name,ok`, ...filler, ok('1')].join('\n');
    const { rows, odd } = await readAll({ 'train.csv': `${text}\n` });
    expect(rows.map((r) => r.gpu)).toEqual(['1']);
    expect(odd.count).toBeGreaterThanOrEqual(1);
    expect(odd.examples[0]).toContain(`train.csv: 0 cells, header has ${CSV_HEADER.length}: ${T0},h,t,0,GPU-0,"open name`);
  });

  it('a quote still open at the end of a file is one odd row there, and does not run into the next file', async () => {
    const { rows, odd } = await readAll({
      'train-20261128.csv': `${HEAD}\n${ok('0')}\n${T0},h,t,"never closed\n`,
      'train.csv': `${ok('1')}\n`,
    });
    expect(rows.map((r) => r.gpu)).toEqual(['0', '1']);
    expect(odd).toEqual({ count: 1, examples: [expect.stringMatching(/train-20261128\.csv: quoted cell never closed: .*"never closed$/)] });
  });

  it('a quoted record over lines is read up to 64 KiB in all, and is odd a byte past it', async () => {
    const record = (length: number) => {
      const start = `${T0},node1,train,0,GPU-0,"a`;
      const end = `",ok${','.repeat(CSV_HEADER.length - 7)}`;
      return `${start}\n${'b'.repeat(length - start.length - 1 - end.length)}${end}`;
    };
    expect(record(65_536)).toHaveLength(65_536);
    const { rows, odd } = await readAll({ 'train.csv': `${HEAD}\n${record(65_536)}\n${record(65_537)}\n${ok('1')}\n` });
    expect(rows.map((r) => [r.gpu, r.status])).toEqual([
      ['0', 'ok'],
      ['1', 'ok'],
    ]);
    expect(odd.count).toBe(1);
    expect(odd.examples[0]).toContain(': 0 cells, header has');
  });

  it('an over-long line drops a quoted cell left open before it', async () => {
    const text = [HEAD, `${T0},h,t,"open`, 'w'.repeat(70_000), ok('1')].join('\n');
    const { rows, odd } = await readAll({ 'train.csv': `${text}\n` });
    expect(rows.map((r) => r.gpu)).toEqual(['1']);
    expect(odd.count).toBe(1);
  });

  it('reads gzipped archives; a truncated or corrupt one, a missing file and a directory are bad files with the rows they gave', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => ok(String(i)));
    const whole = gzipSync(`${HEAD}\n${many.join('\n')}\n`);
    const { rows, badFiles } = await readAll(
      {
        'train-20261125.csv.gz': gzipSync(`${HEAD}\n${ok('a')}\n`),
        'train-20261126.csv.gz': whole.subarray(0, whole.length - 20),
        'train-20261127.csv.gz': Buffer.from('not gzip at all\n'),
        'train.csv': `${HEAD}\n${ok('z')}\n`,
      },
      ['train-20261125.csv.gz', 'train-20261126.csv.gz', 'train-20261127.csv.gz', 'gone.csv', 'gone.csv.gz', '.', 'train.csv'],
    );
    const cut = badFiles[0]!.rows_read;
    expect(cut).toBeGreaterThan(0);
    expect(badFiles).toEqual([
      { file: 'train-20261126.csv.gz', error: expect.stringMatching(/^truncated gzip \(unexpected end of file\)$/), rows_read: cut },
      { file: 'train-20261127.csv.gz', error: expect.stringMatching(/^corrupt, or not gzip \(incorrect header check\)$/), rows_read: 0 },
      { file: 'gone.csv', error: 'ENOENT', rows_read: 0 },
      // The file's own error, through gunzip.
      { file: 'gone.csv.gz', error: 'ENOENT', rows_read: 0 },
      { file: '', error: 'EISDIR', rows_read: 0 },
    ]);
    expect(rows.map((r) => r.gpu)).toEqual(['a', ...many.slice(0, cut).map((_, i) => String(i)), 'z']);
  });

  it('a plain file whose name does not end in .gz is not gunzipped', async () => {
    const { rows, badFiles } = await readAll({ 'train-20261125.csv': `${HEAD}\n${ok('p')}\n` });
    expect(badFiles).toEqual([]);
    expect(rows.map((r) => r.gpu)).toEqual(['p']);
  });

  it('an error that is not about a file (a bug) is thrown, not listed as a bad file', async () => {
    const badFiles: BadFile[] = [];
    const read = readHistory([{ path: 'not\0a path', task: 't' }], { count: 0, examples: [] }, badFiles);
    await expect(read.next()).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    expect(badFiles).toEqual([]);
    // So is one thrown into the reader by its consumer, while a file is open.
    const dir = await tempDir();
    await writeFile(join(dir, 'train.csv'), `${HEAD}\n${ok('0')}\n${ok('1')}\n`);
    const reader = readHistory([{ path: join(dir, 'train.csv'), task: 't' }], { count: 0, examples: [] }, badFiles);
    expect((await reader.next()).value).toMatchObject({ gpu: '0' });
    const bug = new TypeError('a bug in the consumer');
    await expect(reader.throw(bug)).rejects.toBe(bug);
    expect(badFiles).toEqual([]);
  });
});

describe('the jobs column, read back', () => {
  const OLD_HEADER = CSV_HEADER.filter((c) => c !== 'jobs' && c !== 'reserved').join(',');
  // A file of the versions with `jobs` and before `reserved`.
  const JOBS_HEADER = CSV_HEADER.filter((c) => c !== 'reserved').join(',');
  const values = '50,1024,81559,300,40,1980,2619';
  const row = (minute: number) => `2026-11-23T00:0${minute}:00.000Z,h,train,0,GPU-a,NVIDIA H200,ok,${values}`;

  it('a file before the column reads as before (jobs not known); a file with it by name, quoted cells too', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'old.csv'), `${OLD_HEADER}\n${row(0)}\n${row(1)}\n`);
    await writeFile(join(dir, 'new.csv'), `${JOBS_HEADER}\n${row(2)},-\n${row(3)},"process:a,b:u::"\n${row(4)},slurm:7:alice:10:\n`);
    await writeFile(join(dir, 'job.csv'), `${OLD_HEADER},step,marks\n${row(5)},7,loss=0.3\n`);
    const odd: OddRows = { count: 0, examples: [] };
    const rows: HistoryRow[] = [];
    for await (const r of readHistory(await historyFiles(dir), odd)) rows.push(r);
    expect(odd.count).toBe(0);
    // By minute: the files are read in their own order.
    expect(rows.sort((a, b) => a.time - b.time).map((r) => r.jobs)).toEqual([
      undefined,
      undefined,
      { jobs: [], dropped: 0 },
      { jobs: [{ kind: 'process', id: 'a,b', user: 'u' }], dropped: 0 },
      { jobs: [{ kind: 'slurm', id: '7', user: 'alice', memoryMiB: 10 }], dropped: 0 },
      undefined,
    ]);
    expect(rows.every((r) => r.utilization === 50)).toBe(true);
  });
});

describe('decimalAt', () => {
  /** How the reader took a cell before decimalAt: Number(), finite or nothing. */
  const asNumber = (text: string) => (text === '' || !Number.isFinite(Number(text)) ? undefined : Number(text));
  const at = (text: string) => decimalAt(`x,${text},y`, 2, 2 + text.length);

  it('reads what Number() reads, bit for bit, on decimals and on anything else', () => {
    const decimal = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 16n }), fc.integer({ min: 0, max: 17 })).map(([digits, point]) => {
      const text = digits.toString();
      return point === 0 || point > text.length ? text : `${text.slice(0, -point) || '0'}.${text.slice(-point)}`;
    });
    const other = fc.string({ unit: fc.constantFrom('0', '1', '9', '.', '-', '+', 'e', ' ', 'N', '[', 'x'), maxLength: 12 });
    fc.assert(
      fc.property(fc.oneof(decimal, other), (text) => {
        expect(Object.is(at(text), asNumber(text)) || at(text) === asNumber(text), text).toBe(true);
      }),
      { numRuns: 20_000 },
    );
    for (const text of [
      '',
      '.',
      '5.',
      '.5',
      '0.1',
      '617.81',
      '143771',
      '00012',
      '1e3',
      '-4',
      '[N/A]',
      '9007199254740993',
      '0.30000000000000004',
    ])
      expect(at(text), text).toBe(asNumber(text));
  });
});
