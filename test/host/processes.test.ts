import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ComputeApp } from '../../src/collection.js';
import { hostAt } from '../../src/host/host.js';
import { jobOf, jobsOnGpu } from '../../src/host/job.js';
import { describeProcesses, ProcessMemory } from '../../src/host/processes.js';
import { FIXTURES, tempDir } from '../support/helpers.js';

const HOSTS = join(FIXTURES, 'hosts');
const app = (pid: number): ComputeApp => ({ uuid: 'GPU-1', pid, name: 'python3', memoryBytes: 1 });
const ID = '3f4e9c1d2b7a8e6f5d4c3b2a19081726354a5b6c7d8e9f0a1b2c3d4e5f607182';
const ID2 = '9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9';
const UID = '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6';

// One tree per format, each /proc/2006/cgroup written from the runtime's documented naming (SOURCE.md).
const formats: [tree: string, attribution: Record<string, string>][] = [
  ['attribution-docker-systemd-v2', { container_id: ID }],
  ['attribution-docker-cgroupfs-v1', { container_id: ID }],
  ['attribution-k8s-containerd-systemd-v2', { container_id: ID, pod_uid: UID }],
  ['attribution-k8s-crio-systemd-v2', { container_id: ID2, pod_uid: UID }],
  ['attribution-k8s-cgroupfs-v1', { container_id: ID2, pod_uid: UID }],
  // Rootless: the scope is in the user's delegated subtree, where the user may name a cgroup anything.
  ['attribution-podman-rootless-v2', { systemd_unit: `libpod-${ID2}.scope`, user_manager: 'user@1000.service' }],
  ['attribution-systemd-service-v2', { systemd_unit: 'train.service' }],
  ['attribution-systemd-user-service-v1', { systemd_unit: 'train.service', user_manager: 'user@1000.service' }],
  ['attribution-slurm-v1', { slurm_job: '4242' }],
  ['attribution-slurm-v2', { slurm_job: '4242' }],
  // A Slurm-like cgroup the user made below user@1000.service is no job.
  ['attribution-spoof-user-slurm-v2', { systemd_unit: 'user@1000.service' }],
];

describe('describeProcesses reads /proc/PID/cgroup under the host root', () => {
  it.each(formats)('%s', (tree, attribution) => {
    const [sample] = describeProcesses([app(2006)], hostAt(join(HOSTS, tree)));
    // No /proc/2006/status in these trees: the user is unknown, but for a unit of a user's manager (user@UID).
    const user = /^user@(\d+)\.service$/.exec(attribution.user_manager ?? '')?.[1] ?? '';
    expect(sample).toEqual({ ...app(2006), user, attribution });
  });

  it("a user's unit whose process status cannot be read: the user is its manager's uid, by name", () => {
    const tree = join(HOSTS, 'attribution-systemd-user-service-v1');
    expect(describeProcesses([app(2006)], { ...hostAt(tree), etcPasswd: join(HOSTS, 'process-owners/etc/passwd') })[0]!.user).toBe('alice');
  });

  it('the recorded H200 process in a hand-made systemd-run scope: unit and owner', () => {
    const tree = join(HOSTS, 'attribution-recorded-h200-scope');
    // The pid and memory nvidia-smi printed, from the recording beside the tree.
    const [uuid, pid, name, mib] = readFileSync(join(tree, 'query-compute-apps.csv'), 'utf8').trim().split(', ');
    const recorded: ComputeApp = { uuid: uuid!, pid: Number(pid), name: name!, memoryBytes: Number(mib) * 1048576 };
    expect(describeProcesses([recorded], hostAt(tree))).toEqual([
      { ...recorded, user: 'root', attribution: { systemd_unit: 'run-r0123456789abcdef0123456789abcdef.scope' } },
    ]);
  });
});

describe('the daemon keeps what it read of a process a moment before (ProcessMemory)', () => {
  // Short CUDA processes on a real H200: NVML lists a pid a moment after its /proc entry is gone,
  // its name [Not Found]; each became a job of its own named [Not Found].
  const stat = (pid: number, start: number) => `${pid} (python3) S 1 ${pid} ${pid} 0 -1 4194560 0 0 0 0 5 1 0 0 20 0 1 0 ${start} 0 0\n`;
  async function tree(start: number) {
    const root = await tempDir();
    const proc = join(root, 'proc/4484');
    await mkdir(proc, { recursive: true });
    await writeFile(join(proc, 'stat'), stat(4484, start));
    await writeFile(join(proc, 'status'), 'Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\n');
    await writeFile(join(proc, 'cgroup'), '0::/system.slice/train.service\n');
    await mkdir(join(root, 'etc'));
    await writeFile(join(root, 'etc/passwd'), 'alice:x:1000:1000::/home/alice:/bin/sh\n');
    return root;
  }
  const listed = (name: string): ComputeApp => ({ uuid: 'GPU-1', pid: 4484, name, memoryBytes: 4484 * 1048576 });

  it('a pid gone from /proc that NVML still lists keeps its job', async () => {
    const root = await tree(123456);
    const memory = new ProcessMemory();
    const [before] = describeProcesses([listed('python3')], hostAt(root), memory);
    expect(jobOf(before!)).toEqual({ kind: 'unit', id: 'train.service' });
    await rm(join(root, 'proc/4484'), { recursive: true });
    const [after] = describeProcesses([listed('[Not Found]')], hostAt(root), memory);
    expect([after!.user, jobOf(after!)]).toEqual(['alice', { kind: 'unit', id: 'train.service' }]);
  });

  it('another process under the same pid (another start time) is not given the old one’s job', async () => {
    const root = await tree(123456);
    const memory = new ProcessMemory();
    describeProcesses([listed('python3')], hostAt(root), memory);
    await writeFile(join(root, 'proc/4484/stat'), stat(4484, 999999));
    await writeFile(join(root, 'proc/4484/cgroup'), '0::/\n');
    const [other] = describeProcesses([listed('[Not Found]')], hostAt(root), memory);
    expect(jobOf(other!)).toBeUndefined();
  });

  it('without a memory (a one-shot), a pid gone from /proc is counted apart, never a job named [Not Found]', async () => {
    const root = await tree(123456);
    await rm(join(root, 'proc/4484'), { recursive: true });
    const samples = describeProcesses([listed('[Not Found]')], hostAt(root));
    expect(jobsOnGpu(samples, 'GPU-1')).toEqual({ jobs: [], dropped: 1 });
  });

  it('forgets the processes no longer listed', async () => {
    const root = await tree(123456);
    const memory = new ProcessMemory();
    describeProcesses([listed('python3')], hostAt(root), memory);
    describeProcesses([], hostAt(root), memory);
    await rm(join(root, 'proc/4484'), { recursive: true });
    expect(jobOf(describeProcesses([listed('[Not Found]')], hostAt(root), memory)[0]!)).toBeUndefined();
  });
});
