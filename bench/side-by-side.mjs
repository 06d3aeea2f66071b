#!/usr/bin/env node
// Today's build beside a base build, in one run on one machine (issue 32's targets; npm run bench runs
// it after bench/run.mjs):
// - the daemon mode with --source nvml at each --intervals cadence: CPU per sample of every thread of
//   each build's process (both run at once, so drift falls on both), and NVML's calls timed at the
//   same cadence by bench/nvml-cadence.cjs alongside; our own CPU is the first minus the second;
// - one-shot `collect` as the units run it (NODE_COMPILE_CACHE warm, no NODE_EXTRA_CA_CERTS) beside
//   `node -e 0` and each nvidia-smi call collect makes, alone (their argv recorded from a run), and two
//   floors under it (bench/smi-floor.ts, code-cached as the launcher loads cli.js): those calls made at
//   once by a bare spawn, and through runSmi (execa, the orphan guard and the gate) with nothing else.
//
//   node bench/side-by-side.mjs [--base REV | --base-dist DIR] [--intervals 250ms,1s,15s] [--seconds 30,45,150]
//     [--runs N] [--nvml-library PATH] [--nvidia-smi PATH] [--env K=V ...] [--no-daemon] [--no-one-shot]
//     [--smi-capture DIR [--smi-ms query-gpu=45.6,compute-apps=23.7]]
// --smi-capture times the one-shot without a GPU: bench/smi-stand-in.c, built here, answers each call
// with what test/fixtures/bin/nvidia-smi answers from the capture DIR, after sleeping as long as that
// call took on a GPU host (--smi-ms; the defaults are one H200's medians, BENCHMARKS.md 2026-12-02).
// --base REV (default main) is built from a git worktree in a temp folder; --base-dist takes a dist/
// built before (a GPU host without git). Without a GPU, pass the stand-ins (see bench/nvml.mjs).
import { execFileSync, spawn } from 'node:child_process';
import { build } from 'esbuild';
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuOf, watchReplacements } from './proc.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const runs = Number(arg('--runs', 20));
const intervals = arg('--intervals', '250ms,1s,15s').split(',');
const seconds = arg('--seconds', '30,45,150').split(',').map(Number);
const library = arg('--nvml-library', 'libnvidia-ml.so.1');
let smi = arg('--nvidia-smi', 'nvidia-smi');
const smiCapture = arg('--smi-capture');
const smiMs = Object.fromEntries(
  arg('--smi-ms', 'query-gpu=45.6,compute-apps=23.7')
    .split(',')
    .map((pair) => pair.split('=')),
);
const extraEnv = Object.fromEntries(
  process.argv.flatMap((a, i) => (process.argv[i - 1] === '--env' ? [a.split(/=(.*)/s).slice(0, 2)] : [])),
);
// As a systemd unit runs: no NODE_EXTRA_CA_CERTS (the dev and GPU machines set it; it costs every start).
const { NODE_EXTRA_CA_CERTS: _ignored, ...inherited } = process.env;
const env = { ...inherited, ...extraEnv };
const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-side-'));
if (smiCapture) {
  smi = join(ROOT, 'test/fixtures/bin/nvidia-smi');
  env.FAKE_SMI_CAPTURE = resolve(smiCapture);
}

/** Which file of the C stand-in answers a call (bench/smi-stand-in.c picks it the same way). */
const smiKind = (argv) =>
  argv.some((a) => a.startsWith('--query-gpu'))
    ? 'query-gpu'
    : argv.some((a) => a.startsWith('--query-compute-apps'))
      ? 'compute-apps'
      : argv.includes('--help-query-gpu')
        ? 'help'
        : 'other';

/** Builds the C stand-in and records what the recorded stand-in answers to each of `calls`: its path. */
function cStandIn(calls) {
  const dir = join(work, 'smi-stand-in');
  execFileSync('mkdir', ['-p', dir]);
  const binary = join(dir, 'nvidia-smi');
  execFileSync('gcc', ['-O1', '-Wall', '-Werror', '-o', binary, join(ROOT, 'bench/smi-stand-in.c')]);
  for (const kind of ['query-gpu', 'compute-apps', 'help', 'other']) {
    writeFileSync(join(dir, `${kind}.out`), '');
    writeFileSync(join(dir, `${kind}.ms`), String(Math.round(Number(smiMs[kind] ?? 0))));
  }
  for (const argv of calls) writeFileSync(join(dir, `${smiKind(argv)}.out`), execFileSync(smi, argv, { env }));
  env.SMI_STAND_IN_DIR = dir;
  return binary;
}

/** The base build's dist/: copied as given, or built from a worktree of REV (node_modules shared). */
function baseDist() {
  const given = arg('--base-dist');
  if (given) return resolve(given);
  const rev = arg('--base', 'main');
  const tree = join(work, 'base');
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', tree, rev], { stdio: 'ignore' });
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: tree, stdio: 'ignore' });
    cpSync(join(tree, 'dist'), join(work, 'base-dist'), { recursive: true });
  } finally {
    execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', tree], { stdio: 'ignore' });
  }
  return join(work, 'base-dist');
}
const builds = [
  ['base', baseDist()],
  ['this', join(ROOT, 'dist')],
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (s) => (s * 1000).toFixed(1);
const intervalMs = (text) => Number(/^(\d+)(ms|s)$/.exec(text)[1]) * (text.endsWith('ms') ? 1 : 1000);

/** collect --interval: CPU per sample of all its threads, over `seconds` after a warm-up of two samples (at least 10 s). */
async function daemon(dist, interval, seconds) {
  const dir = mkdtempSync(join(work, 'd-'));
  const args = ['collect', '--source', 'nvml', '--nvml-library', library, '--interval', interval, '--no-processes'];
  const child = spawn(
    process.execPath,
    [join(dist, 'gpu-textfile.js'), ...args, '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's')],
    {
      env,
      stdio: 'ignore',
    },
  );
  const file = join(dir, 't/nvidia_gpu.prom');
  while (!existsSync(file)) await sleep(10);
  const replaced = watchReplacements(file);
  await sleep(Math.max(10_000, 2 * intervalMs(interval)));
  const from = { writes: replaced.count(), cpu: cpuOf(child.pid) };
  await sleep(seconds * 1000);
  const to = { writes: replaced.count(), cpu: cpuOf(child.pid) };
  replaced.stop();
  child.kill('SIGTERM');
  await new Promise((done) => child.once('exit', done));
  const samples = to.writes - from.writes;
  return { samples, msPerSample: ((to.cpu - from.cpu) / samples) * 1000 };
}

/** bench/nvml-cadence.cjs at the same cadence: NVML's own calls per sample, in ms. */
function cadence(interval, seconds) {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bench/nvml-cadence.cjs'),
        '--every',
        String(intervalMs(interval)),
        '--seconds',
        String(seconds),
        '--nvml-library',
        library,
        '--json',
      ],
      { env, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('exit', (code) =>
      code === 0 ? done(JSON.parse(out.trim().split('\n').pop())) : fail(new Error(`nvml-cadence exited ${code}`)),
    );
  });
}

/** bench/publish-floor.cjs at the same cadence, on `text`: the kernel's and node:fs's part of a write, ms per sample. */
function publishFloor(interval, seconds, text) {
  const args = [
    '--every',
    String(intervalMs(interval)),
    '--seconds',
    String(seconds),
    '--text',
    text,
    '--dir',
    mkdtempSync(join(work, 'f-')),
  ];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [join(ROOT, 'bench/publish-floor.cjs'), ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.once('exit', (code) => (code === 0 ? done(JSON.parse(out.trim())) : fail(new Error(`publish-floor exited ${code}`))));
  });
}

function measure(command, extra = {}) {
  const out = execFileSync('python3', [join(ROOT, 'bench/measure.py'), String(runs), '--', ...command], { env: { ...env, ...extra } });
  const r = JSON.parse(out.toString());
  if (r.exit.some((e) => e !== 0)) throw new Error(`${command.join(' ')} exited ${[...new Set(r.exit)].join('/')}`);
  return { wall: r.wall, cpu: r.cpu };
}

if (!process.argv.includes('--no-daemon')) {
  console.log(`## The daemon mode, --source nvml: CPU per sample (all threads), ${builds[0][0]} beside ${builds[1][0]}\n`);
  // The text a sample writes, for the publishing floor.
  const text = join(work, 'sample.prom');
  const dryRun = ['collect', '--source', 'nvml', '--nvml-library', library, '--no-processes', '--dry-run'];
  writeFileSync(text, execFileSync(process.execPath, [join(builds[1][1], 'gpu-textfile.js'), ...dryRun], { env }));
  console.log(
    '| interval | samples (base / this) | CPU per sample, base ms | this ms | NVML calls per sample ms | publishing floor ms | own (less NVML), base ms | this ms |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [i, interval] of intervals.entries()) {
    const s = seconds[i] ?? seconds.at(-1);
    const [base, now, nvml, floor] = await Promise.all([
      daemon(builds[0][1], interval, s),
      daemon(builds[1][1], interval, s),
      cadence(interval, s + 10),
      publishFloor(interval, s + 10, text),
    ]);
    const calls = nvml.callsMsPerSample;
    const own = (r) => (r.msPerSample - calls).toFixed(3);
    console.log(
      `| ${interval} | ${base.samples} / ${now.samples} | ${base.msPerSample.toFixed(3)} | ${now.msPerSample.toFixed(3)} | ${calls.toFixed(3)} | ${floor.msPerWrite.toFixed(3)} | ${own(base)} | ${own(now)} |`,
    );
  }
  console.log('');
}

if (!process.argv.includes('--no-one-shot')) {
  // The argv of each nvidia-smi call collect makes, recorded by a shim from a run with a warm state.
  const shimDir = join(work, 'shim');
  const log = join(work, 'argv.log');
  const state = join(work, 'state');
  execFileSync('mkdir', ['-p', shimDir, state]);
  const shim = join(shimDir, 'nvidia-smi');
  writeFileSync(
    shim,
    `#!/bin/sh\nprintf '%s\\0' "$@" >> '${log}'; printf '\\n' >> '${log}'\nexec '${smi.includes('/') ? resolve(smi) : smi}' "$@"\n`,
  );
  chmodSync(shim, 0o755);
  const textfile = join(work, 'textfile');
  const collect = (dist, nvidiaSmi) => [
    process.execPath,
    join(dist, 'gpu-textfile.js'),
    'collect',
    '--nvidia-smi',
    nvidiaSmi,
    '--textfile-dir',
    textfile,
    '--state-dir',
    state,
  ];
  execFileSync(collect(builds[1][1], smi)[0], collect(builds[1][1], smi).slice(1), { env, stdio: 'ignore' });
  writeFileSync(log, '');
  execFileSync(collect(builds[1][1], shim)[0], collect(builds[1][1], shim).slice(1), { env, stdio: 'ignore' });
  const calls = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\0').filter(Boolean));
  if (smiCapture) {
    smi = cStandIn(calls);
    // The state as the stand-in leaves it (the same answers): the timed runs ask what the recorded ones did.
    execFileSync(collect(builds[1][1], smi)[0], collect(builds[1][1], smi).slice(1), { env, stdio: 'ignore' });
  }
  const cache = join(work, 'code-cache');
  const cached = { NODE_COMPILE_CACHE: cache };
  // Writes each build's code cache (its first successful run), as the unit's first run does.
  for (const [, dist] of builds)
    execFileSync(process.execPath, collect(dist, smi).slice(1), { env: { ...env, ...cached }, stdio: 'ignore' });
  const floor = await floorProgram();
  const floorRow = (mode) => [process.execPath, floor, mode, smi, JSON.stringify(calls)];
  // Its code cache, written by its first run as the launcher's is.
  for (const mode of ['spawn', 'execa']) execFileSync(floorRow(mode)[0], floorRow(mode).slice(1), { env, stdio: 'ignore' });
  // Three rounds, rows alternating, so that drift falls on each.
  const rows = [
    ['node -e 0', [process.execPath, '-e', '0'], {}],
    ...calls.map((argv) => [`nvidia-smi ${argv.join(' ').slice(0, 60)}…`, [smi, ...argv], {}]),
    ['floor: the calls at once, bare spawn', floorRow('spawn'), {}],
    ['floor: the calls at once through runSmi (execa, guard, gate)', floorRow('execa'), {}],
    ...builds.map(([name, dist]) => [`collect, ${name} (code cache, as the units run it)`, collect(dist, smi), cached]),
  ];
  const results = new Map(rows.map(([label]) => [label, { wall: [], cpu: [] }]));
  for (let round = 0; round < 3; round++)
    for (const [label, command, extra] of rows) {
      const r = measure(command, extra);
      results.get(label).wall.push(...r.wall);
      results.get(label).cpu.push(...r.cpu);
    }
  console.log(`## One-shot collect as the units run it (${3 * runs} runs each, medians)\n`);
  console.log('| what | wall ms | CPU ms |');
  console.log('|---|---|---|');
  for (const [label, r] of results) console.log(`| ${label} | ${ms(median(r.wall))} | ${ms(median(r.cpu))} |`);
  const wall = (label) => median(results.get(label).wall);
  const bound = wall('node -e 0') + Math.max(...rows.slice(1, 1 + calls.length).map(([label]) => wall(label)));
  console.log(`\nnode -e 0 + the longer nvidia-smi call: ${ms(bound)} ms`);
  for (const label of ['floor: the calls at once, bare spawn', 'floor: the calls at once through runSmi (execa, guard, gate)'])
    console.log(`${label}: ${ms(wall(label))} ms, ${ms(wall(label) - bound)} ms above it`);
  for (const [name] of builds) {
    const label = `collect, ${name} (code cache, as the units run it)`;
    console.log(`collect, ${name}: ${ms(wall(label))} ms, own ${ms(wall(label) - bound)} ms above it (target: 15)`);
  }
}
rmSync(work, { recursive: true, force: true });

/**
 * bench/smi-floor.ts bundled as dist/ is (CommonJS, node20), with a launcher that loads it from a V8
 * code cache through src/launch/code-cache.ts, as dist/gpu-textfile.js loads cli.js: the launcher's path.
 */
async function floorProgram() {
  const dir = join(work, 'floor');
  const common = { bundle: true, format: 'cjs', platform: 'node', target: 'node20', logLevel: 'warning' };
  await build({ ...common, entryPoints: [join(ROOT, 'bench/smi-floor.ts')], outfile: join(dir, 'smi-floor.js') });
  await build({
    ...common,
    stdin: {
      resolveDir: join(ROOT, 'bench'),
      loader: 'ts',
      contents: `import { join } from 'node:path';
import { loadCached } from '../src/launch/code-cache.js';
const { exports, save } = loadCached<{ main: (argv: string[]) => Promise<number> }>(
  join(__dirname, 'smi-floor.js'), join(__dirname, 'cache', 'smi-floor.v8cache'), process.geteuid?.() ?? -1);
void exports.main(process.argv.slice(2)).then((status) => { process.exitCode = status; if (status === 0) save(); });`,
    },
    outfile: join(dir, 'launch.js'),
  });
  writeFileSync(join(dir, 'package.json'), '{ "type": "commonjs" }\n');
  return join(dir, 'launch.js');
}
