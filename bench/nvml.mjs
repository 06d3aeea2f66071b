#!/usr/bin/env node
// collect --source nvml beside --source nvidia-smi and `node -e 0`, one run on one machine (npm run bench
// runs it after bench/run.mjs): one-shot wall, CPU and peak RSS (wait4, children included), and the
// daemon mode's CPU per sample over every thread of the process (and its nvidia-smi child), and RSS.
//   node bench/nvml.mjs [--runs N] [--seconds S] [--warmup S] [--nvml-library PATH] [--nvidia-smi PATH] [--env K=V]
// Without a GPU, pass the stand-in: --nvml-library /tmp/gpu-textfile-nvml-stand-in-*/libnvidia-ml.so.1
// --env NVML_STAND_IN=FILE, --nvidia-smi test/fixtures/bin/nvidia-smi --env FAKE_SMI_CAPTURE=DIR.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { childrenOf, cpuOf, rssOf, watchReplacements } from './proc.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist/gpu-textfile.js');
const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const runs = Number(arg('--runs', 20));
const seconds = Number(arg('--seconds', 20));
const warmup = Number(arg('--warmup', 10));
const library = arg('--nvml-library', 'libnvidia-ml.so.1');
const smi = arg('--nvidia-smi', 'nvidia-smi');
const env = {
  ...process.env,
  ...Object.fromEntries(process.argv.flatMap((a, i) => (process.argv[i - 1] === '--env' ? [a.split(/=(.*)/s).slice(0, 2)] : []))),
};

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (s) => (s * 1000).toFixed(1);
function measure(command, extraEnv = {}) {
  const out = execFileSync('python3', [join(ROOT, 'bench/measure.py'), String(runs), '--', ...command], { env: { ...env, ...extraEnv } });
  const r = JSON.parse(out.toString());
  return { wall: median(r.wall), cpu: median(r.cpu), rssMiB: Math.max(...r.maxrss_kib) / 1024, exits: [...new Set(r.exit)] };
}

/** collect --interval 250ms --no-processes: CPU per sample of all threads (and any child), after `warmup` s. */
async function daemon(sourceArgs) {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-'));
  // collect refuses a textfile directory that does not exist: made first.
  mkdirSync(join(dir, 't'));
  const args = [CLI, 'collect', '--interval', '250ms', '--no-processes', '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's')];
  const child = spawn(process.execPath, [...args, ...sourceArgs], { env, stdio: 'ignore' });
  const file = join(dir, 't/nvidia_gpu.prom');
  while (!existsSync(file)) await sleep(10);
  const replaced = watchReplacements(file);
  const kids = () => childrenOf(child.pid).reduce((sum, pid) => sum + cpuOf(pid), 0);
  await sleep(warmup * 1000);
  const from = { writes: replaced.count(), own: cpuOf(child.pid), kids: kids() };
  const rss = [];
  for (let s = 0; s < seconds; s++) {
    await sleep(1000);
    rss.push(rssOf(child.pid));
  }
  const to = { writes: replaced.count(), own: cpuOf(child.pid), kids: kids() };
  replaced.stop();
  child.kill('SIGTERM');
  await new Promise((done) => child.once('exit', done));
  rmSync(dir, { recursive: true, force: true });
  const n = to.writes - from.writes;
  return { samples: n, ownMs: ((to.own - from.own) / n) * 1000, childMs: ((to.kids - from.kids) / n) * 1000, rssMax: Math.max(...rss) };
}

const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-'));
const base = [process.execPath, CLI, 'collect', '--textfile-dir', work, '--state-dir', work];
const nvml = ['--source', 'nvml', '--nvml-library', library];
execFileSync(base[0], [...base.slice(1), '--nvidia-smi', smi], { env, stdio: 'ignore' });
const floor = [process.execPath, join(ROOT, 'bench/nvml-floor.cjs'), library];
const cases = [
  ['node -e 0', [process.execPath, '-e', '0']],
  ['floor: koffi, nvmlInit_v2 and one read of every field, nothing published (bench/nvml-floor.cjs)', floor],
  ['collect --source nvidia-smi (one-shot)', [...base, '--nvidia-smi', smi]],
  ["collect --source nvml (one-shot), without GPM (--exclude-fields 'nvml.gpm.*')", [...base, ...nvml, '--exclude-fields', 'nvml.gpm.*']],
  ['collect --source nvml (one-shot), GPM window 100ms (the default)', [...base, ...nvml]],
  ['collect --source nvml (one-shot), GPM window 10ms', [...base, ...nvml, '--gpm-window', '10ms']],
];
console.log(`## collect --source nvml beside nvidia-smi (${runs} runs each)\n`);
console.log('| what | wall median ms | CPU median ms | peak RSS MiB |');
console.log('|---|---|---|---|');
const results = {};
for (const [label, command] of cases) {
  const r = (results[label] = measure(command));
  console.log(
    `| ${label}${r.exits.some((e) => e !== 0) ? ` (exit ${r.exits.join('/')})` : ''} | ${ms(r.wall)} | ${ms(r.cpu)} | ${r.rssMiB.toFixed(1)} |`,
  );
}
rmSync(work, { recursive: true, force: true });
for (const [label, sourceArgs] of [
  ['--source nvidia-smi', ['--nvidia-smi', smi]],
  ['--source nvml, default fields', nvml],
  ['--source nvml, without GPM', [...nvml, '--exclude-fields', 'nvml.gpm.*']],
  // The issue's target leaves out the slower-cadence energy read (every 10 s).
  ['--source nvml, default fields without the energy read', [...nvml, '--exclude-fields', 'nvml.energy']],
]) {
  const d = await daemon(sourceArgs);
  console.log(
    `| collect --interval 250ms ${label}, per sample over ${seconds} s after ${warmup} s (${d.samples} samples) | - | ${d.ownMs.toFixed(2)} all threads${d.childMs > 0 ? ` + ${d.childMs.toFixed(2)} child` : ''} | ${d.rssMax.toFixed(1)} |`,
  );
}
const node = results['node -e 0'].wall;
const oneShot = results["collect --source nvml (one-shot), without GPM (--exclude-fields 'nvml.gpm.*')"].wall;
console.log(`\none-shot --source nvml without GPM: node -e 0 + ${ms(oneShot - node)} ms (target: + 30 ms)`);
const below = results[cases[1][0]].wall;
console.log(`the floor under it: node -e 0 + ${ms(below - node)} ms; the CLI above the floor: + ${ms(oneShot - below)} ms`);
const split = JSON.parse(execFileSync(floor[0], [...floor.slice(1), '--timed'], { env }).toString());
console.log(
  `in the floor: dist/nvml.js loaded in ${split.loadMs} ms, koffi + nvmlInit_v2 ${split.openMs} ms, first read of ${split.gpus} GPU(s) ${split.firstReadMs} ms, the same read again ${split.secondReadMs} ms`,
);
