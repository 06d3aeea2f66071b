import { describe, expect, it } from 'vitest';
import { type Attribution, cgroupPath, MAX_ATTRIBUTION_CHARS, parseCgroup } from '../../src/host/cgroup.js';

// Cases written from each runtime's documented cgroup naming (see the SOURCE.md of the
// test/fixtures/hosts/attribution-* trees for the references), not from our own output.
const ID = '3f4e9c1d2b7a8e6f5d4c3b2a19081726354a5b6c7d8e9f0a1b2c3d4e5f607182';
const UID = '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6';
const UID_ = UID.replaceAll('-', '_');
const LONGEST_UNIT = `${'t'.repeat(MAX_ATTRIBUTION_CHARS - '.service'.length)}.service`;
const STATIC_POD = '6a9f4b1c9e7f0d2b3a4c5d6e7f8a9b0c';

const cases: [title: string, cgroup: string, expected: Attribution][] = [
  ['Docker, systemd driver, v2', `0::/system.slice/docker-${ID}.scope`, { container_id: ID }],
  ['Docker, cgroupfs driver, v1', `11:memory:/docker/${ID}\n1:name=systemd:/docker/${ID}\n0::/`, { container_id: ID }],
  ['Docker, cgroupfs driver, v2', `0::/docker/${ID}`, { container_id: ID }],
  [
    'containerd CRI, systemd driver, Burstable pod',
    `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice/cri-containerd-${ID}.scope`,
    { container_id: ID, pod_uid: UID },
  ],
  [
    'CRI-O, systemd driver, Guaranteed pod (no QoS level)',
    `0::/kubepods.slice/kubepods-pod${UID_}.slice/crio-${ID}.scope`,
    { container_id: ID, pod_uid: UID },
  ],
  [
    "CRI-O's monitor (crio-conmon-) is the pod's, not a container",
    `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID_}.slice/crio-conmon-${ID}.scope`,
    { pod_uid: UID },
  ],
  ['kubelet cgroupfs driver, v1, Burstable', `11:memory:/kubepods/burstable/pod${UID}/${ID}\n0::/`, { container_id: ID, pod_uid: UID }],
  ['kubelet cgroupfs driver, v1, Guaranteed', `4:cpuset:/kubepods/pod${UID}/${ID}`, { container_id: ID, pod_uid: UID }],
  [
    'static pod uid (32 hex, no dashes)',
    `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${STATIC_POD}.slice`,
    { pod_uid: STATIC_POD },
  ],
  ['Podman rootful', `0::/machine.slice/libpod-${ID}.scope/container`, { container_id: ID }],
  [
    "Podman's monitor (libpod-conmon-) is not the container",
    `0::/machine.slice/libpod-conmon-${ID}.scope`,
    { systemd_unit: `libpod-conmon-${ID}.scope` },
  ],
  ['system service, v2', '0::/system.slice/train.service', { systemd_unit: 'train.service' }],
  [
    'user service: the deepest unit',
    '0::/user.slice/user-1000.slice/user@1000.service/app.slice/train.service',
    // Named by user 1000: its manager is kept beside it, so it is not root's system train.service.
    { systemd_unit: 'train.service', user_manager: 'user@1000.service' },
  ],
  [
    'systemd-run --scope',
    '0::/system.slice/run-r0123456789abcdef0123456789abcdef.scope',
    { systemd_unit: 'run-r0123456789abcdef0123456789abcdef.scope' },
  ],
  ['login session', '0::/user.slice/user-1000.slice/session-3.scope', { systemd_unit: 'session-3.scope' }],
  [
    'a unit name with an escape and an instance',
    '0::/system.slice/system-train.slice/train@a\\x2db.service',
    { systemd_unit: 'train@a\\x2db.service' },
  ],
  [
    'hybrid: the first hierarchy that names a unit',
    '11:memory:/user.slice\n1:name=systemd:/system.slice/train.service\n0::/system.slice/train.service',
    { systemd_unit: 'train.service' },
  ],
  [
    'Slurm cgroup/v1: the job, not slurmd.service',
    '11:memory:/slurm/uid_1000/job_4242/step_0/task_0\n1:name=systemd:/system.slice/slurmd.service\n0::/',
    { slurm_job: '4242' },
  ],
  ['Slurm cgroup/v1, per-node mount (slurm_%n)', '4:cpuset:/slurm_node7/uid_1000/job_17/step_batch', { slurm_job: '17' }],
  [
    'Slurm cgroup/v2: the job, not slurmstepd.scope',
    '0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0',
    { slurm_job: '4242' },
  ],
  ['Slurm cgroup/v2, extern step', '0::/system.slice/slurmstepd.scope/job_4242/step_extern/user/task_special', { slurm_job: '4242' }],
  ['a job_ directory without a step is not Slurm', '0::/system.slice/runner.service/job_12', { systemd_unit: 'runner.service' }],
  ['a cgroup removed under the process', '0::/system.slice/train.service (deleted)', { systemd_unit: 'train.service' }],
  ['the root cgroup says nothing', '0::/', {}],
  [
    'Slurm cgroup/v2, several slurmd on one host (<node>_slurmstepd.scope)',
    '0::/system.slice/node7_slurmstepd.scope/job_17/step_0/user/task_0',
    { slurm_job: '17' },
  ],
  ['Slurm cgroup/v2, batch step', '0::/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0', { slurm_job: '4242' }],
  [
    'Docker shim in a pod, systemd driver',
    `0::/kubepods.slice/kubepods-pod${UID_}.slice/docker-${ID}.scope`,
    { container_id: ID, pod_uid: UID },
  ],
  [
    'Docker, systemd driver, v1 hybrid',
    `11:memory:/system.slice/docker-${ID}.scope\n1:name=systemd:/system.slice/docker-${ID}.scope\n0::/`,
    { container_id: ID },
  ],
  [
    'a Slurm job id is a uint32: 11 digits are no job',
    '0::/system.slice/slurmstepd.scope/job_42424242424/step_0',
    { systemd_unit: 'slurmstepd.scope' },
  ],
  [`a unit name of ${MAX_ATTRIBUTION_CHARS} characters`, `0::/system.slice/${LONGEST_UNIT}`, { systemd_unit: LONGEST_UNIT }],
  [`a unit name over ${MAX_ATTRIBUTION_CHARS} characters is no unit`, `0::/system.slice/x${LONGEST_UNIT}`, {}],
  // An exporter in a container with a cgroup namespace of its own (cgroup v2's default) reads the
  // other cgroups relative to its own: up to a common ancestor, then down.
  ['through a cgroup namespace: a sibling Docker container', `0::/../docker-${ID}.scope`, { container_id: ID }],
  [
    'through a cgroup namespace: a pod of another QoS class',
    `0::/../../../kubepods-besteffort.slice/kubepods-besteffort-pod${UID_}.slice/cri-containerd-${ID}.scope`,
    { container_id: ID, pod_uid: UID },
  ],
  ['through a cgroup namespace: a Slurm job', '0::/../../system.slice/slurmstepd.scope/job_4242/step_0/user/task_0', { slurm_job: '4242' }],
  // Recorded: the GPU machine's own shell (test/fixtures/hosts/attribution-recorded-h200-scope/SOURCE.md).
  ['a bare hex cgroup is no container', '0::/process_api/4bdc461b9986ee248fda9ccd8b9de51e', {}],
  ['a 64-hex segment outside /docker/ and a pod is no container', `0::/ci/${ID}`, {}],
  ['a short hex id under /docker/ is no container', '0::/docker/abc123', {}],
  ['not a cgroup file', 'garbage\n:\n12:memory\nx::/system.slice/a.service\n0::relative.service', {}],
  ['empty', '', {}],
];

// Below user@UID.service systemd delegates the subtree to the user, who may mkdir any name there:
// none of these is what it mimics. What is left is the deepest unit, named by that user.
const USER = '/user.slice/user-1000.slice/user@1000.service';
const spoofs: [title: string, cgroup: string, expected: Attribution][] = [
  ['Slurm v2 steps in an app slice', `0::${USER}/app.slice/job_4242/step_0`, { systemd_unit: 'user@1000.service' }],
  [
    'Slurm v2 under a scope named slurmstepd',
    `0::${USER}/app.slice/slurmstepd.scope/job_4242/step_0/user/task_0`,
    { systemd_unit: 'slurmstepd.scope', user_manager: 'user@1000.service' },
  ],
  ["Slurm v1's layout", `0::${USER}/slurm/uid_0/job_4242/step_0`, { systemd_unit: 'user@1000.service' }],
  [
    "Slurm v1's layout in the name=systemd hierarchy",
    `1:name=systemd:${USER}/slurm/uid_1000/job_4242/step_0\n0::/`,
    { systemd_unit: 'user@1000.service' },
  ],
  ['a Docker scope', `0::${USER}/app.slice/docker-${ID}.scope`, { systemd_unit: `docker-${ID}.scope`, user_manager: 'user@1000.service' }],
  ['a Docker cgroupfs directory', `0::${USER}/docker/${ID}`, { systemd_unit: 'user@1000.service' }],
  [
    'a pod slice and a containerd scope',
    `0::${USER}/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice/cri-containerd-${ID}.scope`,
    { systemd_unit: `cri-containerd-${ID}.scope`, user_manager: 'user@1000.service' },
  ],
  ["the kubelet's cgroupfs layout", `0::${USER}/kubepods/burstable/pod${UID}/${ID}`, { systemd_unit: 'user@1000.service' }],
  [
    'a CRI-O scope in a system.slice of its own',
    `0::${USER}/system.slice/crio-${ID}.scope`,
    { systemd_unit: `crio-${ID}.scope`, user_manager: 'user@1000.service' },
  ],
  // Rootless Podman puts its containers there too: its scope is the user's unit, not a container id.
  [
    'rootless Podman',
    `0::${USER}/user.slice/libpod-${ID}.scope/container`,
    { systemd_unit: `libpod-${ID}.scope`, user_manager: 'user@1000.service' },
  ],
  [
    'climbing out of a cgroup namespace into the user tree',
    `0::/../../..${USER}/app.slice/job_4242/step_0`,
    { systemd_unit: 'user@1000.service' },
  ],
];

describe('parseCgroup: spoofs in a user-delegated subtree', () => {
  it.each(spoofs)('%s', (_, cgroup, expected) => {
    expect(parseCgroup(cgroup)).toEqual(expected);
  });
});

describe('parseCgroup', () => {
  it.each(cases)('%s', (_, cgroup, expected) => {
    expect(parseCgroup(cgroup)).toEqual(expected);
  });
});

describe('cgroupPath', () => {
  it.each([
    ['0::/a', '/a'],
    ['4:cpu,cpuacct:/a/b', '/a/b'],
    ['1:name=systemd:/a:b', '/a:b'],
    ['0::/a (deleted)', '/a'],
    ['0::/../../a/b', '/a/b'],
    ['0::/..', '/'],
    ['0::/a/../b', '/a/../b'],
    ['0::', undefined],
    ['x::/a', undefined],
    ['/a', undefined],
  ])('%j -> %j', (line, path) => {
    expect(cgroupPath(line)).toBe(path);
  });
});
