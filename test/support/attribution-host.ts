import { cp, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from './helpers.js';

const HOSTS = join(FIXTURES, 'hosts');

/**
 * A host tree for the linux-load capture's pids, built from the fixture trees: owners from
 * process-owners (2006 alice, 2008 uid 1234), and each pid's /proc/PID/cgroup from one format's
 * tree: 2006 a Kubernetes container (containerd, systemd driver), 2007 train.service, 2008 a
 * Slurm job under cgroup/v2.
 */
export async function attributionHost(root: string): Promise<string> {
  await cp(join(HOSTS, 'process-owners'), root, { recursive: true });
  const formats: [pid: number, tree: string][] = [
    [2006, 'attribution-k8s-containerd-systemd-v2'],
    [2007, 'attribution-systemd-service-v2'],
    [2008, 'attribution-slurm-v2'],
  ];
  for (const [pid, tree] of formats) {
    await mkdir(join(root, 'proc', String(pid)), { recursive: true });
    await cp(join(HOSTS, tree, 'proc/2006/cgroup'), join(root, 'proc', String(pid), 'cgroup'));
  }
  return root;
}

/** What attributionHost's cgroups say, per pid, as labels. */
export const ATTRIBUTED: Record<string, Record<string, string>> = {
  '2006': {
    user: 'alice',
    container_id: '3f4e9c1d2b7a8e6f5d4c3b2a19081726354a5b6c7d8e9f0a1b2c3d4e5f607182',
    pod_uid: '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6',
    systemd_unit: '',
    slurm_job: '',
  },
  '2007': { user: '', container_id: '', pod_uid: '', systemd_unit: 'train.service', slurm_job: '' },
  '2008': { user: '1234', container_id: '', pod_uid: '', systemd_unit: '', slurm_job: '4242' },
};
