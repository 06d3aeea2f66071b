import { closeSync, constants, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseCgroup } from './cgroup.js';
import { listDirsIfAny, processFile, readHeadIfAny, readTextIfAny, unreadable, type Host } from './host.js';
import { jobOf, type JobKind } from './job.js';
import { parsePasswd, parseStatusUid } from './owners.js';
import {
  containerGpus,
  parseDevicesList,
  parseEnviron,
  parseGpuInformation,
  slurmGpus,
  type GpuRef,
  type Reservations,
  type ReservedJob,
} from './reservation.js';

// The reader of reservations (docs/jobs.md, "Reserved"): every job cgroup on the host (a Slurm job,
// a pod, a container; found by the names cgroup.ts knows, at any depth), a few of its processes'
// environ, and under cgroup v1 its devices.list. No scheduler is asked: a job whose processes touch
// no GPU is found all the same, for its cgroup exists while it runs.

/** How much one collection may read: all of it bounded, whatever the host holds. */
export const RESERVATION_BOUNDS = {
  /** Bytes read of one environ: the GPU variables of a 100 KB module-laden environment are read; past this a variable is not seen. */
  environBytes: 128 * 1024,
  /** Processes of one job whose environ is read, until one names its GPUs. */
  processesPerJob: 8,
  /** Environs read per collection, over all jobs: a host of thousands of containers costs no more. */
  processesPerCollection: 512,
  /** cgroup directories looked at per collection, and how deep. */
  cgroupDirs: 4096,
  depth: 8,
  /** Directories of one job's subtree (its steps, tasks, a pod's containers) looked through for processes. */
  jobDirs: 64,
};

// cgroup v1: Slurm's task/cgroup makes job_<id> in the freezer hierarchy always, in devices with
// ConstrainDevices (whose devices.list says which GPUs it may open); containers are in every one.
const V1_HIERARCHIES = ['devices', 'freezer'];

const JOB_KINDS: readonly JobKind[] = ['slurm', 'pod', 'container'];

/**
 * The directories a job's cgroup can lie below, by name (the slices and folders of cgroup.ts's
 * table): the walk enters no other. A busy host's hundred units in system.slice are listed, not
 * entered, and a user's delegated subtree (user.slice/…/user@UID.service), where any name can be made
 * and none is a job, is never walked.
 */
const MAY_HOLD_JOBS =
  /^(?:system\.slice|machine\.slice|kubepods(?:-(?:besteffort|burstable))?(?:\.slice)?|besteffort|burstable|slurm[^/]*|uid_\d{1,10}|(?:[\w.-]+_)?slurmstepd\.scope|docker)$/;

/** What was read of one job, kept while its cgroup directory is the same one (same inode). */
interface Remembered {
  ino: number;
  job: ReservedJob;
}

/**
 * The daemon's memory of the jobs' reservations: a job's GPUs do not change while it runs, so its
 * processes' environ is read once per job, not once per collection. Forgets a job whose cgroup is
 * gone (or was made anew: another inode). A job whose GPUs could not be read is read again next time.
 */
export class ReservationMemory {
  known = new Map<string, Remembered>();
}

/** A job cgroup found: its key, job, and where it is. */
interface JobDir {
  kind: JobKind;
  id: string;
  /** Its path under each hierarchy root it was found in (v2: one). */
  dirs: string[];
}

/**
 * The reservations of the host now; undefined where no cgroup tree can be read. `memory` (the daemon's, or a one-shot's own) keeps what was read
 * of each job while its cgroup lives. `environsRead` counts the environs read this time (the bench).
 */
export function readReservations(host: Host, memory = new ReservationMemory()): (Reservations & { environsRead: number }) | undefined {
  const root = join(host.sys, 'fs/cgroup');
  const unified = readTextIfAny(join(root, 'cgroup.controllers')) !== undefined;
  const roots = unified ? [root] : V1_HIERARCHIES.map((name) => join(root, name)).filter((dir) => inodeOf(dir) !== undefined);
  // No cgroup tree here (a container without the host's /sys, a test tree): reservations are not
  // known, which is not "none reserved".
  if (roots.length === 0) return undefined;
  const found = new Map<string, JobDir>();
  for (const hierarchy of roots) for (const job of jobDirs(hierarchy)) mergeJob(found, job, hierarchy);
  const users = parsePasswd(readTextIfAny(host.etcPasswd) ?? '');
  const budget = {
    environs: RESERVATION_BOUNDS.processesPerCollection,
    read: 0,
    buffer: Buffer.allocUnsafe(RESERVATION_BOUNDS.environBytes + 1),
  };
  const jobs: ReservedJob[] = [];
  let unknown = 0;
  const next = new Map<string, Remembered>();
  for (const [key, job] of found) {
    const ino = inodeOf(job.dirs[0]!);
    const before = memory.known.get(key);
    if (before !== undefined && ino !== undefined && before.ino === ino) {
      next.set(key, before);
      jobs.push(before.job);
      continue;
    }
    const read = readJob(host, job, unified ? undefined : join(root, 'devices'), users, budget);
    if (read === 'empty') continue;
    if (read === 'unknown') {
      unknown++;
      continue;
    }
    if (ino !== undefined) next.set(key, { ino, job: read });
    jobs.push(read);
  }
  memory.known = next;
  return { jobs, unknown, minors: gpuMinors(host), environsRead: budget.read };
}

/** The job cgroups under one hierarchy root, breadth first, bounded; a job's own subtree is not searched for more. */
function* jobDirs(hierarchy: string): Generator<{ kind: JobKind; id: string; rel: string }> {
  let level = [''];
  let seen = 0;
  for (let depth = 0; depth < RESERVATION_BOUNDS.depth && level.length > 0; depth++) {
    const below: string[] = [];
    for (const rel of level) {
      for (const name of listDirsIfAny(join(hierarchy, rel), RESERVATION_BOUNDS.cgroupDirs)) {
        if (++seen > RESERVATION_BOUNDS.cgroupDirs) return;
        const path = `${rel}/${name}`;
        // The same table as a process's cgroup: a directory is a job's where a process in it would be that job's.
        const job = jobOf({ uuid: '', name: '', user: '', attribution: parseCgroup(`0::${path}`) });
        if (job && JOB_KINDS.includes(job.kind)) yield { ...job, rel: path };
        else if (MAY_HOLD_JOBS.test(name)) below.push(path);
      }
    }
    level = below;
  }
}

function mergeJob(found: Map<string, JobDir>, job: { kind: JobKind; id: string; rel: string }, hierarchy: string): void {
  const key = `${job.kind}\u0000${job.id}`;
  const entry = found.get(key) ?? { kind: job.kind, id: job.id, dirs: [] };
  entry.dirs.push(join(hierarchy, job.rel));
  found.set(key, entry);
}

const inodeOf = (dir: string): number | undefined => {
  try {
    return statSync(dir).ino;
  } catch (error) {
    return unreadable(error);
  }
};

/** A job's processes, the pids of its own directory and its subtree's; Slurm's own daemons' (`slurm`) last. */
function pidsOf(dir: string, max: number): number[] {
  const pids: number[] = [];
  const later: string[] = [];
  let queue = [dir];
  let dirs = 0;
  while (queue.length > 0 && pids.length < max && dirs < RESERVATION_BOUNDS.jobDirs) {
    const next: string[] = [];
    for (const d of queue) {
      if (++dirs > RESERVATION_BOUNDS.jobDirs) break;
      for (const line of (readTextIfAny(join(d, 'cgroup.procs')) ?? '').split('\n'))
        if (/^\d{1,10}$/.test(line) && pids.length < max) pids.push(Number(line));
      // slurmstepd lives in step_<n>/slurm: root's, without the job's variables.
      for (const name of listDirsIfAny(d, RESERVATION_BOUNDS.jobDirs)) (name === 'slurm' ? later : next).push(join(d, name));
    }
    queue = next.length > 0 ? next : later.splice(0);
  }
  return pids;
}

/**
 * One job: its GPUs from the first process whose environ names them (or, cgroup v1, its
 * devices.list, which the job cannot change); `empty` when it has no process; `unknown` when no
 * environ could be read whole (permissions, a process gone mid-read) and no devices.list says.
 */
function readJob(
  host: Host,
  job: JobDir,
  devicesRoot: string | undefined,
  users: Map<string, string>,
  budget: { environs: number; read: number; buffer: Buffer },
): ReservedJob | 'empty' | 'unknown' {
  const pids = pidsOf(job.dirs[0]!, RESERVATION_BOUNDS.processesPerJob);
  if (pids.length === 0) return 'empty';
  const devicesDir = devicesRoot && job.dirs.find((d) => d.startsWith(`${devicesRoot}/`));
  const devicesText = devicesDir ? readTextIfAny(join(devicesDir, 'devices.list')) : undefined;
  const devices = devicesText === undefined ? undefined : parseDevicesList(devicesText);
  let gpus: GpuRef[] | undefined = devices !== undefined && !devices.some((ref) => 'all' in ref) ? devices : undefined;
  let user: string | undefined;
  let readWhole = false;
  for (const pid of pids) {
    // devices.list said, and the user is known: no environ is needed.
    if (devices !== undefined && gpus !== undefined && user !== undefined) break;
    if (budget.environs <= 0) break;
    budget.environs--;
    // The user is the owner of the process that carried the job's variables (slurmstepd is root's),
    // else of the first one: status is world-readable where environ may not be (devices.list says).
    const owner = () => {
      const uid = parseStatusUid(readTextIfAny(processFile(host, pid, 'status')) ?? '');
      return uid === undefined ? undefined : (users.get(uid) ?? uid);
    };
    if (user === undefined) user = owner();
    const environ = readHeadIfAny(processFile(host, pid, 'environ'), RESERVATION_BOUNDS.environBytes, budget.buffer);
    if (environ === undefined) continue;
    budget.read++;
    const vars = parseEnviron(environ.bytes);
    const refs = job.kind === 'slurm' ? slurmGpus(vars) : containerGpus(vars);
    if (!environ.cut) readWhole = true;
    if (refs !== undefined) user = owner() ?? user;
    if (refs !== undefined && gpus === undefined) gpus = refs;
    if (refs !== undefined) break;
  }
  if (gpus === undefined && !readWhole) return 'unknown';
  return { kind: job.kind, id: job.id, user: user ?? '', gpus: gpus ?? [] };
}

/** GPU uuid -> device minor, from the driver's /proc/driver/nvidia/gpus/<bus>/information. */
function gpuMinors(host: Host): Record<string, number> {
  const dir = join(host.proc, 'driver/nvidia/gpus');
  const minors: Record<string, number> = {};
  for (const bus of listDirsIfAny(dir, 256)) {
    const info = parseGpuInformation(readTextIfAny(join(dir, bus, 'information')) ?? '');
    if (info) minors[info.uuid] = info.minor;
  }
  return minors;
}

/**
 * Whether this process may read another process's environ (`pid`, by default 1: root's, with every
 * capability, so only a reader with CAP_SYS_PTRACE may): `absent` where there is no such file (a test
 * tree, a pid namespace of its own), `denied` where the kernel refuses (no CAP_SYS_PTRACE,
 * `ProtectProc=invisible`, hidepid). Opened, never read: doctor's question is the permission.
 */
export function environAccess(host: Host, pid = 1): 'readable' | 'denied' | 'absent' {
  try {
    closeSync(openSync(processFile(host, pid, 'environ'), constants.O_RDONLY | constants.O_NONBLOCK));
    return 'readable';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') return 'denied';
    return unreadable(error) ?? 'absent';
  }
}
