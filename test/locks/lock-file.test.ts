import { chown, mkdir, open, readFile, readdir, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FILE_STEPS } from '../../src/files/file-steps.js';
import { removeLeftoverTemps, tryLock, withFileLock } from '../../src/locks/file-lock.js';
import { readLock, removeIfUnchanged } from '../../src/locks/lock-file.js';
import { currentOwner, formatOwner } from '../../src/locks/owner.js';
import { pinDir } from '../../src/files/safe-fs.js';
import { tempDir } from '../support/helpers.js';

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
  it('an empty temp file exactly a minute old is left; a millisecond later it is removed', async () => {
    const dir = await tempDir();
    const temp = join(dir, `.x.lock.${'e'.repeat(16)}.tmp`);
    await writeFile(temp, '');
    // A whole second: its milliseconds add up exactly.
    const second = new Date(Math.floor(Date.now() / 1000) * 1000);
    await utimes(temp, second, second);
    const written = (await stat(temp)).mtimeMs;
    expect(written).toBe(second.getTime());
    expect(removeLeftoverTemps(join(dir, 'x.lock'), written + 60_000)).toBeUndefined();
    expect(await readdir(dir)).toEqual([`.x.lock.${'e'.repeat(16)}.tmp`]);
    expect(removeLeftoverTemps(join(dir, 'x.lock'), written + 60_001)).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });
  it('a directory under a temp name cannot be removed: says why, once it is a minute old', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, `.x.lock.${'f'.repeat(16)}.tmp`));
    expect(removeLeftoverTemps(join(dir, 'x.lock'), Date.now() + 61_000)).toMatch(
      new RegExp(`^cannot clear ${join(dir, 'x.lock')}'s temp files: EISDIR: `),
    );
  });
});

/** `dir` pinned as the lock code pins it, closed when the test ends. */
function pinned(dir: string) {
  const pin = pinDir(dir);
  onTestFinished(() => pin.close());
  return pin;
}

describe('readLock: what is at the name that is not a regular file is judged empty and not trusted', () => {
  const notAFile = { kind: 'file', info: expect.anything(), text: '', trusted: false };
  it('nothing: gone', async () => {
    expect(readLock(pinned(await tempDir()), 'x.lock')).toEqual({ kind: 'gone' });
  });
  it('a FIFO (read without blocking)', async () => {
    const dir = await tempDir();
    await execa('mkfifo', [join(dir, 'x.lock')]);
    expect(readLock(pinned(dir), 'x.lock')).toEqual(notAFile);
  });
  it('a directory', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'x.lock'));
    expect(readLock(pinned(dir), 'x.lock')).toEqual(notAFile);
  });
  it("a symbolic link to a file that holds a live owner's line (never followed)", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'target'), formatOwner(me));
    await symlink(join(dir, 'target'), join(dir, 'x.lock'));
    expect(readLock(pinned(dir), 'x.lock')).toEqual(notAFile);
  });
  it('a socket (open(2) answers ENXIO): stale, removed, taken, as a FIFO is', async () => {
    const dir = await tempDir();
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(dir, 'x.lock'), resolve));
    onTestFinished(() => void server.close());
    expect(readLock(pinned(dir), 'x.lock')).toEqual(notAFile);
    expect(await withFileLock(join(dir, 'x.lock'), 1000, async () => 'ran')).toBe('ran');
  });
});

// Between judging a lock stale and removing it, another taker may have removed it and taken the name:
// removeIfUnchanged reads the name again and removes only the file it judged.
describe('removeIfUnchanged removes only the file judged', () => {
  it('the same file: removed', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(dead));
    const pin = pinned(dir);
    removeIfUnchanged(pin, 'x.lock', readLock(pin, 'x.lock'), FILE_STEPS);
    expect(await readdir(dir)).toEqual([]);
  });
  it('gone since (another taker removed it): nothing to do', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(dead));
    const pin = pinned(dir);
    const judged = readLock(pin, 'x.lock');
    await rm(join(dir, 'x.lock'));
    removeIfUnchanged(pin, 'x.lock', judged, FILE_STEPS);
    expect(await readdir(dir)).toEqual([]);
  });
  it("a successor's lock that reuses the judged inode (its line differs): kept", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(dead));
    const pin = pinned(dir);
    const judged = readLock(pin, 'x.lock');
    // Written in place: the inode stays, as a file system that hands a freed inode number to the next file gives it.
    await writeFile(join(dir, 'x.lock'), formatOwner(me));
    removeIfUnchanged(pin, 'x.lock', judged, FILE_STEPS);
    expect(await readFile(join(dir, 'x.lock'), 'utf8')).toBe(formatOwner(me));
  });
  it("another user's copy of a live owner's line, judged stale, whose inode is now that owner's lock: kept", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(me));
    await chown(join(dir, 'x.lock'), NOBODY, NOBODY);
    const pin = pinned(dir);
    const judged = readLock(pin, 'x.lock');
    expect(judged).toMatchObject({ text: formatOwner(me), trusted: false });
    // The copy removed and the owner's lock made with the same line got its inode number (ext4 reuses a
    // freed one at once): the same inode, root's now.
    await chown(join(dir, 'x.lock'), 0, 0);
    removeIfUnchanged(pin, 'x.lock', judged, FILE_STEPS);
    expect(await readFile(join(dir, 'x.lock'), 'utf8')).toBe(formatOwner(me));
  });
  it('our own lock, removed by someone and taken again by this process: the first release keeps the second lock', async () => {
    const path = join(await tempDir(), 'x.lock');
    const first = await tryLock(path);
    // An open handle keeps the removed file's inode in use, so the second lock gets another inode number.
    // Where the file system hands it the same number, the two locks differ in nothing a lock file records.
    const removed = await open(path);
    onTestFinished(() => removed.close());
    await rm(path);
    const second = await tryLock(path);
    expect([first.kind, second.kind]).toEqual(['held', 'held']);
    await (first.kind === 'held' && first.release());
    expect(await readFile(path, 'utf8')).toBe(formatOwner(me));
    await (second.kind === 'held' && second.release());
    expect(await readdir(join(path, '..'))).toEqual([]);
  });
  it('nothing was there when judged: what is there now is kept', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(dead));
    removeIfUnchanged(pinned(dir), 'x.lock', { kind: 'gone' }, FILE_STEPS);
    expect(await readdir(dir)).toEqual(['x.lock']);
  });
});

describe('run by a user other than root', () => {
  /** `take` with this process's effective user NOBODY, as a collect run by an unprivileged user is. */
  async function asNobody<T>(take: () => Promise<T>): Promise<T> {
    process.seteuid!(NOBODY);
    try {
      return await take();
    } finally {
      process.seteuid!(0);
    }
  }
  it("trusts a lock of its own user and one of root's, each naming a live process: busy", async () => {
    const dir = await tempDir();
    await chown(dir, NOBODY, NOBODY);
    const path = join(dir, 'x.lock');
    await writeFile(path, formatOwner(me));
    await chown(path, NOBODY, NOBODY);
    expect(await asNobody(() => tryLock(path))).toEqual({ kind: 'busy', pid: process.pid });
    await chown(path, 0, 0);
    expect(await asNobody(() => tryLock(path))).toEqual({ kind: 'busy', pid: process.pid });
    expect(await readdir(dir)).toEqual(['x.lock']);
  });
});
