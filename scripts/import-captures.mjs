#!/usr/bin/env node
// Copies the recorded nvidia-smi outputs in ../shared/fixtures into test/fixtures/captures/, one folder
// per GPU x driver x state, with files named after the argv that produced them and a SOURCE.md.
// Run once when the shared fixtures change: node scripts/import-captures.mjs ../shared/fixtures
import { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { basename, join } from 'node:path';

const shared = process.argv[2] ?? '../shared/fixtures';
const out = 'test/fixtures/captures';
const peers = join(shared, 'peers/utkuozdemir_nvidia_gpu_exporter');

function write(dir, files, source) {
  mkdirSync(join(out, dir), { recursive: true });
  for (const [name, text] of Object.entries(files))
    if (text !== undefined) writeFileSync(join(out, dir, name), text.endsWith('\n') ? text : `${text}\n`);
  writeFileSync(join(out, dir, 'SOURCE.md'), `${source.trim()}\n`);
}

/** Sections of a nvidia_gpu_exporter capture: "# <state> :: <what>" banners, then "# $ <command>", then output. */
function sections(text) {
  const result = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const banner = /^# (\w+) :: (.+)$/.exec(lines[i]);
    if (!banner) continue;
    const command = /^# \$ (.*)$/.exec(lines[i + 1] ?? '')?.[1] ?? '';
    let j = i + 2;
    while (j < lines.length && lines[j].startsWith('####')) j++;
    const body = [];
    while (j < lines.length && !lines[j].startsWith('####') && !/^# \w+ :: /.test(lines[j])) body.push(lines[j++]);
    while (body.length && body[body.length - 1] === '') body.pop();
    result.push({ state: banner[1], what: banner[2], command, body: body.join('\n') });
  }
  return result;
}

const find = (all, state, prefix) => all.find((s) => s.state === state && s.what.startsWith(prefix))?.body;

for (const file of readdirSync(peers).filter((f) => /^(linux|windows)-x86_64__.*\.txt$/.test(f))) {
  const [os, gpu, driver] = basename(file, '.txt').split('__');
  const all = sections(readFileSync(join(peers, file), 'utf8'));
  for (const state of ['idle', 'load']) {
    const queryGpu = find(all, state, 'query-gpu');
    if (!queryGpu) continue;
    write(
      `${gpu.replace(/^nvidia-/, '')}__${driver}__${os.split('-')[0]}-${state}`,
      {
        'query-gpu.csv': queryGpu,
        'help-query-gpu.txt': find(all, 'capabilities', 'help-query-gpu'),
        'query-compute-apps.csv': find(all, state, 'query-compute-apps'),
        'L.txt': find(all, 'capabilities', 'list'),
        'version.txt': find(all, 'capabilities', 'version'),
      },
      `Copied from ../shared/fixtures/peers/utkuozdemir_nvidia_gpu_exporter/${file}
(utkuozdemir/nvidia_gpu_exporter, MIT, internal/captures/; see ../shared/fixtures/peers/SOURCES.md),
sections "${state} :: query-gpu", "${state} :: query-compute-apps", "capabilities :: help-query-gpu",
"capabilities :: list (-L)", "capabilities :: version" (--version). Recorded with --format=csv (header and units); UUIDs and serials masked.`,
    );
  }
}

// Old single-file samples: "# nvidia-smi <args>" banners.
for (const [file, dir] of [
  ['output_ubuntu_20.04_v465.27.txt', 'geforce-rtx-2080-super__465.27__linux'],
  ['output_win10_v466.63.txt', 'geforce-rtx-2080-super__466.63__windows'],
]) {
  const text = readFileSync(join(peers, file), 'utf8');
  const parts = text.split(/^# nvidia-smi /m).slice(1);
  const part = (prefix) =>
    parts
      .find((p) => p.startsWith(prefix))
      ?.split('\n')
      .slice(1)
      .join('\n')
      .trim();
  write(
    dir,
    {
      'query-gpu.csv': part('--query-gpu'),
      'help-query-gpu.txt': part('--help-query-gpu'),
      'L.txt': part('--list-gpus'),
    },
    `Copied from ../shared/fixtures/peers/utkuozdemir_nvidia_gpu_exporter/${file}
(utkuozdemir/nvidia_gpu_exporter, MIT, samples/ at 49daf497; see ../shared/fixtures/peers/SOURCES.md).
Throttle-era field names (clocks_throttle_reasons.*); no clock event counters.`,
  );
}

// The 2 x H200 host recorded for this project.
const h200 = join(shared, 'h200x2/query');
const read = (f) => (existsSync(join(h200, f)) ? readFileSync(join(h200, f), 'utf8') : undefined);
const h200Source = (what) => `Copied from ../shared/fixtures/h200x2/query/ (2 x NVIDIA H200, driver 580.159.04, Ubuntu 24.04, recorded
2026-11-29 for this project; see ../shared/fixtures/h200x2/README.md). ${what}`;
write(
  'h200x2__580.159.04__linux-idle',
  {
    'query-gpu.csv': read('all-fields.csv'),
    'help-query-gpu.txt': read('help-query-gpu.txt'),
    'query-compute-apps.csv': read('compute-apps.csv'),
    'L.txt': read('L.txt'),
    'version.txt': read('version.txt'),
  },
  h200Source(
    'query-gpu.csv is all-fields.csv (every valid field, --format=csv); query-compute-apps.csv is compute-apps.csv (three processes, one on both GPUs); version.txt is --version.',
  ),
);
write(
  'h200x2__580.159.04__linux-load',
  {
    'query-gpu.csv': read('after-load.csv'),
    'help-query-gpu.txt': read('help-query-gpu.txt'),
    'query-compute-apps.csv': read('compute-apps.csv'),
    'L.txt': read('L.txt'),
    'version.txt': read('version.txt'),
  },
  h200Source('query-gpu.csv is after-load.csv (all fields right after a load); version.txt is --version.'),
);

// Failures: what nvidia-smi printed, and its exit status, for every call while the host was broken.
const errors = join(shared, 'h200x2/errors');
for (const [file, dir, code] of [
  ['no-ctl.txt', 'h200x2__580.159.04__gpu-access-blocked', 17],
  ['no-nvml-lib.txt', 'h200x2__580.159.04__nvml-library-missing', 12],
  ['bad-index.txt', 'h200x2__580.159.04__no-devices', 6],
]) {
  write(
    dir,
    { 'fail.txt': readFileSync(join(errors, file), 'utf8'), 'fail.exit': String(code) },
    `Copied from ../shared/fixtures/h200x2/errors/${file} (exit ${code}; see exit-codes.txt there).`,
  );
}
