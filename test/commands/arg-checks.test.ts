import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../support/helpers.js';

// archive's and report's options checked before any work: exit 2 and one line, nothing touched.

const HEADER = 'timestamp,host,task_id,gpu_id\n';

describe('archive', () => {
  it('--csv-dir naming nothing is a usage error', async () => {
    const dir = join(await tempDir(), 'nonexistent');
    const result = await runCli(['archive', '--csv-dir', dir]);
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([2, '', `gpu-textfile: --csv-dir: ${dir} does not exist\n`]);
  });

  it('--keep 0 is refused before anything is rotated or deleted', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'job.csv'), HEADER);
    await writeFile(join(dir, 'job-20261127.csv.gz'), 'the only archive');
    const result = await runCli(['archive', '--csv-dir', dir, '--keep', '0']);
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      'gpu-textfile: --keep 0 would delete every archive, the one just made too: keep at least 1\n',
    ]);
    expect((await readdir(dir)).sort()).toEqual(['job-20261127.csv.gz', 'job.csv']);
    expect(await readFile(join(dir, 'job-20261127.csv.gz'), 'utf8')).toBe('the only archive');
  });
});

describe('report', () => {
  it('--csv-dir naming nothing is a usage error', async () => {
    const dir = join(await tempDir(), 'nonexistent');
    const result = await runCli(['report', '--csv-dir', dir]);
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([2, '', `gpu-textfile: --csv-dir: ${dir} does not exist\n`]);
  });

  it.each([
    ['2026-11-29', '2026-11-28'],
    ['2026-11-28T06:00:00Z', '2026-11-28T06:00:00Z'],
  ])('--since %s --until %s: no time between them is a usage error', async (since, until) => {
    const result = await runCli(['report', '--csv-dir', await tempDir(), '--since', since, '--until', until], { TZ: 'UTC' });
    expect([result.exitCode, result.stdout]).toEqual([2, '']);
    expect(result.stderr).toMatch(/^gpu-textfile: --since \(\S+\) is not before --until \(\S+\): no time is left to report on\n$/);
  });
});

describe('pulse', () => {
  // Each would have run (NaN: and failed later, exit 1; 0 and -5: a verdict on nothing, exit 0).
  it.each([
    ['abc', 'NaN'],
    ['0', '0'],
    ['-5', '-5'],
    ['86401', '86401'],
  ])('--seconds %s is a usage error, before any sampling', async (given, read) => {
    const result = await runCli(['pulse', '--source', 'demo', '--seconds', given]);
    expect([result.exitCode, result.stdout, result.stderr]).toEqual([
      2,
      '',
      `gpu-textfile: --seconds: "${read}" must be a number of seconds above 0, at most 86400\n`,
    ]);
  });

  it('--timeout that is not a duration is a usage error', async () => {
    const result = await runCli(['pulse', '--source', 'demo', '--timeout', 'soon']);
    expect([result.exitCode, result.stderr]).toEqual([2, 'gpu-textfile: --timeout: "soon" is not a duration (use 10, 10s or 500ms)\n']);
  });
});
