import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSV_FIELDS, CSV_HEADER, csvLine, localIsoTime } from '../../src/csvlog/columns.js';
import { jobsCell, reservedCell } from '../../src/csvlog/jobs-cell.js';
import { hostAt } from '../../src/host/host.js';
import { jobsOnGpu } from '../../src/host/job.js';
import { describeProcesses } from '../../src/host/processes.js';
import { reservedOnGpu } from '../../src/host/reservation.js';
import { readReservations } from '../../src/host/reservations.js';
import { buildReport, type Report } from '../../src/report/build.js';
import { jobLines } from '../../src/report/job-formats.js';
import { FIXTURES, tempDir } from '../support/helpers.js';

// The H200 recording (test/fixtures/reservation-h200/SOURCE.md): job 4242 (a `sleep`) and job 4343
// (a CUDA matmul) were both given GPU 0; only 4343 ran on it, at 98-100 %.
const RECORDED = join(FIXTURES, 'reservation-h200');
const host = hostAt(join(RECORDED, 'host'));

/** The recorded samples as CSV rows, their jobs and reservations read through the product's own readers. */
function trail(): string {
  const [uuid, pid, name, mib] = readFileSync(join(RECORDED, 'compute-apps.csv'), 'utf8').trim().split(', ');
  const apps = describeProcesses([{ uuid: uuid!, pid: Number(pid), name: name!, memoryBytes: Number(mib) * 1048576 }], host);
  const reservations = readReservations(host) ?? expect.fail('the recorded cgroup tree was not read');
  const lines = readFileSync(join(RECORDED, 'gpu-samples.txt'), 'utf8').trim().split('\n');
  let csv = csvLine(CSV_HEADER);
  for (let i = 0; i < lines.length; i += 2) {
    const [gpu, id, util, used, power] = lines[i + 1]!.split(', ');
    const values: Record<string, string> = {
      utilization_percent: util!,
      memory_used_mib: used!,
      memory_total_mib: '143771',
      power_draw_w: power!,
    };
    csv += csvLine([
      localIsoTime(new Date(lines[i]!)),
      'h200',
      'train',
      gpu!,
      id!,
      'NVIDIA H200',
      'ok',
      ...CSV_FIELDS.map((field) => values[field.csv!] ?? ''),
      jobsCell(jobsOnGpu(apps, id!)),
      reservedCell(reservedOnGpu(reservations, { gpu: gpu!, uuid: id! })),
    ]);
  }
  return csv;
}

async function report(csv: string, reservedIdleMinMs?: number): Promise<Report> {
  const dir = await tempDir('reserved-report-');
  try {
    await writeFile(join(dir, 'train.csv'), csv);
    const built = await buildReport({ csvDirs: [dir], by: 'job', reservedIdleMinMs });
    if ('error' in built) throw new Error(built.error);
    return built;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('the H200 recording: a GPU reserved by a job that runs nothing on it', () => {
  it('the reader names GPU 0 reserved by both jobs, by the minor the driver gives it', () => {
    const read = readReservations(host) ?? expect.fail('the recorded cgroup tree was not read');
    expect(read.unknown).toBe(0);
    expect(read.minors).toEqual({ 'GPU-f66492b7-212a-5b4a-3f3e-880b9b43bb81': 0 });
    expect(reservedOnGpu(read, { gpu: '0', uuid: 'GPU-f66492b7-212a-5b4a-3f3e-880b9b43bb81' }).jobs).toEqual([
      { kind: 'slurm', id: '4242', user: 'root' },
      { kind: 'slurm', id: '4343', user: 'root' },
    ]);
  });

  it('each job line says what it reserved beside what it used; the job that ran nothing has a line of its own', async () => {
    const built = await report(trail());
    const byId = Object.fromEntries(built.jobs.map((j) => [j.job_id, j]));
    // 12 samples 5 s apart: a minute of one GPU, in hours.
    expect(byId['4343']).toMatchObject({ gpus: ['0'], reserved_gpus: ['0'], reserved_idle_gpu_hours: 0 });
    expect(byId['4343']!.reserved_gpu_hours).toBe(byId['4343']!.gpu_hours);
    expect(byId['4242']).toMatchObject({ gpus: [], gpu_hours: 0, reserved_gpus: ['0'] });
    expect(byId['4242']!.reserved_gpu_hours).toBeGreaterThan(0);
    expect(byId['4242']!.reserved_idle_gpu_hours).toBe(byId['4242']!.reserved_gpu_hours);
    // The 30 minutes were not reached: no finding.
    expect(built.findings.filter((f) => f.kind === 'reserved_idle')).toEqual([]);
    const table = jobLines(built.jobs, (header, body) => [header.join('|'), ...body.map((r) => r.join('|'))]);
    expect(table[0]).toContain('reserved ids|reserved GPU-h');
  });

  it('reserved_idle names the job that ran nothing on a busy GPU, with its threshold shortened; never the job that ran', async () => {
    const built = await report(trail(), 30_000);
    const found = built.findings.filter((f) => f.kind === 'reserved_idle');
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ gpu_id: '0', job_kind: 'slurm', job_id: '4242', user: 'root' });
    expect(found[0]!.summary).toMatch(/^reserved by slurm 4242 \(root\), which ran nothing on it/);
    expect(built.findings.filter((f) => f.kind === 'held_idle')).toEqual([]);
  });

  it('a trail written before the reserved column reads as before: no reservation known, no line of its own', async () => {
    const old = trail()
      .split('\n')
      .map((line) => line.replace(/,[^,]*$/, ''))
      .join('\n');
    const built = await report(old, 30_000);
    expect(built.jobs.map((j) => [j.job_id, j.reserved_gpus])).toEqual([['4343', undefined]]);
    expect(built.findings.filter((f) => f.kind === 'reserved_idle')).toEqual([]);
  });
});
