#!/usr/bin/env node
// `report --prometheus --by host`'s own cost at the issue's scales (issue 37: 40 hosts x 8 GPUs x 30
// days, and one 8-GPU host x 365 days; <= 10 s, <= 200 MB), against a store of this script's own that
// answers Prometheus's API at once with hourly aggregates of that many series (a job per GPU per day
// holding it, as under Slurm). What it measures is the report's part alone: its requests, their
// parsing, the hours it fills, the findings and the text; the store's part (scanning the samples) is
// bench/report-store.mjs's, on a real Prometheus at the scale this machine can backfill.
//
//   node bench/report-store-client.mjs [--hosts N] [--gpus G] [--days D] [--no-jobs] [--runs R] [--show]
//
// --serve starts the store alone and prints its URL (for a profiler run by hand against it).
// --show prints the first lines of `report --by job` from the same store, to see what it answers.
//
// Defaults: both of the scales, without jobs (as bench/make-history.mjs's trails, which the
// issue's measure backfills) and with a Slurm job per GPU a day (and the GPU free the rest), 3 runs each.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/gpu-textfile.js');
const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
};
const runs = arg('--runs') ?? 3;
const scales = arg('--hosts')
  ? [{ hosts: arg('--hosts'), gpus: arg('--gpus') ?? 8, days: arg('--days') ?? 30, jobs: !process.argv.includes('--no-jobs') }]
  : [
      { hosts: 40, gpus: 8, days: 30, jobs: false },
      { hosts: 1, gpus: 8, days: 365, jobs: false },
      { hosts: 40, gpus: 8, days: 30, jobs: true },
      { hosts: 1, gpus: 8, days: 365, jobs: true },
    ];

/** What a question's hourly value is for a GPU busy by day and idle by night (every series alike). */
function hourlyValue(expr, hour) {
  const busy = new Date(hour).getUTCHours() >= 8 ? 1 : 0;
  if (expr.includes('collector_error') || (expr.startsWith('count_over_time') && expr.includes(') - sum_over_time'))) return 0;
  if (expr.startsWith('count_over_time')) return 240;
  if (expr.includes('utilization_ratio[')) return busy ? 216 : 0;
  if (expr.includes('memory_used_bytes[')) return 40e9;
  if (expr.includes('memory_total_bytes[')) return 150e9;
  if (expr.includes('power_draw_watts[')) return busy ? 240 * 600 : 240 * 80;
  if (expr.includes('temperature_celsius[')) return 60;
  if (expr.startsWith('increase')) return busy ? 2.16e6 : 2.9e5;
  if (expr.includes('power_draw_watts')) return busy ? 600 : 80;
  return busy ? 0.1 : 0.9;
}

/** The series a question answers for: each GPU, each host, or each job holding a GPU that day. */
function seriesOf(expr, scale, day) {
  const out = [];
  // Without jobs, the store has no holder series: their questions answer nothing, as make-history's trails give.
  if (!scale.jobs && /holder|free|holders/.test(expr)) return out;
  for (let h = 1; h <= scale.hosts; h++)
    for (let g = 0; g < (expr.includes('collector_') ? 1 : scale.gpus); g++) {
      const labels = { instance: `host-${String(h).padStart(2, '0')}:9100`, task: 'train' };
      if (!expr.includes('collector_')) Object.assign(labels, { gpu: String(g), uuid: `GPU-${h}-${g}` });
      if (expr.includes('holder_info') || expr.includes('holder_idle'))
        Object.assign(labels, { job_kind: 'slurm', job_id: String(100_000 + (h * scale.gpus + g) * 1000 + day), user: `user${g}` });
      out.push(labels);
    }
  return out;
}

/** What `command` prints on stdout (and stderr, with `both`), once it has exited; a failure is thrown. */
function output(command, args, both = false) {
  return new Promise((done, fail) => {
    const child = spawn(command, args);
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    if (both) child.stderr.on('data', (c) => (out += c));
    child.on('exit', (code) => (code === 0 || both ? done(out) : fail(new Error(`${command} exited ${code}`))));
  });
}

function answer(path, form, scale) {
  if (path.endsWith('/series'))
    return form.getAll('match[]').some((m) => m.startsWith('nvidia_gpu_collector_success'))
      ? [...seriesOf('nvidia_gpu_collector_success', scale, 0), ...seriesOf('nvidia_gpu_up', scale, 0)]
      : [];
  const expr = form.get('query');
  if (path.endsWith('/query') && /\[\d+ms\]$/.test(expr)) {
    // The raw collection times of the report's last hours (its timeline): every 15 s.
    const time = Number(form.get('time')) * 1000;
    return {
      resultType: 'matrix',
      result: seriesOf(expr, scale, 0).map((metric) => ({
        metric,
        values: Array.from({ length: 240 }, (_, i) => [(time - (240 - i) * 15_000) / 1000, '1']),
      })),
    };
  }
  const [start, end, step] = path.endsWith('/query_range')
    ? [Number(form.get('start')) * 1000, Number(form.get('end')) * 1000, Number(form.get('step')) * 1000]
    : [Number(form.get('time')) * 1000, Number(form.get('time')) * 1000, HOUR];
  const byDay = new Map();
  for (let t = start; t <= end; t += step) {
    const day = Math.floor((t - START) / 86_400_000);
    for (const metric of seriesOf(expr, scale, day)) {
      const id = JSON.stringify(metric);
      if (!byDay.has(id)) byDay.set(id, { metric, values: [] });
      byDay.get(id).values.push([t / 1000, String(hourlyValue(expr, t))]);
    }
  }
  const result = [...byDay.values()];
  return path.endsWith('/query_range')
    ? { resultType: 'matrix', result }
    : { resultType: 'vector', result: result.map(({ metric, values }) => ({ metric, value: values[0] })) };
}

console.log('| scale | wall | CPU | peak RSS | exit |');
console.log('|---|---|---|---|---|');
for (const scale of scales) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'success', data: answer(req.url, new URLSearchParams(body), scale) }));
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${server.address().port}`;
  if (process.argv.includes('--serve')) {
    // Only the store, until killed: for a profiler run by hand against it.
    console.log(url);
    await new Promise(() => {});
  }
  const since = new Date(START).toISOString();
  const until = new Date(START + scale.days * 86_400_000).toISOString();
  // measure.py runs the report as a child of its own; this process answers it meanwhile.
  const report = (by) => [CLI, 'report', '--prometheus', url, '--since', since, '--until', until, '--by', by];
  const measured = JSON.parse(
    await output('python3', [join(ROOT, 'bench/measure.py'), String(runs), '--', process.execPath, ...report('host')]),
  );
  if (process.argv.includes('--show')) {
    // The report itself once, to see that the store's answers make one (findings, jobs, summary).
    const shown = await output(process.execPath, report(process.argv.includes('--show-host') ? 'host' : 'job'), true);
    console.log(shown.split('\n').slice(0, 30).join('\n'));
  }
  server.close();
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    `| ${scale.hosts} hosts x ${scale.gpus} GPUs x ${scale.days} days, ${scale.jobs ? 'a job per GPU a day' : 'no jobs'} | ${median(measured.wall).toFixed(2)} s | ${median(measured.cpu).toFixed(2)} s | ${Math.round(median(measured.maxrss_kib) / 1024)} MiB | ${measured.exit.join(',')} |`,
  );
}
