#!/usr/bin/env node
// `report` over long and wide history, this checkout beside the base revision, from one run on one
// machine (issue 32's targets):
//   - a year of one 8-GPU host (`make-history.mjs DIR 365 8`), the whole of it and its last month;
//   - 40 such hosts for 30 days in one directory of hosts' trails (DIR/host-NN/), `--by host`.
//
//   node bench/report-history.mjs [--base REV] [--runs N] [--data DIR] [--full-baseline] [--no-fleet] [--no-year]
//
// The trails are generated once into --data (default /tmp/gpu-textfile-history; minutes: each day
// goes through the real archiver, which gzips it and writes its sidecar) and reused. The base
// revision (default: where this branch left main, `git merge-base HEAD main`) is unpacked from git
// beside --data and built there (node_modules linked from here); it reads the same
// trails, ignoring the sidecars it does not know. It has no fleet report: its column for the fleet
// is a report per host, run one after the other, on 4 of the 40 hosts and scaled by 10 (all 40
// with --full-baseline). Floor: the same command on an empty directory (Node.js start-up, loading
// the report's code). Wall and CPU time and peak RSS come from wait4() (measure.py).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { cpus, hostname, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const runs = Number(arg('--runs', 3));
const data = resolve(arg('--data', '/tmp/gpu-textfile-history'));
const fullBaseline = process.argv.includes('--full-baseline');
const noFleet = process.argv.includes('--no-fleet');
const noYear = process.argv.includes('--no-year');
const git = (...args) => execFileSync('git', args, { cwd: ROOT }).toString().trim();
const base = arg('--base', git('merge-base', 'HEAD', 'main'));
const baseRev = git('rev-parse', '--short', base);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function measure(command, n = runs) {
  const out = execFileSync('python3', [join(ROOT, 'bench/measure.py'), String(n), '--', ...command]);
  const r = JSON.parse(out.toString());
  if (r.exit.some((code) => code !== 0)) throw new Error(`${command.join(' ')} exited ${r.exit}`);
  return { wall: median(r.wall), cpu: median(r.cpu), rssMiB: Math.max(...r.maxrss_kib) / 1024 };
}

/** The trail under --data, made by make-history.mjs unless a finished one is there. */
function trail(name, args) {
  const dir = join(data, name);
  if (!existsSync(`${dir}.done`)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(data, { recursive: true });
    console.error(`generating ${dir} (make-history.mjs ${args.join(' ')}); minutes`);
    execFileSync(process.execPath, [join(ROOT, 'bench/make-history.mjs'), dir, ...args], { stdio: 'inherit' });
    execFileSync('touch', [`${dir}.done`]);
  }
  return dir;
}

/** The base revision's CLI, built from its tree (`git archive`: no worktree left registered) beside the trails. */
function baseCli() {
  const dir = join(data, `base-${baseRev}`);
  if (!existsSync(join(dir, 'dist/gpu-textfile.js'))) {
    mkdirSync(dir, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${base} | tar -x -C "${dir}"`], { cwd: ROOT });
    if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'ignore' });
  }
  return join(dir, 'dist/gpu-textfile.js');
}

const year = noYear ? undefined : trail('year-8', ['365', '8']);
const fleet = noFleet ? undefined : trail('fleet-40x30', ['30', '8', '--hosts', '40']);
const NEW = join(ROOT, 'dist/gpu-textfile.js');
const OLD = baseCli();
const out = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-report-'));
const empty = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-empty-'));
const report = (cli, ...args) => [process.execPath, cli, 'report', ...args, '--format', 'json', '--out', join(out, 'r.json')];
const hosts = fleet ? readdirSync(fleet).sort() : [];
const sampled = fullBaseline ? hosts : hosts.slice(0, 4);

/**
 * The base revision's fleet column: its own `--by host` over the fleet when it has one (a base from
 * issue 32 on), else one report per host, one after the other, scaled to all hosts.
 */
function baseFleet() {
  try {
    return { ...measure(report(OLD, '--csv-dir', fleet, '--by', 'host'), 1), whole: true };
  } catch {
    // An older base refuses --by host (exit 2): per host below.
  }
  const each = sampled.map((host) => measure(report(OLD, '--csv-dir', join(fleet, host), '--by', 'task'), 1));
  const scale = hosts.length / sampled.length;
  return {
    wall: each.reduce((a, r) => a + r.wall, 0) * scale,
    cpu: each.reduce((a, r) => a + r.cpu, 0) * scale,
    rssMiB: Math.max(...each.map((r) => r.rssMiB)),
  };
}

// The fleet's floor: its 40 live files alone (a whole day of rows each, which no sidecar covers).
const liveOnly = join(out, 'live-only');
for (const host of hosts) {
  mkdirSync(join(liveOnly, host), { recursive: true });
  symlinkSync(join(fleet, host, 'train.csv'), join(liveOnly, host, 'train.csv'));
}
const lastMonth = ['--since', '2026-12-01'];
const rows = [
  ['floor: report on an empty directory', measure(report(NEW, '--csv-dir', empty)), measure(report(OLD, '--csv-dir', empty))],
  ...(year ? yearRows() : []),
  ...(fleet ? fleetRows() : []),
];

/** The year's rows. */
function yearRows() {
  return [
    [
      'a year of one 8-GPU host (16.8 M rows, 364 archives)',
      measure(report(NEW, '--csv-dir', year)),
      measure(report(OLD, '--csv-dir', year), 1),
    ],
    [
      'its last month (--since 2026-12-01)',
      measure(report(NEW, '--csv-dir', year, ...lastMonth)),
      measure(report(OLD, '--csv-dir', year, ...lastMonth), 1),
    ],
    [
      'a year of one 8-GPU host, --by day',
      measure(report(NEW, '--csv-dir', year, '--by', 'day')),
      measure(report(OLD, '--csv-dir', year, '--by', 'day'), 1),
    ],
  ];
}

/** The fleet beside the base's column. */
function fleetRow(before) {
  const how = before.whole || fullBaseline ? '' : ' (base: 4 hosts one by one, x 10)';
  return [`40 hosts x 30 days, --by host${how}`, measure(report(NEW, '--csv-dir', fleet, '--by', 'host')), before];
}

/** The fleet's rows: this checkout's --by host, the base's, and the floor. */
function fleetRows() {
  return [
    fleetRow(baseFleet()),
    [
      'floor of the fleet: its 40 live files alone (base: 4 of them one by one, x 10)',
      measure(report(NEW, '--csv-dir', liveOnly, '--by', 'host')),
      (() => {
        const each = hosts.slice(0, 4).map((host) => measure(report(OLD, '--csv-dir', join(liveOnly, host), '--by', 'task'), 1));
        return {
          wall: each.reduce((a, r) => a + r.wall, 0) * 10,
          cpu: each.reduce((a, r) => a + r.cpu, 0) * 10,
          rssMiB: Math.max(...each.map((r) => r.rssMiB)),
        };
      })(),
    ],
  ];
}
rmSync(out, { recursive: true, force: true });
rmSync(empty, { recursive: true, force: true });

const cell = (r) => `${(r.wall * 1000).toFixed(0)} | ${(r.cpu * 1000).toFixed(0)} | ${r.rssMiB.toFixed(0)}`;
console.log(
  `## gpu-textfile report over history: ${new Date().toISOString().slice(0, 10)}, ${hostname()}, ${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}, load ${loadavg()[0].toFixed(1)} at the end\n`,
);
console.log(`this checkout (median of ${runs}) beside ${baseRev} (one run: it reads every row)\n`);
console.log('| what | wall ms | CPU ms | peak RSS MiB | base wall ms | base CPU ms | base peak RSS MiB | wall, base / this |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [what, now, before] of rows)
  console.log(`| ${what} | ${cell(now)} | ${cell(before)} | ${(before.wall / now.wall).toFixed(1)}x |`);
