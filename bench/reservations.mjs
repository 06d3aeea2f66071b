#!/usr/bin/env node
// What reading the jobs' reservations costs a one-shot collect (docs/jobs.md, "Reserved"): a host
// tree with 0, 10 and 200 Slurm jobs (cgroup v2, three processes each, an 8 KB environ naming one
// GPU; 150 unit cgroups beside them, as a busy host's system.slice), collected by this build and
// by a base build (the revision before reservations), one after the other, RUNS times each.
//
//   node bench/reservations.mjs [--base REV | --base-dist DIR] [--runs N] [--capture DIR]
//
// --base REV (default main) is built from a git worktree in a temp folder, as side-by-side.mjs does;
// the stand-in nvidia-smi (test/fixtures/bin/nvidia-smi) replays --capture (default the 8-GPU H200
// replay), so both builds pay the same nvidia-smi. Prints median wall and CPU (ms) per build and job
// count. Here (stand-in) or on a GPU host (pass --capture of that host's recording or any).
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const runs = Number(arg('--runs', 15));
const capture = resolve(ROOT, 'test/fixtures/captures', arg('--capture', 'h200x8-replay__580.159.04__linux-idle'));
const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-reservations-'));
const FAKE = join(ROOT, 'test/fixtures/bin/nvidia-smi');

/** The base build's dist/: given, or built from a worktree of REV (node_modules shared). */
function baseDist() {
  const given = arg('--base-dist');
  if (given) return resolve(given);
  const tree = join(work, 'base-tree');
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', tree, arg('--base', 'main')], { stdio: 'ignore' });
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: tree, stdio: 'ignore' });
    cpSync(join(tree, 'dist'), join(work, 'base-dist'), { recursive: true });
  } finally {
    execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', tree], { stdio: 'ignore' });
  }
  return join(work, 'base-dist');
}

/** A host tree of `jobs` Slurm jobs under cgroup v2, each with three processes and an 8 KB environ. */
function hostTree(jobs) {
  const root = join(work, `host-${jobs}`);
  const put = (path, content) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  };
  put('etc/passwd', 'root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n');
  put('sys/fs/cgroup/cgroup.controllers', 'cpu memory pids\n');
  for (let i = 0; i < 150; i++) put(`sys/fs/cgroup/system.slice/unit-${i}.service/cgroup.procs`, '');
  const padding = `MODULEPATH=${'/opt/modules/x'.repeat(560)}\0`;
  for (let j = 0; j < jobs; j++) {
    const pids = [0, 1, 2].map((k) => 10_000 + j * 3 + k);
    put(`sys/fs/cgroup/system.slice/slurmstepd.scope/job_${1000 + j}/step_batch/user/task_0/cgroup.procs`, `${pids.join('\n')}\n`);
    for (const pid of pids) {
      put(`proc/${pid}/environ`, `${padding}SLURM_JOB_ID=${1000 + j}\0SLURM_JOB_GPUS=${j % 8}\0CUDA_VISIBLE_DEVICES=0\0`);
      put(`proc/${pid}/status`, 'Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\n');
    }
  }
  return root;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One build's one-shot collect --dry-run over `host`: median wall and CPU in ms. */
function measure(dist, host) {
  const command = [process.execPath, join(dist, 'gpu-textfile.js'), 'collect', '--dry-run', '--nvidia-smi', FAKE, '--host-root', host];
  const out = execFileSync('python3', [join(ROOT, 'bench/measure.py'), String(runs), '--', ...command], {
    env: { ...process.env, FAKE_SMI_CAPTURE: capture },
    encoding: 'utf8',
  });
  const result = JSON.parse(out);
  if (result.exit.some((code) => code !== 0)) throw new Error(`collect failed on ${host}: exit ${result.exit}`);
  return { wall: median(result.wall) * 1000, cpu: median(result.cpu) * 1000 };
}

try {
  const base = baseDist();
  const here = join(ROOT, 'dist');
  console.log(`one-shot collect --dry-run, ${runs} runs each, medians (ms); nvidia-smi: the stand-in replaying ${capture}`);
  console.log('jobs  base wall  base cpu  this wall  this cpu  cpu added');
  for (const jobs of [0, 10, 200]) {
    const host = hostTree(jobs);
    // Alternated, so that a drift of the machine falls on both.
    const a = measure(base, host);
    const b = measure(here, host);
    const fmt = (x) => x.toFixed(1).padStart(9);
    console.log(`${String(jobs).padStart(4)} ${fmt(a.wall)} ${fmt(a.cpu)} ${fmt(b.wall)} ${fmt(b.cpu)} ${fmt(b.cpu - a.cpu)}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
