import { copyFile, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildReport, type Report, type ReportBy, type ReportQuery } from '../../src/report/build.js';
import { reportCsvPieces, reportJsonPieces, reportTablePieces } from '../../src/report/formats.js';
import { writeArchivedHistory } from '../../src/report/history-generator.js';
import { reportHtml } from '../../src/report/html/page.js';
import { runCli, tempDir } from '../support/helpers.js';

const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);

/**
 * Four days of five GPUs archived by the real archiver each midnight, with a finding of every kind
 * and the hard cases of adding archives by their hours: the first day holds only its last 10
 * minutes (the collection interval is learned across the first archive's end), every GPU misses
 * the half hour around the second midnight (a gap across an archive's start, host-wide), GPU 1
 * alone misses an hour across the third (its own gap), and GPU 4 fails for a while.
 */
async function archivedTrail(dir: string): Promise<void> {
  await writeArchivedHistory(dir, {
    days: 4,
    start: START,
    gpus: ['leak', 'idleWithMemory', 'busy', 'waiting', 'training'],
    skip: (gpu, h) => h < 23.83 || (h > 47.8 && h < 48.3) || (gpu === 1 && h > 71.5 && h < 72.5),
    fail: (gpu, h) => (gpu === 4 && h > 60 && h < 60.3 ? 'timeout' : undefined),
    jobs: (gpu, h) => jobsCell(gpu, h),
    reserved: (gpu, h) => reservedCell(gpu, h),
  });
}

/**
 * Who reserved each GPU: the jobs holding GPUs 0 and 1 reserved them, and Slurm job 7009 reserved the
 * empty GPU 3 for the first two days and ran nothing on it (reserved idle, its own job line); the
 * other GPUs' reservations were read and name no job, but GPU 4's for a while could not be read.
 */
function reservedCell(gpu: number, h: number): string {
  if (gpu === 0) return 'slurm:7001:alice slurm:7002:bob';
  if (gpu === 1) return 'slurm:7003:carol';
  if (gpu === 3) return h < 48 ? 'slurm:7009:hank' : '-';
  if (gpu === 4) return h > 30 && h < 31 ? '?1' : '-';
  return '-';
}

/**
 * Who held each GPU: the idle GPU 1 is held by one Slurm job all along (held idle), GPU 0 by two
 * jobs at once, GPU 2 changes hands at hour 60 and again across the third midnight (an hour split
 * between an archive and the live file), GPU 3 holds nothing (idle and empty), GPU 4 a container.
 */
function jobsCell(gpu: number, h: number): string {
  if (gpu === 0) return 'slurm:7001:alice:40000:60 slurm:7002:bob:20000:20';
  if (gpu === 1) return 'slurm:7003:carol:30000:';
  if (gpu === 2) return h < 60 ? 'unit:train.service:dave:8000:' : h < 71.75 ? 'process:python3:erin:1000:' : 'pod:abc-123:frank:500:';
  if (gpu === 3) return '-';
  return 'container:3f4e9c1d2b7a:gina:2048:';
}

/** The archived trail a suite shares, in a directory of its own. */
async function suiteTrail(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-'));
  await archivedTrail(dir);
  return dir;
}

const reportJson = (report: Report) => [...reportJsonPieces(report)].join('');
const FORMATS = {
  table: (report: Report) => [...reportTablePieces(report)].join(''),
  csv: (report: Report) => [...reportCsvPieces(report)].join(''),
  json: reportJson,
  html: (report: Report) => reportHtml(report, 'GPU report'),
};
const BY: ReportBy[] = ['hour', 'day', 'task', 'gpu', 'host', 'job'];

/** The report from sidecars and from rows, built the same way: both texts in every format. */
async function both(query: Omit<ReportQuery, 'by'>, by: ReportBy) {
  const fromSidecars = await buildReport({ ...query, by });
  const fromRows = await buildReport({ ...query, by, rowsOnly: true });
  if ('error' in fromSidecars || 'error' in fromRows) throw new Error('no report');
  return { fromSidecars, fromRows };
}

describe('a report from archives’ sidecars equals the report from their rows', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await suiteTrail();
    return () => rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('the trail has three archives with sidecars, and a finding of every kind', async () => {
    expect((await readdir(dir)).sort()).toEqual([
      'train-20260102.csv.gz',
      'train-20260102.csv.hours.json',
      'train-20260103.csv.gz',
      'train-20260103.csv.hours.json',
      'train-20260104.csv.gz',
      'train-20260104.csv.hours.json',
      'train.csv',
    ]);
    const { fromSidecars } = await both({ csvDirs: [dir] }, 'task');
    expect(fromSidecars.fromSidecars).toBe(3);
    expect(new Set(fromSidecars.findings.map((f) => f.kind))).toEqual(
      new Set(['memory_growth', 'idle', 'low_use', 'imbalance', 'collection_gaps', 'errors', 'held_idle', 'reserved_idle']),
    );
    // Every job (7009 only reserved a GPU), and the time nothing was on GPU 3, from the sidecars' jobs sections.
    expect(new Set(fromSidecars.jobs.map((job) => `${job.job_kind}:${job.job_id}`))).toEqual(
      new Set([
        'slurm:7001',
        'slurm:7002',
        'slurm:7003',
        'unit:train.service',
        'process:python3',
        'pod:abc-123',
        'container:3f4e9c1d2b7a',
        'slurm:7009',
        'none:',
      ]),
    );
    // Both the host-wide gap (across the second midnight) and GPU 1's own (across the third).
    const gaps = fromSidecars.findings.filter((f) => f.kind === 'collection_gaps').map((f) => f.gpu_id);
    expect(gaps.sort()).toEqual(['', '1']);
  });

  for (const by of BY)
    it(`--by ${by}: every figure and finding, in every format`, async () => {
      const { fromSidecars, fromRows } = await both({ csvDirs: [dir] }, by);
      expect(fromSidecars.fromSidecars).toBe(3);
      expect(fromRows.fromSidecars).toBe(0);
      for (const [format, render] of Object.entries(FORMATS)) expect(render(fromSidecars), format).toBe(render(fromRows));
    });

  it('with --since and --until inside archives, --host and --task: the archives the range cuts are read by rows, the rest by hours', async () => {
    const query = { csvDirs: [dir], since: START + 30 * HOUR + 1234, until: START + 80 * HOUR, host: 'gpu-node-01', task: 'train' };
    for (const by of BY) {
      const { fromSidecars, fromRows } = await both(query, by);
      // The archive of the second day (rows of 2 January, with 3 January's first minutes) lies wholly inside.
      expect(fromSidecars.fromSidecars).toBeGreaterThanOrEqual(1);
      for (const [format, render] of Object.entries(FORMATS)) expect(render(fromSidecars), `${by} ${format}`).toBe(render(fromRows));
    }
  });

  it('reported in a zone half an hour off the archiver’s (Asia/Kolkata): the hours are not its hours, the rows are read, the same report', async () => {
    const bare = await tempDir();
    for (const name of await readdir(dir)) if (!name.endsWith('.hours.json')) await copyFile(join(dir, name), join(bare, name));
    const args = ['--format', 'json', '--by', 'hour'];
    const [withSidecars, without] = await Promise.all([
      runCli(['report', '--csv-dir', dir, ...args], { TZ: 'Asia/Kolkata' }),
      runCli(['report', '--csv-dir', bare, ...args], { TZ: 'Asia/Kolkata' }),
    ]);
    expect(withSidecars.exitCode).toBe(0);
    expect(withSidecars.stdout).toContain(':00:00.000+05:30"');
    expect(withSidecars.stdout).toBe(without.stdout);
  });

  it('another host asked for: nothing from either', async () => {
    const { fromSidecars, fromRows } = await both({ csvDirs: [dir], host: 'elsewhere' }, 'hour');
    expect(reportJson(fromSidecars)).toBe(reportJson(fromRows));
    expect(fromSidecars.aggregator.series.size).toBe(0);
  });

  it('an archive without its sidecar between two with: rows for it, hours for the others, the same report', async () => {
    const copy = await tempDir();
    await archivedTrail(copy);
    await rm(join(copy, 'train-20260103.csv.hours.json'));
    for (const by of BY) {
      const { fromSidecars, fromRows } = await both({ csvDirs: [copy] }, by);
      expect(fromSidecars.fromSidecars).toBe(2);
      for (const [format, render] of Object.entries(FORMATS)) expect(render(fromSidecars), `${by} ${format}`).toBe(render(fromRows));
    }
  }, 120_000);
});

describe('a sidecar that cannot stand for its archive is passed over for its rows', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await suiteTrail();
    return () => rm(dir, { recursive: true, force: true });
  }, 120_000);

  const sidecar = 'train-20260103.csv.hours.json';
  const cases: [string, (text: string) => string][] = [
    ['of an unknown version', (text) => text.replace('"version":1,', '"version":2,')],
    ['whose hours section is of an unknown version', (text) => text.replace('"hours":{"version":1,', '"hours":{"version":99,')],
    ['that is not JSON', (text) => text.slice(0, text.length / 2)],
    ['that names another archive', (text) => text.replace('"file":"train-20260103.csv.gz"', '"file":"train-20260104.csv.gz"')],
    ['that disagrees with its archive’s size', (text) => text.replace(/"bytes":(\d+)/, (_, n) => `"bytes":${Number(n) + 1}`)],
    [
      'that disagrees with its archive’s time and hash',
      (text) => text.replace(/"mtime_ms":[\d.]+/, '"mtime_ms":1').replace(/"sha256":"[0-9a-f]+"/, `"sha256":"${'0'.repeat(64)}"`),
    ],
    [
      'whose thresholds are nested a million deep (JSON.stringify overflowed its stack: report and archive crashed)',
      (text) => text.replace(/"thresholds":\[[^\]]*\]/, `"thresholds":${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`),
    ],
    ['whose hours have the wrong shape', (text) => text.replace('"samples":[', '"samples":["x",')],
    ['whose jobs section is of an unknown version', (text) => text.replace('"jobs":{"version":1,', '"jobs":{"version":2,')],
    [
      'without a jobs section (written before it)',
      (text) => {
        const doc = JSON.parse(text);
        delete doc.sections.jobs;
        return `${JSON.stringify(doc)}\n`;
      },
    ],
    ['whose jobs have the wrong shape', (text) => text.replace('"utilSum":', '"utilSum":"x","was":')],
  ];
  for (const [what, spoil] of cases)
    it(what, async () => {
      const path = join(dir, sidecar);
      const good = await readFile(path, 'utf8');
      const spoiled = spoil(good);
      expect(spoiled).not.toBe(good);
      await writeFile(path, spoiled);
      try {
        for (const by of ['hour', 'job'] as const) {
          const { fromSidecars, fromRows } = await both({ csvDirs: [dir] }, by);
          expect(fromSidecars.fromSidecars).toBe(2);
          expect(reportJson(fromSidecars)).toBe(reportJson(fromRows));
        }
      } finally {
        await writeFile(path, good);
      }
    });

  it('an archive whose time changed but not its bytes (a copy that did not keep it) still reads from its sidecar, by its hash', async () => {
    await utimes(join(dir, 'train-20260103.csv.gz'), new Date(), new Date(2027, 0, 1));
    const { fromSidecars } = await both({ csvDirs: [dir] }, 'hour');
    expect(fromSidecars.fromSidecars).toBe(3);
  });
});
