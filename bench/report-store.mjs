#!/usr/bin/env node
// `report --prometheus --by host` beside `report --csv-dir --by host` on the same generated trail,
// backfilled into a local Prometheus (issue 37's measure): wall, CPU and peak RSS of each (wait4(),
// measure.py), the Prometheus process's own CPU time over the store's report, `export` rows per
// second and promtool's backfill time.
//
//   node bench/report-store.mjs [--hosts N] [--gpus G] [--days D] [--runs R] [--plain-runs R] [--data DIR] [--rules | --five-minute-rules] [--node PATH]
//
// Defaults: 2 hosts x 8 GPUs x 2 days (about 2 minutes here: export ~25k rows/s). The issue's scales
// are `--hosts 40 --gpus 8 --days 30` and `--hosts 1 --gpus 8 --days 365`: 55 M and 17 M rows at
// 15 s, an hour or more of trail-making, export and backfill on two cores. --data keeps the trail,
// the export and the blocks for the next run (made once). --plain-runs: fewer runs against the store
// without rules (40 hosts' month takes minutes a run there; 0: none). --node: the Node.js the two
// reports run on (default: this one), e.g. the packages' (node_modules/.cache/gpu-textfile-runtimes/,
// made by the packaging tests): its young generation is V8's, and V8's sizes differ by version.
//
// The trail is exported a day at a time (`export --since --until`), one promtool backfill per day,
// two days at once: Debian's promtool (2.42) has no --max-block-duration, cuts 2 h blocks and reads
// its whole input once per block, so one file of 30 days is read 360 times (one 8-GPU host x 30 days
// was still in promtool after 23 minutes). A day's file is read 12 times. Prometheus then compacts
// the 2 h blocks as it would its own (up to 31 days): the report is measured once the block count
// stops falling.
// --rules adds two stores: the blocks with gpu-textfile-report.rules.yml backfilled from the plain
// store's answers, and those with gpu-textfile-report-5m.rules.yml too; --five-minute-rules adds
// only the second, beside the plain blocks. The rules are backfilled by bench/backfill-rules.mjs, on
// the grid promtool puts the group's evaluations on (given the file by its name in
// examples/prometheus, as a live Prometheus's offset is a hash of the path it loads), and checked
// against promtool's own backfill of the first day: promtool itself writes a block per rule and 2 h
// (149,000 for the five-minute set over a year, some six hours here).
import { execFile, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { backfillRules, checkAgainstPromtool } from './backfill-rules.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/gpu-textfile.js');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const [hosts, gpus, days, runs] = [Number(arg('--hosts', 2)), Number(arg('--gpus', 8)), Number(arg('--days', 2)), Number(arg('--runs', 3))];
const data = resolve(arg('--data', `/tmp/gpu-textfile-store-${hosts}x${gpus}x${days}`));
const trail = join(data, 'trail');
const text = join(data, 'openmetrics');
const tsdb = join(data, 'tsdb');
// --rules: also the report against a copy of the store with the report's recording rules backfilled,
// and against another with the five-minute rules beside them.
const withRules = process.argv.includes('--rules');
const withFiveMinutes = withRules || process.argv.includes('--five-minute-rules');
const rulesTsdb = join(data, 'tsdb-rules');
const fiveMinuteTsdb = join(data, 'tsdb-rules-5m');

const seconds = (from) => (performance.now() - from) / 1000;
const plainRuns = Number(arg('--plain-runs', runs));
const measure = (command, times = runs) =>
  JSON.parse(execFileSync('python3', [join(ROOT, 'bench/measure.py'), String(times), '--', ...command], { maxBuffer: 1 << 24 }));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

mkdirSync(data, { recursive: true });
const made = {};
if (!existsSync(trail)) {
  const t = performance.now();
  execFileSync(process.execPath, [join(ROOT, 'bench/make-history.mjs'), trail, String(days), String(gpus), '--hosts', String(hosts)], {
    stdio: 'inherit',
  });
  made.trail_s = seconds(t);
}
if (!existsSync(tsdb)) {
  mkdirSync(text, { recursive: true });
  const spent = { export: 0, backfill: 0 };
  const run = (command, args) =>
    new Promise((done, fail) => {
      const t = performance.now();
      execFile(command, args, { maxBuffer: 1 << 24 }, (error) => (error ? fail(error) : done(seconds(t))));
    });
  // Two days at once (a core each): the export and promtool are single-threaded.
  let next = 0;
  const worker = async () => {
    while (next < days) {
      const day = next++;
      const from = new Date(Date.UTC(2026, 0, 1) + day * 86_400_000).toISOString();
      const to = new Date(Date.UTC(2026, 0, 1) + (day + 1) * 86_400_000).toISOString();
      const file = join(text, `day-${String(day).padStart(3, '0')}.om`);
      spent.export += await run(process.execPath, [CLI, 'export', '--csv-dir', trail, '--since', from, '--until', to, '--out', file]);
      spent.backfill += await run('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', file, `${tsdb}.part`]);
      rmSync(file);
    }
  };
  const t = performance.now();
  await Promise.all([worker(), worker()]);
  renameSync(`${tsdb}.part`, tsdb);
  // CPU-ish seconds of each (summed over the two at once), and the wall of both.
  [made.export_s, made.backfill_s, made.export_and_backfill_wall_s] = [spent.export, spent.backfill, seconds(t)];
}
writeFileSync(join(data, 'prometheus.yml'), '{}\n');
const freePort = () =>
  new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port: p } = server.address();
      server.close(() => done(p));
    });
  });

/** Prometheus on `dir`, once ready and done compacting: its URL, its CPU seconds so far, and how to stop it. */
async function storeOn(dir) {
  const port = await freePort();
  const prometheus = spawn(
    'prometheus',
    [
      `--config.file=${join(data, 'prometheus.yml')}`,
      `--storage.tsdb.path=${dir}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=100y',
      '--log.level=warn',
    ],
    { stdio: 'ignore' },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = () =>
    new Promise((done) => {
      if (prometheus.exitCode !== null) return done();
      prometheus.once('exit', () => done());
      prometheus.kill('SIGTERM');
    });
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 1200) throw new Error('prometheus did not get ready in 10 minutes');
      await new Promise((r) => setTimeout(r, 500));
    }
    // Until Prometheus has compacted the backfilled 2 h blocks as it would have its own: the count of
    // blocks unchanged for two minutes (it plans a compaction a minute).
    const blocks = () => readdirSync(dir).filter((name) => /^[0-9A-Z]{26}$/.test(name)).length;
    const settle = performance.now();
    for (let last = blocks(), since = performance.now(); performance.now() - since < 120_000; ) {
      await new Promise((r) => setTimeout(r, 5000));
      const now = blocks();
      if (now !== last) [last, since] = [now, performance.now()];
    }
    const cpu = () => {
      const fields = readFileSync(`/proc/${prometheus.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    };
    return { url, cpu, stop, compaction_s: seconds(settle) - 120, blocks: blocks() };
  } catch (error) {
    await stop();
    throw error;
  }
}

// The span the trail covers (make-history starts 2026-01-01 UTC).
const since = new Date(Date.UTC(2026, 0, 1)).toISOString();
const until = new Date(Date.UTC(2026, 0, 1) + days * 86_400_000).toISOString();
const reportNode = resolve(arg('--node', process.execPath));
const report = (door) => [reportNode, CLI, 'report', ...door, '--since', since, '--until', until, '--by', 'host'];
/** The store's report over `store`: the report's own measure, and the store's CPU seconds per run. */
const storeReport = (store, times = runs) => {
  const before = store.cpu();
  const m = measure(report(['--prometheus', store.url]), times);
  return { m, storeCpu: (store.cpu() - before) / times };
};

const plain = await storeOn(tsdb);
let bare;
const rulesFrom = {};
/**
 * `file`'s rules evaluated over the range from `store`, their blocks beside a copy of `from`'s in
 * `to` (bench/backfill-rules.mjs: promtool's grid, a block per 2 h rather than per rule and 2 h;
 * checked first against promtool's own backfill of the range's first day): seconds taken.
 */
async function backfillRulesInto(store, from, to, file) {
  const t = performance.now();
  const cwd = join(ROOT, 'examples/prometheus');
  const check = await checkAgainstPromtool({ url: store.url, cwd, file, day: Date.parse(since) });
  if (check.firstDifference || check.ours === 0)
    throw new Error(`${file}: the backfill differs from promtool's on the first day: ${JSON.stringify(check)}`);
  rmSync(`${to}.part`, { recursive: true, force: true });
  const blocks = join(data, 'rule-blocks');
  rmSync(blocks, { recursive: true, force: true });
  await backfillRules({ url: store.url, cwd, file, since: Date.parse(since), until: Date.parse(until), outputDir: blocks });
  cpSync(from, `${to}.part`, { recursive: true });
  for (const block of readdirSync(blocks)) renameSync(join(blocks, block), join(`${to}.part`, block));
  rmSync(join(`${to}.part`, 'lock'), { force: true });
  renameSync(`${to}.part`, to);
  return seconds(t);
}
try {
  [made.compaction_s, made.blocks] = [plain.compaction_s, plain.blocks];
  if (plainRuns > 0) bare = storeReport(plain, plainRuns);
  // The report's recording rules (examples/prometheus/), backfilled once beside the plain blocks in a
  // copy of them, from this store's answers: what a site that adds them to a store with history has.
  // The five-minute rules at an offset within their interval, as a live Prometheus evaluates a group.
  if (withRules && !existsSync(rulesTsdb))
    rulesFrom.rules_backfill_s = await backfillRulesInto(plain, tsdb, rulesTsdb, 'gpu-textfile-report.rules.yml');
  if (withFiveMinutes && !existsSync(fiveMinuteTsdb))
    rulesFrom.five_minute_backfill_s = await backfillRulesInto(
      plain,
      withRules ? rulesTsdb : tsdb,
      fiveMinuteTsdb,
      'gpu-textfile-report-5m.rules.yml',
    );
} finally {
  await plain.stop();
}
/** The store's report against the blocks in `dir`. */
async function reportOn(dir) {
  const store = await storeOn(dir);
  try {
    return storeReport(store);
  } finally {
    await store.stop();
  }
}
const ruled = withRules ? await reportOn(rulesTsdb) : undefined;
const fiveMinutes = withFiveMinutes ? await reportOn(fiveMinuteTsdb) : undefined;
const csv = measure(report(['--csv-dir', trail]));
const row = (name, m, extra = '') =>
  `| ${name} | ${median(m.wall).toFixed(2)} s | ${median(m.cpu).toFixed(2)} s | ${Math.round(median(m.maxrss_kib) / 1024)} MiB | ${m.exit.join(',')} | ${extra} |`;
console.log(
  `${hosts} hosts x ${gpus} GPUs x ${days} days at 15 s, on Node.js ${execFileSync(reportNode, ['--version'], { encoding: 'utf8' }).trim()} (median of ${runs}${plainRuns !== runs ? `, ${plainRuns || 'none'} without rules` : ''}); ${JSON.stringify({ ...made, ...rulesFrom })}`,
);
console.log('| report --by host | wall | CPU | peak RSS | exit | the store |');
console.log('|---|---|---|---|---|---|');
if (bare) console.log(row('--prometheus', bare.m, `Prometheus CPU ${bare.storeCpu.toFixed(2)} s a run`));
if (ruled) console.log(row('--prometheus, with the recording rules', ruled.m, `Prometheus CPU ${ruled.storeCpu.toFixed(2)} s a run`));
if (fiveMinutes)
  console.log(
    row(
      `--prometheus, with the five-minute rules${withRules ? ' too' : ''}`,
      fiveMinutes.m,
      `Prometheus CPU ${fiveMinutes.storeCpu.toFixed(2)} s a run`,
    ),
  );
console.log(row('--csv-dir', csv));
// Why a run failed (its last line on stderr): a failed run's wall is in the medians above.
for (const [name, m] of [
  ['--prometheus', bare?.m],
  ['--prometheus, with the recording rules', ruled?.m],
  ['--prometheus, with the five-minute rules', fiveMinutes?.m],
  ['--csv-dir', csv],
])
  for (const failure of m?.failures ?? []) console.log(`${name}: a run failed: ${failure}`);
