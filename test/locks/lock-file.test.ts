import { chown, mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { removeLeftoverTemps, tryLock, withFileLock } from '../../src/locks/file-lock.js';
import { currentOwner, formatOwner } from '../../src/locks/owner.js';
import { tempDir } from '../helpers.js';

// Judging what is at a lock's name, in process (file-lock.test.ts does it with real holders in
// child processes): whose line it is, who owns the file, what kind of file it is.

const me = currentOwner();
const NOBODY = 65534;
const dead = { ...me, pid: 4_194_304 + 1 };

describe('what is at the lock name', () => {
  it("our own live owner's line, in a file root owns: busy, with our pid", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(me));
    expect(await tryLock(join(dir, 'x.lock'))).toEqual({ kind: 'busy', pid: process.pid });
    expect(await withFileLock(join(dir, 'x.lock'), 50, async () => 'ran')).toEqual({
      lockError: `${join(dir, 'x.lock')} is held by pid ${process.pid} for more than 50 ms`,
    });
  });
  it('the same line in a file another user owns is not trusted: stale, removed, taken', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(me));
    await chown(join(dir, 'x.lock'), NOBODY, NOBODY);
    expect(await withFileLock(join(dir, 'x.lock'), 1000, async () => 'ran')).toBe('ran');
    expect(await readdir(dir)).toEqual([]);
  });
  it("a dead owner's line is stale: removed and taken", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(dead));
    expect(await withFileLock(join(dir, 'x.lock'), 1000, async () => 'ran')).toBe('ran');
  });
  it('a directory at the name cannot be removed: an error that names the lock, nothing run', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'x.lock'));
    const result = await withFileLock(join(dir, 'x.lock'), 1000, async () => 'ran');
    expect(result).toEqual({ lockError: expect.stringMatching(new RegExp(`^cannot create ${join(dir, 'x.lock')}: E[A-Z]+$`)) });
    expect(await readdir(dir)).toEqual(['x.lock']);
  });
  it('a lock in a directory that does not exist: an error, nothing run', async () => {
    const dir = await tempDir();
    const result = await tryLock(join(dir, 'missing', 'x.lock'));
    expect(result).toEqual({ kind: 'error', message: `cannot create ${join(dir, 'missing', 'x.lock')}: ENOENT` });
  });
});

describe('removeLeftoverTemps in process', () => {
  it("removes a dead taker's temp and an unwritten one a minute old; leaves a live taker's and a fresh empty one", async () => {
    const dir = await tempDir();
    const temp = (hex: string) => join(dir, `.x.lock.${hex.repeat(16)}.tmp`);
    await writeFile(temp('a'), formatOwner(dead));
    await writeFile(temp('b'), formatOwner(me));
    await writeFile(temp('c'), '');
    await writeFile(temp('d'), '');
    const now = Date.now();
    await utimes(temp('c'), new Date(now - 61_000), new Date(now - 61_000));
    await utimes(temp('d'), new Date(now - 59_000), new Date(now - 59_000));
    expect(removeLeftoverTemps(join(dir, 'x.lock'), now)).toBeUndefined();
    expect((await readdir(dir)).sort()).toEqual([`.x.lock.${'b'.repeat(16)}.tmp`, `.x.lock.${'d'.repeat(16)}.tmp`]);
    expect(removeLeftoverTemps(join(dir, 'missing', 'x.lock'))).toMatch(/^cannot clear .*missing\/x\.lock's temp files: ENOENT/);
  });
});
