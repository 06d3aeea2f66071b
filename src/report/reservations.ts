import type { IntervalOf, JobAccount, JobRow } from './jobs.js';

// The job lines of `report --by job` with what each job reserved beside what it used (docs/jobs.md,
// "Reserved"): the account of the `reserved` column is a JobAccount of its own (mode `reserved`),
// whose lines are joined to the held account's by host, task, kind and id. A job that reserved GPUs
// and ran nothing on any gets a line of its own, with no GPU used.

/**
 * `held`'s lines with each job's reserved GPUs and GPU-hours; a job of a task whose rows said who
 * reserved its GPUs, and that reserved none, says so (none, 0); elsewhere they are absent (not known).
 */
export function withReservations(held: readonly JobRow[], reserved: JobAccount, intervalOf: IntervalOf): JobRow[] {
  const key = (r: Pick<JobRow, 'host' | 'task_id' | 'job_kind' | 'job_id'>) =>
    `${r.host}\u0000${r.task_id}\u0000${r.job_kind}\u0000${r.job_id}`;
  const byJob = new Map(reserved.rows(intervalOf).map((r) => [key(r), r]));
  const known = reserved.tasksSeen();
  const out = held.map((row): JobRow => {
    const r = byJob.get(key(row));
    byJob.delete(key(row));
    if (r) return { ...row, reserved_gpus: r.gpus, reserved_gpu_hours: r.gpu_hours, reserved_idle_gpu_hours: r.idle_gpu_hours };
    // The `none` line is no job: nothing is reserved by it.
    if (!known.has(`${row.host}\u0000${row.task_id}`) || row.job_kind === 'none') return row;
    return { ...row, reserved_gpus: [], reserved_gpu_hours: 0, reserved_idle_gpu_hours: 0 };
  });
  // Reserved and never used: what it held is nothing.
  for (const r of byJob.values())
    out.push({
      host: r.host,
      task_id: r.task_id,
      job_kind: r.job_kind,
      job_id: r.job_id,
      user: r.user,
      gpus: [],
      hours: 0,
      gpu_hours: 0,
      idle_gpu_hours: 0,
      first_seen: r.first_seen,
      last_seen: r.last_seen,
      reserved_gpus: r.gpus,
      reserved_gpu_hours: r.gpu_hours,
      reserved_idle_gpu_hours: r.idle_gpu_hours,
    });
  return out.sort(
    (a, b) =>
      a.host.localeCompare(b.host) ||
      a.task_id.localeCompare(b.task_id) ||
      a.first_seen.localeCompare(b.first_seen) ||
      a.job_id.localeCompare(b.job_id),
  );
}
