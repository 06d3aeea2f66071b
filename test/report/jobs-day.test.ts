import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvCells } from '../../src/csvlog/read.js';
import { FAKE_SMI, FIXTURES, ROOT, capture, runCli, collectIn } from '../support/helpers.js';

// A simulated day on a 2 x H200 host (the recorded h200x2 load capture), replayed through the built
// program: one `collect --csv-dir` every 20 minutes under a fake clock (test/support/fake-clock.mjs),
// the stand-in nvidia-smi answering each time with that moment's utilization, power and processes,
// and a --host-root tree whose /proc/PID/cgroup files come from the recorded formats: Slurm
// cgroup/v1 and v2, Docker (systemd driver), containerd under Kubernetes, a systemd service. Then
// `report --by job` must give what this file works out on its own from the same schedule.

const STEP_MS = 20 * 60_000;
const SAMPLES = 72; // 24 h
const START = Date.UTC(2026, 10, 23, 0, 0, 0);
const GPUS = ['GPU-d9041e44-56fa-e7d7-44d1-12664904be3d', 'GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb'];
const BUS = ['00000000:00:06.0', '00000000:00:07.0'];
const SERIAL = ['1653924042984', '1654424169099'];
const HOSTS = join(FIXTURES, 'hosts');

interface Proc {
  pid: number;
  user: string;
  uid: number;
  /** The recorded cgroup format, and the Slurm job id to put in it. */
  tree: string;
  jobId?: string;
  job: { kind: string; id: string };
}
const PROCS: Record<string, Proc> = {
  slurmV1: { pid: 3001, user: 'alice', uid: 1000, tree: 'attribution-slurm-v1', jobId: '5151', job: { kind: 'slurm', id: '5151' } },
  slurmV2: { pid: 3002, user: 'bob', uid: 1001, tree: 'attribution-slurm-v2', job: { kind: 'slurm', id: '4242' } },
  docker: { pid: 3003, user: 'carol', uid: 1002, tree: 'attribution-docker-systemd-v2', job: { kind: 'container', id: '3f4e9c1d2b7a' } },
  pod: {
    pid: 3004,
    user: 'dave',
    uid: 1003,
    tree: 'attribution-k8s-containerd-systemd-v2',
    job: { kind: 'pod', id: '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6' },
  },
  unit: { pid: 3005, user: 'root', uid: 0, tree: 'attribution-systemd-service-v2', job: { kind: 'unit', id: 'train.service' } },
};

/** Who is on each GPU at sample i (20 minutes each), with memory in MiB, and the GPU's utilization. */
function schedule(i: number): { util: number; procs: { proc: Proc; mib: number }[] }[] {
  const gpu0 =
    i < 24
      ? { util: 90, procs: [{ proc: PROCS.slurmV1!, mib: 40_000 }] }
      : i < 42
        ? { util: 60, procs: [{ proc: PROCS.slurmV2!, mib: 60_000 }] }
        : i < 48
          ? { util: 70, procs: [{ proc: PROCS.unit!, mib: 20_000 }] }
          : i < 54
            ? { util: 0, procs: [{ proc: PROCS.unit!, mib: 20_000 }] } // held, idle: 2 h
            : { util: 0, procs: [] }; // idle and empty
  const gpu1Procs = [
    ...(i < 12 ? [{ proc: PROCS.docker!, mib: 8_000 }] : []),
    ...(i >= 6 && i < 18 ? [{ proc: PROCS.pod!, mib: 12_000 + i }] : []),
    ...(i >= 24 && i < 42 ? [{ proc: PROCS.slurmV2!, mib: 50_000 }] : []),
  ];
  const gpu1 = { util: i < 6 ? 40 : i < 12 ? 45 : i < 18 ? 55 : i < 24 ? 0 : i < 42 ? 60 : 0, procs: gpu1Procs };
  return [gpu0, gpu1];
}
const powerAt = (i: number, util: number) => 70 + 4 * util + (i % 5) + 0.25;

/** The host tree: passwd, and per pid its status (Uid) and its cgroup from the recorded format. */
async function hostTree(root: string): Promise<void> {
  await mkdir(join(root, 'etc'), { recursive: true });
  await writeFile(
    join(root, 'etc/passwd'),
    Object.values(PROCS)
      .map((p) => `${p.user}:x:${p.uid}:${p.uid}::/home/${p.user}:/bin/bash\n`)
      .join(''),
  );
  for (const proc of Object.values(PROCS)) {
    const dir = join(root, 'proc', String(proc.pid));
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'status'), `Name:\tpython3\nPid:\t${proc.pid}\nUid:\t${proc.uid}\t${proc.uid}\t${proc.uid}\t${proc.uid}\n`);
    const cgroup = await readFile(join(HOSTS, proc.tree, 'proc/2006/cgroup'), 'utf8');
    await writeFile(join(dir, 'cgroup'), proc.jobId ? cgroup.replaceAll('job_4242', `job_${proc.jobId}`) : cgroup);
  }
}

/** The capture the stand-in answers from at sample i: the recorded one with this moment's values and processes. */
async function setMoment(cap: string, recorded: string, i: number): Promise<void> {
  const [header, ...rows] = recorded.trimEnd().split('\n');
  const names = header!.split(', ');
  const col = (name: string) => names.indexOf(name);
  const gpus = schedule(i);
  const lines = rows.map((row, g) => {
    const cells = row.split(', ');
    const { util, procs } = gpus[g]!;
    cells[col('utilization.gpu [%]')] = `${util} %`;
    cells[col('power.draw [W]')] = `${powerAt(i, util).toFixed(2)} W`;
    cells[col('memory.used [MiB]')] = `${procs.reduce((sum, p) => sum + p.mib, 0)} MiB`;
    return cells.join(', ');
  });
  await writeFile(join(cap, 'query-gpu.csv'), `${[header, ...lines].join('\n')}\n`);
  const apps = gpus.flatMap(({ procs }, g) =>
    procs.map((p) => `2026/11/23 00:00:00.000, NVIDIA H200, ${BUS[g]}, ${SERIAL[g]}, ${GPUS[g]}, ${p.proc.pid}, python3, ${p.mib} MiB`),
  );
  await writeFile(
    join(cap, 'query-compute-apps.csv'),
    `timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n${apps.map((a) => `${a}\n`).join('')}`,
  );
}

const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '+00:00');

/** What report --by job must say, worked out from the schedule alone. */
function expected(): Record<string, unknown>[] {
  const jobs = new Map<
    string,
    {
      kind: string;
      id: string;
      user: string;
      gpus: Set<string>;
      perGpu: Map<number, number>;
      util: number[];
      idle: number;
      joules: number;
      peak: number;
      first: number;
      last: number;
    }
  >();
  for (let i = 0; i < SAMPLES; i++) {
    schedule(i).forEach(({ util, procs }, g) => {
      const power = powerAt(i, util);
      const holders = procs.length
        ? procs.map((p) => ({ ...p.proc.job, user: p.proc.user, mib: p.mib }))
        : [{ kind: 'none', id: '', user: '', mib: undefined }];
      for (const h of holders) {
        const key = `${h.kind}/${h.id}/${h.user}`;
        const j = jobs.get(key) ?? {
          kind: h.kind,
          id: h.id,
          user: h.user,
          gpus: new Set<string>(),
          perGpu: new Map<number, number>(),
          util: [],
          idle: 0,
          joules: 0,
          peak: 0,
          first: Infinity,
          last: -Infinity,
        };
        j.gpus.add(String(g));
        j.perGpu.set(g, (j.perGpu.get(g) ?? 0) + 1);
        j.util.push(util);
        if (util < 2) j.idle++;
        j.joules += (power / holders.length) * (STEP_MS / 1000);
        if (h.mib !== undefined) j.peak = Math.max(j.peak, h.mib);
        j.first = Math.min(j.first, START + i * STEP_MS);
        j.last = Math.max(j.last, START + i * STEP_MS);
        jobs.set(key, j);
      }
    });
  }
  const hours = (samples: number) => (samples * STEP_MS) / 3_600_000;
  return [...jobs.values()].map((j) => ({
    job_kind: j.kind,
    job_id: j.id,
    user: j.user,
    gpus: [...j.gpus].sort(),
    hours: hours(Math.max(...j.perGpu.values())),
    gpu_hours: hours(j.util.length),
    busy_percent: j.util.reduce((a, b) => a + b, 0) / j.util.length,
    idle_gpu_hours: hours(j.idle),
    energy_kwh: j.joules / 3_600_000,
    energy_split: 'time',
    ...(j.kind === 'none' ? {} : { peak_memory_mib: j.peak }),
    first_seen: iso(j.first),
    last_seen: iso(j.last),
  }));
}

describe('report --by job over a simulated day through the built program', () => {
  let dir: string;
  const report = (format: string) => runCli(['report', '--csv-dir', join(dir, 'csv'), '--by', 'job', '--format', format], { TZ: 'UTC' });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-jobs-'));
    const cap = join(dir, 'capture');
    await cp(capture('h200x2__580.159.04__linux-load'), cap, { recursive: true });
    const recorded = await readFile(join(cap, 'query-gpu.csv'), 'utf8');
    await hostTree(join(dir, 'host'));
    for (let i = 0; i < SAMPLES; i++) {
      await setMoment(cap, recorded, i);
      const args = collectIn(dir, '--csv-dir', join(dir, 'csv'), '--task', 'day');
      const result = await runCli([...args, '--nvidia-smi', FAKE_SMI, '--host-root', join(dir, 'host')], {
        TZ: 'UTC',
        FAKE_SMI_CAPTURE: cap,
        FAKE_CLOCK_START_MS: String(START + i * STEP_MS),
        NODE_OPTIONS: `--import=${join(ROOT, 'test/support/fake-clock.mjs')}`,
      });
      expect([i, result.exitCode, result.stderr]).toEqual([i, 0, '']);
    }
  }, 600_000);

  it('the trail names the jobs on each GPU, from every cgroup format', async () => {
    const lines = (await readFile(join(dir, 'csv/day.csv'), 'utf8')).trimEnd().split('\n');
    const header = csvCells(lines[0]!)!;
    expect(lines).toHaveLength(1 + 2 * SAMPLES);
    const cellAt = (line: number) => csvCells(lines[line]!)![header.indexOf('jobs')];
    // 02:00 (sample 6): GPU 0 Slurm v1, GPU 1 the container and the pod; 08:00 the Slurm v2 job on both.
    expect([cellAt(1 + 12), cellAt(2 + 12)]).toEqual([
      'slurm:5151:alice:40000:',
      'pod:7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6:dave:12006: container:3f4e9c1d2b7a:carol:8000:',
    ]);
    expect([cellAt(1 + 48), cellAt(2 + 48)]).toEqual(['slurm:4242:bob:60000:', 'slurm:4242:bob:50000:']);
    expect([cellAt(1 + 2 * 45), cellAt(1 + 2 * 60)]).toEqual(['unit:train.service:root:20000:', '-']);
  });

  it('JSON: hours, GPU-hours, busy, idle, energy, peak memory, first and last seen, user, as worked out from the schedule', async () => {
    const result = await report('json');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const rows = (JSON.parse(result.stdout) as { rows: Record<string, unknown>[] }).rows;
    const want = expected();
    expect(rows.map((r) => `${r.job_kind}/${r.job_id}`).sort()).toEqual(want.map((r) => `${r.job_kind}/${r.job_id}`).sort());
    for (const w of want) {
      const got = rows.find((r) => r.job_kind === w.job_kind && r.job_id === w.job_id)!;
      expect(got).toMatchObject({
        host: expect.any(String),
        task_id: 'day',
        user: w.user,
        gpus: w.gpus,
        energy_split: 'time',
        first_seen: w.first_seen,
        last_seen: w.last_seen,
      });
      for (const key of ['hours', 'gpu_hours', 'idle_gpu_hours'] as const)
        expect([w.job_id, key, got[key]]).toEqual([w.job_id, key, Math.round((w[key] as number) * 1e4) / 1e4]);
      expect(got.busy_percent).toBeCloseTo(w.busy_percent as number, 2);
      expect(got.energy_kwh).toBeCloseTo(w.energy_kwh as number, 6);
      expect(got.peak_memory_mib).toBe(w.peak_memory_mib);
    }
  });

  it('a held-but-idle job is a finding; the idle and empty GPUs are not, and show as the `none` line', async () => {
    const body = JSON.parse((await report('json')).stdout) as { findings: Record<string, unknown>[]; rows: Record<string, unknown>[] };
    const held = body.findings.filter((f) => f.kind === 'held_idle');
    expect(held).toEqual([
      expect.objectContaining({
        gpu_id: '0',
        job_kind: 'unit',
        job_id: 'train.service',
        user: 'root',
        longest_idle_hours: 2,
        idle_hours: 2,
      }),
    ]);
    // GPU 0 18:00-24:00 and GPU 1 06:00-08:00 and 14:00-24:00: 18 GPU-hours idle with nothing on them.
    expect(body.rows.find((r) => r.job_kind === 'none')).toMatchObject({ gpus: ['0', '1'], gpu_hours: 18, idle_gpu_hours: 18 });
  });

  it('CSV, the table and the HTML page give the same jobs', async () => {
    const json = JSON.parse((await report('json')).stdout) as { rows: Record<string, unknown>[] };
    const csv = (await report('csv')).stdout.trimEnd().split('\n');
    const header = csvCells(csv[0]!)!;
    expect(header.slice(0, 6)).toEqual(['host', 'task_id', 'job_kind', 'job_id', 'user', 'gpus']);
    expect(csv.slice(1).map((line) => csvCells(line)!)).toEqual(
      json.rows.map((r) => header.map((c) => (c === 'gpus' ? (r.gpus as string[]).join(' ') : String(r[c] ?? '')))),
    );
    const table = (await report('table')).stdout;
    for (const job of [
      'slurm 5151',
      'slurm 4242',
      'container 3f4e9c1d2b7a',
      'pod 7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6',
      'unit train.service',
      '(no job: idle and empty)',
    ])
      expect([job, table.includes(job)]).toEqual([job, true]);
    expect(table).toMatch(/held_idle .*GPU 0: held by unit train\.service \(root\)/);
    const html = (await report('html')).stdout;
    expect(html).toContain('<h2 id="jobs">Jobs</h2>');
    expect(html.match(/<tr class="job /g)).toHaveLength(json.rows.length);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
});
