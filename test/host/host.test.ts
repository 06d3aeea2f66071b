import { closeSync, writeFileSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostAt, list, listEntries, listIfAny, openIfSync, readTextIfAny } from '../../src/host/host.js';
import { tempDir } from '../support/helpers.js';

describe('hostAt', () => {
  it('puts proc, sys, dev and etc/passwd under the root', () => {
    expect(hostAt('/host')).toEqual({
      root: '/host',
      proc: '/host/proc',
      sys: '/host/sys',
      dev: '/host/dev',
      etcPasswd: '/host/etc/passwd',
    });
    expect(hostAt()).toEqual({ root: '/', proc: '/proc', sys: '/sys', dev: '/dev', etcPasswd: '/etc/passwd' });
  });
});

describe('the host readers', () => {
  it('answer nothing for what cannot be read, and the text or the names for what can', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'gpus'));
    await writeFile(join(dir, 'gpus/info'), 'GPU UUID: GPU-1\n');
    expect(readTextIfAny(join(dir, 'gpus/info'))).toBe('GPU UUID: GPU-1\n');
    expect(readTextIfAny(join(dir, 'missing'))).toBeUndefined();
    // A directory is EISDIR: a file system error like any other, not a crash.
    expect(readTextIfAny(join(dir, 'gpus'))).toBeUndefined();
    expect(listIfAny(join(dir, 'gpus'))).toEqual(['info']);
    // Over 16 MiB is not a small host file: no unbounded read.
    await writeFile(join(dir, 'huge'), Buffer.alloc(16 * 1024 * 1024 + 1, 0x61));
    expect(readTextIfAny(join(dir, 'huge'))).toBeUndefined();
    // procfs files say they are empty and are read all the same.
    expect(readTextIfAny('/proc/self/status')).toMatch(/^Name:/);
    // A sysctl file refuses a read asked for the whole 16 MiB limit (ENOMEM): the Xid counter's boot id.
    expect(readTextIfAny('/proc/sys/kernel/random/boot_id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$/);
    // Larger than the first read: read whole, over several reads into a grown buffer.
    const longer = `${'0123456789abcdef'.repeat(5000)}\u00e9`;
    await writeFile(join(dir, 'longer'), longer);
    expect(readTextIfAny(join(dir, 'longer'))).toBe(longer);
    expect(listIfAny(join(dir, 'gpus/info'))).toEqual([]);
  });

  it('throw what is not a file system error (a bug)', () => {
    expect(() => readTextIfAny(undefined as unknown as string)).toThrow(TypeError);
  });
});

describe('one set of guarantees for every reader', () => {
  it('opens only what stat() says the caller wants: no FIFO, directory or device in place of a file', async () => {
    const dir = await tempDir();
    await execa('mkfifo', [join(dir, 'fifo')]);
    await writeFile(join(dir, 'file'), 'text\n');
    await symlink(join(dir, 'file'), join(dir, 'link'));
    const isFile = (stats: { isFile(): boolean }) => stats.isFile();
    expect(openIfSync(join(dir, 'fifo'), isFile)).toBeUndefined();
    expect(readTextIfAny(join(dir, 'fifo'))).toBeUndefined();
    expect(openIfSync(dir, isFile)).toBeUndefined();
    expect(openIfSync('/dev/null', isFile)).toBeUndefined();
    expect(openIfSync(join(dir, 'missing'), isFile)).toBeUndefined();
    // Links are followed (/etc/alternatives): what counts is what the name leads to.
    expect(readTextIfAny(join(dir, 'link'))).toBe('text\n');
    const device = openIfSync('/dev/null', (stats) => stats.isCharacterDevice());
    expect(device?.stats.isCharacterDevice()).toBe(true);
    closeSync(device!.fd);
  });

  it('bounds a listing at 10 000 names, sorted as readdir() gives them', async () => {
    const dir = await tempDir();
    for (let i = 0; i <= 10_000; i++) writeFileSync(join(dir, `n${String(i).padStart(5, '0')}`), '');
    const names = listIfAny(dir);
    expect(names).toHaveLength(10_000);
    expect(names).toEqual([...names].sort());
    const entries = await listEntries({ root: dir }, '.');
    expect(entries).toHaveLength(10_000);
    expect(entries.map((entry) => entry.name)).toEqual(entries.map((entry) => entry.name).sort());
    expect(listIfAny(join(dir, 'n00000'))).toEqual([]);
    expect(await listEntries({ root: dir }, 'missing')).toEqual([]);
    // A name looked for is found wherever the directory's order puts it, past the cap too (doctor's
    // libnvidia-ml.so.* in a /usr/lib64 of more than 10 000 files).
    for (const wanted of ['n00000', 'n05000', 'n10000'])
      expect(await list({ root: dir }, '.', (name) => name === wanted)).toEqual([wanted]);
  }, 60_000);
});
