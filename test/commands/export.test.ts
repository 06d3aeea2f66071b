import { chmod, lstat, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeHistory } from '../../src/report/history-generator.js';
import { capture, FAKE_SMI, runCli, tempDir } from '../support/helpers.js';

// `gpu-textfile export` through the built program: options checked at the edge (one line, exit 2),
// a fleet's trails (archives gzipped, DIR/<host>/), the same families as the textfile, and --out.

const START = Date.UTC(2026, 0, 1);

/** Two hosts' trails under one directory, two days each (yesterday gzipped, today live). */
async function fleet(): Promise<string> {
  const dir = await tempDir('gpu-textfile-export-cli-');
  for (const host of ['h1', 'h2'])
    writeHistory(join(dir, host), {
      days: 2,
      gpus: ['training', 'inference'],
      host,
      start: START,
      jobs: (gpu) => (gpu === 0 ? 'slurm:7:bob::' : '-'),
    });
  return dir;
}

const typeLines = (text: string) => text.split('\n').filter((line) => line.startsWith('# TYPE ') || line.startsWith('# HELP '));

describe('export: options', () => {
  it.each([
    [['--format', 'json'], '--format: "json" must be openmetrics (promtool) or prometheus'],
    [['--since', 'yesterday'], '--since and --until take a time'],
    [['--until', '2026-02-30'], '--since and --until take a time'],
    [['--since', '2026-01-03', '--until', '2026-01-02'], 'is not before --until'],
    [['--task', '../x'], '--task: "../x" must be letters'],
    [['--host-label', 'gpu'], '--host-label: "gpu" is a label gpu-textfile sets itself'],
    [['--host-label', 'a-b'], '--host-label: "a-b" is not a valid label name'],
    [['--label', 'instance=x'], '--label: "instance" is a label export sets itself'],
    [['--label', 'uuid=x'], '--label: "uuid" is a label gpu-textfile sets itself'],
    [['--label', 'novalue'], '--label: "novalue" is not key=value'],
  ])('%j is refused with one line, exit 2', async (args, message) => {
    const dir = await tempDir('gpu-textfile-export-cli-');
    const result = await runCli(['export', '--csv-dir', dir, ...args]);
    expect(result.exitCode).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain(message);
  });

  it('a --csv-dir that does not exist, or is named twice', async () => {
    const dir = await tempDir('gpu-textfile-export-cli-');
    await mkdir(join(dir, 'h1'));
    const missing = await runCli(['export', '--csv-dir', join(dir, 'nope')]);
    expect([missing.exitCode, missing.stderr]).toEqual([2, `gpu-textfile: --csv-dir: ${join(dir, 'nope')} does not exist\n`]);
    const twice = await runCli(['export', '--csv-dir', dir, '--csv-dir', join(dir, 'h1')]);
    expect(twice.exitCode).toBe(2);
    expect(twice.stderr).toContain('named twice, or inside another --csv-dir');
  });

  it('without --csv-dir: a usage error', async () => {
    const result = await runCli(['export']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('csv-dir');
  });
});

describe('export: --out that cannot be a file', () => {
  it('/dev/null is written into, not replaced', async () => {
    const dir = await tempDir('gpu-textfile-export-cli-');
    const result = await runCli(['export', '--csv-dir', dir, '--out', '/dev/null']);
    expect(result.exitCode).toBe(0);
    expect((await lstat('/dev/null')).isCharacterDevice()).toBe(true);
  });

  it("the trail's own file, or a trail's name in its directory: one line, exit 2, the trail untouched", { timeout: 60_000 }, async () => {
    const dir = await fleet();
    const live = join(dir, 'h1', 'train.csv');
    const before = await readFile(live, 'utf8');
    for (const out of [live, join(dir, 'h2', 'gap.csv')]) {
      const result = await runCli(['export', '--csv-dir', dir, '--out', out]);
      expect([result.exitCode, result.stdout]).toEqual([2, '']);
      expect(result.stderr).toMatch(/^gpu-textfile: --out .* is a file of the trail .*; name a file outside the trail\n$/);
    }
    expect(await readFile(live, 'utf8')).toBe(before);
    expect(await lstat(join(dir, 'h2', 'gap.csv')).catch(() => 'absent')).toBe('absent');
  });

  it('a path under a file: one line, exit 1', async () => {
    const dir = await tempDir('gpu-textfile-export-cli-');
    await writeFile(join(dir, 'plain'), 'x');
    const result = await runCli(['export', '--csv-dir', dir, '--out', join(dir, 'plain', 'gap.om')]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^gpu-textfile: cannot write .*plain\/gap\.om: .*not a directory\n$/);
  });
});

describe('export: the trail', () => {
  it("reads a fleet's trails, archives and live files, in the textfile's families", { timeout: 120_000 }, async () => {
    const dir = await fleet();
    const result = await runCli(['export', '--csv-dir', dir, '--until', '2026-01-03T00:00:00Z'], {}, 100_000);
    expect(result.exitCode).toBe(0);
    // Two hosts x 2 days x 5760 collections x 2 GPUs.
    expect(result.stderr).toBe(
      `gpu-textfile: exported ${2 * 2 * 5760 * 2} rows (${2 * 2 * 5760} collections) as ${result.stdout.split('\n').filter((l) => l && !l.startsWith('#')).length} samples\n`,
    );
    const success = result.stdout.split('\n').filter((line) => line.startsWith('nvidia_gpu_collector_success{'));
    expect(success.filter((line) => line.includes('instance="h1"'))).toHaveLength(2 * 5760);
    expect(success.filter((line) => line.includes('instance="h2"'))).toHaveLength(2 * 5760);
    // Every family exported is the textfile's: the same HELP and TYPE as collect writes them. From a
    // recorded loaded host (its processes fixed): the demo source's processes end while its series
    // cycle through idle, and a family without samples is not written.
    const textfile = await runCli(['collect', '--dry-run', '--nvidia-smi', FAKE_SMI], {
      FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load'),
    });
    expect(textfile.exitCode).toBe(0);
    const ours = typeLines(textfile.stdout);
    const exported = typeLines(result.stdout);
    expect(exported.length).toBeGreaterThanOrEqual(16);
    for (const line of exported) expect(ours).toContain(line);
  });

  it('--out: the file whole, replaced, never written through a link planted at its name', { timeout: 60_000 }, async () => {
    const dir = await fleet();
    const out = join(await tempDir('gpu-textfile-export-out-'), 'gap.om');
    const args = ['export', '--csv-dir', join(dir, 'h1'), '--since', '2026-01-02T00:00:00Z', '--until', '2026-01-02T01:00:00Z'];
    const printed = await runCli(args);
    const written = await runCli([...args, '--out', out]);
    expect(written.exitCode).toBe(0);
    expect(written.stdout).toBe('');
    expect(await readFile(out, 'utf8')).toBe(printed.stdout);
    expect(printed.stdout.endsWith('# EOF\n')).toBe(true);
    // A link the user made, where no one else can change the directory: followed, as `>` would.
    const own = await tempDir('gpu-textfile-export-own-');
    await writeFile(join(own, 'target'), 'old');
    await symlink(join(own, 'target'), join(own, 'linked.om'));
    expect((await runCli([...args, '--out', join(own, 'linked.om')])).exitCode).toBe(0);
    expect((await lstat(join(own, 'linked.om'))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(own, 'target'), 'utf8')).toBe(printed.stdout);
    // In a directory anyone may write to, a link at the name may be another user's: replaced, its target left alone.
    const shared = await tempDir('gpu-textfile-export-shared-');
    await chmod(shared, 0o777);
    await writeFile(join(shared, 'target'), 'keep');
    await symlink(join(shared, 'target'), join(shared, 'linked.om'));
    expect((await runCli([...args, '--out', join(shared, 'linked.om')])).exitCode).toBe(0);
    expect((await lstat(join(shared, 'linked.om'))).isFile()).toBe(true);
    expect(await readFile(join(shared, 'linked.om'), 'utf8')).toBe(printed.stdout);
    expect(await readFile(join(shared, 'target'), 'utf8')).toBe('keep');
  });
});
