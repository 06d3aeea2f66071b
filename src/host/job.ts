import type { Attribution } from './cgroup.js';

// Which job a GPU process runs for, named from what its cgroup says (cgroup.ts) and who runs it:
// one answer for the CSV trail's `jobs` column and the nvidia_gpu_holder_info series. Pure.

/** What a job is, from the most to the least specific owner a process's cgroup can name. */
export type JobKind = 'slurm' | 'pod' | 'container' | 'unit' | 'process';

/** A job on one GPU at one sample: its processes there added up. */
export interface GpuJob {
  kind: JobKind;
  id: string;
  /** The user of its process with the most memory ('' where the pid is not visible). */
  user: string;
  /** Memory its processes hold on the GPU, in MiB; absent where the driver did not say. */
  memoryMiB?: number;
  /** Its processes' SM utilisation added up, in percent (0-100); only where NVML gives it per process. */
  smPercent?: number;
}

/** The process fields naming needs (a ProcessSample fits). */
export interface JobProcess {
  uuid: string;
  name: string;
  user: string;
  memoryBytes?: number;
  smUtilization?: number;
  attribution?: Attribution;
}

/**
 * At most this many jobs are named per GPU and sample, the ones holding the most memory; the rest
 * are counted. A GPU rarely holds more than a few jobs (MPS or time-slicing); 8 keeps the CSV cell
 * under 2.5 KB and the info series per scrape at 8 per GPU.
 */
export const MAX_JOBS_PER_GPU = 8;
/** The longest job id kept (a unit name can be 255 characters; a command line longer). */
export const MAX_JOB_ID_CHARS = 64;
/** The longest user name kept: useradd's limit (32). */
export const MAX_USER_CHARS = 32;

/**
 * `text` cut to at most `max` UTF-16 units, never inside a character: half of a surrogate pair
 * would be written as U+FFFD, so two names cut inside different emoji would be two jobs here and
 * one label value in the file (a duplicate series: node_exporter refuses the whole file).
 */
export const cut = (text: string, max: number): string => {
  const head = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head;
};

// A container id is shown as `docker ps` and `crictl ps` print it: its first 12 (hex) characters.
const SHORT_CONTAINER = 12;

/**
 * The job a process runs for: its Slurm job, else its Kubernetes pod, else its container, else its
 * systemd unit, else the process itself (its command's base name, with the user beside it). None
 * for a process nothing is known of, its command unread (nvidia-smi's `[Not Found]`: gone from
 * /proc, or of another pid namespace) and no cgroup naming it: short CUDA processes coming and going
 * each became a job of their own named `[Not Found]`; such a process is counted, not named.
 */
export function jobOf(process: JobProcess): { kind: JobKind; id: string } | undefined {
  const a = process.attribution ?? {};
  if (a.slurm_job) return { kind: 'slurm', id: a.slurm_job };
  if (a.pod_uid) return { kind: 'pod', id: cut(a.pod_uid, MAX_JOB_ID_CHARS) };
  if (a.container_id) return { kind: 'container', id: a.container_id.slice(0, SHORT_CONTAINER) };
  // A user's unit keeps its manager: `user@1001.service/triton.service`, never root's triton.service.
  if (a.systemd_unit)
    return { kind: 'unit', id: cut(a.user_manager ? `${a.user_manager}/${a.systemd_unit}` : a.systemd_unit, MAX_JOB_ID_CHARS) };
  if (commandUnread(process.name)) return undefined;
  const base = process.name.split('/').pop() || process.name;
  return { kind: 'process', id: cut(base, MAX_JOB_ID_CHARS) };
}

/** A command name NVML could not read: empty, or what nvidia-smi prints then. */
export const commandUnread = (name: string): boolean => name === '' || name === '[Not Found]';

const MIB = 1024 * 1024;

/**
 * The jobs on the GPU `uuid`: its processes grouped by job (and user, for a process of no other
 * job), memory and SM utilisation added up, largest memory first, at most MAX_JOBS_PER_GPU;
 * `dropped` counts the others, and each process no job could be told for (jobOf).
 */
export function jobsOnGpu(processes: readonly JobProcess[], uuid: string): { jobs: GpuJob[]; dropped: number } {
  const byKey = new Map<string, GpuJob & { topMemory: number }>();
  let unattributed = 0;
  for (const process of processes) {
    if (process.uuid !== uuid) continue;
    const found = jobOf(process);
    // Counted with the jobs not named (the cell's `+N`): the GPU is held, by whom is not known.
    if (found === undefined) {
      unattributed++;
      continue;
    }
    const { kind, id } = found;
    const user = cut(process.user, MAX_USER_CHARS);
    const key = `${kind}\u0000${id}${kind === 'process' ? `\u0000${user}` : ''}`;
    const memory = process.memoryBytes === undefined ? undefined : process.memoryBytes / MIB;
    const sm = process.smUtilization === undefined ? undefined : process.smUtilization * 100;
    const job = byKey.get(key);
    if (!job) {
      byKey.set(key, { kind, id, user, memoryMiB: memory, smPercent: sm, topMemory: memory ?? -1 });
      continue;
    }
    if (memory !== undefined) job.memoryMiB = (job.memoryMiB ?? 0) + memory;
    if (sm !== undefined) job.smPercent = (job.smPercent ?? 0) + sm;
    // The job's user is the one of its biggest process: a helper's process run as root changes nothing.
    if ((memory ?? -1) > job.topMemory) {
      job.topMemory = memory ?? -1;
      job.user = user;
    }
  }
  const all = [...byKey.values()]
    .sort((a, b) => (b.memoryMiB ?? -1) - (a.memoryMiB ?? -1) || a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id))
    .map(({ topMemory: _, memoryMiB, smPercent, ...job }) => ({
      ...job,
      ...(memoryMiB !== undefined ? { memoryMiB: Math.round(memoryMiB) } : {}),
      ...(smPercent !== undefined ? { smPercent: Math.min(100, Math.round(smPercent)) } : {}),
    }));
  return { jobs: all.slice(0, MAX_JOBS_PER_GPU), dropped: Math.max(0, all.length - MAX_JOBS_PER_GPU) + unattributed };
}
