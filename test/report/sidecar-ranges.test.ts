import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { runReport } from '../../src/commands/report.js';
import { buildReport, type Report } from '../../src/report/build.js';
import { reportJsonPieces } from '../../src/report/formats.js';
import { writeArchivedHistory } from '../../src/report/history-generator.js';
import { tempDir } from '../support/helpers.js';

// A sidecar's numbers are type-checked as read; these are of the right type and out of range. Each
// was printed by the report as the trail's. Now the sidecar is not trusted: the archive's rows are
// read (the report is the one its rows give) and a line says which sidecar and why.

const YEAR = 365 * 24 * 3_600_000;
type Json = Record<string, unknown> & { sections: { hours: Record<string, unknown> & { series: Record<string, number[]>[] } } };

const tamperings: [title: string, change: (doc: Json) => void, why: RegExp][] = [
  ['a negative sample count', (d) => void (d.sections.hours.series[0]!.samples![3] = -40), /-40 samples/],
  ['1e308 samples', (d) => void (d.sections.hours.series[0]!.samples![3] = 1e308), /1e\+308 samples/],
  ['a power sum of 1e308 mW', (d) => void (d.sections.hours.series[0]!.powerMwSum![3] = 1e308), /power sum/],
  [
    'an hour moved a year, inside an archive whose span stayed',
    (d) => void (d.sections.hours.series[0]!.hours![3]! += YEAR),
    /hour .* outside its samples' span/,
  ],
  [
    'the whole day moved a year (every time in the sidecar)',
    (d) => {
      const h = d.sections.hours;
      h.first = (h.first as number) + YEAR;
      h.last = (h.last as number) + YEAR;
    },
    /outside the days its archive's name allows/,
  ],
];

const json = (report: Report) => JSON.parse([...reportJsonPieces(report)].join('')) as Record<string, unknown>;

describe('a sidecar whose numbers are out of range', () => {
  let trail: string;
  beforeAll(async () => {
    trail = await mkdtemp(join(tmpdir(), 'gpu-textfile-'));
    await writeArchivedHistory(trail, { days: 3 });
    return () => rm(trail, { recursive: true, force: true });
  }, 120_000);

  it('the trail has two archives with sidecars, both used while untouched', async () => {
    expect((await readdir(trail)).filter((f) => f.endsWith('.hours.json'))).toHaveLength(2);
    const report = (await buildReport({ csvDirs: [trail], by: 'task' })) as Report;
    expect([report.fromSidecars, report.untrustedSidecars]).toEqual([2, []]);
  });

  it.each(tamperings)('%s: not trusted, the rows read instead, and said', { timeout: 120_000 }, async (_title, change, why) => {
    const dir = await tempDir();
    await cp(trail, dir, { recursive: true, preserveTimestamps: true });
    const sidecar = join(dir, (await readdir(dir)).filter((f) => f.endsWith('.hours.json')).sort()[0]!);
    const doc = JSON.parse(await readFile(sidecar, 'utf8')) as Json;
    change(doc);
    await writeFile(sidecar, JSON.stringify(doc));
    const report = (await buildReport({ csvDirs: [dir], by: 'day' })) as Report;
    const rows = (await buildReport({ csvDirs: [dir], by: 'day', rowsOnly: true })) as Report;
    expect(report.fromSidecars).toBe(1);
    expect(report.untrustedSidecars).toEqual([{ file: sidecar, why: expect.stringMatching(why) }]);
    expect(json(report)).toEqual(json(rows));
    let err = '';
    const errStream = new PassThrough().on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const args = { csvDir: [dir], by: 'task', format: 'table' } as Parameters<typeof runReport>[0];
    expect(await runReport(args, { out: new PassThrough(), err: errStream })).toBe(0);
    expect(err).toContain(`gpu-textfile: ${sidecar} not trusted (`);
    expect(err).toContain("): its archive's rows were read instead\n");
  });
});
