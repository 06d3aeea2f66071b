import { cut, MAX_JOB_ID_CHARS, MAX_JOBS_PER_GPU, MAX_USER_CHARS, type JobKind } from './job.js';

// Which GPUs a job reserved, from what its processes' environment and its cgroup say (docs/jobs.md,
// "Reserved"). Pure: the reader is src/host/reservations.ts.
//
// What each variable means (Slurm's sbatch/srun "OUTPUT ENVIRONMENT VARIABLES" and gres.conf(5);
// NVIDIA Container Toolkit's "Specialized configurations", the Kubernetes device plugin):
// - SLURM_JOB_GPUS (batch script, prolog) and SLURM_STEP_GPUS (each step): Slurm's ids of the node's
//   GPUs given to the job or step. An id is the GPU's place in the node's GPU list, which is gres.conf's
//   `File=` order (/dev/nvidia0, /dev/nvidia1, …) or, with AutoDetect=nvml, the devices NVML finds,
//   named by /dev/nvidia<minor>: id N is the GPU whose device file is /dev/nvidiaN, its device minor.
// - CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL, as Slurm sets them, count from 0 within the GPUs the
//   step may see (with ConstrainDevices Slurm renumbers them): a number there is no GPU of the host.
//   Only a UUID there names one.
// - NVIDIA_VISIBLE_DEVICES (containers, pods): `all`, `none` (no GPU, the driver's files mounted),
//   `void` or empty (as if unset), or a list of nvidia-smi indices, GPU UUIDs, MIG UUIDs
//   (`MIG-<uuid>`, older `MIG-GPU-<uuid>/<gi>/<ci>`) or `<gpu index>:<mig index>`.
// - cgroup v1's devices.list: the device numbers the job may open; NVIDIA's GPUs are character
//   devices of major 195, minors 0-253 (254 is nvidia-modeset, 255 nvidiactl).

/** One GPU named by a job: by device minor (Slurm), nvidia-smi index, GPU UUID, MIG UUID, or every GPU. */
export type GpuRef = { minor: number } | { index: number } | { uuid: string } | { mig: string } | { all: true };

/** The variables read from a process's environment; nothing else of it is kept. */
export const GPU_VARIABLES = [
  'SLURM_JOB_GPUS',
  'SLURM_STEP_GPUS',
  'CUDA_VISIBLE_DEVICES',
  'GPU_DEVICE_ORDINAL',
  'NVIDIA_VISIBLE_DEVICES',
] as const;
export type GpuVariable = (typeof GPU_VARIABLES)[number];

/** A value longer than this is no list of a host's GPUs (a UUID is 40 characters; 64 GPUs with commas fit). */
const MAX_VALUE_CHARS = 4096;
/** A list naming more than this is not one: no host has so many GPUs. */
const MAX_REFS = 256;

/** /proc/PID/environ (NUL-separated NAME=value) -> the GPU variables it sets; a value too long is left out. */
export function parseEnviron(environ: Buffer): Partial<Record<GpuVariable, string>> {
  const found: Partial<Record<GpuVariable, string>> = {};
  let start = 0;
  while (start < environ.length) {
    let end = environ.indexOf(0, start);
    if (end < 0) end = environ.length;
    // Only names we look for are decoded: the rest of a hostile environment is never a string.
    for (const name of GPU_VARIABLES) {
      if (
        end - start <= name.length ||
        environ[start + name.length] !== 0x3d ||
        environ.toString('latin1', start, start + name.length) !== name
      )
        continue;
      if (end - start - name.length - 1 <= MAX_VALUE_CHARS) found[name] = environ.toString('utf8', start + name.length + 1, end);
    }
    start = end + 1;
  }
  return found;
}

const UUID = /^GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$/;
const MIG_UUID = /^MIG-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$/;
const OLD_MIG = /^MIG-(GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})\/\d{1,3}\/\d{1,3}$/;
const NUMBER = /^\d{1,3}$/;

/**
 * One list of GPUs -> what it names; `numbers` says what a bare number is (Slurm's id is a device
 * minor, NVIDIA_VISIBLE_DEVICES' an nvidia-smi index, CUDA_VISIBLE_DEVICES' nothing of the host).
 * Slurm's ranges (`0-3`) are spread. An entry that is none of these names nothing.
 */
export function parseGpuList(value: string, numbers: 'minor' | 'index' | 'none'): GpuRef[] {
  const refs: GpuRef[] = [];
  for (const raw of value.split(',')) {
    const item = raw.trim();
    if (refs.length >= MAX_REFS) break;
    const range = /^(\d{1,3})-(\d{1,3})$/.exec(item);
    if (numbers === 'minor' && range) {
      for (let n = Number(range[1]); n <= Number(range[2]) && refs.length < MAX_REFS; n++) refs.push({ minor: n });
    } else if (NUMBER.test(item)) {
      if (numbers !== 'none') refs.push(numbers === 'minor' ? { minor: Number(item) } : { index: Number(item) });
    } else if (UUID.test(item)) refs.push({ uuid: item });
    else if (MIG_UUID.test(item)) refs.push({ mig: item });
    else if (OLD_MIG.test(item)) refs.push({ uuid: OLD_MIG.exec(item)![1]! });
    else if (numbers === 'index' && /^\d{1,3}:\d{1,3}$/.test(item)) refs.push({ index: Number(item.split(':')[0]) });
  }
  return refs;
}

/**
 * A Slurm job's process's variables -> its GPUs: SLURM_JOB_GPUS and SLURM_STEP_GPUS by id (a minor),
 * CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL only where they hold UUIDs. Undefined where none is set.
 */
export function slurmGpus(vars: Partial<Record<GpuVariable, string>>): GpuRef[] | undefined {
  const lists = [
    ...(vars.SLURM_JOB_GPUS === undefined ? [] : [parseGpuList(vars.SLURM_JOB_GPUS, 'minor')]),
    ...(vars.SLURM_STEP_GPUS === undefined ? [] : [parseGpuList(vars.SLURM_STEP_GPUS, 'minor')]),
    ...(vars.CUDA_VISIBLE_DEVICES === undefined ? [] : [parseGpuList(vars.CUDA_VISIBLE_DEVICES, 'none')]),
    ...(vars.GPU_DEVICE_ORDINAL === undefined ? [] : [parseGpuList(vars.GPU_DEVICE_ORDINAL, 'none')]),
  ];
  return lists.length === 0 ? undefined : lists.flat();
}

/** A container's process's NVIDIA_VISIBLE_DEVICES -> its GPUs; undefined where it is not set. */
export function containerGpus(vars: Partial<Record<GpuVariable, string>>): GpuRef[] | undefined {
  const value = vars.NVIDIA_VISIBLE_DEVICES?.trim();
  if (value === undefined) return undefined;
  if (value === 'all') return [{ all: true }];
  if (value === 'none' || value === 'void' || value === '') return [];
  return parseGpuList(value, 'index');
}

/** cgroup v1's devices.list -> the NVIDIA GPU minors it allows, `all` for every device (`a *:* rwm`, `c 195:* …`). */
export function parseDevicesList(text: string): GpuRef[] {
  const refs: GpuRef[] = [];
  for (const line of text.split('\n')) {
    const [type, numbers] = line.trim().split(/\s+/);
    if (type === 'a' || (type === 'c' && (numbers === '*:*' || numbers === '195:*'))) return [{ all: true }];
    const minor = type === 'c' ? /^195:(\d{1,3})$/.exec(numbers ?? '')?.[1] : undefined;
    if (minor !== undefined && Number(minor) < 254 && refs.length < MAX_REFS) refs.push({ minor: Number(minor) });
  }
  return refs;
}

/** /proc/driver/nvidia/gpus/<bus>/information -> the GPU's uuid and device minor. */
export function parseGpuInformation(text: string): { uuid: string; minor: number } | undefined {
  const uuid = /^GPU UUID:\s*(GPU-[0-9a-fA-F-]{36})\s*$/m.exec(text)?.[1];
  const minor = /^Device Minor:\s*(\d{1,3})\s*$/m.exec(text)?.[1];
  return uuid === undefined || minor === undefined ? undefined : { uuid, minor: Number(minor) };
}

/** A job that reserved GPUs, as the host says now. */
export interface ReservedJob {
  kind: JobKind;
  id: string;
  user: string;
  gpus: readonly GpuRef[];
}

/** What the reservations of the host are at one read. */
export interface Reservations {
  jobs: readonly ReservedJob[];
  /** Jobs whose GPUs could not be read (no process's environ readable): they may hold any GPU. */
  unknown: number;
  /** GPU uuid -> device minor, from the driver's /proc files; where absent a minor is taken as the nvidia-smi index. */
  minors: Readonly<Record<string, number>>;
}

/** A GPU as the collection names it: its nvidia-smi index, uuid and MIG devices' uuids. */
export interface GpuIdentity {
  gpu: string;
  uuid: string;
  mig?: readonly { uuid: string }[];
}

/** Whether `ref` names the GPU. */
export function names(ref: GpuRef, gpu: GpuIdentity, minors: Readonly<Record<string, number>>): boolean {
  if ('all' in ref) return true;
  if ('uuid' in ref) return ref.uuid.toLowerCase() === gpu.uuid.toLowerCase();
  if ('mig' in ref) return (gpu.mig ?? []).some((m) => m.uuid.toLowerCase() === ref.mig.toLowerCase());
  if ('index' in ref) return String(ref.index) === gpu.gpu;
  const minor = minors[gpu.uuid];
  return minor === undefined ? String(ref.minor) === gpu.gpu : minor === ref.minor;
}

/** A job named on a GPU's reservation (its kind, id, user), cut as the holders are. */
export interface ReservingJob {
  kind: JobKind;
  id: string;
  user: string;
}

/**
 * The jobs that reserved the GPU, at most MAX_JOBS_PER_GPU (by kind and id); `dropped` counts the
 * others; `unknown`: the jobs whose GPUs could not be read.
 */
export function reservedOnGpu(reservations: Reservations, gpu: GpuIdentity): { jobs: ReservingJob[]; dropped: number; unknown: number } {
  const all = reservations.jobs
    .filter((job) => job.gpus.some((ref) => names(ref, gpu, reservations.minors)))
    .map((job) => ({ kind: job.kind, id: cut(job.id, MAX_JOB_ID_CHARS), user: cut(job.user, MAX_USER_CHARS) }))
    .sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id));
  return { jobs: all.slice(0, MAX_JOBS_PER_GPU), dropped: Math.max(0, all.length - MAX_JOBS_PER_GPU), unknown: reservations.unknown };
}
