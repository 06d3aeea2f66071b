import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { hostAt } from '../../src/host/host.js';
import { reservedOnGpu, type GpuIdentity } from '../../src/host/reservation.js';
import { RESERVATION_BOUNDS, ReservationMemory, readReservations } from '../../src/host/reservations.js';
import { tempDir } from '../support/helpers.js';

// Host trees as Slurm, Docker and the kubelet lay them out (cgroup names: src/host/cgroup.ts's
// sources; variables: src/host/reservation.ts's), built per test under a temporary root.

const UUID = [
  'GPU-11111111-1111-1111-1111-111111111111',
  'GPU-22222222-2222-2222-2222-222222222222',
  'GPU-33333333-3333-3333-3333-333333333333',
];
const MIG = 'MIG-44444444-4444-4444-4444-444444444444';
const GPUS: GpuIdentity[] = [
  { gpu: '0', uuid: UUID[0]! },
  { gpu: '1', uuid: UUID[1]!, mig: [{ uuid: MIG }] },
  { gpu: '2', uuid: UUID[2]! },
];
const CONTAINER = '3f4e9c1d2b7a8e6f5d4c3b2a19081726354a5b6c7d8e9f0a1b2c3d4e5f607182';
const CONTAINER2 = '9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9';
const POD = '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6';
const V2_SLURM = 'sys/fs/cgroup/system.slice/slurmstepd.scope';

let root: string;
beforeEach(async () => {
  root = await tempDir('reservations-');
  await put('etc/passwd', 'root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n');
  return () => rm(root, { recursive: true, force: true });
});

async function put(path: string, content: string | Buffer): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), content);
}

/** A process: its environ (NAME=value, NUL-separated) and its owner. */
async function proc(pid: number, env: Record<string, string> | Buffer, uid = 1000): Promise<void> {
  const bytes = Buffer.isBuffer(env)
    ? env
    : Buffer.from(
        `${Object.entries(env)
          .map(([k, v]) => `${k}=${v}\0`)
          .join('')}`,
      );
  await put(`proc/${pid}/environ`, bytes);
  await put(`proc/${pid}/status`, `Name:\tx\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
}

const v2 = () => put('sys/fs/cgroup/cgroup.controllers', 'cpu memory pids\n');
const procs = (dir: string, ...pids: number[]) => put(`${dir}/cgroup.procs`, pids.map((p) => `${p}\n`).join(''));
/** Per GPU, the jobs that reserved it, as `kind id user`. */
const onGpus = (memory?: ReservationMemory) => {
  const read = readReservations(hostAt(root), memory) ?? expect.fail('the cgroup tree was not read');
  return { read, byGpu: GPUS.map((gpu) => reservedOnGpu(read, gpu).jobs.map((j) => `${j.kind} ${j.id} ${j.user}`)) };
};

describe('Slurm under cgroup v2', () => {
  it('a job with two GPUs running on one, a job running only sleep, a step with its own GPUs', async () => {
    await v2();
    // job 100: the batch script was given GPUs 0 and 1 (whatever it then runs on).
    await procs(`${V2_SLURM}/job_100/step_batch/user/task_0`, 501);
    await proc(501, { PATH: '/bin', SLURM_JOB_ID: '100', SLURM_JOB_GPUS: '0,1', CUDA_VISIBLE_DEVICES: '0,1' });
    // slurmstepd, root's, without the job's variables: read after the job's own processes.
    await procs(`${V2_SLURM}/job_100/step_batch/slurm`, 500);
    await proc(500, { PATH: '/bin' }, 0);
    // job 101: only `sleep`, GPU 2, nothing on it.
    await procs(`${V2_SLURM}/job_101/step_batch/user/task_0`, 601);
    await proc(601, { SLURM_JOB_GPUS: '2', CUDA_VISIBLE_DEVICES: '0' }, 1001);
    const { byGpu, read } = onGpus();
    expect(byGpu).toEqual([['slurm 100 alice'], ['slurm 100 alice'], ['slurm 101 bob']]);
    expect(read.unknown).toBe(0);
  });

  it("a step's own GPUs (SLURM_STEP_GPUS), a Slurm id taken as the device minor the driver lists", async () => {
    await v2();
    await procs(`${V2_SLURM}/job_102/step_0/user/task_0`, 701);
    await proc(701, { SLURM_STEP_GPUS: '0' });
    // The driver's files: GPU index 0 is minor 1, index 1 minor 0 (minors need not follow nvidia-smi's order).
    await put('proc/driver/nvidia/gpus/0000:01:00.0/information', `Model: \t H200\nGPU UUID: \t ${UUID[0]}\nDevice Minor: \t 1\n`);
    await put('proc/driver/nvidia/gpus/0000:02:00.0/information', `Model: \t H200\nGPU UUID: \t ${UUID[1]}\nDevice Minor: \t 0\n`);
    expect(onGpus().byGpu).toEqual([[], ['slurm 102 alice'], []]);
  });

  it("a job id is the cgroup's, never the environment's; a Slurm-like cgroup a user made is no job", async () => {
    await v2();
    await procs(`${V2_SLURM}/job_103/step_batch/user/task_0`, 801);
    await proc(801, { SLURM_JOB_ID: '999', SLURM_JOB_GPUS: '0' }, 1001);
    await procs('sys/fs/cgroup/user.slice/user-1001.slice/user@1001.service/app.slice/job_998', 802);
    await proc(802, { SLURM_JOB_GPUS: '1' }, 1001);
    expect(onGpus().byGpu).toEqual([['slurm 103 bob'], [], []]);
  });
});

describe('Slurm under cgroup v1', () => {
  it("devices.list is the job's GPUs, whatever its environment claims; the freezer hierarchy finds a job without it", async () => {
    const job = 'slurm/uid_1000/job_200';
    await procs(`sys/fs/cgroup/devices/${job}/step_0/task_0`, 901);
    await procs(`sys/fs/cgroup/freezer/${job}/step_0/task_0`, 901);
    await put(`sys/fs/cgroup/devices/${job}/devices.list`, 'c 195:1 rwm\nc 195:255 rwm\nc 195:254 rwm\nc 1:3 rwm\n');
    await proc(901, { SLURM_JOB_GPUS: '0,1,2' });
    await procs('sys/fs/cgroup/freezer/slurm/uid_1001/job_201/step_batch', 902);
    await proc(902, { SLURM_JOB_GPUS: '2' }, 1001);
    expect(onGpus().byGpu).toEqual([[], ['slurm 200 alice'], ['slurm 201 bob']]);
  });
});

describe('containers and pods: NVIDIA_VISIBLE_DEVICES', () => {
  it('Docker with all and with UUIDs, a pod, MIG ids, none and void', async () => {
    await v2();
    await procs(`sys/fs/cgroup/system.slice/docker-${CONTAINER}.scope`, 1101);
    await proc(1101, { NVIDIA_VISIBLE_DEVICES: 'all' }, 0);
    await procs(`sys/fs/cgroup/system.slice/docker-${CONTAINER2}.scope`, 1102);
    await proc(1102, { NVIDIA_VISIBLE_DEVICES: `${UUID[2]}` }, 1000);
    const pod = `sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${POD.replaceAll('-', '_')}.slice`;
    await procs(`${pod}/cri-containerd-${CONTAINER}.scope`, 1201);
    await proc(1201, { NVIDIA_VISIBLE_DEVICES: MIG }, 1001);
    // `0:1`: MIG device 1 of GPU 0; none and void: no GPU.
    await procs('sys/fs/cgroup/system.slice/docker-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope', 1301);
    await proc(1301, { NVIDIA_VISIBLE_DEVICES: '0:1' }, 0);
    await procs('sys/fs/cgroup/system.slice/docker-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.scope', 1302);
    await proc(1302, { NVIDIA_VISIBLE_DEVICES: 'none' }, 0);
    await procs('sys/fs/cgroup/system.slice/docker-cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc.scope', 1303);
    await proc(1303, { NVIDIA_VISIBLE_DEVICES: 'void' }, 0);
    const { byGpu, read } = onGpus();
    expect(byGpu).toEqual([
      ['container 3f4e9c1d2b7a root', 'container aaaaaaaaaaaa root'],
      ['container 3f4e9c1d2b7a root', `pod ${POD} bob`],
      ['container 3f4e9c1d2b7a root', 'container 9a8b7c6d5e4f alice'],
    ]);
    // none and void: read, and no GPU; not unknown.
    expect(read.jobs.filter((j) => j.gpus.length === 0)).toHaveLength(2);
    expect(read.unknown).toBe(0);
  });
});

describe('hostile environs and processes that go', () => {
  it('huge: a variable past the bytes read is not seen, and the job is unknown, not "reserved nothing"', async () => {
    await v2();
    await procs(`${V2_SLURM}/job_300/step_batch/user/task_0`, 1401);
    await proc(
      1401,
      Buffer.concat([Buffer.from(`BIG=${'x'.repeat(RESERVATION_BOUNDS.environBytes)}\0`), Buffer.from('SLURM_JOB_GPUS=0\0')]),
    );
    const { byGpu, read } = onGpus();
    expect(byGpu).toEqual([[], [], []]);
    expect(read.unknown).toBe(1);
  });

  it('binary bytes around the variable; a crafted value meant to become a label names no GPU', async () => {
    await v2();
    await procs(`${V2_SLURM}/job_301/step_batch/user/task_0`, 1402);
    await proc(1402, Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x3d, 0x00]), Buffer.from('SLURM_JOB_GPUS=1\0\x1b[2J\0')]));
    await procs(`${V2_SLURM}/job_302/step_batch/user/task_0`, 1403);
    await proc(1403, { SLURM_JOB_GPUS: '0",job_id="evil"} 1\nnvidia_gpu_up{gpu="0', CUDA_VISIBLE_DEVICES: 'GPU-x"}' });
    const { byGpu, read } = onGpus();
    expect(byGpu).toEqual([[], ['slurm 301 alice'], []]);
    expect(read.jobs.find((j) => j.id === '302')?.gpus).toEqual([]);
  });

  it('a process gone mid-read (listed, no /proc entry) is unknown; another of the job read still answers', async () => {
    await v2();
    await procs(`${V2_SLURM}/job_303/step_batch/user/task_0`, 1501);
    await procs(`${V2_SLURM}/job_304/step_batch/user/task_0`, 1502, 1503);
    await proc(1503, { SLURM_JOB_GPUS: '2' });
    const { byGpu, read } = onGpus();
    expect(byGpu).toEqual([[], [], ['slurm 304 alice']]);
    expect(read.unknown).toBe(1);
  });

  it('an environ that cannot be opened (a directory where the file was) is unknown', async () => {
    await v2();
    await procs(`${V2_SLURM}/job_305/step_batch/user/task_0`, 1601);
    await mkdir(join(root, 'proc/1601/environ'), { recursive: true });
    expect(onGpus().read.unknown).toBe(1);
  });
});

describe('the daemon reads a job once while its cgroup lives', () => {
  it('no environ is read again; a cgroup made anew is read again; a gone job is forgotten', async () => {
    await v2();
    const job = `${V2_SLURM}/job_400`;
    await procs(`${job}/step_batch/user/task_0`, 1701);
    await proc(1701, { SLURM_JOB_GPUS: '0' });
    const memory = new ReservationMemory();
    expect(onGpus(memory).read.environsRead).toBe(1);
    const again = onGpus(memory);
    expect(again.read.environsRead).toBe(0);
    expect(again.byGpu[0]).toEqual(['slurm 400 alice']);
    await rm(join(root, job), { recursive: true });
    expect(onGpus(memory).byGpu).toEqual([[], [], []]);
    expect(memory.known.size).toBe(0);
    await procs(`${job}/step_batch/user/task_0`, 1701);
    await proc(1701, { SLURM_JOB_GPUS: '1' });
    expect(onGpus(memory).byGpu).toEqual([[], ['slurm 400 alice'], []]);
  });

  it('an unknown job is read again next time', async () => {
    await v2();
    await procs(`${V2_SLURM}/job_401/step_batch/user/task_0`, 1801);
    const memory = new ReservationMemory();
    expect(onGpus(memory).read.unknown).toBe(1);
    await proc(1801, { SLURM_JOB_GPUS: '2' });
    expect(onGpus(memory).byGpu[2]).toEqual(['slurm 401 alice']);
  });
});

describe('no cgroup tree', () => {
  it('is not known, not "none reserved": a host root without /sys/fs/cgroup', async () => {
    await procs(`${V2_SLURM}/job_100/step_batch/user/task_0`, 501).then(() => rm(join(root, 'sys'), { recursive: true }));
    expect(readReservations(hostAt(root))).toBeUndefined();
  });
});

describe('bounds', () => {
  it('at most processesPerJob environs of one job are read, and the rest of its processes are not', async () => {
    await v2();
    const pids = Array.from({ length: 50 }, (_, i) => 2000 + i);
    await procs(`${V2_SLURM}/job_500/step_batch/user/task_0`, ...pids);
    for (const pid of pids) await proc(pid, { PATH: '/bin' });
    const { read } = onGpus();
    expect(read.environsRead).toBe(RESERVATION_BOUNDS.processesPerJob);
    expect(read.jobs).toEqual([{ kind: 'slurm', id: '500', user: 'alice', gpus: [] }]);
  });
});
