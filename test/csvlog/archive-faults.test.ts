import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ARCHIVE_STEPS, type ArchiveSteps } from '../../src/csvlog/archive-steps.js';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { archiveDirectory } from '../../src/csvlog/rotate.js';
import { REPORT_SIDECARS } from '../../src/report/sidecar-sections.js';
import { FAULT_KINDS, Fault } from '../support/faults.js';
import { smallTmpfs } from '../support/small-tmpfs.js';

const HEADER = csvLine(CSV_HEADER);
/** A row that says which it is in its utilization cell: a lost or doubled row shows by number. */
const row = (i: number) =>
  csvLine(['2026-11-27T10:00:00.000+00:00', 'h', 'job', '0', 'GPU-x', 'n', 'ok', String(i), '', '', '', '', '', '']);
const rows = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => row(from + k));

/** The steps of archiving, in the order the archiver takes them. */
const STEPS = ['copy', 'fsync', 'link', 'truncate', 'compress', 'prune', 'sidecar'] as const;
type Step = (typeof STEPS)[number];

/** The real steps, with `fault` armed at `armedAt`. */
const faulty = (fault: Fault, armedAt: Step): ArchiveSteps => ({
  copy: (fd, bytes) => fault.step('copy', armedAt, () => ARCHIVE_STEPS.copy(fd, bytes)),
  fsync: (fd) => fault.step('fsync', armedAt, () => ARCHIVE_STEPS.fsync(fd)),
  link: (from, to) => fault.step('link', armedAt, () => ARCHIVE_STEPS.link(from, to)),
  truncate: (fd) => fault.step('truncate', armedAt, () => ARCHIVE_STEPS.truncate(fd)),
  discard: (dir, name) => fault.step('discard', armedAt, () => ARCHIVE_STEPS.discard(dir, name)),
  compress: async (dir, name) => fault.step('compress', armedAt, () => ARCHIVE_STEPS.compress(dir, name)),
  prune: (dir, name) => fault.step('prune', armedAt, () => ARCHIVE_STEPS.prune(dir, name)),
  sidecar: (dir, name, text) => fault.step('sidecar', armedAt, () => ARCHIVE_STEPS.sidecar(dir, name, text)),
});

/** Every data row in `dir`: the live file's and every archive's (gunzipped), each archive checked to start with one header. */
async function rowsIn(dir: string): Promise<{ live: string; archived: string[]; temps: string[] }> {
  const names = await readdir(dir);
  const archived: string[] = [];
  for (const name of names.filter((n) => /^job-\d{8}(-\d+)?\.csv(\.gz)?$/.test(n))) {
    const data = await readFile(join(dir, name));
    const text = name.endsWith('.gz') ? gunzipSync(data).toString('utf8') : data.toString('utf8');
    expect(text.startsWith(HEADER), `${name} starts with the header`).toBe(true);
    archived.push(
      ...text
        .slice(HEADER.length)
        .split(/(?<=\n)/)
        .filter(Boolean),
    );
  }
  return { live: await readFile(join(dir, 'job.csv'), 'utf8'), archived, temps: names.filter((n) => n.endsWith('.tmp')) };
}

/** Each row exactly once in the live file or an archive; the old archive's rows all there or all pruned. */
function expectEachRowOnce(found: { live: string; archived: string[] }, fresh: string[], old: string[]): void {
  const all = [
    ...found.live
      .replace(HEADER, '')
      .split(/(?<=\n)/)
      .filter(Boolean),
    ...found.archived,
  ];
  const sorted = (lines: string[]) => [...lines].sort();
  const pruned = old.every((line) => !all.includes(line));
  expect(sorted(all)).toEqual(sorted(pruned ? fresh : [...old, ...fresh]));
}

describe('a fault at each step of archiving loses no row and doubles none', () => {
  for (const kind of FAULT_KINDS) {
    for (const step of STEPS) {
      it(`${kind} at ${step}`, async () => {
        const disk = await smallTmpfs(4 * 2 ** 20);
        // An old archive that --keep 1 prunes once today's is made, and today's rows in the live file.
        const old = rows(0, 50);
        const fresh = rows(50, 2000);
        await writeFile(join(disk, 'job-20261120.csv.gz'), gzipSync(HEADER + old.join('')));
        const live = HEADER + fresh.join('');
        await writeFile(join(disk, 'job.csv'), live);
        const options = {
          keep: 1,
          compress: true,
          delayCompress: false,
          minSize: 0,
          now: new Date(2026, 10, 27, 12),
          sidecars: REPORT_SIDECARS,
        };

        const fault = new Fault(kind, disk);
        const result = await archiveDirectory(disk, options, faulty(fault, step));
        expect(fault.fired).toBe(true);
        fault.heal();
        if ('error' in result) throw new Error(result.error);
        const [action] = result.actions;
        if (kind === 'read-only' && step === 'truncate') {
          // The new archive cannot be removed again either: its rows are in both files, and the failure
          // says so and which archive to remove, which the operator then does.
          expect(action).toMatchObject({
            kind: 'failed',
            message: expect.stringMatching(/rows are in both files, remove job-20261127\.csv before/),
          });
          expect(await readFile(join(disk, 'job-20261127.csv'), 'utf8')).toBe(live);
          await rm(join(disk, 'job-20261127.csv'));
        }
        const after = await rowsIn(disk);
        expectEachRowOnce(after, fresh, old);
        expect(after.temps).toEqual([]);
        // A well-defined outcome: either the rotation failed and the live file is as it was, or it happened
        // and what went wrong after it (compress, prune) is a problem reported beside it.
        if (action?.kind === 'failed') {
          expect(action.message).toMatch(/^\S*job\.csv: E[A-Z]+: /);
          expect(after.live).toBe(live);
          // Nothing after the failed rotation ran: the old archive is still there, whole.
          expect(after.archived.sort()).toEqual([...old].sort());
        } else {
          expect(action).toMatchObject({ kind: 'rotated', rows: fresh.length });
          expect(after.live).toBe('');
        }
        const expectedToFail = kind !== 'full' || step === 'copy' || step === 'compress';
        if (expectedToFail) expect(action?.kind === 'failed' || result.problems.length > 0).toBe(true);

        // The next run, with the file system healed, finishes the job: all of today's rows in one archive.
        const again = await archiveDirectory(disk, options);
        expect('error' in again ? again.error : again.problems).toEqual([]);
        const healed = await rowsIn(disk);
        expectEachRowOnce(healed, fresh, old);
        expect(healed.live).toBe('');
        // ... and its sidecar, whatever step failed the first time.
        expect((await readdir(disk)).filter((n) => n.startsWith('job-')).sort()).toEqual([
          'job-20261127.csv.gz',
          'job-20261127.csv.hours.json',
        ]);
      });
    }
  }
});
