import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateRows, HEADER } from '../../../src/report/history-generator.js';
import { FIVE_MINUTE } from '../../../src/report/store/queries.js';
import { eventually, ROOT, runCli, tempDir } from '../../support/helpers.js';
import { freePort } from '../../support/node-exporter.js';
import { startPrometheus } from '../../support/prometheus.js';

// One report, two doors: a generated fleet's trail (3 hosts x 2 GPUs x 3 days at 15 s, with jobs,
// an idle holder, a memory leak, a host's gap, a GPU's own gap and failed samples) reported from its
// CSV files, and from a real Prometheus after `export` and promtool's backfill. The store answers
// from hourly aggregates, so sums may differ by a sample at an hour's edge: within the issue's
// bounds (GPU-hours 1 %, busy share 1 point, energy 2 %), peaks equal, the same findings and jobs.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
// Recent (inside Prometheus's default 15 days of retention), on a whole UTC day.
const START = Math.floor(Date.now() / DAY) * DAY - 5 * DAY;
const END = START + 3 * DAY;

/** The fleet: each host's rows, written as its collector would (`DIR/<host>/train.csv`). */
function fleet(): Record<string, string[]> {
  const common = { start: START, hours: 72, intervalSeconds: 15, task: 'train' };
  return {
    'gpu-a': generateRows({
      ...common,
      host: 'gpu-a',
      seed: 1,
      gpus: ['training', 'leak'],
      // GPU 1 lost for a quarter hour: its own failed samples.
      fail: (gpu, h) => (gpu === 1 && h >= 30 && h < 30.25 ? 'gpu_lost' : undefined),
      jobs: (gpu, h) => (gpu === 0 ? (h < 40 ? 'slurm:1001:alice:60000:90' : '-') : 'slurm:1002:alice:8000:40'),
      // Reserved by the jobs that run on them; GPU 0 still by 1001 for 8 hours after it stopped.
      reserved: (gpu, h) => (gpu === 0 ? (h < 48 ? 'slurm:1001:alice' : '-') : 'slurm:1002:alice'),
    }),
    'gpu-b': generateRows({
      ...common,
      host: 'gpu-b',
      seed: 2,
      gpus: ['idleWithMemory', 'busy'],
      // The collector down for an hour and a half: every GPU missed it.
      skip: (_gpu, h) => h >= 50 && h < 51.5,
      jobs: (gpu) => (gpu === 0 ? 'slurm:2002:bob:30000:0' : 'slurm:2003:carol:50000:95'),
      // GPU 1 also reserved, from hour 10, by a job that never runs anything on it (reserved_idle).
      reserved: (gpu, h) => (gpu === 0 ? 'slurm:2002:bob' : h >= 10 ? 'slurm:2003:carol slurm:2004:frank' : 'slurm:2003:carol'),
    }),
    'gpu-c': generateRows({
      ...common,
      host: 'gpu-c',
      seed: 3,
      gpus: ['waiting', 'training'],
      // A failed collection (both GPUs' rows carry the reason) and GPU 1's own gap of an hour.
      fail: (_gpu, h) => (h >= 20 && h < 20.1 ? 'nvidia_smi_failed' : undefined),
      skip: (gpu, h) => gpu === 1 && h >= 60 && h < 61,
      jobs: (gpu, h) => (gpu === 0 ? (h < 36 ? 'slurm:3001:dave:50000:10' : 'slurm:3002:erin:50000:10') : '-'),
      // Its reservations were not read (an empty cell): its jobs have no reserved columns.
      reserved: () => '',
    }),
  };
}

async function writeFleet(): Promise<string> {
  const dir = await tempDir('gpu-textfile-doors-');
  for (const [host, rows] of Object.entries(fleet())) {
    await mkdir(join(dir, host));
    await writeFile(join(dir, host, 'train.csv'), `${HEADER},jobs,reserved\n${rows.join('\n')}\n`);
  }
  return dir;
}

type Row = Record<string, unknown>;
const span = ['--since', new Date(START).toISOString(), '--until', new Date(END).toISOString()];

async function reportJson(args: string[], by: string): Promise<{ rows: Row[]; findings: Row[] }> {
  const run = await runCli(['report', ...args, ...span, '--by', by, '--format', 'json'], {}, 300_000);
  expect(run.exitCode, run.stderr).toBe(0);
  expect(run.stderr).toBe('');
  return JSON.parse(run.stdout) as { rows: Row[]; findings: Row[] };
}

const near = (actual: unknown, expected: unknown, share: number, what: string) =>
  expect(Math.abs(Number(actual) - Number(expected)), `${what}: ${actual} against ${expected}`).toBeLessThanOrEqual(
    Math.abs(Number(expected)) * share + 1e-9,
  );

/** The CSV door's report and the store's, side by side, by host, job and day. */
async function compareDoors(trail: string, store: string[]): Promise<void> {
  const csv = ['--csv-dir', trail];
  const [csvHosts, storeHosts] = [await reportJson(csv, 'host'), await reportJson(store, 'host')];
  expect(storeHosts.rows.map((r) => r.host)).toEqual(csvHosts.rows.map((r) => r.host));
  csvHosts.rows.forEach((c, i) => {
    const s = storeHosts.rows[i]!;
    near(s.gpu_hours, c.gpu_hours, 0.01, `${c.host} GPU-hours`);
    near(s.busy_percent, c.busy_percent, 0, `${c.host} busy`);
    expect(Math.abs(Number(s.busy_percent) - Number(c.busy_percent))).toBeLessThanOrEqual(1);
    near(s.energy_kwh, c.energy_kwh, 0.02, `${c.host} energy`);
    expect(s.peak_memory_used_mib, `${c.host} peak memory`).toBe(c.peak_memory_used_mib);
    expect(s.gpus).toBe(c.gpus);
    expect(s.error_samples, `${c.host} errors`).toBe(c.error_samples);
  });
  const kinds = (findings: Row[]) => findings.map((f) => `${f.kind} ${f.host} ${f.gpu_id}`);
  expect(kinds(storeHosts.findings)).toEqual(kinds(csvHosts.findings));
  // The planted findings are there (not two empty lists agreeing).
  expect(kinds(csvHosts.findings)).toEqual(
    expect.arrayContaining([
      'collection_gaps gpu-b ',
      'collection_gaps gpu-c 1',
      'errors gpu-a 1',
      'errors gpu-c 0',
      'held_idle gpu-b 0',
      'idle gpu-b 0',
      'reserved_idle gpu-a 0',
      'reserved_idle gpu-b 1',
      'memory_growth gpu-a 1',
    ]),
  );

  const [csvJobs, storeJobs] = [await reportJson(csv, 'job'), await reportJson(store, 'job')];
  const jobKey = (r: Row) => `${r.host} ${r.job_kind} ${r.job_id} ${r.user} ${String(r.gpus)}`;
  expect(storeJobs.rows.map(jobKey).sort()).toEqual(csvJobs.rows.map(jobKey).sort());
  for (const c of csvJobs.rows) {
    const s = storeJobs.rows.find((r) => jobKey(r) === jobKey(c))!;
    near(s.gpu_hours, c.gpu_hours, 0.01, `${jobKey(c)} GPU-hours`);
    // A job that reserved GPUs and ran nothing has no busy share or energy, through either door.
    expect(s.busy_percent === undefined, `${jobKey(c)} busy known`).toBe(c.busy_percent === undefined);
    if (c.busy_percent !== undefined) {
      expect(Math.abs(Number(s.busy_percent) - Number(c.busy_percent)), `${jobKey(c)} busy`).toBeLessThanOrEqual(1);
      near(s.energy_kwh, c.energy_kwh, 0.02, `${jobKey(c)} energy`);
    }
    // What it reserved beside what it used: the same GPUs, hours within 1 %; none where not read.
    expect(s.reserved_gpus, `${jobKey(c)} reserved`).toEqual(c.reserved_gpus);
    expect(s.reserved_gpu_hours === undefined, `${jobKey(c)} reserved known`).toBe(c.reserved_gpu_hours === undefined);
    if (c.reserved_gpu_hours !== undefined) {
      near(s.reserved_gpu_hours, c.reserved_gpu_hours, 0.01, `${jobKey(c)} reserved GPU-hours`);
      near(s.reserved_idle_gpu_hours, c.reserved_idle_gpu_hours, 0.01, `${jobKey(c)} reserved idle GPU-hours`);
    }
  }
  // The planted reservations are there: one never used, one kept 8 hours after its job stopped.
  const reservedIdle = (rows: Row[]) => rows.filter((r) => Number(r.reserved_idle_gpu_hours) > 0).map(jobKey);
  expect(reservedIdle(csvJobs.rows)).toEqual(expect.arrayContaining(['gpu-a slurm 1001 alice 0', 'gpu-b slurm 2004 frank ']));
  expect(csvJobs.rows.filter((r) => r.host === 'gpu-c').every((r) => r.reserved_gpus === undefined)).toBe(true);

  // --host and --task choose the same GPUs through either door.
  const only = ['--host', 'gpu-b', '--task', 'train'];
  const [csvOne, storeOne] = [await reportJson([...csv, ...only], 'gpu'), await reportJson([...store, ...only], 'gpu')];
  const gpuKey = (r: Row) => `${r.host} ${r.task_id} ${r.gpu_id} ${r.gpu_uuid}`;
  expect(storeOne.rows.map(gpuKey)).toEqual(csvOne.rows.map(gpuKey));
  expect(csvOne.rows.map((r) => r.host)).toEqual(['gpu-b', 'gpu-b']);
  const other = await runCli(['report', ...store, ...span, '--task', 'other']);
  expect(other.exitCode).toBe(1);
  expect(other.stderr).toMatch(
    /no nvidia_gpu_collector_success or nvidia_gpu_up series of task other .*looked for nvidia_gpu_collector_success\{task=~"other"\}/,
  );

  const [csvDays, storeDays] = [await reportJson(csv, 'day'), await reportJson(store, 'day')];
  const dayKey = (r: Row) => `${r.period} ${r.host} ${r.gpu_id}`;
  expect(storeDays.rows.map(dayKey)).toEqual(csvDays.rows.map(dayKey));
  csvDays.rows.forEach((c, i) => {
    const s = storeDays.rows[i]!;
    near(s.samples, c.samples, 0.01, `${dayKey(c)} samples`);
    expect(Math.abs(Number(s.avg_utilization_percent) - Number(c.avg_utilization_percent))).toBeLessThanOrEqual(1);
    expect(s.max_memory_used_mib).toBe(c.max_memory_used_mib);
    near(s.avg_power_draw_w, c.avg_power_draw_w, 0.02, `${dayKey(c)} power`);
  });
}

/**
 * `file`'s rules (examples/prometheus/) evaluated by promtool over the trail up to `end` from
 * `prometheus`'s answers, which is then stopped, and their blocks moved into `dir`/tsdb. promtool is
 * given the file by that name, as a Prometheus loading it from there would: a group's evaluations
 * fall at an offset within its interval that is a hash of its name and the file's path.
 */
async function backfillRules(prometheus: { port: number; stop: () => Promise<void> }, file: string, end: number, dir: string) {
  const blocks = join(dir, `${file}-blocks`);
  const evaluated = await execa(
    'promtool',
    [
      'tsdb',
      'create-blocks-from',
      'rules',
      '--quiet',
      `--start=${START / 1000}`,
      `--end=${end / 1000}`,
      `--url=http://127.0.0.1:${prometheus.port}`,
      `--output-dir=${blocks}`,
      file,
    ],
    { cwd: join(ROOT, 'examples/prometheus'), reject: false, timeout: 300_000, all: true },
  );
  expect(evaluated.exitCode, evaluated.all).toBe(0);
  await prometheus.stop();
  for (const block of await readdir(blocks)) await rename(join(blocks, block), join(dir, 'tsdb', block));
}

describe('report --prometheus against report --csv-dir on the same trail', () => {
  it('Prometheus, backfilled with promtool from export', { timeout: 600_000 }, async () => {
    const trail = await writeFleet();
    const data = await tempDir('gpu-textfile-doors-prometheus-');
    const file = join(data, 'trail.om');
    const exported = await runCli(['export', '--csv-dir', trail, '--out', file], {}, 300_000);
    expect(exported.exitCode, exported.stderr).toBe(0);
    const blocks = await execa('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', file, join(data, 'tsdb')], {
      reject: false,
      timeout: 300_000,
    });
    expect(blocks.exitCode, blocks.stderr).toBe(0);
    const prometheus = await startPrometheus(data, { scrape_configs: [] });
    onTestFinished(() => prometheus.stop());
    const loaded = await eventually(
      async () => (await prometheus.query('count(nvidia_gpu_up)', END / 1000 - 60).catch(() => [])).length > 0,
      120_000,
    );
    expect(loaded, prometheus.log()).toBe(true);
    await compareDoors(trail, ['--prometheus', `http://127.0.0.1:${prometheus.port}`]);

    // The report's recording rules backfilled over the same trail (as a site adding them to a store
    // with history would): the report then reads them instead of its subqueries (rules.test.ts), and
    // must say the same.
    await backfillRules(prometheus, 'gpu-textfile-report.rules.yml', END, data);
    const withRules = await startPrometheus(data, { scrape_configs: [] });
    onTestFinished(() => withRules.stop());
    await withRules.ready();
    // Both sets of rules are there, over the trail's jobs too.
    for (const rule of ['gpu_textfile:idle_held:bool', 'gpu_textfile:free:bool', 'gpu_textfile:holder_power:watts'])
      expect((await withRules.query(`count(${rule})`, END / 1000 - 60)).length, rule).toBe(1);
    await compareDoors(trail, ['--prometheus', `http://127.0.0.1:${withRules.port}`]);

    // The five-minute rules over it too, evaluated where a live Prometheus loading the file by this
    // name would: at the group's own offset within the five minutes (a hash of its name and the
    // file's path as given, 72.6 s here), so each hour read from them starts before the clock hour.
    // The report then reads them in the hours they cover, and must still say the same. Their windows
    // end a minute before each evaluation: evaluated past END, the last ones hold the trail's end.
    await backfillRules(withRules, 'gpu-textfile-report-5m.rules.yml', END + 360_000, data);
    // Its query log shows which series the report read.
    const queryLog = join(data, 'queries.log');
    const withFiveMinutes = await startPrometheus(data, { global: { query_log_file: queryLog }, scrape_configs: [] });
    onTestFinished(() => withFiveMinutes.stop());
    await withFiveMinutes.ready();
    for (const rule of [FIVE_MINUTE.successCount, FIVE_MINUTE.holderPowerSum, FIVE_MINUTE.reservedIdleSum])
      expect((await withFiveMinutes.query(`count(${rule})`, END / 1000 - 60)).length, rule).toBe(1);
    const five = await withFiveMinutes.query(`count(count_over_time(${FIVE_MINUTE.successCount}[1h]))`, END / 1000 - 60);
    expect(five.length).toBe(1);
    await compareDoors(trail, ['--prometheus', `http://127.0.0.1:${withFiveMinutes.port}`]);
    // Read from the five-minute set (in the hours it covers, which are not the range's first and last).
    const logged = await readFile(queryLog, 'utf8');
    expect(logged).toContain(`sum_over_time(${FIVE_MINUTE.utilSum}`);
    expect(logged).toContain(`sum_over_time(${FIVE_MINUTE.holderPowerSum}`);
  });

  it('VictoriaMetrics, filled through its import API from export', { timeout: 600_000 }, async () => {
    const trail = await writeFleet();
    // To a file: the text is larger than what execa keeps of a child's stdout.
    const file = join(await tempDir('gpu-textfile-doors-vm-text-'), 'trail.prom');
    const exported = await runCli(['export', '--csv-dir', trail, '--format', 'prometheus', '--out', file], {}, 300_000);
    expect(exported.exitCode, exported.stderr).toBe(0);
    const text = await readFile(file, 'utf8');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let log = '';
    const victoria = spawn(
      'victoria-metrics',
      [
        `-storageDataPath=${await tempDir('gpu-textfile-doors-vm-')}`,
        `-httpListenAddr=127.0.0.1:${port}`,
        '-retentionPeriod=100y',
        '-loggerLevel=WARN',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    victoria.stdout.on('data', (chunk) => (log += chunk));
    victoria.stderr.on('data', (chunk) => (log += chunk));
    const exited = new Promise<void>((resolve) => victoria.once('exit', () => resolve()));
    onTestFinished(async () => {
      if (victoria.exitCode === null) victoria.kill('SIGTERM');
      await exited;
    });
    const up = await eventually(async () => (await fetch(`${base}/health`).catch(() => undefined))?.ok === true, 120_000);
    expect(up, log).toBe(true);
    // In bodies of about a MiB, cut between lines: one body of tens of MB is more than a test needs to hold twice.
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; ) {
      let body = '';
      while (i < lines.length && body.length < 1_048_576) body += `${lines[i++]}\n`;
      const imported = await fetch(`${base}/api/v1/import/prometheus`, { method: 'POST', body });
      expect(imported.status, log).toBe(204);
    }
    expect((await fetch(`${base}/internal/force_flush`)).status).toBe(200);
    // Searchable once every collection is there: VictoriaMetrics indexes what it took in the background.
    const collections = new Set(Object.values(fleet()).flatMap((rows) => rows.map((row) => row.split(',', 2).join(',')))).size;
    const count = `sum(count_over_time(nvidia_gpu_collector_success[4d]))`;
    const searchable = await eventually(async () => {
      const answer = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(count)}&time=${END / 1000}`).catch(() => undefined);
      const body = (await answer?.json().catch(() => undefined)) as { data?: { result?: { value: [number, string] }[] } } | undefined;
      return Number(body?.data?.result?.[0]?.value[1]) === collections;
    }, 120_000);
    expect(searchable, log).toBe(true);
    await compareDoors(trail, ['--prometheus', base]);
  });
});
