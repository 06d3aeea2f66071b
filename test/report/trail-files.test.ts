import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HistoryFile } from '../../src/csvlog/read.js';
import { buildReport } from '../../src/report/build.js';
import type { Report } from '../../src/report/build.js';
import { reportJsonPieces } from '../../src/report/formats.js';
import { writeArchivedHistory } from '../../src/report/history-generator.js';
import { inRange, trailFiles } from '../../src/report/trail-files.js';
import { runCli, tempDir } from '../support/helpers.js';

const archive = (dir: string, task: string, day: string): HistoryFile => ({
  path: join(dir, `${task}-${day}.csv.gz`),
  task,
  archive: { file: `${task}-${day}.csv.gz`, day },
});

const reportJson = (report: Report) => [...reportJsonPieces(report)].join('');

describe('archives are chosen by their names: those that cannot hold a row in range are left out', () => {
  const files = [
    archive('/t', 'a', '20260101'),
    archive('/t', 'a', '20260103'),
    archive('/t', 'a', '20260110'),
    { path: '/t/a.csv', task: 'a' },
  ];
  const days = (kept: HistoryFile[]) => kept.map((f) => f.archive?.day ?? 'live');
  // An archive's rows lie from the day of the one before it to the end of the day of the one after
  // it, give or take the writer's zone (14 h ahead of UTC to 12 h behind).
  it.each([
    ['no range: all', undefined, undefined, ['20260101', '20260103', '20260110', 'live']],
    [
      'since 8 January: not the first (its rows end by 4 January, noon UTC)',
      Date.UTC(2026, 0, 8),
      undefined,
      ['20260103', '20260110', 'live'],
    ],
    [
      'since 4 January 12:00 UTC: the first still may hold one',
      Date.UTC(2026, 0, 4, 12),
      undefined,
      ['20260101', '20260103', '20260110', 'live'],
    ],
    [
      'until 2 January: not the last (its rows start 2 January, 10:00 UTC at the earliest)',
      undefined,
      Date.UTC(2026, 0, 2),
      ['20260101', '20260103', 'live'],
    ],
    ['until 2 January 11:00 UTC: the last may hold one', undefined, Date.UTC(2026, 0, 2, 11), ['20260101', '20260103', '20260110', 'live']],
    ['between: the one in the middle and its neighbours', Date.UTC(2026, 0, 5), Date.UTC(2026, 0, 6), ['20260103', '20260110', 'live']],
  ])('%s', (_, since, until, expected) => expect(days(inRange(files, since, until))).toEqual(expected));

  it('neighbours are of the same task and directory only', () => {
    const mixed = [archive('/t', 'a', '20260101'), archive('/t', 'b', '20260120'), archive('/u', 'a', '20260121')];
    // Each is alone in its trail: nothing bounds it.
    expect(inRange(mixed, Date.UTC(2026, 0, 30))).toHaveLength(3);
  });

  it('an unreadable archive outside --since is never opened; inside it, it is (and said so)', async () => {
    const dir = await tempDir();
    await writeArchivedHistory(dir, { days: 6, start: Date.UTC(2026, 0, 1), gpus: ['training'], sidecars: false });
    // The archive of 1 January, corrupt: a report that opened it would list it as a bad file.
    await writeFile(join(dir, 'train-20260102.csv.gz'), 'not gzip at all');
    const since = await buildReport({ csvDirs: [dir], by: 'task', since: Date.UTC(2026, 0, 5) });
    if ('error' in since) throw new Error(since.error);
    expect(since.badFiles).toEqual([]);
    expect(since.files).toBe(5);
    expect(since.summary[0]!.first_sample.startsWith('2026-01-05T00:00')).toBe(true);
    const all = await buildReport({ csvDirs: [dir], by: 'task' });
    if ('error' in all) throw new Error(all.error);
    expect(all.badFiles.map((b) => b.file)).toEqual([join(dir, 'train-20260102.csv.gz')]);
  }, 60_000);
});

describe('a fleet in one report', () => {
  /** DIR/<host>/, as rsync gathers them: two hosts, two days each, archived. */
  async function fleet(): Promise<string> {
    const dir = await tempDir();
    for (const [host, gpus] of [
      ['node-a', ['training', 'training']],
      ['node-b', ['busy', 'waiting', 'training']],
    ] as const) {
      await mkdir(join(dir, host));
      await writeArchivedHistory(join(dir, host), { days: 2, host, gpus: [...gpus] });
    }
    return dir;
  }

  it('a directory of hosts’ trails reads each of them; --by host sums each host', async () => {
    const dir = await fleet();
    expect((await trailFiles(dir)).map((f) => f.path)).toEqual([
      join(dir, 'node-a', 'train-20260102.csv.gz'),
      join(dir, 'node-a', 'train.csv'),
      join(dir, 'node-b', 'train-20260102.csv.gz'),
      join(dir, 'node-b', 'train.csv'),
    ]);
    const report = await buildReport({ csvDirs: [dir], by: 'host' });
    if ('error' in report) throw new Error(report.error);
    expect(report.summaryByHost.map((r) => [r.host, r.gpus, r.samples])).toEqual([
      ['node-a', 2, 2 * 2 * 5760],
      ['node-b', 3, 3 * 2 * 5760],
    ]);
    expect(report.fromSidecars).toBe(2);
    // Each host's row is what a report on its trail alone says.
    for (const host of ['node-a', 'node-b']) {
      const alone = await buildReport({ csvDirs: [join(dir, host)], by: 'host' });
      if ('error' in alone) throw new Error(alone.error);
      expect(report.summaryByHost.find((r) => r.host === host)).toEqual(alone.summaryByHost[0]);
    }
    const named = await buildReport({ csvDirs: [join(dir, 'node-a'), join(dir, 'node-b')], by: 'host' });
    if ('error' in named) throw new Error(named.error);
    expect(reportJson(named)).toBe(reportJson(report));
    // And from the rows alone, the same.
    const rows = await buildReport({ csvDirs: [dir], by: 'host', rowsOnly: true });
    if ('error' in rows) throw new Error(rows.error);
    expect(reportJson(rows)).toBe(reportJson(report));
  }, 60_000);

  it('a host whose trail is in two directories (a copy gathered twice) is named on stderr: its rows count twice', async () => {
    const dir = await fleet();
    const copy = await tempDir();
    await cp(join(dir, 'node-a'), join(copy, 'node-a'), { recursive: true, preserveTimestamps: true });
    for (const rowsOnly of [false, true]) {
      const report = await buildReport({ csvDirs: [dir, copy], by: 'host', rowsOnly });
      if ('error' in report) throw new Error(report.error);
      expect(report.sharedHosts).toEqual([{ host: 'node-a', task: 'train', trails: [join(dir, 'node-a'), join(copy, 'node-a')] }]);
      // The copy's archive starts before the rows already added: it is read from its rows.
      expect(report.fromSidecars).toBe(rowsOnly ? 0 : 2);
    }
    const alone = await buildReport({ csvDirs: [dir], by: 'host' });
    expect('error' in alone ? alone.error : alone.sharedHosts).toEqual([]);
    const result = await runCli(['report', '--csv-dir', dir, '--csv-dir', copy, '--by', 'host', '--format', 'csv']);
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      `gpu-textfile: host node-a, task train has rows in ${join(dir, 'node-a')} and ${join(copy, 'node-a')}: if one is a copy of the other, its rows count twice\n`,
    );
  }, 60_000);

  it('the command: --csv-dir given twice, --by host in csv; a directory named twice or inside another, or missing, is refused (exit 2)', async () => {
    const dir = await fleet();
    const [a, b] = [join(dir, 'node-a'), join(dir, 'node-b')];
    const ok = await runCli(['report', '--csv-dir', a, '--csv-dir', b, '--by', 'host', '--format', 'csv']);
    expect(ok.exitCode, ok.stderr).toBe(0);
    expect(ok.stdout.split('\n').map((line) => line.split(',').slice(0, 2).join(','))).toEqual(['host,gpus', 'node-a,2', 'node-b,3', '']);
    for (const [args, message] of [
      [['--csv-dir', a, '--csv-dir', a], `--csv-dir: ${a} is named twice, or inside another --csv-dir (its rows would count twice)`],
      [['--csv-dir', dir, '--csv-dir', a], `--csv-dir: ${a} is named twice, or inside another --csv-dir (its rows would count twice)`],
      [['--csv-dir', a, '--csv-dir', join(dir, 'none')], `--csv-dir: ${join(dir, 'none')} does not exist`],
    ] as const) {
      const refused = await runCli(['report', ...args]);
      expect([refused.exitCode, refused.stderr]).toEqual([2, `gpu-textfile: ${message}\n`]);
    }
  }, 60_000);
});
