import { createHash } from 'node:crypto';
import { closeSync, createReadStream, openSync, writeSync } from 'node:fs';
import { chmod, link, mkdir, readFile, readdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ARCHIVE_STEPS } from '../../src/csvlog/archive-steps.js';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { copyTruncate } from '../../src/csvlog/copy-truncate.js';
import { archiveDirectory } from '../../src/csvlog/rotate.js';
import { pinDir } from '../../src/files/safe-fs.js';
import { CLI, cliEnv, runCli, tempDir } from '../support/helpers.js';
import { fillDisk, smallDisk } from './small-disk.js';

const HEADER = csvLine(CSV_HEADER);
const row = (i: number, extra = '') =>
  csvLine(['2026-11-27T10:00:00.000+00:00', 'h', 'job', String(i % 8), 'GPU-x', 'n', 'ok', String(i), extra, '', '', '', '', '']);
const archive = (dir: string, ...more: string[]) => runCli(['archive', '--csv-dir', dir, ...more]);

describe('archive refuses a live file that is a link', () => {
  for (const kind of ['symbolic', 'hard'] as const) {
    it(`a ${kind} link at <task>.csv: one-line error, exit 1, its target neither copied nor emptied`, async () => {
      const dir = await tempDir();
      const elsewhere = await tempDir();
      const victim = join(elsewhere, 'shadow');
      await writeFile(victim, 'root:$6$secret:19000:0:99999:7:::\n', { mode: 0o640 });
      await (kind === 'symbolic' ? symlink(victim, join(dir, 'job.csv')) : link(victim, join(dir, 'job.csv')));
      const result = await archive(dir);
      expect(result.exitCode).toBe(1);
      const why = kind === 'symbolic' ? 'is a symbolic link; refusing to write through it' : 'has 2 hard links; refusing to write it';
      expect(result.stderr).toBe(`gpu-textfile: job.csv not rotated, left intact: ${join(dir, 'job.csv')} ${why}\n`);
      expect(await readFile(victim, 'utf8')).toBe('root:$6$secret:19000:0:99999:7:::\n');
      expect((await stat(victim)).mode & 0o777).toBe(0o640);
      expect(await readdir(dir)).toEqual(['job.csv']);
      expect(await readdir(elsewhere)).toEqual(['shadow']);
    });
  }
});

describe('archive on a full disk', () => {
  it('when the copy does not fit: exit 1 with ENOSPC, the live file untouched, nothing left behind', async () => {
    const disk = await smallDisk(64 * 4096);
    let live = HEADER;
    for (let i = 0; live.length < 30 * 4096; i++) live += row(i);
    await writeFile(join(disk, 'job.csv'), live);
    // Room for the two lock files, not for a copy.
    fillDisk(join(disk, 'filler'), 4);
    const result = await archive(disk, '--no-compress');
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^gpu-textfile: job\.csv not rotated, left intact: .*\/job\.csv: ENOSPC.*\n$/);
    expect(await readFile(join(disk, 'job.csv'), 'utf8')).toBe(live);
    expect((await readdir(disk)).sort()).toEqual(['filler', 'job.csv']);

    await unlink(join(disk, 'filler'));
    const again = await archive(disk, '--no-compress');
    expect(again.exitCode).toBe(0);
    const [archived] = (await readdir(disk)).filter((file) => file !== 'job.csv');
    expect(await readFile(join(disk, archived!), 'utf8')).toBe(live);
    expect(await readFile(join(disk, 'job.csv'), 'utf8')).toBe('');
  });
});

describe('archive of a large live file', () => {
  it('streams it: a few hundred MB rotate below 100 MB of memory, every byte in the archive once', async () => {
    const dir = await tempDir();
    // 50 chunks of 4 MiB of rows, hashed as they go: any row lost or doubled changes the hash.
    let chunk = '';
    for (let i = 0; chunk.length < 4 * 2 ** 20; i++) chunk += row(i, 'x'.repeat(i % 13));
    const hash = createHash('sha256').update(HEADER);
    const fd = openSync(join(dir, 'job.csv'), 'wx', 0o644);
    writeSync(fd, HEADER);
    for (let i = 0; i < 50; i++) {
      const numbered = `${chunk}${row(i)}`;
      writeSync(fd, numbered);
      hash.update(numbered);
    }
    closeSync(fd);
    // The archiver's peak resident set (VmHWM), read by itself as it exits.
    const peak = join(dir, 'peak');
    await writeFile(
      join(dir, 'peak.cjs'),
      `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(peak)}, /VmHWM:\\s*(\\d+) kB/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))[1]));\n`,
    );
    const result = await execa(process.execPath, ['-r', join(dir, 'peak.cjs'), CLI, 'archive', '--csv-dir', dir], {
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      timeout: 120_000,
    });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(Number(await readFile(peak, 'utf8')) * 1024).toBeLessThan(100 * 2 ** 20);

    expect((await stat(join(dir, 'job.csv'))).size).toBe(0);
    const [gz] = (await readdir(dir)).filter((file) => file.endsWith('.csv.gz'));
    const archived = createHash('sha256');
    await pipeline(createReadStream(join(dir, gz!)), createGunzip(), async (chunks: AsyncIterable<Buffer>) => {
      for await (const chunk of chunks) archived.update(chunk);
    });
    expect(archived.digest('hex')).toBe(hash.digest('hex'));
  }, 120_000);
});

describe('a killed archiver', () => {
  it('leaves a temp file that the next run removes', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, '.job-20261127.csv.0123456789abcdef.tmp'), HEADER + row(1));
    await writeFile(join(dir, '.job-20261127.csv.gz.fedcba9876543210.tmp'), 'partial');
    await writeFile(join(dir, '.other.0123456789abcdef.tmp'), 'not ours');
    await chmod(join(dir, '.other.0123456789abcdef.tmp'), 0o600);
    expect((await archive(dir)).exitCode).toBe(0);
    expect(await readdir(dir)).toEqual(['.other.0123456789abcdef.tmp']);
  });
});

describe('archiving in process: what the archive holds', () => {
  const options = { keep: 5, compress: false, delayCompress: false, minSize: 0, now: new Date(2026, 10, 27, 12) };
  const run = async (live: string, more: Partial<typeof options> = {}) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), live);
    const result = await archiveDirectory(dir, { ...options, ...more });
    if ('error' in result) throw new Error(result.error);
    const archives = (await readdir(dir)).filter((name) => name !== 'job.csv');
    const archived = archives.length === 1 ? await readFile(join(dir, archives[0]!), 'utf8') : undefined;
    return { action: result.actions[0], archived, live: await readFile(join(dir, 'job.csv'), 'utf8') };
  };

  it('a last row cut short (a crash mid-write) ends on a newline in the archive, and is counted', async () => {
    const cut = row(2).slice(0, -1);
    expect(await run(HEADER + row(1) + cut)).toEqual({
      action: { kind: 'rotated', task: 'job', archive: 'job-20261127.csv', rows: 2, unsynced: undefined },
      archived: `${HEADER}${row(1)}${cut}\n`,
      live: '',
    });
  });
  it('rows without a header (an old writer, or a truncate by someone else) get one; each row counted once', async () => {
    expect(await run(row(1) + row(2) + row(3))).toMatchObject({
      action: { kind: 'rotated', rows: 3 },
      archived: HEADER + row(1) + row(2) + row(3),
    });
  });
  it('a header alone, an empty file and one under --min-size are left as they are', async () => {
    expect(await run(HEADER)).toEqual({ action: { kind: 'skipped', task: 'job', why: 'empty' }, archived: undefined, live: HEADER });
    expect(await run('')).toEqual({ action: { kind: 'skipped', task: 'job', why: 'empty' }, archived: undefined, live: '' });
    const small = HEADER + row(1);
    expect(await run(small, { minSize: small.length + 1 })).toMatchObject({ action: { why: 'below-min-size' }, live: small });
    expect(await run(small, { minSize: small.length })).toMatchObject({ action: { kind: 'rotated', rows: 1 }, live: '' });
  });
});

describe('copyTruncate in process', () => {
  const noSteps = ARCHIVE_STEPS;
  const pinned = async (files: Record<string, string>) => {
    const dir = await tempDir();
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    const pin = pinDir(dir);
    onTestFinished(() => pin.close());
    return { dir, pin };
  };
  const named = (tail: string) => `job-${tail.length}.csv`;

  it('says why it left a live file alone: missing, below --min-size, or empty', async () => {
    const { pin } = await pinned({ 'small.csv': HEADER + row(1), 'header.csv': HEADER, 'empty.csv': '' });
    expect(copyTruncate(pin, 'job', named, { minSize: 0 }, noSteps)).toEqual({ kind: 'skipped', why: 'missing' });
    expect(copyTruncate(pin, 'small', named, { minSize: 10_000 }, noSteps)).toEqual({ kind: 'skipped', why: 'below-min-size' });
    expect(copyTruncate(pin, 'header', named, { minSize: 0 }, noSteps)).toEqual({ kind: 'skipped', why: 'empty' });
    expect(copyTruncate(pin, 'empty', named, { minSize: 0 }, noSteps)).toEqual({ kind: 'skipped', why: 'empty' });
  });

  it('a live file it cannot open for another reason than missing is an error', async () => {
    const { dir, pin } = await pinned({});
    await mkdir(join(dir, 'job.csv'));
    expect(() => copyTruncate(pin, 'job', named, { minSize: 0 }, noSteps)).toThrow(/job\.csv/);
  });

  it('a bug while discarding the archive after a failed truncate is thrown as it is', async () => {
    const { dir, pin } = await pinned({ 'job.csv': HEADER + row(1) });
    const bug = new TypeError('a bug, not an I/O error');
    const steps = {
      ...ARCHIVE_STEPS,
      truncate: () => {
        throw Object.assign(new Error('EIO: injected at truncate'), { code: 'EIO' });
      },
      discard: () => {
        throw bug;
      },
    };
    expect(() => copyTruncate(pin, 'job', () => 'job-20261127.csv', { minSize: 0 }, steps)).toThrow(bug);
    expect(await readFile(join(dir, 'job.csv'), 'utf8')).toBe(HEADER + row(1));
  });

  it("names the archive from the live file's last 64 KiB", async () => {
    // 2 MiB of rows: the name is given the end of the file only, which holds the newest rows.
    const rows = Array.from({ length: 20_000 }, (_, i) => row(i)).join('');
    const { dir, pin } = await pinned({ 'job.csv': HEADER + rows });
    const seen: string[] = [];
    const name = (tail: string) => {
      seen.push(tail);
      return 'job-20261127.csv';
    };
    const outcome = copyTruncate(pin, 'job', name, { minSize: 0 }, noSteps);
    expect(outcome).toEqual({ kind: 'copied', archive: 'job-20261127.csv', rows: 20_000, unsynced: undefined });
    expect(seen).toEqual([(HEADER + rows).slice(-65_536)]);
    expect(await readFile(join(dir, 'job-20261127.csv'), 'utf8')).toBe(HEADER + rows);
  });
});
