import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { environ } from '../../../src/doctor/checks/environ.js';
import { readHostFacts } from '../../../src/doctor/facts.js';
import { hostAt } from '../../../src/host/host.js';
import { environAccess } from '../../../src/host/reservations.js';
import { tempDir } from '../../support/helpers.js';
import { HEALTHY, healthyFacts } from './healthy-host.js';

describe('environ', () => {
  it('passes on the healthy host: no job cgroup, no /proc/1/environ in the tree', async () => {
    const check = environ(await healthyFacts());
    expect([check.status, check.summary]).toEqual(['ok', 'no job cgroup on the host; environs open here']);
  });

  it("reads the healthy host's tree with a Slurm job added: its GPUs are read, or it is unknown, and says so", async () => {
    const root = await tempDir('doctor-environ-');
    try {
      await cp(HEALTHY, root, { recursive: true });
      const task = join(root, 'sys/fs/cgroup/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0');
      await mkdir(task, { recursive: true });
      await writeFile(join(root, 'sys/fs/cgroup/cgroup.controllers'), 'cpu\n');
      await writeFile(join(task, 'cgroup.procs'), '4343\n');
      await mkdir(join(root, 'proc/4343'), { recursive: true });
      await writeFile(join(root, 'proc/4343/environ'), 'SLURM_JOB_GPUS=0\0');
      const read = async () => (await readHostFacts(hostAt(root), new AbortController().signal)).facts;
      expect(environ(await read())).toMatchObject({ status: 'ok', summary: 'the reserved GPUs of 1 job(s) read' });
      // A directory where the environ was: it does not open, as for a reader without CAP_SYS_PTRACE.
      await rm(join(root, 'proc/4343/environ'));
      await mkdir(join(root, 'proc/4343/environ'));
      const check = environ(await read());
      expect([check.status, check.summary]).toEqual([
        'warn',
        'the reserved GPUs of 1 of 1 job(s) cannot be read: their environ does not open here',
      ]);
      expect(check.fix[0]).toContain('CapabilityBoundingSet=CAP_SYS_PTRACE');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("warns when another process's environ is refused, jobs or not", async () => {
    const facts = await healthyFacts();
    const check = environ({ ...facts, environ: { jobs: 0, unknown: 0, pid1: 'denied' } });
    expect([check.status, check.evidence]).toEqual(['warn', ['/proc/1/environ: permission denied']]);
  });

  it('tells an environ that opens from a missing one (a test tree, a pid namespace of its own)', async () => {
    const root = await tempDir('doctor-environ-');
    try {
      await mkdir(join(root, 'proc/1'), { recursive: true });
      await writeFile(join(root, 'proc/1/environ'), 'A=1\0');
      expect(environAccess(hostAt(root))).toBe('readable');
      expect(environAccess(hostAt(root), 2)).toBe('absent');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
