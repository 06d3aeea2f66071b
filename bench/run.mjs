#!/usr/bin/env node
// npm run bench: the cost of one sample, side by side, from one run on one machine.
//
//   node bench/run.mjs [--nvidia-smi PATH] [--capture DIR] [--runs N] [--warmup S] [--seconds S] [--json FILE] [--no-report]
//
// With a working nvidia-smi on PATH (or --nvidia-smi) it measures the real one; otherwise the
// stand-in replays --capture (default: the 2 x H200 recording, then the 8-GPU replay).
// Wall and CPU time come from wait4() of each run (children included), peak RSS likewise. One-shot
// runs are measured as a bare `node dist/gpu-textfile.js` and as the systemd units run it, with
// NODE_COMPILE_CACHE. The long-running mode's cost per sample is read over its first --warmup seconds
// (V8 still compiling and optimizing) and, separately, over the --seconds after them: what it costs
// for the hours it then runs.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir, cpus, hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { childrenOf, cpuOf, rssOf, watchReplacements } from './proc.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/gpu-textfile.js');
const FAKE = join(ROOT, 'test/fixtures/bin/nvidia-smi');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};

const realSmi = arg('--nvidia-smi', 'nvidia-smi');
const hasReal = (() => {
  try {
    execFileSync(realSmi, ['-L'], { stdio: 'pipe', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
})();
const runs = Number(arg('--runs', hasReal ? 20 : 10));
const seconds = Number(arg('--seconds', hasReal ? 30 : 10));
const warmup = Number(arg('--warmup', hasReal ? 20 : 10));
const skipReport = process.argv.includes('--no-report');
const jsonOut = arg('--json');
// --capture replays that recording through the stand-in, also on a GPU host (the 8-GPU replay).
const setups =
  hasReal && !arg('--capture')
    ? [{ label: `real nvidia-smi (${execFileSync(realSmi, ['-L']).toString().trim().split('\n').length} GPUs)`, smi: realSmi, env: {} }]
    : (arg('--capture') ? [arg('--capture')] : ['h200x2__580.159.04__linux-idle', 'h200x8-replay__580.159.04__linux-idle']).map(
        (capture) => ({
          label: `stand-in nvidia-smi replaying ${capture}`,
          smi: FAKE,
          env: { FAKE_SMI_CAPTURE: capture.includes('/') ? resolve(capture) : join(ROOT, 'test/fixtures/captures', capture) },
        }),
      );

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const ms = (s) => (s * 1000).toFixed(1);

function measure(command, env) {
  const out = execFileSync('python3', [join(ROOT, 'bench/measure.py'), String(runs), '--', ...command], {
    env: { ...process.env, ...env },
  });
  const result = JSON.parse(out.toString());
  return {
    wall: median(result.wall),
    wallP10: pct(result.wall, 0.1),
    wallP90: pct(result.wall, 0.9),
    cpu: median(result.cpu),
    rssMiB: Math.max(...result.maxrss_kib) / 1024,
    exits: [...new Set(result.exit)],
  };
}

/**
 * Runs collect --interval 250ms: own CPU (the node process) and its nvidia-smi's per sample, over
 * the first `warmup` seconds and over the `seconds` after them. With the CSV trail or without, the
 * samples are counted by watching the textfile's inode change.
 */
async function measureLongRunning(smi, env, withCsv) {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-'));
  // collect refuses a textfile directory that does not exist: made first.
  mkdirSync(join(dir, 't'));
  const csvArgs = withCsv ? ['--csv-dir', join(dir, 'c')] : [];
  const child = spawn(
    process.execPath,
    [
      CLI,
      'collect',
      '--interval',
      '250ms',
      '--no-processes',
      '--textfile-dir',
      join(dir, 't'),
      '--state-dir',
      join(dir, 's'),
      ...csvArgs,
      '--nvidia-smi',
      smi,
    ],
    {
      env: { ...process.env, ...env },
      stdio: 'ignore',
    },
  );
  const file = join(dir, 't/nvidia_gpu.prom');
  // Start-up and the first (one-shot) sample are not per-sample cost: start counting at the first file.
  while (!existsSync(file)) await sleep(10);
  const replaced = watchReplacements(file);
  const smiPid = () => childrenOf(child.pid)[0];
  const mark = () => ({ writes: replaced.count(), own: cpuOf(child.pid), smi: smiPid() ? cpuOf(smiPid()) : NaN });
  const perSample = (from, to) => ({
    samples: to.writes - from.writes,
    ownMsPerSample: ((to.own - from.own) / (to.writes - from.writes)) * 1000,
    smiMsPerSample: ((to.smi - from.smi) / (to.writes - from.writes)) * 1000,
  });
  const rss = [];
  const start = mark();
  for (let s = 0; s < warmup; s++) {
    await sleep(1000);
    rss.push(rssOf(child.pid));
  }
  const warm = mark();
  for (let s = 0; s < seconds; s++) {
    await sleep(1000);
    rss.push(rssOf(child.pid));
  }
  const end = mark();
  replaced.stop();
  child.kill('SIGTERM');
  await new Promise((done) => child.once('exit', done));
  rmSync(dir, { recursive: true, force: true });
  return { warmup: perSample(start, warm), steady: perSample(warm, end), rssMin: Math.min(...rss), rssMax: Math.max(...rss) };
}

function defaultQuery(smi, env) {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-'));
  execFileSync(process.execPath, [CLI, 'collect', '--textfile-dir', dir, '--state-dir', dir, '--nvidia-smi', smi], {
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
  const names = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).names;
  rmSync(dir, { recursive: true, force: true });
  return Object.values(names).join(',');
}

const report = {
  machine: { host: hostname(), cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version, date: new Date().toISOString() },
  setups: [],
};
console.log(
  `gpu-textfile bench: ${report.machine.date}, ${report.machine.host}, ${report.machine.cpus} x ${report.machine.cpu}, Node ${process.version}, ${runs} runs each\n`,
);

for (const setup of setups) {
  const query = defaultQuery(setup.smi, setup.env);
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-'));
  const cache = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-cache-'));
  const cached = { ...setup.env, NODE_COMPILE_CACHE: cache };
  // The first run learns the names (state) and, with NODE_COMPILE_CACHE, writes the code cache.
  execFileSync(process.execPath, [CLI, 'collect', '--textfile-dir', work, '--state-dir', work, '--nvidia-smi', setup.smi], {
    env: { ...process.env, ...cached },
    stdio: 'ignore',
  });
  const collectArgs = [process.execPath, CLI, 'collect', '--textfile-dir', work, '--state-dir', work, '--nvidia-smi', setup.smi];
  const cases = [
    ['nvidia-smi --query-gpu (default fields)', [setup.smi, `--query-gpu=${query}`, '--format=csv,noheader,nounits']],
    [
      'nvidia-smi --query-compute-apps',
      [setup.smi, '--query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory', '--format=csv,noheader,nounits'],
    ],
    ['node -e 0', [process.execPath, '-e', '0']],
    ['gpu-textfile collect (one-shot)', collectArgs],
    ['gpu-textfile collect (one-shot) with NODE_COMPILE_CACHE, as the systemd units run it', collectArgs, cached],
    ['plain bash script (1 call, heredoc, mv)', ['bash', join(ROOT, 'bench/plain-collector.sh'), setup.smi, query, work]],
  ];
  const results = Object.fromEntries(cases.map(([label, command, env]) => [label, measure(command, env ?? setup.env)]));
  rmSync(work, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
  const long = await measureLongRunning(setup.smi, setup.env, false);
  const longCsv = await measureLongRunning(setup.smi, setup.env, true);

  console.log(`## ${setup.label}\n`);
  console.log('| what | wall median (p10-p90) ms | CPU median ms | peak RSS MiB |');
  console.log('|---|---|---|---|');
  for (const [label, r] of Object.entries(results)) {
    console.log(
      `| ${label}${r.exits.some((e) => e !== 0) ? ` (exit ${r.exits.join('/')})` : ''} | ${ms(r.wall)} (${ms(r.wallP10)}-${ms(r.wallP90)}) | ${ms(r.cpu)} | ${r.rssMiB.toFixed(1)} |`,
    );
  }
  for (const [label, r] of [
    ['textfile', long],
    ['textfile + CSV', longCsv],
  ]) {
    for (const [phase, p, span] of [
      [`first ${warmup} s`, r.warmup, ''],
      [`next ${seconds} s`, r.steady, `${r.rssMin.toFixed(1)}-${r.rssMax.toFixed(1)} over ${warmup + seconds} s`],
    ]) {
      // The nvidia-smi child may be between restarts when its CPU is read: then its share is unknown.
      const smi = Number.isNaN(p.smiMsPerSample) ? '' : ` + ${p.smiMsPerSample.toFixed(2)} nvidia-smi`;
      console.log(
        `| collect --interval 250ms (${label}), per sample, ${phase} (${p.samples} samples) | - | ${p.ownMsPerSample.toFixed(2)} own${smi} | ${span} |`,
      );
    }
  }

  const q = results['nvidia-smi --query-gpu (default fields)'];
  const apps = results['nvidia-smi --query-compute-apps'];
  const node = results['node -e 0'];
  const collect = results['gpu-textfile collect (one-shot)'];
  const collectCached = results['gpu-textfile collect (one-shot) with NODE_COMPILE_CACHE, as the systemd units run it'];
  const plain = results['plain bash script (1 call, heredoc, mv)'];
  const targetConcurrent = 1.25 * (node.wall + Math.max(q.wall, apps.wall));
  const targetSum = 1.25 * (node.wall + q.wall + apps.wall);
  console.log('\n| target | measured | limit | verdict |');
  console.log('|---|---|---|---|');
  const row = (what, measured, limit, ok) => console.log(`| ${what} | ${measured} | ${limit} | ${ok ? 'met' : 'NOT met'} |`);
  for (const [how, r] of [
    ['', collect],
    [', NODE_COMPILE_CACHE', collectCached],
  ]) {
    row(
      `collect${how} wall <= 1.25 x (node -e 0 + its nvidia-smi calls, run concurrently)`,
      `${ms(r.wall)} ms`,
      `${ms(targetConcurrent)} ms`,
      r.wall <= targetConcurrent,
    );
    row(
      `collect${how} wall <= 1.25 x (node -e 0 + its nvidia-smi calls, added up)`,
      `${ms(r.wall)} ms`,
      `${ms(targetSum)} ms`,
      r.wall <= targetSum,
    );
  }
  row(
    'collect peak RSS < 100 MiB',
    `${Math.max(collect.rssMiB, collectCached.rssMiB).toFixed(1)} MiB`,
    '100 MiB',
    Math.max(collect.rssMiB, collectCached.rssMiB) < 100,
  );
  for (const [label, r] of [
    ['textfile', long],
    ['textfile + CSV', longCsv],
  ]) {
    row(
      `long-running own CPU per sample <= 4 ms (${label}), after the first ${warmup} s`,
      `${r.steady.ownMsPerSample.toFixed(2)} ms`,
      '4 ms',
      r.steady.ownMsPerSample <= 4,
    );
  }
  row('long-running RSS < 120 MiB, flat', `${long.rssMin.toFixed(1)}-${long.rssMax.toFixed(1)} MiB`, '120 MiB', long.rssMax < 120);
  console.log(
    `\ncollect vs plain bash script: ${(collect.wall / plain.wall).toFixed(2)}x wall, ${(collect.cpu / plain.cpu).toFixed(2)}x CPU`,
  );
  console.log(
    `long-running vs one-shot, CPU per sample: ${((long.steady.ownMsPerSample + long.steady.smiMsPerSample) / (collectCached.cpu * 1000)).toFixed(3)}x\n`,
  );
  report.setups.push({ label: setup.label, query, results, longRunning: long, longRunningWithCsv: longCsv });
}
// The report over a week of 15-second samples of an 8-GPU host: over 300,000 rows, streamed.
if (!skipReport) {
  const { HEADER, generateRows } = await import('./make-history.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-history-'));
  const rows = generateRows({
    start: Date.UTC(2026, 10, 23),
    hours: 7 * 24,
    intervalSeconds: 15,
    gpus: ['leak', 'training', 'training', 'training', 'training', 'training', 'training', 'idleWithMemory'],
  });
  writeFileSync(join(dir, 'train.csv'), `${HEADER}\n${rows.join('\n')}\n`);
  const r = measure([process.execPath, CLI, 'report', '--csv-dir', dir, '--format', 'json', '--out', join(dir, 'report.json')], {});
  const findings = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')).findings.length;
  rmSync(dir, { recursive: true, force: true });
  console.log(`## gpu-textfile report over a week of an 8-GPU host (${rows.length} rows, 15 s samples)\n`);
  console.log('| what | wall median (p10-p90) ms | CPU median ms | peak RSS MiB |');
  console.log('|---|---|---|---|');
  console.log(
    `| report --format json (${findings} findings) | ${ms(r.wall)} (${ms(r.wallP10)}-${ms(r.wallP90)}) | ${ms(r.cpu)} | ${r.rssMiB.toFixed(1)} |\n`,
  );
  report.history = { rows: rows.length, ...r };
}
if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(report, null, 1)}\n`);
