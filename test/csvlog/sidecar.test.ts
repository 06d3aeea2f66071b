import { link, lstat, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { archiveDirectory, type ArchiveOptions, type SidecarMaker } from '../../src/csvlog/rotate.js';
import { readSidecar, SIDECAR_FORMAT } from '../../src/csvlog/sidecar.js';
import { tempDir } from '../support/helpers.js';

const HEADER = csvLine(CSV_HEADER);
const row = (time: string) => csvLine([time, 'h', 'job', '0', 'GPU-x', 'n', 'ok', '1', '', '', '', '', '', '']);

/** A maker that counts the archives it read: the real one is the report's (test/report/segment.test.ts). */
function counting(): SidecarMaker & { made: string[] } {
  const made: string[] = [];
  return {
    made,
    current: (sections) => sections.count === 1,
    make: async (path) => {
      made.push(path.split('/').pop()!);
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
