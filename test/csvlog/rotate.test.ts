import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { appendCsvSample } from '../../src/csvlog/append.js';
import { ARCHIVE_STEPS, type ArchiveSteps } from '../../src/csvlog/archive-steps.js';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { archiveDay, archiveDirectory, type ArchiveOptions } from '../../src/csvlog/rotate.js';
import type { Collection, Reading } from '../../src/collection.js';
import { CLI, FAKE_SMI, capture, cliEnv, runCli, tempDir, collectIn } from '../support/helpers.js';

const HEADER = csvLine(CSV_HEADER);
const row = (time: string, gpu = '0') => csvLine([time, 'h', 'job', gpu, 'GPU-x', 'n', 'ok', '1', '', '', '', '', '', '']);

const sample = (gpus: number): Collection => ({
  fields: [],
  samples: Array.from({ length: gpus }, (_, g) => ({ gpu: String(g), uuid: `GPU-${g}`, readings: new Map<string, Reading>() })),
  down: [],
  health: { durationSeconds: 0 },
});

async function readAll(dir: string, file: string): Promise<string> {
  const data = await readFile(join(dir, file));
  return file.endsWith('.gz') ? gunzipSync(data).toString('utf8') : data.toString('utf8');
}

const archive = (dir: string, ...more: string[]) => runCli(['archive', '--csv-dir', dir, ...more]);

/** archive in-process at a fixed time: logic about days gets a fake clock. */
const archiveAt = (dir: string, now: Date, options: Partial<ArchiveOptions> = {}) =>
  archiveDirectory(dir, { keep: 14, compress: true, delayCompress: false, minSize: 0, now, ...options });

const localDay = (date: Date): string =>
  `${date.getFullYear()}${String(date.getMonth() + 1).padStart(2, '0')}${String(date.getDate()).padStart(2, '0')}`;

describe('gpu-textfile archive', () => {
  it('copies to an archive named after the rotation day, gzipped, then truncates the live file in place', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T23:59:59.000+08:00') + row('2026-11-28T00:00:14.000+08:00'));
    const [before, result, after] = [localDay(new Date()), await archive(dir), localDay(new Date())];
    expect(result.exitCode).toBe(0);
    // The day the CLI read its clock: one of the two around the run (it may cross midnight).
    const day = result.stdout.match(/-(\d{8})\.csv\.gz/)?.[1];
    expect([before, after]).toContain(day);
    expect(result.stdout).toBe(`job.csv -> job-${day}.csv.gz (2 rows)\n`);
    // The command writes the archive's sidecar beside it (the report's hours of its rows).
    expect((await readdir(dir)).sort()).toEqual([`job-${day}.csv.gz`, `job-${day}.csv.hours.json`, 'job.csv']);
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe('');
    expect(await readAll(dir, `job-${day}.csv.gz`)).toBe(
      HEADER + row('2026-11-27T23:59:59.000+08:00') + row('2026-11-28T00:00:14.000+08:00'),
    );
  });

  it('every archive starts with the header, a second one the same day gets a counter', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    await archiveAt(dir, new Date(2026, 10, 27, 12), { compress: false });
    // Someone else's truncate or an old writer: rows without a header.
    await writeFile(join(dir, 'job.csv'), row('2026-11-27T11:00:00.000+00:00'));
    await archiveAt(dir, new Date(2026, 10, 27, 13), { compress: false });
    expect((await readdir(dir)).sort()).toEqual(['job-20261127-2.csv', 'job-20261127.csv', 'job.csv']);
    expect(await readAll(dir, 'job-20261127-2.csv')).toBe(HEADER + row('2026-11-27T11:00:00.000+00:00'));
  });

  it('skips empty, header-only and missing files (notifempty, missingok), and files under --min-size', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'empty.csv'), '');
    await writeFile(join(dir, 'header.csv'), HEADER);
    await writeFile(join(dir, 'small.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const result = await archive(dir, '--min-size', '100000');
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([0, '', '']);
    expect((await readdir(dir)).sort()).toEqual(['empty.csv', 'header.csv', 'small.csv']);
    // A directory that does not exist is a usage error (issue 13), not a file that is missing.
    expect((await archive(join(dir, 'no-such-dir'))).exitCode).toBe(2);
  });

  it('keeps --keep archives per task and compresses all but the newest with --delay-compress', async () => {
    const dir = await tempDir();
    for (let day = 20; day <= 25; day++) {
      await writeFile(join(dir, 'job.csv'), HEADER + row(`2026-11-${day}T10:00:00.000+00:00`));
      await writeFile(join(dir, 'other.csv'), HEADER + row(`2026-11-${day}T10:00:00.000+00:00`));
      expect(await archiveAt(dir, new Date(2026, 10, day, 12), { keep: 3, delayCompress: true })).toMatchObject({ problems: [] });
    }
    const files = (await readdir(dir)).sort();
    expect(files.filter((f) => f.startsWith('job-'))).toEqual(['job-20261123.csv.gz', 'job-20261124.csv.gz', 'job-20261125.csv']);
    expect(files.filter((f) => f.startsWith('other-'))).toHaveLength(3);
  });

  it('--max-age removes archives rotated more than that many days ago', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job-20200101.csv.gz'), '');
    await writeFile(join(dir, 'job-20261027.csv.gz'), '');
    await writeFile(join(dir, 'job-20261028.csv.gz'), '');
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    expect(await archiveAt(dir, new Date(2026, 10, 27, 12), { maxAgeDays: 30 })).toMatchObject({ problems: [] });
    // Rotated on 10-27: all its rows are more than 30 days old. On 10-28: some may not be.
    expect((await readdir(dir)).sort()).toEqual(['job-20261028.csv.gz', 'job-20261127.csv.gz', 'job.csv']);
  });

  it("a first row from a wrong clock at boot does not date the archive: --max-age keeps today's rows", async () => {
    const dir = await tempDir();
    const rows = row('2020-01-01T00:00:07.000+00:00') + row('2026-11-27T09:00:00.000+00:00') + row('2026-11-27T09:00:15.000+00:00');
    await writeFile(join(dir, 'job.csv'), HEADER + rows);
    const now = new Date(2026, 10, 27, 12);
    expect(await archiveAt(dir, now, { maxAgeDays: 30 })).toMatchObject({
      actions: [{ kind: 'rotated', archive: 'job-20261127.csv.gz', rows: 3 }],
      problems: [],
    });
    // And on the next runs, until 30 days have passed.
    expect(await archiveAt(dir, new Date(2026, 11, 26, 12), { maxAgeDays: 30 })).toMatchObject({ problems: [] });
    expect(await readAll(dir, 'job-20261127.csv.gz')).toBe(HEADER + rows);
    await archiveAt(dir, new Date(2026, 11, 28, 12), { maxAgeDays: 30 });
    expect(await readdir(dir)).toEqual(['job.csv']);
  });

  it('a directory it cannot use is a clear error with exit 1, and nothing is lost', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'not-a-dir'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const result = await archive(join(dir, 'not-a-dir'));
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^gpu-textfile: cannot read .*not-a-dir: ENOTDIR\n$/);
    expect(await readFile(join(dir, 'not-a-dir'), 'utf8')).toContain('2026-11-27T10');
  });

  it('a directory it may not write is a clear error with exit 1, and the live file stays intact', async () => {
    const base = await tempDir();
    const dir = join(base, 'csv');
    await mkdir(dir);
    const live = HEADER + row('2026-11-27T10:00:00.000+00:00');
    await writeFile(join(dir, 'job.csv'), live);
    // Readable by nobody, writable only by its owner.
    await chmod(base, 0o755);
    await chmod(dir, 0o755);
    // Permissions mean nothing to root: run the archiver as nobody, which may read but not write here.
    const asNobody = process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
    const result = await execa(
      asNobody[0] ?? process.execPath,
      [...asNobody.slice(1), ...(asNobody.length ? [process.execPath] : []), CLI, 'archive', '--csv-dir', dir],
      { env: cliEnv(), extendEnv: false, reject: false },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^gpu-textfile: cannot create .*\.archive\.lock: EACCES$/);
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe(live);
    expect((await readdir(dir)).sort()).toEqual(['job.csv']);
  });

  it("names archives by the rotation day, or the newest row's when the writer's clock is ahead", () => {
    const now = new Date(2026, 10, 29, 12);
    expect(archiveDay(HEADER + row('2020-01-02T00:00:00.000-05:00') + row('2026-11-28T23:00:00.000-05:00'), now)).toBe('20261129');
    expect(archiveDay(HEADER + row('2026-11-29T00:00:00.000+00:00') + row('2027-01-02T00:00:00.000+00:00'), now)).toBe('20270102');
    expect(archiveDay('', now)).toBe('20261129');
  });
});

describe('a writer appending while archive runs again and again', () => {
  it('every row ends up in exactly one file, and every archive starts with the header', async () => {
    const dir = await tempDir();
    const written: string[] = [];
    let writing = true;
    const base = Date.UTC(2026, 10, 29, 12, 0, 0);
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const now = new Date(base + i);
        const error = await appendCsvSample(dir, 'job', sample(2), { host: 'h', now });
        expect(error).toBeUndefined();
        // An uncontended append never waits on I/O callbacks: yield, so the archive runs' exits are seen.
        await new Promise(setImmediate);
        written.push(`${now.toISOString()} 0`, `${now.toISOString()} 1`);
      }
    })();
    const runs = await Promise.all(
      [0, 1].map(async (lane) => {
        let rotated = 0;
        for (let i = 0; i < 5; i++) {
          const result = await archive(dir, '--keep', '1000', ...(lane === 0 ? [] : ['--no-compress']));
          expect(result.stderr).toBe('');
          rotated += result.stdout.split('\n').filter(Boolean).length;
        }
        return rotated;
      }),
    );
    writing = false;
    await writer;
    expect(runs[0]! + runs[1]!).toBeGreaterThan(2);

    const files = (await readdir(dir)).filter((f) => f.endsWith('.csv') || f.endsWith('.csv.gz'));
    const seen: string[] = [];
    for (const file of files) {
      const text = await readAll(dir, file);
      if (file !== 'job.csv') expect(text.startsWith(HEADER)).toBe(true);
      for (const line of text.split('\n').filter((l) => l && !l.startsWith('time,'))) {
        const [time, , , gpu] = line.split(',');
        seen.push(`${new Date(time!).toISOString()} ${gpu}`);
      }
    }
    expect(seen.length).toBe(written.length);
    expect(new Set(seen).size).toBe(seen.length);
    expect(new Set(seen)).toEqual(new Set(written));
  });
});

describe('the real logrotate with copytruncate', () => {
  it('rotates our live file and collection goes on: no NUL bytes, header present', async () => {
    const dir = await tempDir();
    const csv = join(dir, 'csv');
    const collect = () =>
      runCli(collectIn(dir, '--nvidia-smi', FAKE_SMI, '--csv-dir', csv, '--task', 'job'), {
        FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle'),
      });
    expect((await collect()).exitCode).toBe(0);
    expect((await collect()).exitCode).toBe(0);
    const example = await readFile(new URL('../../examples/logrotate.conf', import.meta.url), 'utf8');
    // The example with its path pointed at the test's directory, and no delaycompress so the copy is plain text to read.
    const conf = example.replace(/^\/var\/log\/gpu-textfile\/\*\.csv/m, `${csv}/*.csv`);
    expect(conf).toContain('copytruncate');
    await writeFile(join(dir, 'logrotate.conf'), conf);
    const rotated = await execa('logrotate', ['--force', '--state', join(dir, 'logrotate.state'), join(dir, 'logrotate.conf')], {
      reject: false,
    });
    expect([rotated.exitCode, rotated.stderr]).toEqual([0, '']);
    expect(existsSync(join(csv, 'job.csv.1'))).toBe(true);
    expect(await readFile(join(csv, 'job.csv'), 'utf8')).toBe('');
    expect((await collect()).exitCode).toBe(0);
    const live = await readFile(join(csv, 'job.csv'));
    expect(live.includes(0)).toBe(false);
    expect(live.toString('utf8').startsWith(HEADER)).toBe(true);
    expect(live.toString('utf8').split('\n').filter(Boolean)).toHaveLength(3);
  });
});

describe('archiveDirectory in process', () => {
  const today = new Date(2026, 10, 27, 12);
  const eio = (what: string) => Object.assign(new Error(`EIO: injected at ${what}`), { code: 'EIO' });
  const failing = (step: keyof ArchiveSteps): ArchiveSteps => ({
    ...ARCHIVE_STEPS,
    [step]: () => {
      throw eio(step);
    },
  });

  it('--keep counts archives oldest first: by day, then by counter as a number', async () => {
    const dir = await tempDir();
    for (const name of ['job-20261120-10.csv.gz', 'job-20261119-5.csv.gz', 'job-20261120-2.csv.gz', 'job-20261120.csv.gz'])
      await writeFile(join(dir, name), '');
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    expect(await archiveAt(dir, today, { keep: 3 })).toEqual({
      actions: [{ kind: 'rotated', task: 'job', archive: 'job-20261127.csv.gz', rows: 1, unsynced: undefined }],
      problems: [],
    });
    expect((await readdir(dir)).sort()).toEqual(['job-20261120-10.csv.gz', 'job-20261120-2.csv.gz', 'job-20261127.csv.gz', 'job.csv']);
  });

  it('--delay-compress leaves the newest archive plain, by day and counter', async () => {
    const dir = await tempDir();
    for (const name of ['job-20261126-10.csv', 'job-20261126-9.csv', 'job-20261126.csv']) await writeFile(join(dir, name), HEADER);
    await writeFile(join(dir, 'job.csv'), '');
    expect(await archiveAt(dir, today, { delayCompress: true })).toEqual({
      actions: [{ kind: 'skipped', task: 'job', why: 'empty' }],
      problems: [],
    });
    expect((await readdir(dir)).sort()).toEqual(['job-20261126-10.csv', 'job-20261126-9.csv.gz', 'job-20261126.csv.gz', 'job.csv']);
  });

  it('without --compress, archives stay plain', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    expect(await archiveAt(dir, today, { compress: false })).toMatchObject({ actions: [{ archive: 'job-20261127.csv' }], problems: [] });
    expect((await readdir(dir)).sort()).toEqual(['job-20261127.csv', 'job.csv']);
  });

  it('each live file in name order, each with its own archives; a missing directory is nothing to do', async () => {
    const dir = await tempDir();
    const tasks = ['c', 'a', 'e', 'b', 'f', 'd'];
    for (const task of tasks) await writeFile(join(dir, `${task}.csv`), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const result = await archiveAt(dir, today);
    expect('actions' in result && result.actions.map((a) => [a.task, a.kind === 'rotated' && a.archive])).toEqual(
      [...tasks].sort().map((task) => [task, `${task}-20261127.csv.gz`]),
    );
    expect(await archiveAt(join(dir, 'none'), today)).toEqual({ actions: [], problems: [] });
  });

  it('a path that is not a directory, or a link to one, is an error naming it', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'file'), '');
    expect(await archiveAt(join(dir, 'file'), today)).toEqual({ error: `cannot read ${join(dir, 'file')}: ENOTDIR` });
    await symlink(dir, join(dir, 'link'));
    expect(await archiveAt(join(dir, 'link'), today)).toEqual({
      error: `cannot read ${join(dir, 'link')}: ${join(dir, 'link')} is a symbolic link; refusing to write through it`,
    });
  });

  it("removes a killed archiver's temp files; one it cannot remove is a problem, not a failure", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, '.job-20261126.csv.gz.0123456789abcdef.tmp'), 'half');
    // A directory under a temp file's name cannot be unlinked.
    await mkdir(join(dir, '.job-20261126.csv.fedcba9876543210.tmp'));
    await writeFile(join(dir, '.job.csv.0123456789abcdef.tmp'), 'not an archive temp');
    expect(await archiveAt(dir, today)).toEqual({
      actions: [],
      problems: ['cannot remove .job-20261126.csv.fedcba9876543210.tmp: EISDIR'],
    });
    expect((await readdir(dir)).sort()).toEqual(['.job-20261126.csv.fedcba9876543210.tmp', '.job.csv.0123456789abcdef.tmp']);
  });

  it('an archive it cannot prune or compress is a problem beside the rotation', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job-20261120.csv'), HEADER);
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    expect(
      await archiveDirectory(dir, { keep: 1, compress: false, delayCompress: false, minSize: 0, now: today }, failing('prune')),
    ).toEqual({
      actions: [{ kind: 'rotated', task: 'job', archive: 'job-20261127.csv', rows: 1, unsynced: undefined }],
      problems: ['cannot remove job-20261120.csv: EIO'],
    });
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T11:00:00.000+00:00'));
    expect(
      await archiveDirectory(dir, { keep: 5, compress: true, delayCompress: false, minSize: 0, now: today }, failing('compress')),
    ).toEqual({
      actions: [{ kind: 'rotated', task: 'job', archive: 'job-20261127-2.csv', rows: 1, unsynced: undefined }],
      problems: ['job-20261120.csv', 'job-20261127.csv', 'job-20261127-2.csv'].map(
        (name) => `cannot compress ${name}, kept it plain: EIO: injected at compress`,
      ),
    });
  });

  it('after a failed rotation nothing else is done to that task: no compressing, no pruning', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job-20261120.csv'), HEADER);
    await writeFile(join(dir, 'job-20261121.csv'), HEADER);
    const live = HEADER + row('2026-11-27T10:00:00.000+00:00');
    await writeFile(join(dir, 'job.csv'), live);
    const result = await archiveDirectory(dir, { keep: 1, compress: true, delayCompress: false, minSize: 0, now: today }, failing('link'));
    expect(result).toEqual({
      actions: [{ kind: 'failed', task: 'job', message: `${join(dir, 'job.csv')}: EIO: injected at link` }],
      problems: [],
    });
    expect((await readdir(dir)).sort()).toEqual(['job-20261120.csv', 'job-20261121.csv', 'job.csv']);
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe(live);
  });

  it('a failed fsync after the truncate is a problem: the rotation happened', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    let fsyncs = 0;
    const steps: ArchiveSteps = {
      ...ARCHIVE_STEPS,
      fsync: (fd) => {
        if (++fsyncs === 2) throw eio('fsync');
        ARCHIVE_STEPS.fsync(fd);
      },
    };
    expect(await archiveDirectory(dir, { keep: 5, compress: false, delayCompress: false, minSize: 0, now: today }, steps)).toEqual({
      actions: [{ kind: 'rotated', task: 'job', archive: 'job-20261127.csv', rows: 1, unsynced: 'EIO: injected at fsync' }],
      problems: ['job.csv was truncated, but fsync failed: EIO: injected at fsync'],
    });
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe('');
  });

  it('dates by line starts only, and pads month and day', () => {
    const now = new Date(2026, 10, 29, 12);
    // A date inside a cell (a mark, a name) is not a row's time.
    expect(archiveDay(`${HEADER}${row('2026-11-29T10:00:00.000+00:00').trimEnd()},note 2099-01-01T00:00\n`, now)).toBe('20261129');
    expect(archiveDay('', new Date(2026, 0, 5, 12))).toBe('20260105');
  });
});
