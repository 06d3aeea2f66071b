import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXTURES, ROOT, capture, runCli, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// Energy split by per-process SM utilisation, where NVML gives it: `collect --source nvml` through
// the built program against the NVML stand-in, six samples 20 minutes apart under the fake clock.
// GPU 0 draws 400 W with two Slurm jobs on it (cgroup v1 and v2 formats) whose processes run the SMs
// 30 % and 10 % of the time: the report gives them 3/4 and 1/4 of GPU 0's energy, and says `sm`.

const STEP_MS = 20 * 60_000;
const SAMPLES = 6;
const START = Date.UTC(2026, 10, 24, 6, 0, 0);

describe('report --by job: energy split by SM utilisation with --source nvml', () => {
  it('splits GPU 0’s energy 3:1 between the two jobs on it and says so', async () => {
    const dir = await tempDir();
    const host = join(dir, 'host');
    await mkdir(join(host, 'etc'), { recursive: true });
    await writeFile(join(host, 'etc/passwd'), 'alice:x:1000:1000::/home/alice:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/bash\n');
    for (const [pid, uid, tree, job] of [
      [3001, 1000, 'attribution-slurm-v1', '5151'],
      [3002, 1001, 'attribution-slurm-v2', '4242'],
    ] as const) {
      await mkdir(join(host, 'proc', String(pid)), { recursive: true });
      await writeFile(join(host, 'proc', String(pid), 'status'), `Name:\tpython3\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
      const cgroup = await readFile(join(FIXTURES, 'hosts', tree, 'proc/2006/cgroup'), 'utf8');
      await writeFile(join(host, 'proc', String(pid), 'cgroup'), cgroup.replaceAll('job_4242', `job_${job}`));
    }
    const cap = join(dir, 'capture');
    await cp(capture('h200x2__580.159.04__linux-load'), cap, { recursive: true });
    const config = join(dir, 'stand-in.conf');
    const GIB = 1024 ** 3;
    await writeFile(
      config,
      standInConfig(cap, [
        '0.util_gpu=50',
        '0.power_mw=400000',
        `0.procs=3001:${40 * GIB},3002:${10 * GIB}`,
        'name.3001=python3',
        'name.3002=python3',
        '0.putil=3001:30:5:1,3002:10:5:1',
        '1.procs=',
      ]),
    );
    for (let i = 0; i < SAMPLES; i++) {
      const args = ['collect', '--source', 'nvml', '--nvml-library', standInLibrary(), '--host-root', host];
      const out = [
        '--textfile-dir',
        madeDir(join(dir, 't')),
        '--state-dir',
        join(dir, 's'),
        '--csv-dir',
        join(dir, 'csv'),
        '--task',
        'nvml',
      ];
      const result = await runCli([...args, ...out], {
        TZ: 'UTC',
        NVML_STAND_IN: config,
        FAKE_CLOCK_START_MS: String(START + i * STEP_MS),
        NODE_OPTIONS: `--import=${join(ROOT, 'test/support/fake-clock.mjs')}`,
      });
      expect([i, result.exitCode, result.stderr]).toEqual([i, 0, '']);
    }
    const trail = await readFile(join(dir, 'csv/nvml.csv'), 'utf8');
    // Then `reserved`: empty, not known (this host tree has no cgroup tree to read it from).
    expect(trail).toContain(',slurm:5151:alice:40960:30 slurm:4242:bob:10240:10,\n');

    const report = await runCli(['report', '--csv-dir', join(dir, 'csv'), '--by', 'job', '--format', 'json'], { TZ: 'UTC' });
    expect([report.exitCode, report.stderr]).toEqual([0, '']);
    const rows = (JSON.parse(report.stdout) as { rows: Record<string, unknown>[] }).rows;
    const job = (id: string) => rows.find((r) => r.job_id === id)!;
    // 6 samples x 20 min = 2 h at 400 W: 0.8 kWh, 0.6 to the job at 30 % of the SMs, 0.2 to the one at 10 %.
    expect(job('5151')).toMatchObject({ user: 'alice', gpus: ['0'], gpu_hours: 2, energy_split: 'sm', sm_percent: 30, busy_percent: 50 });
    expect(job('4242')).toMatchObject({ user: 'bob', gpus: ['0'], gpu_hours: 2, energy_split: 'sm', sm_percent: 10 });
    expect(job('5151').energy_kwh).toBeCloseTo(0.6, 6);
    expect(job('4242').energy_kwh).toBeCloseTo(0.2, 6);
  }, 120_000);
});
