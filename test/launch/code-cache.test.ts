import { chmod, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cacheFileName, loadCached, readOwnCache, saveCache } from '../../src/launch/code-cache.js';
import { tempName } from '../../src/files/safe-fs.js';
import { FAKE_BIN, FAKE_SMI, capture, runCli, tempDir, madeDir } from '../support/helpers.js';

const uid = process.geteuid!();

describe('readOwnCache', () => {
  it('reads a file its user owns and only that user may write', async () => {
    const file = join(await tempDir(), 'c.v8cache');
    await writeFile(file, 'bytes', { mode: 0o644 });
    expect(readOwnCache(file, uid)?.toString()).toBe('bytes');
  });

  it('ignores a file another user owns, one others may write, and a missing one', async () => {
    const dir = await tempDir();
    const file = join(dir, 'c.v8cache');
    await writeFile(file, 'bytes', { mode: 0o644 });
    expect(readOwnCache(file, uid + 1)).toBeUndefined();
    await chmod(file, 0o664);
    expect(readOwnCache(file, uid)).toBeUndefined();
    await chmod(file, 0o646);
    expect(readOwnCache(file, uid)).toBeUndefined();
    expect(readOwnCache(join(dir, 'missing'), uid)).toBeUndefined();
    expect(readOwnCache(dir, uid)).toBeUndefined();
  });

  it('follows no link and does not block on a FIFO', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'real.v8cache'), 'bytes', { mode: 0o644 });
    await symlink(join(dir, 'real.v8cache'), join(dir, 'link.v8cache'));
    await execa('mkfifo', [join(dir, 'fifo.v8cache')]);
    expect([readOwnCache(join(dir, 'link.v8cache'), uid), readOwnCache(join(dir, 'fifo.v8cache'), uid)]).toEqual([undefined, undefined]);
  });
});

describe('saveCache', () => {
  it('renames the file into place and removes the caches of other builds, nothing else', async () => {
    const dir = await tempDir();
    const old = join(dir, cacheFileName('0123456789abcdef', 'v20.1.0', 'x64'));
    await writeFile(old, 'old');
    await writeFile(join(dir, 'unrelated.v8cache'), 'keep');
    const file = join(dir, cacheFileName('fedcba9876543210', process.version, process.arch));
    saveCache(file, Buffer.from('new'));
    expect(await readFile(file, 'utf8')).toBe('new');
    expect((await stat(file)).mode & 0o777).toBe(0o644);
    expect((await readdir(dir)).sort()).toEqual([file.slice(dir.length + 1), 'unrelated.v8cache'].sort());
  });

  it('creates a missing directory', async () => {
    const dir = await tempDir();
    saveCache(join(dir, 'cache', 'c.v8cache'), Buffer.from('x'));
    expect(await readFile(join(dir, 'cache', 'c.v8cache'), 'utf8')).toBe('x');
  });

  it('removes the temp files a killed run left', async () => {
    const dir = await tempDir();
    const file = join(dir, cacheFileName('fedcba9876543210', process.version, process.arch));
    await writeFile(join(dir, tempName(cacheFileName('0123456789abcdef', 'v20.1.0', 'x64'))), 'half');
    saveCache(file, Buffer.from('new'));
    expect(await readdir(dir)).toEqual([file.slice(dir.length + 1)]);
  });

  it('gives up quietly where it cannot write, leaving no temporary file', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'file'), '');
    expect(() => saveCache(join(dir, 'file', 'c.v8cache'), Buffer.from('x'))).not.toThrow();
    expect(await readdir(dir)).toEqual(['file']);
  });
});

describe('loadCached', () => {
  it('runs a CommonJS file with its own require, and from the cache once one is saved', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'helper.js'), 'module.exports = 20;');
    const bundle = join(dir, 'bundle.js');
    await writeFile(bundle, "const helper = require('./helper.js'); exports.answer = () => helper + 22; exports.where = __filename;");
    const cacheFile = join(dir, 'bundle.v8cache');
    const first = loadCached<{ answer: () => number; where: string }>(bundle, cacheFile, uid);
    expect([first.exports.answer(), first.exports.where, first.cacheUsed]).toEqual([42, bundle, false]);
    first.save();
    const second = loadCached<{ answer: () => number }>(bundle, cacheFile, uid);
    expect([second.exports.answer(), second.cacheUsed]).toEqual([42, true]);
  });

  it('compiles afresh from a damaged cache and saves a good one', async () => {
    const dir = await tempDir();
    const bundle = join(dir, 'bundle.js');
    await writeFile(bundle, 'exports.answer = () => 42;');
    const cacheFile = join(dir, 'bundle.v8cache');
    await writeFile(cacheFile, Buffer.alloc(4096, 7), { mode: 0o644 });
    const loaded = loadCached<{ answer: () => number }>(bundle, cacheFile, uid);
    expect([loaded.exports.answer(), loaded.cacheUsed]).toEqual([42, false]);
    loaded.save();
    expect(loadCached<{ answer: () => number }>(bundle, cacheFile, uid).cacheUsed).toBe(true);
  });
});

describe('the installed command with NODE_COMPILE_CACHE', () => {
  const collect = (dir: string, cacheDir: string, smi = FAKE_SMI) =>
    runCli(['collect', '--dry-run', '--state-dir', join(dir, 'state'), '--nvidia-smi', smi], {
      NODE_COMPILE_CACHE: cacheDir,
      FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle'),
    });
  // Node.js 22 keeps its own compile cache in NODE_COMPILE_CACHE too (a folder of its own): ours only.
  const ours = async (dir: string) => (await readdir(dir)).filter((name) => name.startsWith('gpu-textfile-'));
  const withoutTimes = (text: string) =>
    text.replace(/^(nvidia_gpu_collector_(duration_seconds|last_success_timestamp_seconds)) .*$/gm, '$1');

  it('a successful collect leaves one cache file that the next runs use as it is', async () => {
    const dir = await tempDir();
    const cacheDir = await tempDir();
    const first = await collect(dir, cacheDir);
    expect(first.exitCode, first.stderr).toBe(0);
    const files = await ours(cacheDir);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(new RegExp(`^gpu-textfile-[0-9a-f]{16}-${process.version}-${process.arch}\\.v8cache$`));
    const before = await stat(join(cacheDir, files[0]!));
    const second = await collect(dir, cacheDir);
    expect(second.exitCode, second.stderr).toBe(0);
    expect(withoutTimes(second.stdout)).toBe(withoutTimes(first.stdout));
    const after = await stat(join(cacheDir, files[0]!));
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it('NODE_COMPILE_CACHE below /proc: the run ends, quietly, without a cache', { timeout: 90_000 }, async () => {
    const dir = await tempDir();
    const result = await runCli(
      ['collect', '--textfile-dir', madeDir(join(dir, 'textfile')), '--state-dir', join(dir, 'state'), '--nvidia-smi', FAKE_SMI],
      {
        NODE_COMPILE_CACHE: '/proc/nope',
        FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle'),
      },
      60_000,
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(await readdir(join(dir, 'textfile'))).toEqual(['nvidia_gpu.prom']);
  });

  it('a failed collect and other commands write no cache', async () => {
    const dir = await tempDir();
    const cacheDir = await tempDir();
    const failed = await collect(dir, cacheDir, join(FAKE_BIN, 'no-such-nvidia-smi'));
    expect(failed.exitCode).toBe(1);
    const report = await runCli(['report', '--csv-dir', dir], { NODE_COMPILE_CACHE: cacheDir });
    expect(report.exitCode, report.stderr).toBe(0);
    expect(await ours(cacheDir)).toEqual([]);
  });
});
