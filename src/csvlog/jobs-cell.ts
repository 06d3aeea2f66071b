import { cut, MAX_JOB_ID_CHARS, MAX_JOBS_PER_GPU, MAX_USER_CHARS, type GpuJob, type JobKind } from '../host/job.js';
import type { ReservingJob } from '../host/reservation.js';

// The `jobs` cell of a CSV row: who held the GPU at that sample (docs/csv.md, docs/jobs.md).
//   slurm:4242:alice:81920:45 container:3f4e9c1d2b7a:bob:1024: +2
// Entries are separated by a space, an entry's parts by ':' (kind:id:user:memory MiB:SM %, the last
// two empty where unknown); '%', ':', a space and control characters in an id or a user are
// percent-encoded, so no id can look like a separator. A comma or a quote stays as it is: the cell
// is then quoted by the CSV rules (csvCell). `+N`: N more jobs not named. `-`: the processes were
// read and none was on this GPU. Empty: not known (processes not collected, or an old file).

/** Written when processes were read and none was on the GPU. */
export const NO_JOB = '-';

const KINDS: readonly JobKind[] = ['slurm', 'pod', 'container', 'unit', 'process'];

const encode = (text: string): string =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is encoded.
  text.replace(/[%: \u0000-\u001f\u007f]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text);
  } catch (error) {
    if (error instanceof URIError) return undefined;
    throw error;
  }
};

/** The jobs on one GPU at one sample -> the cell; undefined jobs (not known) -> ''. */
export function jobsCell(found: { jobs: readonly GpuJob[]; dropped: number } | undefined): string {
  if (found === undefined) return '';
  if (found.jobs.length === 0 && found.dropped === 0) return NO_JOB;
  const entries = found.jobs
    .slice(0, MAX_JOBS_PER_GPU)
    .map(
      (job) =>
        `${job.kind}:${encode(cut(job.id, MAX_JOB_ID_CHARS))}:${encode(cut(job.user, MAX_USER_CHARS))}:${job.memoryMiB ?? ''}:${job.smPercent ?? ''}`,
    );
  const dropped = found.dropped + Math.max(0, found.jobs.length - MAX_JOBS_PER_GPU);
  return [...entries, ...(dropped > 0 ? [`+${dropped}`] : [])].join(' ');
}

/** A jobs cell read back: the jobs named and the count not named (an entry that does not parse is counted there). */
export interface RowJobs {
  jobs: GpuJob[];
  dropped: number;
}

const count = (text: string): number | undefined => (/^\d{1,9}$/.test(text) ? Number(text) : undefined);

/** The cell -> the jobs; undefined for an empty cell (not known). At most MAX_JOBS_PER_GPU jobs are taken. */
export function parseJobsCell(cell: string | undefined): RowJobs | undefined {
  if (cell === undefined || cell === '') return undefined;
  const out: RowJobs = { jobs: [], dropped: 0 };
  if (cell === NO_JOB) return out;
  for (const entry of cell.split(' ')) {
    if (entry === '') continue;
    if (entry.startsWith('+')) {
      out.dropped += count(entry.slice(1)) ?? 0;
      continue;
    }
    const parts = entry.split(':');
    const [kind, rawId, rawUser, memory, sm] = parts as [JobKind, string, string, string, string];
    const id = decode(rawId ?? '');
    const user = decode(rawUser ?? '');
    // An entry that does not parse (a newer version's kind, a damaged cell) still held the GPU: it is
    // counted, not named, so the GPU does not read as idle and empty.
    const named =
      parts.length === 5 &&
      KINDS.includes(kind) &&
      id &&
      user !== undefined &&
      id.length <= MAX_JOB_ID_CHARS &&
      user.length <= MAX_USER_CHARS;
    if (!named || out.jobs.length >= MAX_JOBS_PER_GPU) {
      out.dropped++;
      continue;
    }
    const memoryMiB = count(memory);
    const smPercent = count(sm);
    out.jobs.push({
      kind,
      id,
      user,
      ...(memoryMiB !== undefined ? { memoryMiB } : {}),
      ...(smPercent !== undefined ? { smPercent: Math.min(100, smPercent) } : {}),
    });
  }
  return out;
}

// The `reserved` cell: the jobs that reserved the GPU at that sample, whether or not they ran on it.
//   slurm:4242:alice pod:7a0e3a4b-…:root ?1
// Entries as the jobs cell's, without memory and SM (kind:id:user, encoded alike); `+N`: N more not
// named; `?N`: N jobs on the host whose reservation could not be read (they may hold this GPU);
// `-`: read, and no job reserved it; empty: not known (not read, or a file written before the column).

/** A reserved cell read back: the jobs named, the count not named, and the jobs whose reservation is unknown. */
export interface RowReserved {
  jobs: ReservingJob[];
  dropped: number;
  unknown: number;
}

/** The jobs that reserved one GPU -> the cell; undefined (not read) -> ''. */
export function reservedCell(found: RowReserved | undefined): string {
  if (found === undefined) return '';
  const entries = found.jobs
    .slice(0, MAX_JOBS_PER_GPU)
    .map((job) => `${job.kind}:${encode(cut(job.id, MAX_JOB_ID_CHARS))}:${encode(cut(job.user, MAX_USER_CHARS))}`);
  const dropped = found.dropped + Math.max(0, found.jobs.length - MAX_JOBS_PER_GPU);
  const all = [...entries, ...(dropped > 0 ? [`+${dropped}`] : []), ...(found.unknown > 0 ? [`?${found.unknown}`] : [])];
  return all.length === 0 ? NO_JOB : all.join(' ');
}

/** The cell -> the jobs; undefined for an empty cell (not known). An entry that does not parse is counted in `dropped`. */
export function parseReservedCell(cell: string | undefined): RowReserved | undefined {
  if (cell === undefined || cell === '') return undefined;
  const out: RowReserved = { jobs: [], dropped: 0, unknown: 0 };
  if (cell === NO_JOB) return out;
  for (const entry of cell.split(' ')) {
    if (entry === '') continue;
    if (entry.startsWith('+') || entry.startsWith('?')) {
      out[entry.startsWith('+') ? 'dropped' : 'unknown'] += count(entry.slice(1)) ?? 0;
      continue;
    }
    const parts = entry.split(':');
    const [kind, rawId, rawUser] = parts as [JobKind, string, string];
    const id = decode(rawId ?? '');
    const user = decode(rawUser ?? '');
    const named =
      parts.length === 3 &&
      KINDS.includes(kind) &&
      id &&
      user !== undefined &&
      id.length <= MAX_JOB_ID_CHARS &&
      user.length <= MAX_USER_CHARS;
    if (!named || out.jobs.length >= MAX_JOBS_PER_GPU) out.dropped++;
    else out.jobs.push({ kind, id, user });
  }
  return out;
}
