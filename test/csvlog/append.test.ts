import { appendFile, link, readFile, readdir, stat, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendCsvSample, csvRows } from '../../src/csvlog/append.js';
import { CSV_HEADER, csvColumnOf, csvLine, localIsoTime } from '../../src/csvlog/columns.js';
import type { Collection, Reading } from '../../src/collection.js';
import { FAKE_SMI, capture, runCli, tempDir, collectIn } from '../support/helpers.js';
import { fillDisk, smallDisk } from './small-disk.js';
import { FILE_STEPS, type FileSteps } from '../../src/files/file-steps.js';
import { stepsWithWrite } from '../support/faults.js';

const H200 = capture('h200x2__580.159.04__linux-idle');

/** RFC 4180 reader for the assertions: quoted cells may hold commas, quotes and newlines. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  return rows;
}

const number = (shown: string): Reading => ({ kind: 'number', value: Number(shown), shown });

describe('CSV columns', () => {
  it('are named exactly, in this order', () => {
    expect(CSV_HEADER.slice(0, 14)).toEqual([
      'time',
      'host',
      'task_id',
      'gpu_id',
      'gpu_uuid',
      'gpu_name',
      'status',
      'utilization_percent',
      'memory_used_mib',
      'memory_total_mib',
      'power_draw_w',
      'temperature_c',
      'sm_clock_mhz',
      'mem_clock_mhz',
    ]);
  });

  it('time is local ISO 8601 with milliseconds and the zone offset', () => {
    const date = new Date(Date.UTC(2026, 10, 29, 10, 22, 1, 209));
    // The test process runs with the machine's zone; compare against the offset it reports.
    const offset = -date.getTimezoneOffset();
    const expectedSign = offset >= 0 ? '+' : '-';
    expect(localIsoTime(date)).toMatch(new RegExp(`^2026-11-29T\\d{2}:22:01\\.209\\${expectedSign}\\d{2}:\\d{2}$`));
  });

  it('a field without a CSV column has none to give (a programmer error)', () => {
    expect(csvColumnOf('power.draw')).toBe('power_draw_w');
    expect(() => csvColumnOf('no.such.field')).toThrow('--query-gpu field no.such.field has no CSV column');
  });

  it('quotes odd GPU names (RFC 4180) and leaves missing values empty, never 0', () => {
    const collection: Collection = {
      fields: [],
      samples: [
        {
          gpu: '0',
          uuid: 'GPU-1',
          readings: new Map<string, Reading>([
            ['name', { kind: 'text', text: 'NVIDIA "H200", rev\nB' }],
            ['utilization.gpu', number('87')],
            ['power.draw', { kind: 'absent' }],
            ['memory.used', { kind: 'error', error: 'unknown_error' }],
          ]),
        },
      ],
      down: [],
      health: { durationSeconds: 0 },
    };
    const [row] = parseCsv(csvRows(collection, { time: 't', host: 'h', task: 'job' }, []).join(''));
    expect(row!.slice(0, 10)).toEqual(['t', 'h', 'job', '0', 'GPU-1', 'NVIDIA "H200", rev\nB', 'ok', '87', '', '']);
  });

  it('a failed sample leaves one row per known GPU with the reason and empty values', () => {
    const collection: Collection = {
      fields: [],
      samples: [],
      down: [],
      health: { durationSeconds: 0, failure: { reason: 'driver_unreachable', message: 'x' } },
    };
    const rows = parseCsv(
      csvRows(collection, { time: 't', host: 'h', task: 'job' }, [
        { gpu: '0', uuid: 'GPU-a' },
        { gpu: '1', uuid: 'GPU-b' },
      ]).join(''),
    );
    expect(rows.map((r) => r.slice(3, 7))).toEqual([
      ['0', 'GPU-a', '', 'driver_unreachable'],
      ['1', 'GPU-b', '', 'driver_unreachable'],
    ]);
    expect(rows.every((r) => r.slice(7).every((cell) => cell === ''))).toBe(true);
    // No GPU known yet: one row, the reason without a GPU.
    const [alone, ...more] = parseCsv(csvRows(collection, { time: 't', host: 'h', task: 'job' }, []).join(''));
    expect(more).toEqual([]);
    expect(alone).toEqual(['t', 'h', 'job', '', '', '', 'driver_unreachable', ...CSV_HEADER.slice(7).map(() => '')]);
  });

  it('a GPU that is down gets a row with its reason beside the others', () => {
    const collection: Collection = {
      fields: [],
      samples: [{ gpu: '0', uuid: 'GPU-a', readings: new Map<string, Reading>([['utilization.gpu', number('5')]]) }],
      down: [{ gpu: '1', uuid: 'GPU-b', reason: 'gpu_lost' }],
      health: { durationSeconds: 0 },
    };
    const rows = parseCsv(csvRows(collection, { time: 't', host: 'h', task: 'job', extra: ['x'] }, []).join(''));
    expect(rows.map((r) => r.slice(3, 8))).toEqual([
      ['0', 'GPU-a', '', 'ok', '5'],
      ['1', 'GPU-b', '', 'gpu_lost', ''],
    ]);
    expect(rows[1]).toEqual(['t', 'h', 'job', '1', 'GPU-b', '', 'gpu_lost', ...CSV_HEADER.slice(7).map(() => ''), 'x']);
  });
});

describe('the jobs column', () => {
  const sample = (gpu: string, uuid: string) => ({ gpu, uuid, readings: new Map<string, Reading>([['utilization.gpu', number('5')]]) });
  const base = { fields: [], down: [], health: { durationSeconds: 0 } } as const;

  it('is last but `reserved`, and names each GPU’s jobs; "-" where the processes were read and none was on it', () => {
    // `reserved` came after it, last in turn (test/csvlog/jobs-cell.test.ts).
    expect(CSV_HEADER.slice(-2)).toEqual(['jobs', 'reserved']);
    const collection: Collection = {
      ...base,
      samples: [sample('0', 'GPU-a'), sample('1', 'GPU-b')],
      processes: {
        apps: [
          { uuid: 'GPU-a', pid: 1, name: 'python', memoryBytes: 2048 * 1024 * 1024, user: 'alice', attribution: { slurm_job: '4242' } },
          { uuid: 'GPU-a', pid: 2, name: 'x, "y"', user: 'bob' },
        ],
        dropped: 0,
        skipped: 0,
      },
    };
    const rows = parseCsv(csvRows(collection, { time: 't', host: 'h', task: 'job', extra: ['step'] }, []).join(''));
    // `reserved` empty: no reservations were read with these processes.
    expect(rows.map((r) => r.slice(CSV_HEADER.length - 2))).toEqual([
      ['slurm:4242:alice:2048: process:x,%20"y":bob::', '', 'step'],
      ['-', '', 'step'],
    ]);
  });

  it('`reserved` names the jobs that reserved each GPU, whether or not they run on it; "-" where none did', () => {
    const collection: Collection = {
      ...base,
      samples: [sample('0', 'GPU-a'), sample('1', 'GPU-b')],
      processes: {
        apps: [],
        dropped: 0,
        skipped: 0,
        reservations: { jobs: [{ kind: 'slurm', id: '4242', user: 'alice', gpus: [{ minor: 0 }] }], unknown: 0, minors: { 'GPU-a': 0 } },
      },
    };
    const rows = parseCsv(csvRows(collection, { time: 't', host: 'h', task: 'job' }, []).join(''));
    expect(rows.map((r) => r.slice(-2))).toEqual([
      ['-', 'slurm:4242:alice'],
      ['-', '-'],
    ]);
  });

  it('is empty where the processes were not read', () => {
    const [row] = parseCsv(csvRows({ ...base, samples: [sample('0', 'GPU-a')] }, { time: 't', host: 'h', task: 'job' }, []).join(''));
    expect(row).toHaveLength(CSV_HEADER.length);
    expect(row!.at(-1)).toBe('');
  });
});

describe('gpu-textfile collect --csv-dir', () => {
  it('appends one row per GPU per sample, header first, times in the TZ zone', async () => {
    const dir = await tempDir();
    const env = { FAKE_SMI_CAPTURE: H200, TZ: 'Asia/Shanghai' };
    const args = collectIn(dir, '--nvidia-smi', FAKE_SMI, '--csv-dir', join(dir, 'csv'), '--task', 'train-42');
    expect((await runCli(args, env)).exitCode).toBe(0);
    expect((await runCli(args, env)).exitCode).toBe(0);
    const rows = parseCsv(await readFile(join(dir, 'csv/train-42.csv'), 'utf8'));
    expect(rows[0]).toEqual([...CSV_HEADER]);
    // Values as nvidia-smi printed them in the recording (MiB, W, °C, MHz).
    const sample = [
      ['train-42', '0', 'ok', '0', '0', '143771', '76.68', '27', '345', '3201'],
      ['train-42', '1', 'ok', '0', '0', '143771', '77.99', '30', '345', '3201'],
    ];
    expect(rows.slice(1).map((r) => [r[2], r[3], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13]])).toEqual([...sample, ...sample]);
    expect(rows.slice(1).every((r) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+08:00$/.test(r[0]!))).toBe(true);
  });

  it('writes the header again after someone truncated the file, and failure rows carry the reason', async () => {
    const dir = await tempDir();
    const base = collectIn(dir, '--csv-dir', join(dir, 'csv'), '--task', 'job');
    await runCli([...base, '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: H200 });
    await truncate(join(dir, 'csv/job.csv'), 0);
    const failed = await runCli([...base, '--nvidia-smi', join(dir, 'missing-smi')]);
    expect(failed.exitCode).toBe(1);
    const rows = parseCsv(await readFile(join(dir, 'csv/job.csv'), 'utf8'));
    expect(rows[0]).toEqual([...CSV_HEADER]);
    expect(rows.slice(1).map((r) => [r[3], r[4]!.slice(0, 8), r[6], r.slice(7).join('')])).toEqual([
      ['0', 'GPU-d904', 'nvidia_smi_not_found', ''],
      ['1', 'GPU-697e', 'nvidia_smi_not_found', ''],
    ]);
  });

  it("extra columns (run's step and marks): named in the header, the same cells on every row, failed rows too", async () => {
    const dir = await tempDir();
    const ok: Collection = {
      fields: [],
      samples: ['0', '1'].map((gpu) => ({
        gpu,
        uuid: `GPU-${gpu}`,
        readings: new Map<string, Reading>([['utilization.gpu', number('50')]]),
      })),
      down: [],
      health: { durationSeconds: 0 },
    };
    const failed: Collection = {
      fields: [],
      samples: [],
      down: [],
      health: { durationSeconds: 0, failure: { reason: 'timeout', message: 'x' } },
    };
    const extra = (cells: string[]) => ({ header: ['step', 'marks'], cells });
    expect(await appendCsvSample(dir, 'run', ok, { host: 'h', now: new Date(), extra: extra(['120', 'loss=0.31, lr=1']) })).toBeUndefined();
    expect(
      await appendCsvSample(dir, 'run', failed, {
        host: 'h',
        now: new Date(),
        knownGpus: [{ gpu: '0', uuid: 'GPU-0' }],
        extra: extra(['121', '']),
      }),
    ).toBeUndefined();
    const [header, ...rows] = parseCsv(await readFile(join(dir, 'run.csv'), 'utf8'));
    expect(header).toEqual([...CSV_HEADER, 'step', 'marks']);
    expect(rows.map((r) => [r[3], r[6], ...r.slice(-2), r.length])).toEqual([
      ['0', 'ok', '120', 'loss=0.31, lr=1', header!.length],
      ['1', 'ok', '120', 'loss=0.31, lr=1', header!.length],
      ['0', 'timeout', '121', '', header!.length],
    ]);
  });

  it("appends to a file an older version began in that file's own layout, by column name, so every row has its header's cells", async () => {
    // A live file begun before the jobs column (a package upgrade mid-day) keeps its header until
    // it is archived: the jobs column starts with the next file, and run's step and marks stay under
    // their names rather than being shifted one cell right.
    const dir = await tempDir();
    const collection: Collection = {
      fields: [],
      samples: [{ gpu: '0', uuid: 'GPU-0', readings: new Map<string, Reading>([['utilization.gpu', number('50')]]) }],
      down: [],
      health: { durationSeconds: 0 },
      processes: { apps: [], dropped: 0, skipped: 0 },
    };
    const oldHeader = CSV_HEADER.filter((name) => name !== 'jobs');
    const oldRow = (extra: string[]) => [...oldHeader.map((name) => (name === 'status' ? 'ok' : '')), ...extra];
    await writeFile(join(dir, 'collect.csv'), csvLine(oldHeader) + csvLine(oldRow([])));
    await writeFile(join(dir, 'run.csv'), csvLine([...oldHeader, 'step', 'marks']) + csvLine(oldRow(['7', 'loss=1'])));
    expect(await appendCsvSample(dir, 'collect', collection, { host: 'h', now: new Date() })).toBeUndefined();
    expect(
      await appendCsvSample(dir, 'run', collection, {
        host: 'h',
        now: new Date(),
        extra: { header: ['step', 'marks'], cells: ['8', 'loss=0.5'] },
      }),
    ).toBeUndefined();
    const utilization = oldHeader.indexOf(csvColumnOf('utilization.gpu'));
    for (const [name, extra] of [
      ['collect.csv', []],
      ['run.csv', ['8', 'loss=0.5']],
    ] as const) {
      const [header, ...rows] = parseCsv(await readFile(join(dir, name), 'utf8'));
      expect(rows.every((row) => row.length === header!.length)).toBe(true);
      expect(header).not.toContain('jobs');
      const added = rows.at(-1)!;
      expect([added[3], added[6], added[utilization], ...added.slice(oldHeader.length)]).toEqual(['0', 'ok', '50', ...extra]);
    }
    // A file of this version's layout gets the jobs cell ("-": processes read, none on the GPU).
    expect(await appendCsvSample(dir, 'fresh', collection, { host: 'h', now: new Date() })).toBeUndefined();
    const [header, row] = parseCsv(await readFile(join(dir, 'fresh.csv'), 'utf8'));
    expect(row![header!.indexOf('jobs')]).toBe('-');
  });

  it('rejects a task name that would look like an archive', async () => {
    const dir = await tempDir();
    const collection: Collection = { fields: [], samples: [], down: [], health: { durationSeconds: 0 } };
    expect(await appendCsvSample(dir, 'job-20261129', collection, { host: 'h', now: new Date() })).toMatch(/must not end in -YYYYMMDD/);
    expect(await appendCsvSample(dir, '../etc/x', collection, { host: 'h', now: new Date() })).toMatch(/must be letters/);
  });

  it('each sample is one write: a concurrent writer never interleaves lines', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), csvLine(CSV_HEADER));
    const collection = (i: number): Collection => ({
      fields: [],
      samples: [0, 1, 2, 3, 4, 5, 6, 7].map((g) => ({
        gpu: String(g),
        uuid: `GPU-${i}`,
        readings: new Map<string, Reading>([['utilization.gpu', number(String(i))]]),
      })),
      down: [],
      health: { durationSeconds: 0 },
    });
    await Promise.all(Array.from({ length: 40 }, (_, i) => appendCsvSample(dir, 'job', collection(i), { host: 'h', now: new Date() })));
    const rows = parseCsv(await readFile(join(dir, 'job.csv'), 'utf8')).slice(1);
    expect(rows).toHaveLength(320);
    // The 8 rows of one sample stay together.
    for (let i = 0; i < rows.length; i += 8) expect(new Set(rows.slice(i, i + 8).map((r) => r[4])).size).toBe(1);
  });
});

describe('appending to the CSV trail in a hostile or full directory', () => {
  const one = (gpus: number): Collection => ({
    fields: [],
    samples: Array.from({ length: gpus }, (_, g) => ({
      gpu: String(g),
      uuid: `GPU-${g}`,
      readings: new Map<string, Reading>([['utilization.gpu', number('42')]]),
    })),
    down: [],
    health: { durationSeconds: 0 },
  });
  const now = new Date(Date.UTC(2026, 10, 29, 12));
  const rowsOf = (collection: Collection) => csvRows(collection, { time: localIsoTime(now), host: 'h', task: 'job' }, []).join('');

  it('refuses a symlink or a hard link planted at <task>.csv, and leaves its target as it was', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'shadow');
    await writeFile(victim, 'root:x:0:0\n', { mode: 0o600 });
    await symlink(victim, join(dir, 'job.csv'));
    expect(await appendCsvSample(dir, 'job', one(1), { host: 'h', now })).toMatch(
      /^write_failed: .*\/job\.csv: .*symbolic link.*; no row of this sample was kept$/,
    );
    await unlink(join(dir, 'job.csv'));
    await link(victim, join(dir, 'job.csv'));
    expect(await appendCsvSample(dir, 'job', one(1), { host: 'h', now })).toMatch(/^write_failed: .*\/job\.csv: .*2 hard links/);
    expect(await readFile(victim, 'utf8')).toBe('root:x:0:0\n');
  });

  it('starts on a fresh line when the file does not end in one (a crash mid-write)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), `${csvLine(CSV_HEADER)}2026-11-29T11:59:45.000+00:00,h,job,0,GPU-`);
    expect(await appendCsvSample(dir, 'job', one(2), { host: 'h', now })).toBeUndefined();
    const lines = (await readFile(join(dir, 'job.csv'), 'utf8')).split('\n');
    expect(lines.slice(2)).toEqual([...rowsOf(one(2)).split('\n')]);
  });

  it('on a full disk keeps no part of a sample, says write_failed, and the next sample is whole on its own line', async () => {
    const disk = await smallDisk(64 * 4096);
    const dir = join(disk, 'csv');
    expect(await appendCsvSample(dir, 'job', one(2), { host: 'h', now })).toBeUndefined();
    // Pad to 40 bytes before a page boundary: the next sample's first 40 bytes fit, the rest does not (a short write).
    const size = (await stat(join(dir, 'job.csv'))).size;
    await appendFile(join(dir, 'job.csv'), `${'x'.repeat(4096 - (size % 4096) - 41)}\n`);
    // One page spare, for the lock file.
    fillDisk(join(disk, 'filler'), 1);
    const before = await readFile(join(dir, 'job.csv'), 'utf8');
    expect(rowsOf(one(8)).length).toBeGreaterThan(40);

    expect(await appendCsvSample(dir, 'job', one(8), { host: 'h', now })).toMatch(
      /^write_failed: .*\/job\.csv: ENOSPC.*; no row of this sample was kept$/,
    );
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe(before);

    await unlink(join(disk, 'filler'));
    expect(await appendCsvSample(dir, 'job', one(8), { host: 'h', now })).toBeUndefined();
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe(before + rowsOf(one(8)));
  });

  it('a bug while writing (not a failed file operation) is thrown, not reported as write_failed, and the lock is released', async () => {
    const dir = await tempDir();
    const bug = new TypeError('a bug, not an I/O error');
    const throwsBug = () => {
      throw bug;
    };
    // The lock is written through the same steps: only the CSV's writes (those holding the header or a row) misbehave.
    const isCsv = (bytes: Buffer) => bytes.includes('GPU-0');
    const bugInWrite: FileSteps['write'] = (fd, bytes, offset, length) =>
      isCsv(bytes) ? throwsBug() : FILE_STEPS.write(fd, bytes, offset, length);
    await expect(appendCsvSample(dir, 'job', one(1), { host: 'h', now }, stepsWithWrite(bugInWrite))).rejects.toBe(bug);
    // A write that fails half way (EIO), then a bug while cutting the partial row back off.
    let csvWrites = 0;
    const halfThenEio: FileSteps['write'] = (fd, bytes, offset, length) => {
      if (!isCsv(bytes)) return FILE_STEPS.write(fd, bytes, offset, length);
      if (++csvWrites > 1) throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
      return FILE_STEPS.write(fd, bytes, offset, 10);
    };
    const steps = stepsWithWrite(halfThenEio, { truncate: throwsBug });
    await expect(appendCsvSample(dir, 'job', one(1), { host: 'h', now }, steps)).rejects.toBe(bug);
    // The lock was let go on the way out: the next sample is written (after the partial row, on a fresh line).
    expect(await appendCsvSample(dir, 'job', one(1), { host: 'h', now })).toBeUndefined();
    expect((await readFile(join(dir, 'job.csv'), 'utf8')).endsWith(`\n${rowsOf(one(1))}`)).toBe(true);
  });

  it('a sample without rows writes nothing, not even a header', async () => {
    const dir = await tempDir();
    const empty: Collection = { fields: [], samples: [], down: [], health: { durationSeconds: 0 } };
    expect(await appendCsvSample(dir, 'job', empty, { host: 'h', now })).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });

  it('a CSV directory that is a file is write_failed, naming the file it would have written', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'csv'), 'x');
    expect(await appendCsvSample(join(dir, 'csv'), 'job', one(1), { host: 'h', now })).toBe(
      `write_failed: ${join(dir, 'csv', 'job.csv')}: cannot open the CSV directory: ${join(dir, 'csv')} is not a directory; no row of this sample was kept`,
    );
  });

  it('a failed write says what failed and nothing more when the partial row was cut back off', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), csvLine(CSV_HEADER));
    let csvWrites = 0;
    const steps = stepsWithWrite((fd, bytes, offset, length) => {
      if (!bytes.includes('GPU-0')) return FILE_STEPS.write(fd, bytes, offset, length);
      if (++csvWrites > 1) throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
      return FILE_STEPS.write(fd, bytes, offset, 10);
    });
    expect(await appendCsvSample(dir, 'job', one(1), { host: 'h', now }, steps)).toBe(
      `write_failed: ${join(dir, 'job.csv')}: EIO: i/o error, write; no row of this sample was kept`,
    );
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe(csvLine(CSV_HEADER));
  });

  it('a file someone else truncated during a failed write is not cut back to its old size (which would fill it with NULs)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), csvLine(CSV_HEADER) + rowsOf(one(2)));
    // logrotate's copytruncate takes no lock of ours: it empties the file while our write fails.
    const steps = stepsWithWrite((fd, bytes, offset, length) => {
      if (!bytes.includes('GPU-0')) return FILE_STEPS.write(fd, bytes, offset, length);
      FILE_STEPS.truncate(fd, 0);
      throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
    });
    expect(await appendCsvSample(dir, 'job', one(1), { host: 'h', now }, steps)).toMatch(/^write_failed: .*EIO/);
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe('');
  });
});
