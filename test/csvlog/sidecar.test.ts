import { chown, link, lstat, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { archiveDirectory, type ArchiveOptions, type SidecarMaker } from '../../src/csvlog/rotate.js';
import { readSidecar, SIDECAR_FORMAT } from '../../src/csvlog/sidecar.js';
import { runCli, tempDir } from '../support/helpers.js';

const HEADER = csvLine(CSV_HEADER);
const row = (time: string) => csvLine([time, 'h', 'job', '0', 'GPU-x', 'n', 'ok', '1', '', '', '', '', '', '']);

/** A maker that counts the archives it read: the real one is the report's (test/report/segment.test.ts). */
function counting(): SidecarMaker & { made: string[] } {
  const made: string[] = [];
  return {
    made,
    current: (sections) => sections.count === 1,
    make: async (path, _gzip, file) => {
      made.push(file);
      return { count: 1, bytes: (await readFile(path)).length };
    },
  };
}

const at = (dir: string, day: number, options: Partial<ArchiveOptions> = {}) =>
  archiveDirectory(dir, { keep: 14, compress: true, delayCompress: false, minSize: 0, now: new Date(2026, 10, day, 12), ...options });

describe("the archiver writes each archive's sidecar", () => {
  it('beside the new archive, naming it with its size, time and hash; read back while it matches', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const maker = counting();
    const result = await at(dir, 27, { sidecars: maker });
    expect(result).toEqual({ actions: [expect.objectContaining({ kind: 'rotated', archive: 'job-20261127.csv.gz' })], problems: [] });
    const doc = JSON.parse(await readFile(join(dir, 'job-20261127.csv.hours.json'), 'utf8'));
    const info = await lstat(join(dir, 'job-20261127.csv.gz'));
    expect(doc).toEqual({
      format: SIDECAR_FORMAT,
      version: 1,
      archive: { file: 'job-20261127.csv.gz', bytes: info.size, mtime_ms: info.mtimeMs, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      sections: { count: 1, bytes: info.size },
    });
    expect(readSidecar(dir, 'job-20261127.csv.gz')).toEqual({ count: 1, bytes: info.size });
    expect(readSidecar(dir, 'job-20261128.csv.gz')).toBe('none');
  });

  it("an older version's archives get theirs on the next run, once; a current one is left alone", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job-20261120.csv'), HEADER + row('2026-11-20T10:00:00.000+00:00'));
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const maker = counting();
    await at(dir, 27, { sidecars: maker });
    expect(maker.made.sort()).toEqual(['job-20261120.csv.gz', 'job-20261127.csv.gz']);
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-28T10:00:00.000+00:00'));
    await at(dir, 28, { sidecars: maker });
    expect(maker.made.slice(2)).toEqual(['job-20261128.csv.gz']);
  });

  it('--delay-compress: the plain archive gets one, and a new one names the .gz once it is compressed', async () => {
    const dir = await tempDir();
    const maker = counting();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    await at(dir, 27, { sidecars: maker, delayCompress: true });
    expect(JSON.parse(await readFile(join(dir, 'job-20261127.csv.hours.json'), 'utf8')).archive.file).toBe('job-20261127.csv');
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-28T10:00:00.000+00:00'));
    await at(dir, 28, { sidecars: maker, delayCompress: true });
    expect(JSON.parse(await readFile(join(dir, 'job-20261127.csv.hours.json'), 'utf8')).archive.file).toBe('job-20261127.csv.gz');
    expect(readSidecar(dir, 'job-20261127.csv.gz')).toEqual(expect.objectContaining({ count: 1 }));
  });

  it('is removed with its archive (--keep), never before', async () => {
    const dir = await tempDir();
    const maker = counting();
    for (const day of [25, 26, 27]) {
      await writeFile(join(dir, 'job.csv'), HEADER + row(`2026-11-${day}T10:00:00.000+00:00`));
      await at(dir, day, { sidecars: maker, keep: 2 });
    }
    expect((await readdir(dir)).sort()).toEqual([
      'job-20261126.csv.gz',
      'job-20261126.csv.hours.json',
      'job-20261127.csv.gz',
      'job-20261127.csv.hours.json',
      'job.csv',
    ]);
  });

  it("one left by a run killed after removing its archive is removed by the next; another task's is not touched", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job-20261120.csv.hours.json'), '{}');
    await writeFile(join(dir, 'other-20261120.csv.hours.json'), '{}');
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const result = await at(dir, 27, { sidecars: counting() });
    expect(result).toEqual({ actions: [expect.objectContaining({ kind: 'rotated' })], problems: [] });
    expect((await readdir(dir)).sort()).toEqual([
      'job-20261127.csv.gz',
      'job-20261127.csv.hours.json',
      'job.csv',
      'other-20261120.csv.hours.json',
    ]);
  });

  it('a link planted at its name is replaced, never written through; a link there is not read either', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'victim');
    await writeFile(victim, 'untouched');
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    await symlink(victim, join(dir, 'job-20261127.csv.hours.json'));
    await at(dir, 27, { sidecars: counting() });
    expect(await readFile(victim, 'utf8')).toBe('untouched');
    expect((await lstat(join(dir, 'job-20261127.csv.hours.json'))).isFile()).toBe(true);
    // A sidecar that is a link is not read: the report reads the rows.
    const text = await readFile(join(dir, 'job-20261127.csv.hours.json'), 'utf8');
    await writeFile(victim, text);
    await rm(join(dir, 'job-20261127.csv.hours.json'));
    await symlink(victim, join(dir, 'job-20261127.csv.hours.json'));
    expect(readSidecar(dir, 'job-20261127.csv.gz')).toBe('unreadable');
  });

  it("an archive with a second hard link (a backup's) gets its sidecar all the same", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job-20261120.csv'), HEADER + row('2026-11-20T10:00:00.000+00:00'));
    await link(join(dir, 'job-20261120.csv'), join(await tempDir(), 'backup.csv'));
    await writeFile(join(dir, 'job.csv'), '');
    const maker = counting();
    const result = await at(dir, 27, { sidecars: maker, compress: false });
    expect(result).toEqual({ actions: [expect.objectContaining({ kind: 'skipped' })], problems: [] });
    expect(maker.made).toEqual(['job-20261120.csv']);
  });

  it('a maker with nothing to give (rows it cannot stand for) leaves no sidecar, and no problem', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const result = await at(dir, 27, { sidecars: { current: () => false, make: async () => undefined } });
    expect(result).toEqual({ actions: [expect.objectContaining({ kind: 'rotated' })], problems: [] });
    expect(await readdir(dir)).not.toContain('job-20261127.csv.hours.json');
  });
});

describe('a sidecar or archive others planted is not trusted', () => {
  /** A sidecar for `archive` naming `identity`'s size and time (or others), as the archiver writes one. */
  const plant = (dir: string, archive: string, identity: { bytes: number; mtime_ms: number; sha256?: string }) =>
    writeFile(
      join(dir, `${archive.replace(/\.gz$/, '')}.hours.json`),
      `${JSON.stringify({ format: SIDECAR_FORMAT, version: 1, archive: { file: archive, sha256: '0'.repeat(64), ...identity }, sections: { count: 1 } })}\n`,
    );

  it('an archive name that is a link is not followed, to a file or to /dev/zero (hashed for ever, the archiver stuck under its lock)', async () => {
    const dir = await tempDir();
    const target = join(await tempDir(), 'elsewhere.csv');
    await writeFile(target, HEADER + row('2026-11-20T10:00:00.000+00:00'));
    const info = await lstat(target);
    await symlink(target, join(dir, 'job-20261120.csv'));
    await plant(dir, 'job-20261120.csv', { bytes: info.size, mtime_ms: info.mtimeMs });
    expect(readSidecar(dir, 'job-20261120.csv')).toBe('unreadable');
    // /dev/zero says it has 0 bytes; a time that differs sends the reader to the hash. In a child
    // process with a deadline: a hang here is the bug, and would stop this worker for good.
    await rm(join(dir, 'job-20261120.csv'));
    await symlink('/dev/zero', join(dir, 'job-20261120.csv'));
    await plant(dir, 'job-20261120.csv', { bytes: 0, mtime_ms: 1 });
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const result = await runCli(['archive', '--csv-dir', dir, '--no-compress'], {}, 30_000);
    expect(result.timedOut).toBe(false);
    expect(result.stderr).toContain('cannot write the sidecar of job-20261120.csv (report reads its rows instead)');
    expect(result.stdout).toMatch(/^job\.csv -> job-\d{8}\.csv \(1 rows\)\n$/);
  }, 60_000);

  it('an archive swapped for a link while it is read for its sidecar: the file opened is read, never what the name is by then (a FIFO would hang archive)', async () => {
    const dir = await tempDir();
    const elsewhere = join(await tempDir(), 'elsewhere.csv');
    await writeFile(elsewhere, 'not the archive');
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    const read: string[] = [];
    const swapping: SidecarMaker = {
      current: () => false,
      make: async (path) => {
        await rm(join(dir, 'job-20261127.csv'));
        await symlink(elsewhere, join(dir, 'job-20261127.csv'));
        read.push(await readFile(path, 'utf8'));
        return { count: 1 };
      },
    };
    await at(dir, 27, { sidecars: swapping, compress: false });
    expect(read).toEqual([HEADER + row('2026-11-27T10:00:00.000+00:00')]);
    // The sidecar describes the file read, which no longer has the name: a reader reads the rows.
    expect(readSidecar(dir, 'job-20261127.csv')).toBe('unreadable');
  });

  it("a sidecar owned by someone other than its archive's owner is not read (a sticky directory: they could not change the archive)", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER + row('2026-11-27T10:00:00.000+00:00'));
    await at(dir, 27, { sidecars: counting() });
    const sidecar = join(dir, 'job-20261127.csv.hours.json');
    expect(readSidecar(dir, 'job-20261127.csv.gz')).toEqual(expect.objectContaining({ count: 1 }));
    // Someone else's copy of the same text is refused (chown: the tests run as root, the archiver's case).
    await chown(sidecar, 65534, 65534);
    expect(readSidecar(dir, 'job-20261127.csv.gz')).toBe('unreadable');
    // And the archiver replaces it with its own on its next run.
    await at(dir, 28, { sidecars: counting() });
    expect((await lstat(sidecar)).uid).toBe(0);
  });
});
