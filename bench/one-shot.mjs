// The one-shot as the timer runs it every 15 s, beside its floors and the issue 41 targets: the
// packaged program (its own Node.js) started from its startup snapshot and as it started before
// (no snapshot: the npm route's launcher with the code cache, as the units ran it), the bundled
// `node -e 0`, each nvidia-smi call collect makes (its very argv, recorded by a shim), a bash script
// doing the same job (plain-collector.sh), `--source nvml` with its GPM window counted apart.
// Without a GPU (no nvidia-smi answers) it times `collect --dry-run --source demo` instead.
// Rows interleaved (interleave.py: one run of each per round), medians; no NODE_EXTRA_CA_CERTS, as
// systemd starts the units. Needs python3.
//   node bench/one-shot.mjs [--program DIR] [--base-dist DIR] [--rounds N] [--json FILE]
// --program: an unpacked linux tarball of `npm run package -- --snapshot` (default: builds this CPU's
// into a temp directory); run it with any Node.js (on a GPU host with no Node.js: DIR/node/bin/node).
// The snapshot rows need the tarball's dist/gpu-textfile.blob (`--snapshot`); without one they are left out.
// --base-dist: the dist/ of another revision (`npm run build` there), run on the same bundled Node.js
// with the code cache as the units do: the base build's row beside this one's.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    program: { type: 'string' },
    'base-dist': { type: 'string' },
    rounds: { type: 'string', default: '20' },
    json: { type: 'string' },
  },
});
const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-one-shot-'));
const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ms = (x) => x.toFixed(1);

/** The program's tree: given, or this CPU's tarball built now. */
function programDir() {
  if (values.program) return resolve(values.program);
  const out = join(work, 'package');
  execFileSync(
    process.execPath,
    [join(ROOT, 'scripts/package.mjs'), '--arch', process.arch, '--format', 'tar', '--snapshot', '--out', out],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const [file] = execFileSync('sh', ['-c', `ls ${out}/*.tar.gz`])
    .toString()
    .trim()
    .split('\n');
  execFileSync('tar', ['-xzf', file, '-C', work]);
  return execFileSync('sh', ['-c', `ls -d ${work}/gpu-textfile-*-linux-*/`])
    .toString()
    .trim();
}

const answers = (command, args) => {
  try {
    execFileSync(command, args, { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
};

try {
  const top = programDir();
  const node = join(top, 'node/bin/node');
  const launcher = join(top, 'dist/gpu-textfile.js');
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  delete env.NODE_COMPILE_CACHE;
  env.GPU_TEXTFILE_DEFAULTS_FILE = '';
  const gpu = answers('nvidia-smi', ['-L']);
  const snapshot = answers('test', ['-f', join(top, 'dist/gpu-textfile.blob')]);
  if (!snapshot) console.log(`${top}: no dist/gpu-textfile.blob (built without --snapshot): the snapshot rows are left out\n`);
  // The floor of a start from a snapshot: the same Node.js from a snapshot that holds nothing of ours.
  writeFileSync(join(work, 'empty.js'), "require('node:v8').startupSnapshot.setDeserializeMainFunction(() => {});\n");
  execFileSync(node, ['--snapshot-blob', join(work, 'empty.blob'), '--build-snapshot', join(work, 'empty.js')], { stdio: 'ignore' });
  const rows = [
    { key: 'node', label: '`node -e 0`, the bundled Node.js', command: [node, '-e', '0'], env },
    {
      key: 'empty',
      label: 'the bundled Node.js from an empty startup snapshot (its own floor)',
      command: [node, '--snapshot-blob', join(work, 'empty.blob')],
      env,
    },
  ];
  const target = {};
  const baseLauncher = values['base-dist'] && join(resolve(values['base-dist']), 'gpu-textfile.js');
  /**
   * The base build's row of a collect command, beside this build's `before` row. Its code cache has a
   * directory of its own: a run keeps one build's cache file in its directory and removes the others'
   * (src/launch/code-cache.ts), so two builds sharing one would each compile from scratch at every run.
   */
  const baseRow = (label, args) =>
    baseLauncher
      ? [{ key: 'base', label, command: [node, baseLauncher, ...args], env: { ...env, NODE_COMPILE_CACHE: join(work, 'cache-base') } }]
      : [];
  if (gpu) {
    // collect's own nvidia-smi calls, recorded by a shim that runs the real one: those of a run after
    // the first (which also asks nvidia-smi for its fields and version, kept in the state directory).
    const log = join(work, 'smi-calls');
    const shim = join(work, 'nvidia-smi');
    writeFileSync(shim, `#!/bin/sh\nprintf '%s\\0' "$@" >> ${log}\nprintf '\\n' >> ${log}\nexec nvidia-smi "$@"\n`);
    chmodSync(shim, 0o755);
    const probe = ['collect', '--nvidia-smi', shim, '--textfile-dir', work, '--state-dir', join(work, 'probe-state')];
    execFileSync(node, [launcher, ...probe], { env, stdio: 'ignore' });
    writeFileSync(log, '');
    execFileSync(node, [launcher, ...probe], { env, stdio: 'ignore' });
    const calls = readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\0').filter(Boolean));
    for (const [i, args] of calls.entries())
      rows.push({
        key: `smi${i}`,
        label: `\`nvidia-smi ${args[0].slice(0, 40)}…\` (collect's call ${i + 1}, its whole argv)`,
        command: ['nvidia-smi', ...args],
        env,
      });
    const fields = calls
      .flat()
      .find((arg) => arg.startsWith('--query-gpu='))
      .slice('--query-gpu='.length);
    const collect = (name) => ['collect', '--textfile-dir', join(work, name), '--state-dir', join(work, `${name}-state`)];
    for (const name of ['base', 'before', 'snapshot', 'nvml-before', 'nvml', 'nvml-short', 'plain', 'floor'])
      execFileSync('mkdir', ['-p', join(work, name)]);
    rows.push(
      {
        key: 'bash',
        label: 'a bash script: one nvidia-smi call, a heredoc, mv (plain-collector.sh)',
        command: ['bash', join(ROOT, 'bench/plain-collector.sh'), 'nvidia-smi', fields, join(work, 'plain')],
        env,
      },
      {
        key: 'floor',
        label:
          "the floor of a Node.js one-shot: the bundled Node.js running collect's two calls at once and renaming a file (one-shot-floor.cjs)",
        command: [node, join(ROOT, 'bench/one-shot-floor.cjs'), join(work, 'floor'), JSON.stringify(calls)],
        env,
      },
      ...baseRow('collect, the base build, packaged Node.js, code cache', collect('base')),
      {
        key: 'before',
        label: 'collect, packaged, no snapshot (as the units started it: code cache)',
        command: [node, launcher, ...collect('before')],
        env: { ...env, NODE_COMPILE_CACHE: join(work, 'cache') },
      },
      {
        key: 'snapshot',
        label: '**collect, packaged, from its startup snapshot** (bin/gpu-textfile)',
        command: [join(top, 'bin/gpu-textfile'), ...collect('snapshot')],
        env,
      },
      {
        key: 'nvmlBefore',
        label: 'collect --source nvml, no snapshot (code cache), GPM window 100 ms',
        command: [node, launcher, ...collect('nvml-before'), '--source', 'nvml'],
        env: { ...env, NODE_COMPILE_CACHE: join(work, 'cache') },
      },
      {
        key: 'nvml',
        label: 'collect --source nvml, snapshot, GPM window 100 ms (the default)',
        command: [join(top, 'bin/gpu-textfile'), ...collect('nvml'), '--source', 'nvml'],
        env,
      },
      {
        key: 'nvmlShort',
        label: 'collect --source nvml, snapshot, --gpm-window 10ms',
        command: [join(top, 'bin/gpu-textfile'), ...collect('nvml-short'), '--source', 'nvml', '--gpm-window', '10ms'],
        env,
      },
    );
  } else {
    const demo = ['collect', '--dry-run', '--source', 'demo'];
    rows.push(
      ...baseRow('collect --dry-run --source demo, the base build, packaged Node.js, code cache', demo),
      {
        key: 'before',
        label: 'collect --dry-run --source demo, packaged, no snapshot (code cache)',
        command: [node, launcher, ...demo],
        env: { ...env, NODE_COMPILE_CACHE: join(work, 'cache') },
      },
      {
        key: 'snapshot',
        label: '**collect --dry-run --source demo, packaged, from its startup snapshot**',
        command: [join(top, 'bin/gpu-textfile'), ...demo],
        env,
      },
    );
  }
  // Without a snapshot, bin/gpu-textfile starts as the npm route does: those rows would time that again.
  if (!snapshot) rows.splice(0, rows.length, ...rows.filter((row) => !row.command[0].endsWith('bin/gpu-textfile') && row.key !== 'empty'));
  // The code cache written and the head start's record left (src/sources/nvidia-smi/head-start.ts), as
  // the units' first two runs do: the first learns the field names, the second starts the calls the
  // runs after it begin from the record.
  for (const row of rows.filter((r) => r.env.NODE_COMPILE_CACHE))
    for (let run = 0; run < 2; run++) execFileSync(row.command[0], row.command.slice(1), { env: row.env, stdio: 'ignore' });
  const spec = JSON.stringify({
    rounds: Number(values.rounds),
    rows: rows.map(({ label, command, env: e }) => ({ label, command, env: e })),
  });
  const results = JSON.parse(execFileSync('python3', [join(ROOT, 'bench/interleave.py')], { input: spec, maxBuffer: 1 << 26 }).toString());
  const m = {};
  console.log(`one-shot, ${values.rounds} rounds interleaved, medians (${gpu ? 'real nvidia-smi' : 'no GPU: the demo source'})\n`);
  console.log('| what | wall ms | CPU ms | peak RSS MiB | failed runs |\n|---|---:|---:|---:|---:|');
  rows.forEach((row, i) => {
    const r = results[i];
    m[row.key] = { wall: median(r.wall), cpu: median(r.cpu) };
    const failed = r.exit.filter((x) => x !== 0).length;
    console.log(`| ${row.label} | ${ms(m[row.key].wall)} | ${ms(m[row.key].cpu)} | ${ms(Math.max(...r.rss_kib) / 1024)} | ${failed} |`);
  });
  console.log('\n| target | measured | bound | verdict |\n|---|---:|---:|---|');
  const say = (what, measured, bound, floor) =>
    console.log(
      `| ${what} | ${ms(measured)} | ${ms(bound)}${floor ? ` (floor measured: ${floor})` : ''} | ${measured <= bound ? 'met' : 'not met'} |`,
    );
  const main = m.snapshot ?? m.before;
  if (gpu) {
    const longer = Math.max(...rows.filter((r) => r.key.startsWith('smi')).map((r) => m[r.key].wall));
    target.wall = m.node.wall + longer + 20;
    for (const [key, what] of [
      ['base', 'the base build (code cache)'],
      ['before', 'no snapshot (code cache)'],
      ['snapshot', 'from its snapshot'],
    ]) {
      if (!m[key]) continue;
      say(
        `packaged one-shot, ${what}: wall <= \`node -e 0\` + the longer nvidia-smi call + 20 ms`,
        m[key].wall,
        target.wall,
        `a Node.js one-shot that only runs the two calls and renames a file ${ms(m.floor.wall)} ms`,
      );
      say(
        `packaged one-shot, ${what}: CPU <= 2.5 x the bash script's`,
        m[key].cpu,
        2.5 * m.bash.cpu,
        `\`node -e 0\` alone ${ms(m.node.cpu)} ms CPU`,
      );
    }
    say(
      "`--source nvml` one-shot (code cache), its GPM window (100 ms) apart: wall <= the nvidia-smi one-shot's",
      m.nvmlBefore.wall - 100,
      m.before.wall,
    );
    if (m.nvml) say('the same from the snapshot', m.nvml.wall - 100, main.wall);
    if (m.nvmlShort) say('the same from the snapshot at --gpm-window 10ms, its window apart', m.nvmlShort.wall - 10, main.wall);
  } else {
    for (const [key, what] of [
      ['base', 'the base build (code cache)'],
      ['before', 'no snapshot (code cache)'],
      ['snapshot', 'from its snapshot'],
    ])
      if (m[key])
        say(
          `\`collect --dry-run --source demo\`, ${what}: wall <= \`node -e 0\` + 20 ms`,
          m[key].wall,
          m.node.wall + 20,
          key === 'snapshot' && m.empty ? `a start from an empty snapshot ${ms(m.empty.wall)} ms` : undefined,
        );
  }
  if (values.json)
    writeFileSync(
      values.json,
      JSON.stringify({ rows: rows.map((r, i) => ({ ...r, env: undefined, ...results[i] })), medians: m }, null, 1),
    );
} finally {
  rmSync(work, { recursive: true, force: true });
}
