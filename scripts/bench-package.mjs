// npm run bench (its last part): the packaged program (scripts/package.mjs) against today's
// `node dist/gpu-textfile.js`, side by side in one run on one machine. One-shot collect, as the timer
// runs it every 15 s: wall, CPU (user + sys, children included: the stand-in nvidia-smi too) and peak
// RSS of each run, from bench/measure.py (wait4). The packaged program runs as its unit runs it:
// its own node, NODE_COMPILE_CACHE set, no NODE_EXTRA_CA_CERTS. nvidia-smi is the stand-in replaying
// the 2 x H200 recording (it is itself a Node.js script: its cost is in every row alike).
// Then the packages' sizes: compressed (the files) and installed.
//   node scripts/bench-package.mjs [--runs N]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
const { version } = JSON.parse(
  execFileSync(process.execPath, ['-p', 'JSON.stringify(require("./package.json"))'], { cwd: ROOT }).toString(),
);
const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-bench-package-'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const MiB = (bytes) => (bytes / 1024 / 1024).toFixed(1);

try {
  const out = join(work, 'out');
  execFileSync(process.execPath, [join(ROOT, 'scripts/package.mjs'), '--arch', 'x64', '--out', out], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  execFileSync('tar', ['-xzf', join(out, `gpu-textfile-${version}-linux-x64.tar.gz`), '-C', work]);
  const top = join(work, `gpu-textfile-${version}-linux-x64`);
  const env = { ...process.env, FAKE_SMI_CAPTURE: join(ROOT, 'test/fixtures/captures/h200x2__580.159.04__linux-idle') };
  // The real nvidia-smi where one answers (a GPU host: what the comparison is about), else the stand-in.
  const real = (() => {
    try {
      execFileSync('nvidia-smi', ['-L'], { stdio: 'ignore', timeout: 10_000 });
      return true;
    } catch {
      return false;
    }
  })();
  const smi = real ? 'nvidia-smi' : join(ROOT, 'test/fixtures/bin/nvidia-smi');
  delete env.NODE_EXTRA_CA_CERTS;
  delete env.NODE_COMPILE_CACHE;
  const collect = (dir) => ['collect', '--nvidia-smi', smi, '--textfile-dir', join(work, dir), '--state-dir', join(work, `${dir}-state`)];
  const rows = [
    {
      label: `node dist/gpu-textfile.js (this machine's ${process.version})`,
      command: [process.execPath, join(ROOT, 'dist/gpu-textfile.js'), ...collect('a')],
      env,
    },
    {
      label: `the same, with NODE_COMPILE_CACHE (as npm's install writes the units)`,
      command: [process.execPath, join(ROOT, 'dist/gpu-textfile.js'), ...collect('b')],
      env: { ...env, NODE_COMPILE_CACHE: join(work, 'cache-b') },
    },
    {
      label: `packaged: its own node (${execFileSync(join(top, 'node/bin/node'), ['--version']).toString().trim()}), as its unit runs it`,
      command: [join(top, 'node/bin/node'), join(top, 'dist/gpu-textfile.js'), ...collect('c')],
      env: { ...env, NODE_COMPILE_CACHE: join(work, 'cache-c') },
    },
  ];
  console.log(
    `\none-shot collect, ${values.runs} runs each (median; peak RSS the largest), ${real ? 'the real nvidia-smi' : 'stand-in nvidia-smi'}:\n`,
  );
  console.log('| program | wall ms | CPU ms | peak RSS MiB |');
  console.log('|---|---:|---:|---:|');
  for (const row of rows) {
    // One run first: the compile cache is written by the first collect that succeeds.
    execFileSync(row.command[0], row.command.slice(1), { env: row.env, stdio: 'ignore' });
    const result = JSON.parse(
      execFileSync('python3', [join(ROOT, 'bench/measure.py'), values.runs, '--', ...row.command], { env: row.env }).toString(),
    );
    if (result.exit.some((code) => code !== 0)) throw new Error(`${row.label}: exits ${result.exit}`);
    console.log(
      `| ${row.label} | ${(median(result.wall) * 1000).toFixed(1)} | ${(median(result.cpu) * 1000).toFixed(1)} | ${MiB(Math.max(...result.maxrss_kib) * 1024)} |`,
    );
  }
  console.log('\n| package (linux-x64) | compressed MiB | installed MiB |');
  console.log('|---|---:|---:|');
  const installed = Number(execFileSync('du', ['-sb', top]).toString().split('\t')[0]);
  for (const file of readdirSync(out).sort()) {
    const size = statSync(join(out, file)).size;
    const debInstalled = file.endsWith('.deb')
      ? Number(execFileSync('dpkg-deb', ['-f', join(out, file), 'Installed-Size']).toString()) * 1024
      : installed;
    console.log(`| ${file} | ${MiB(size)} | ${MiB(debInstalled)} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
