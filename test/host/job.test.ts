import { describe, expect, it } from 'vitest';
import { jobsCell, parseJobsCell } from '../../src/csvlog/jobs-cell.js';
import { parseCgroup } from '../../src/host/cgroup.js';
import { jobOf, jobsOnGpu, MAX_JOBS_PER_GPU, type JobProcess } from '../../src/host/job.js';

const GPU = 'GPU-aaaa';
const MIB = 1024 * 1024;
const proc = (over: Partial<JobProcess>): JobProcess => ({ uuid: GPU, name: '/usr/bin/python3', user: 'alice', ...over });
const CONTAINER = '3f4e9c1d2b7a8e6f5d4c3b2a19081726354a5b6c7d8e9f0a1b2c3d4e5f607182';

describe('jobOf', () => {
  const cases: [string, Partial<JobProcess>, { kind: string; id: string }][] = [
    ['Slurm first, even inside a unit', { attribution: { slurm_job: '4242', systemd_unit: 'x.service' } }, { kind: 'slurm', id: '4242' }],
    [
      'a pod before its container',
      { attribution: { pod_uid: '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6', container_id: CONTAINER } },
      { kind: 'pod', id: '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6' },
    ],
    [
      'a container as docker ps prints it (12 characters)',
      { attribution: { container_id: CONTAINER } },
      { kind: 'container', id: '3f4e9c1d2b7a' },
    ],
    ['a systemd unit', { attribution: { systemd_unit: 'train.service' } }, { kind: 'unit', id: 'train.service' }],
    [
      "a user's unit keeps its manager: it is not the system unit of that name",
      { attribution: { systemd_unit: 'triton.service', user_manager: 'user@1001.service' } },
      { kind: 'unit', id: 'user@1001.service/triton.service' },
    ],
    ['else the command, base name', {}, { kind: 'process', id: 'python3' }],
    ['a long command cut at 64', { name: `/opt/${'x'.repeat(100)}` }, { kind: 'process', id: 'x'.repeat(64) }],
    [
      'a command NVML could not read, in a unit: the unit',
      { name: '[Not Found]', attribution: { systemd_unit: 'train.service' } },
      { kind: 'unit', id: 'train.service' },
    ],
  ];
  for (const [title, over, expected] of cases) it(title, () => expect(jobOf(proc(over))).toEqual(expected));
  // A process gone from /proc (short CUDA processes on a real H200), or of another pid namespace:
  // nothing tells its job. It was a job of its own named [Not Found] (process:[Not%20Found]:root:4484:0).
  it.each([
    ['[Not Found]', 'root'],
    ['', ''],
  ])('a command NVML could not read (%j) and no cgroup: no job of its own', (name, user) => {
    expect(jobOf(proc({ name, user }))).toBeUndefined();
  });
});

describe('jobsOnGpu', () => {
  it('adds up one job’s processes on the GPU, ignores other GPUs, largest first; the user is the biggest process’s', () => {
    const slurm = { slurm_job: '7' };
    const found = jobsOnGpu(
      [
        proc({ attribution: slurm, memoryBytes: 100 * MIB, smUtilization: 0.2, user: 'root' }),
        proc({ attribution: slurm, memoryBytes: 300 * MIB, smUtilization: 0.3, user: 'bob' }),
        proc({ memoryBytes: 1000 * MIB, user: 'carol' }),
        proc({ uuid: 'GPU-other', attribution: { slurm_job: '8' }, memoryBytes: 5 * MIB }),
      ],
      GPU,
    );
    expect(found).toEqual({
      jobs: [
        { kind: 'process', id: 'python3', user: 'carol', memoryMiB: 1000 },
        { kind: 'slurm', id: '7', user: 'bob', memoryMiB: 400, smPercent: 50 },
      ],
      dropped: 0,
    });
  });

  it('the same command of two users is two jobs', () => {
    expect(jobsOnGpu([proc({ user: 'a' }), proc({ user: 'b' })], GPU).jobs.map((j) => j.user)).toEqual(['a', 'b']);
  });

  it(`names at most ${MAX_JOBS_PER_GPU} jobs, those with the most memory, and counts the rest`, () => {
    const many = Array.from({ length: 20 }, (_, i) => proc({ attribution: { slurm_job: String(i) }, memoryBytes: i * MIB }));
    const found = jobsOnGpu(many, GPU);
    expect(found.dropped).toBe(12);
    expect(found.jobs.map((j) => j.id)).toEqual(['19', '18', '17', '16', '15', '14', '13', '12']);
  });
});

describe("a user's unit and root's of the same name", () => {
  // user@1001.service/app.slice/triton.service and /system.slice/triton.service: charged to one job,
  // the user's GPU-hours went to root's in nvidia_gpu_holder_info and report --by job.
  it('are two jobs on the GPU, each with its user, and stay two through the CSV cell', () => {
    const processes = [
      proc({ user: 'root', memoryBytes: 100 * MIB, attribution: parseCgroup('0::/system.slice/triton.service') }),
      proc({
        user: 'bob',
        memoryBytes: 200 * MIB,
        attribution: parseCgroup('0::/user.slice/user-1001.slice/user@1001.service/app.slice/triton.service'),
      }),
    ];
    const found = jobsOnGpu(processes, GPU);
    expect(found.jobs.map((j) => [j.kind, j.id, j.user])).toEqual([
      ['unit', 'user@1001.service/triton.service', 'bob'],
      ['unit', 'triton.service', 'root'],
    ]);
    expect(parseJobsCell(jobsCell(found))!.jobs.map((j) => j.id)).toEqual(['user@1001.service/triton.service', 'triton.service']);
  });

  it("an old trail's cell (a plain unit name) reads as it did", () => {
    expect(parseJobsCell('unit:triton.service:bob:200:')!.jobs).toEqual([
      { kind: 'unit', id: 'triton.service', user: 'bob', memoryMiB: 200 },
    ]);
  });
});

describe('processes no job can be told for', () => {
  it('are counted on the GPU (held, by whom unknown), never named as a job', () => {
    const found = jobsOnGpu(
      [
        proc({ name: '[Not Found]', user: 'root', memoryBytes: 4484 * MIB }),
        proc({ name: '[Not Found]', user: 'root', memoryBytes: 10 * MIB }),
        proc({ attribution: { slurm_job: '7' }, memoryBytes: 100 * MIB }),
      ],
      GPU,
    );
    expect(found).toEqual({ jobs: [{ kind: 'slurm', id: '7', user: 'alice', memoryMiB: 100 }], dropped: 2 });
    expect(jobsCell(found)).toBe('slurm:7:alice:100: +2');
  });
});
