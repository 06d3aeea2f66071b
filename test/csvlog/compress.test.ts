import { randomBytes } from 'node:crypto';
import { readFile, readdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { archiveDirectory, type ArchiveOptions } from '../../src/csvlog/rotate.js';
import { tempDir } from '../support/helpers.js';
import { fillDisk, smallDisk } from './small-disk.js';

const HEADER = csvLine(CSV_HEADER);
const row = (i: number) =>
  csvLine([
    '2026-11-27T10:00:00.000+00:00',
    'h',
    'job',
    '0',
    `GPU-${randomBytes(16).toString('hex')}`,
    'n',
    'ok',
    String(i),
    '',
    '',
    '',
    '',
    '',
    '',
  ]);

/** archive in-process on 2026-11-27 (local), the day the archives below are named after. */
const archiveAt = (dir: string, options: Partial<ArchiveOptions> = {}) =>
  archiveDirectory(dir, { keep: 14, compress: true, delayCompress: false, minSize: 0, now: new Date(2026, 10, 27, 12), ...options });

describe('compressing archives', () => {
  it("never reads a link planted under an archive's name into a world-readable archive", async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'shadow');
    await writeFile(victim, 'root:$6$secret:19000:0:99999:7:::\n', { mode: 0o600 });
    await symlink(victim, join(dir, 'job-20261120.csv'));
    await writeFile(join(dir, 'job.csv'), '');
    const result = await archiveAt(dir);
    expect(result).toEqual({
      actions: [{ kind: 'skipped', task: 'job', why: 'empty' }],
      problems: [
        `cannot compress job-20261120.csv, kept it plain: ${join(dir, 'job-20261120.csv')} is a symbolic link; refusing to write through it`,
      ],
    });
    expect((await readdir(dir)).sort()).toEqual(['job-20261120.csv', 'job.csv']);
    expect(await readFile(victim, 'utf8')).toBe('root:$6$secret:19000:0:99999:7:::\n');
    expect((await stat(victim)).mode & 0o777).toBe(0o600);
  });

  it('on a full disk keeps the plain archive, every row readable, no partial .gz; the next run compresses it', async () => {
    const disk = await smallDisk(64 * 4096);
    let live = HEADER;
    for (let i = 0; live.length < 16 * 4096; i++) live += row(i);
    await writeFile(join(disk, 'job.csv'), live);
    expect(await archiveAt(disk, { delayCompress: true })).toMatchObject({
      actions: [{ kind: 'rotated', archive: 'job-20261127.csv' }],
      problems: [],
    });
    // Room for the two lock files, not for the compressed copy.
    fillDisk(join(disk, 'filler'), 2);
    const full = await archiveAt(disk);
    expect(full).toMatchObject({
      actions: [{ kind: 'skipped', why: 'empty' }],
      problems: [expect.stringMatching(/^cannot compress job-20261127\.csv, kept it plain: ENOSPC/)],
    });
    expect((await readdir(disk)).sort()).toEqual(['filler', 'job-20261127.csv', 'job.csv']);
    expect(await readFile(join(disk, 'job-20261127.csv'), 'utf8')).toBe(live);

    await unlink(join(disk, 'filler'));
    expect(await archiveAt(disk)).toMatchObject({ problems: [] });
    expect((await readdir(disk)).sort()).toEqual(['job-20261127.csv.gz', 'job.csv']);
    expect(gunzipSync(await readFile(join(disk, 'job-20261127.csv.gz'))).toString('utf8')).toBe(live);
  });
});
