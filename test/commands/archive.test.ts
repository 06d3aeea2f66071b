import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../support/helpers.js';

const HEADER = 'time,host,task_id,gpu_id\n';

/** A trail with one archive from 2020 and a live file of today. */
async function trail(): Promise<string> {
  const dir = await tempDir();
  await writeFile(join(dir, 'job-20200101.csv.gz'), '');
  await writeFile(join(dir, 'job.csv'), `${HEADER}${new Date().toISOString()},h,job,0\n`);
  return dir;
}

describe('archive --max-age', () => {
  // The same duration syntax as report --since, and plain days as before.
  it.each(['7', '7d', '168h', '0.5'])("%s removes the archive of 2020 and keeps today's", async (age) => {
    const dir = await trail();
    const result = await runCli(['archive', '--csv-dir', dir, '--max-age', age, '--no-compress']);
    expect(result.exitCode).toBe(0);
    const files = (await readdir(dir)).sort();
    // Today's archive, its sidecar and the live file: the pruned archive got none.
    expect(files).toHaveLength(3);
    expect(files.filter((f) => f.endsWith('.hours.json'))).toEqual([files[0]!.replace(/\.csv$/, '.csv.hours.json')]);
    expect(files).not.toContain('job-20200101.csv.gz');
  });

  it.each(['7x', 'week', '-1', ''])('%j is a usage error, one line, nothing touched', async (age) => {
    const dir = await trail();
    const result = await runCli(['archive', '--csv-dir', dir, '--max-age', age]);
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      `gpu-textfile: --max-age takes days (7) or a span (7d, 36h), not ${JSON.stringify(age)}\n`,
    ]);
    expect((await readdir(dir)).sort()).toEqual(['job-20200101.csv.gz', 'job.csv']);
  });
});
