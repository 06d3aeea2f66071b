import { link, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { runReport } from '../../src/commands/report.js';
import { writeHistory } from '../../src/report/history-generator.js';
import { CLI, cliEnv, runCli, tempDir, madeDir } from '../support/helpers.js';

describe('report --since/--until', () => {
  // Date would roll these over into another month: they are no day of the calendar.
  it.each(['2026-13-45', '2026-02-30', '2026-00-10', '2026-04-31T06:00:00Z', '2027-02-29', 'March 7', '2026-1-5'])(
    '%s is a usage error, one line',
    async (when) => {
      const result = await runCli(['report', '--csv-dir', await tempDir(), '--since', when], { TZ: 'UTC' });
      expect({ exit: result.exitCode, lines: result.stderr.split('\n').length, stderr: result.stderr }).toEqual({
        exit: 2,
        lines: 2,
        stderr: expect.stringMatching(/^gpu-textfile: --since and --until take a time/),
      });
    },
  );

  it.each(['2028-02-29', '2026-04-30T06:00:00Z', '2026-11-28T06:00:00+01:00', '2026-11-28 06:00', '7d'])('%s is a time', async (when) => {
    const result = await runCli(['report', '--csv-dir', await tempDir(), '--since', when], { TZ: 'UTC' });
    expect([result.exitCode, result.stderr]).toEqual([0, expect.stringMatching(/^gpu-textfile: no samples in \S+ match\n$/)]);
  });
});

describe('report --demo', () => {
  it('removes its generated trail when done', { timeout: 60_000 }, async () => {
    const tmp = await tempDir();
    const result = await runCli(['report', '--demo', '--format', 'csv'], { TMPDIR: tmp }, 50_000);
    expect([result.exitCode, await readdir(tmp)]).toEqual([0, []]);
  });

  it('removes it when the report fails too', { timeout: 60_000 }, async () => {
    const tmp = await tempDir();
    // An --out whose directory is a file: the report cannot be written (a missing directory is made).
    const blocker = join(await tempDir(), 'a-file');
    await writeFile(blocker, '');
    const result = await runCli(['report', '--demo', '--out', join(blocker, 'report.txt')], { TMPDIR: tmp }, 50_000);
    expect([result.exitCode, result.stderr, await readdir(tmp)]).toEqual([1, expect.stringContaining('cannot write'), []]);
  });
});

describe('report --demo to a reader that stops early', () => {
  // `report --demo | head`: the broken pipe ends the process (src/launch/main.ts) before the
  // report's own clean-up could run, which left a week's trail (14 MB) in the temp directory.
  it('removes its generated trail all the same', { timeout: 60_000 }, async () => {
    const tmp = await tempDir();
    const run = execa(process.execPath, [CLI, 'report', '--demo', '--format', 'json'], {
      env: cliEnv({ TMPDIR: tmp }),
      extendEnv: false,
      reject: false,
      timeout: 50_000,
      stdin: 'ignore',
    });
    // The document is some 250 KB, far more than a pipe holds: closed at its first bytes, the
    // writer meets the broken pipe.
    run.stdout?.once('data', () => run.stdout?.destroy());
    const result = await run;
    expect([result.exitCode, result.stderr.includes('demo:'), await readdir(tmp)]).toEqual([0, true, []]);
  });
});

describe('a trail written with --source demo', () => {
  it('is marked in its host cell, and report says it is demo data', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const csv = join(dir, 'csv');
    await mkdir(join(dir, 'textfile'));
    const collect = await runCli([
      'collect',
      '--source',
      'demo',
      '--textfile-dir',
      madeDir(join(dir, 'textfile')),
      '--csv-dir',
      csv,
      '--task',
      't',
    ]);
    expect([collect.exitCode, collect.stderr]).toEqual([0, '']);
    const [header, ...rows] = (await readFile(join(csv, 't.csv'), 'utf8')).trim().split('\n');
    const host = header!.split(',').indexOf('host');
    expect(rows.map((row) => row.split(',')[host])).toEqual(rows.map(() => `demo:${hostname()}`));

    const report = await runCli(['report', '--csv-dir', csv, '--format', 'csv']);
    expect([report.exitCode, report.stderr]).toEqual([
      0,
      `gpu-textfile: host demo:${hostname()} is demo data (written by --source demo: recorded GPUs, not this host's)\n`,
    ]);
    expect(report.stdout).toContain(`demo:${hostname()}`);
  });

  it('is marked by run --source demo too', { timeout: 60_000 }, async () => {
    const csv = await tempDir();
    const run = await runCli(['run', '--source', 'demo', '--csv-dir', csv, '--task', 't', '--interval', '100ms', '--', 'sleep', '1']);
    expect(run.exitCode).toBe(0);
    const [header, ...rows] = (await readFile(join(csv, 't.csv'), 'utf8')).trim().split('\n');
    const host = header!.split(',').indexOf('host');
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((row) => row.split(',')[host]))).toEqual(new Set([`demo:${hostname()}`]));
  });
});

describe('report --out onto the trail it reads', () => {
  // The report is written after the trail was read, by rename: over a trail file it would replace
  // the rows with the report, and exit 0. Refused before anything is read: exit 2, one line.
  const report = async (csvDir: string, out: string) => {
    let err = '';
    const errStream = new PassThrough().on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const args = { csvDir: [csvDir], by: 'task', format: 'table', out } as Parameters<typeof runReport>[0];
    const exit = await runReport(args, { out: new PassThrough(), err: errStream });
    return { exit, err };
  };
  const trail = async () => {
    const root = await tempDir();
    const dir = join(root, 'trail');
    writeHistory(dir, { days: 2 });
    return { root, dir, live: join(dir, 'train.csv') };
  };

  it.each([
    ['the live file', (t: { dir: string }) => join(t.dir, 'train.csv')],
    ['an archive', (t: { dir: string }) => join(t.dir, 'train-20260101.csv.gz')],
    ['a sidecar name, not yet there', (t: { dir: string }) => join(t.dir, 'train-20260101.csv.hours.json')],
    ["another task's live file, not yet there", (t: { dir: string }) => join(t.dir, 'other.csv')],
    ['the live file through .. and a second slash', (t: { dir: string }) => `${t.dir}/x/..//train.csv`],
  ])('%s is refused, and the trail is left as it was', { timeout: 60_000 }, async (_title, outOf) => {
    const t = await trail();
    await mkdir(join(t.dir, 'x'));
    const before = await readFile(t.live);
    const result = await report(t.dir, outOf(t));
    expect(result.exit).toBe(2);
    expect(result.err).toMatch(/^gpu-textfile: --out \S+ is a file of the trail \S+ reads: .*\n$/);
    expect(await readFile(t.live)).toEqual(before);
  });

  it('the same file under another name (a hard link, a link to the directory) is refused', { timeout: 60_000 }, async () => {
    const t = await trail();
    await link(t.live, join(t.root, 'hard.csv'));
    await symlink(t.dir, join(t.root, 'via'));
    const before = await readFile(t.live);
    for (const out of [join(t.root, 'hard.csv'), join(t.root, 'via', 'train.csv')]) {
      const result = await report(t.dir, out);
      expect([out, result.exit]).toEqual([out, 2]);
    }
    expect(await readFile(t.live)).toEqual(before);
  });

  it("a host's trail in a gathered fleet directory is one too", { timeout: 60_000 }, async () => {
    const root = await tempDir();
    writeHistory(join(root, 'node1'), { days: 2 });
    expect((await report(root, join(root, 'node1', 'train.csv'))).exit).toBe(2);
  });

  it('a file of another name beside the trail is written', { timeout: 60_000 }, async () => {
    const t = await trail();
    const out = join(t.dir, 'report.txt');
    expect((await report(t.dir, out)).exit).toBe(0);
    expect(await readFile(out, 'utf8')).toContain('GPU-h');
  });
});

describe('report as a table on a terminal', () => {
  // Issue 39: 672 hourly rows of a demo week (53,760 of a fleet) scrolled the findings away. On a
  // terminal, without --by, the answer comes first and the rows are counted; --by lists them, and a
  // pipe or --out gets every row as before.
  const table = async (extra: Record<string, unknown>, terminal: boolean) => {
    const dir = await tempDir();
    writeHistory(dir, { days: 2, gpus: ['training', 'busy'] });
    let out = '';
    const stdout = new PassThrough().on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    if (terminal) Object.assign(stdout, { isTTY: true });
    const args = { csvDir: [dir], format: 'table', ...extra } as Parameters<typeof runReport>[0];
    expect(await runReport(args, { out: stdout, err: new PassThrough() })).toBe(0);
    return out;
  };
  const HOURLY = /^period {2,}host/m;

  it('leads with findings and summary, and counts the hourly rows it does not list', async () => {
    const out = await table({}, true);
    expect(out).toMatch(/^findings:\n/);
    expect(out).toMatch(/\nsummary:\nhost /);
    expect(out).not.toMatch(HOURLY);
    expect(out.trimEnd().split('\n').at(-1)).toBe('96 rows by hour not listed: --by hour lists them (--by gpu or --by job sums them up)');
  });

  it('lists them when --by asks, and into a pipe', async () => {
    const asked = await table({ by: 'hour' }, true);
    expect(asked.split('\n').filter((line) => /^\d{4}-\d\d-\d\dT/.test(line))).toHaveLength(96);
    expect(await table({}, false)).toBe(asked);
    expect(await table({ by: 'day' }, true)).toMatch(/^period {2,}host/m);
  });
});
