import type { JobRow } from './jobs.js';
import { printable } from './printable.js';

/** The columns of `report --by job --format csv`, in JobRow's names. */
export const JOB_COLUMNS = [
  'host',
  'task_id',
  'job_kind',
  'job_id',
  'user',
  'gpus',
  'hours',
  'gpu_hours',
  'busy_percent',
  'sm_percent',
  'idle_gpu_hours',
  'energy_kwh',
  'energy_split',
  'peak_memory_mib',
  'first_seen',
  'last_seen',
  // Last, so that a reader of the columns before finds them where they were.
  'reserved_gpus',
  'reserved_gpu_hours',
  'reserved_idle_gpu_hours',
] as const;

/** A job's CSV cells: its GPUs space-separated, an unknown value empty. */
export const jobCells = (row: JobRow): string[] =>
  JOB_COLUMNS.map((column) => {
    const value = row[column];
    return Array.isArray(value) ? value.join(' ') : String(value ?? '');
  });

const fixed = (x: number | undefined, digits: number) => (x === undefined ? '' : x.toFixed(digits));

/** A job as people read it: `slurm 4242`, `none` for the time nothing held the GPU. */
export const jobName = (row: Pick<JobRow, 'job_kind' | 'job_id'>): string =>
  row.job_kind === 'none' ? '(no job: idle and empty)' : `${row.job_kind} ${row.job_id}`;

/** The job table for a terminal, through the report's column aligner. */
export function jobLines(
  rows: readonly JobRow[],
  aligned: (header: string[], body: string[][], textColumns: number) => string[],
): string[] {
  const header = [
    'host',
    'task',
    'job',
    'user',
    // The GPUs' ids, not a count (the summary's `gpus` is one): a job on GPU 0 read as "0 GPUs".
    'gpu ids',
    'hours',
    'GPU-h',
    // Beside what it used: what it reserved (the trail's `reserved` column), empty where not known.
    'reserved ids',
    'reserved GPU-h',
    'busy %',
    'SM %',
    'idle GPU-h',
    'kWh',
    'split',
    'peak MiB',
    'first seen',
    'last seen',
  ];
  const body = rows.map((r) => [
    printable(r.host),
    printable(r.task_id),
    printable(jobName(r)),
    printable(r.user),
    r.gpus.join(' '),
    fixed(r.hours, 2),
    fixed(r.gpu_hours, 2),
    r.reserved_gpus?.join(' ') ?? '',
    fixed(r.reserved_gpu_hours, 2),
    fixed(r.busy_percent, 1),
    fixed(r.sm_percent, 1),
    fixed(r.idle_gpu_hours, 2),
    fixed(r.energy_kwh, 3),
    r.energy_split ?? '',
    r.peak_memory_mib === undefined ? '' : String(Math.round(r.peak_memory_mib)),
    r.first_seen.replace(/\.\d{3}/, ''),
    r.last_seen.replace(/\.\d{3}/, ''),
  ]);
  return rows.length
    ? aligned(header, body, 5)
    : ['  none (no row of the trail names its jobs: written before the jobs column, or with --no-processes)'];
}
