import { linkSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFileError, openForAppend, pinDir, replaceFile, UnsafeFileError, writeAll } from '../../src/files/safe-fs.js';
import { closeSync } from 'node:fs';
import { FILE_STEPS } from '../../src/files/file-steps.js';
import { tempDir } from '../support/helpers.js';

describe('replaceFile', () => {
  it('replaces a symlink planted at the name, never its target', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'passwd');
    writeFileSync(victim, 'root:x:0:0\n', { mode: 0o600 });
    symlinkSync(victim, join(dir, 'nvidia_gpu.prom'));
    const pinned = pinDir(dir);
    replaceFile(pinned, 'nvidia_gpu.prom', 'new\n', { mode: 0o644 });
    pinned.close();
    expect(readFileSync(victim, 'utf8')).toBe('root:x:0:0\n');
    expect(statSync(victim).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'nvidia_gpu.prom'), 'utf8')).toBe('new\n');
    expect(statSync(join(dir, 'nvidia_gpu.prom')).mode & 0o777).toBe(0o644);
    expect(readdirSync(dir)).toEqual(['nvidia_gpu.prom']);
  });

  it('keeps writing into the directory it pinned when the path is swapped for a link', async () => {
    const parent = await tempDir();
    const elsewhere = await tempDir();
    const dir = join(parent, 'textfile');
    mkdirSync(dir);
    const pinned = pinDir(dir);
    const { renameSync } = await import('node:fs');
    renameSync(dir, join(parent, 'moved'));
    symlinkSync(elsewhere, dir);
    replaceFile(pinned, 'a.prom', 'x\n');
    pinned.close();
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(readFileSync(join(parent, 'moved', 'a.prom'), 'utf8')).toBe('x\n');
  });

  it('leaves no temp file and the old file in place when the rename fails', async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, 'busy.prom'));
    writeFileSync(join(dir, 'busy.prom', 'inside'), 'x');
    const pinned = pinDir(dir);
    expect(() => replaceFile(pinned, 'busy.prom', 'data')).toThrow();
    pinned.close();
    expect(readdirSync(dir)).toEqual(['busy.prom']);
  });
});

describe('pinDir', () => {
  it('refuses a directory that is a symbolic link', async () => {
    const dir = await tempDir();
    symlinkSync(await tempDir(), join(dir, 'link'));
    expect(() => pinDir(join(dir, 'link'))).toThrow(UnsafeFileError);
  });

  it('names a link as a link, to a directory or to a file (O_DIRECTORY answers ENOTDIR for both)', async () => {
    const dir = await tempDir();
    symlinkSync(await tempDir(), join(dir, 'to-dir'));
    writeFileSync(join(dir, 'file'), '');
    symlinkSync(join(dir, 'file'), join(dir, 'to-file'));
    for (const name of ['to-dir', 'to-file']) expect(() => pinDir(join(dir, name))).toThrow(/is a symbolic link/);
    expect(() => pinDir(join(dir, 'file'))).toThrow(/is not a directory/);
    expect(() => pinDir(join(dir, 'file', 'below'))).toThrow(/is not a directory/);
  });

  it('creates missing parents', async () => {
    const dir = join(await tempDir(), 'a', 'b');
    pinDir(dir, { create: true }).close();
    expect(statSync(dir).isDirectory()).toBe(true);
  });
});

describe('openForAppend', () => {
  it('refuses a symlink and a hard link, and writes nothing through them', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'shadow');
    writeFileSync(victim, 'secret\n');
    symlinkSync(victim, join(dir, 'soft.csv'));
    linkSync(victim, join(dir, 'hard.csv'));
    const pinned = pinDir(dir);
    expect(() => openForAppend(pinned, 'soft.csv')).toThrow(/symbolic link/);
    expect(() => openForAppend(pinned, 'hard.csv')).toThrow(/hard links/);
    pinned.close();
    expect(readFileSync(victim, 'utf8')).toBe('secret\n');
  });

  it('appends all of a large chunk', async () => {
    const dir = await tempDir();
    const pinned = pinDir(dir);
    const fd = openForAppend(pinned, 'big.csv');
    const chunk = 'x'.repeat(3 * 1024 * 1024);
    writeAll(fd, chunk);
    closeSync(fd);
    pinned.close();
    expect(statSync(join(dir, 'big.csv')).size).toBe(chunk.length);
  });

  it('a text written short goes on from the byte it stopped at, not the character', async () => {
    const dir = await tempDir();
    const pinned = pinDir(dir);
    const fd = openForAppend(pinned, 'short.csv');
    const text = 'gpu="é日本"\nvalue 1\n';
    // The first write(2) takes 9 bytes, cutting 本 (3 bytes) after its first byte.
    const steps = { ...FILE_STEPS, writeText: (to: number, whole: string) => writeSync(to, Buffer.from(whole).subarray(0, 9)) };
    writeAll(fd, text, steps);
    expect(() => writeAll(fd, text, { ...FILE_STEPS, writeText: () => 0 })).toThrow(/write made no progress/);
    closeSync(fd);
    pinned.close();
    expect(readFileSync(join(dir, 'short.csv'), 'utf8')).toBe(text);
  });
});

describe('describeFileError', () => {
  it('names a file in a pinned directory by its name, not by the descriptor path it was opened as', async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, 'sub'));
    const pinned = pinDir(dir);
    let thrown: unknown;
    try {
      unlinkSync(pinned.at('sub'));
    } catch (error) {
      thrown = error;
    } finally {
      pinned.close();
    }
    expect(describeFileError(thrown)).toBe("EISDIR: illegal operation on a directory, unlink 'sub'");
  });
});
