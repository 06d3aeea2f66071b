import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildReport, type Report } from '../../src/report/build.js';
import { HEADER, PROFILES, generateRows, type Profile } from '../../src/report/history-generator.js';
import { tempDir } from '../support/helpers.js';

// Idle stretches on either side of a gap in the data: hours with no row at all (the collector stopped,
// the host was down). Nothing is known of those hours: an idle stretch does not run across them, and
// the gap is reported as a gap. The rules (docs/report.md): idle is at least 3 hours IN A ROW under
// 2 % while holding 1 GiB or more.

const START = Date.UTC(2026, 5, 1); // a Monday
const HOUR = 3_600_000;

/** GPU 0 idle holding 30000 MiB outside [gapFrom, gapTo) hours, GPU 1 training; no row from either in the gap. */
async function report(hours: number, gapFrom: number, gapTo: number, gpu0: Profile = PROFILES.idleWithMemory): Promise<Report> {
  const dir = await tempDir();
  const rows = generateRows({
    start: START,
    hours,
    intervalSeconds: 60,
    host: 'n1',
    task: 'job',
    gpus: [gpu0, 'training'],
    skip: (_gpu, h) => h >= gapFrom && h < gapTo,
  });
  await writeFile(join(dir, 'job.csv'), `${HEADER}\n${rows.join('\n')}\n`);
  const built = await buildReport({ csvDirs: [dir], by: 'task' });
  if ('error' in built) throw new Error(built.error);
  return built;
}

const idle = (r: Report) => r.findings.filter((f) => f.kind === 'idle');

describe('idle stretches separated by a gap in the data', () => {
  it('2 h idle, 5 h without rows, 2 h idle: no idle finding (never 3 h in a row), and the gap is reported', async () => {
    const r = await report(9, 2, 7);
    expect(idle(r)).toEqual([]);
    const gaps = r.findings.filter((f) => f.kind === 'collection_gaps');
    expect(gaps.map((f) => [f.host, f.gpu_id, f.longest_gap_seconds])).toEqual([['n1', '', expect.any(Number)]]);
    // The gap runs from the last row before hour 2 to the first row from hour 7: about 5 h.
    expect(Math.abs((gaps[0]!.longest_gap_seconds as number) - 5 * 3600)).toBeLessThanOrEqual(120);
  });

  it('3 h idle, 6 h without rows, 4 h idle: the longer stretch alone, its hours and times those after the gap', async () => {
    const r = await report(13, 3, 9);
    expect(idle(r)).toEqual([
      expect.objectContaining({
        gpu_id: '0',
        hours: 4,
        from: new Date(START + 9 * HOUR).toISOString(),
        to: new Date(START + 13 * HOUR).toISOString(),
        min_memory_used_mib: 30000,
      }),
    ]);
  });

  it("the gap's hours are no GPU-hours: only hours with rows count", async () => {
    const r = await report(9, 2, 7);
    // 4 h of rows for each of two GPUs; the 5 h gap adds nothing (nor is it 'missed' by a failed sample).
    const [summary] = r.summary;
    expect(summary!.gpu_hours).toBeGreaterThan(7.9);
    expect(summary!.gpu_hours).toBeLessThanOrEqual(8.1);
  });
});

describe('what the idle finding says, beside the summary', () => {
  // Issue 39: "idle for 115 h" beside a summary of 165 h idle holding memory read as a contradiction.
  it('names the run in a row and the hours in all, which are the summary idle+mem hours', async () => {
    const r = await report(13, 3, 9);
    const [finding] = idle(r);
    expect(finding!.summary).toMatch(/^idle for 4 h in a row \(7 h in all; 0\.0 % utilization\) while holding at least 30000 MiB$/);
    const gpu0 = r.summaryByGpu.find((row) => row.gpu_id === '0');
    expect(Math.round(gpu0!.idle_with_memory_hours!)).toBe(7);
    expect(finding!.hours_in_all).toBeCloseTo(gpu0!.idle_with_memory_hours!, 0);
  });
});

describe('a GPU a little busy for days while holding memory', () => {
  const week = async (gpu0: Profile) => {
    const dir = await tempDir();
    const rows = generateRows({ start: START, hours: 72, intervalSeconds: 60, host: 'n1', task: 'job', gpus: [gpu0, 'training'] });
    await writeFile(join(dir, 'job.csv'), `${HEADER}\n${rows.join('\n')}\n`);
    const built = await buildReport({ csvDirs: [dir], by: 'task' });
    if ('error' in built) throw new Error(built.error);
    return built.findings.filter((f) => f.gpu_id === '0' && (f.kind === 'low_use' || f.kind === 'idle'));
  };

  it('9 % busy holding 49 GiB for 3 days is a low_use finding, not an idle one', async () => {
    expect(await week(PROFILES.waiting)).toEqual([
      expect.objectContaining({
        kind: 'low_use',
        hours: 72,
        summary: expect.stringMatching(/^\d+\.\d % busy for 72 h in all while holding at least 5\d{4} MiB/),
      }),
    ]);
  });

  it('an inference GPU with quiet nights, a trainer and an idle GPU get no low_use finding', async () => {
    expect(await week(PROFILES.inference)).toEqual([]);
    expect(await week(PROFILES.training)).toEqual([]);
    expect((await week(PROFILES.idleWithMemory)).map((f) => f.kind)).toEqual(['idle']);
  });

  it('a day less an hour of it is not enough', async () => {
    const dir = await tempDir();
    const rows = generateRows({ start: START, hours: 23, intervalSeconds: 60, host: 'n1', task: 'job', gpus: [PROFILES.waiting] });
    await writeFile(join(dir, 'job.csv'), `${HEADER}\n${rows.join('\n')}\n`);
    const built = await buildReport({ csvDirs: [dir], by: 'task' });
    if ('error' in built) throw new Error(built.error);
    expect(built.findings.filter((f) => f.kind === 'low_use')).toEqual([]);
  });
});
