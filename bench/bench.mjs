#!/usr/bin/env node
// npm run bench: the one entry point. Runs the steps below in order, each a script of bench/ with its
// arguments, and stops at none: a step that fails is said and the next one runs. The first step prints
// the side-by-side table of the one-shot (issue 41's targets beside the floors); BENCHMARKS.md holds
// the results and how to read them, bench/README.md what each script measures.
//   node bench/bench.mjs [--long] [--only NAME]... [--list] [-- ARGS for a single --only step]
// --long adds the slow steps (the report and export over generated trails: tens of minutes).
// A step marked `gpu` runs only where nvidia-smi answers (a GPU host: bench/gpu-host.sh runs this).
// To add a step, add one line to STEPS.
import { execFileSync, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '..');

/** name, the script and its arguments, and when it runs: always, on a GPU host, or with --long. */
const STEPS = [
  { name: 'one-shot', run: ['bench/one-shot.mjs'], when: 'always' },
  { name: 'sample', run: ['bench/run.mjs', '--no-report'], when: 'always' },
  { name: 'reservations', run: ['bench/reservations.mjs'], when: 'always' },
  { name: 'nvml', run: ['bench/nvml.mjs'], when: 'gpu' },
  { name: 'nvml-calls', run: ['bench/nvml-calls.mjs'], when: 'gpu' },
  { name: 'report-history', run: ['bench/report-history.mjs'], when: 'long' },
  { name: 'export', run: ['bench/export.mjs', '/tmp/gpu-textfile-bench-export', '8', '1', '7', '30'], when: 'long' },
  { name: 'report-store', run: ['bench/report-store.mjs'], when: 'long' },
  { name: 'report-store-client', run: ['bench/report-store-client.mjs'], when: 'long' },
];

const { values, positionals } = parseArgs({
  options: {
    long: { type: 'boolean', default: false },
    only: { type: 'string', multiple: true, default: [] },
    list: { type: 'boolean', default: false },
  },
  allowPositionals: true,
});
if (values.list) {
  for (const step of STEPS) console.log(`${step.name.padEnd(16)} ${step.when.padEnd(7)} node ${step.run.join(' ')}`);
  process.exit(0);
}
const unknown = values.only.filter((name) => !STEPS.some((step) => step.name === name));
if (unknown.length > 0) {
  console.error(`bench: no step ${unknown.join(', ')}: ${STEPS.map((step) => step.name).join(', ')}`);
  process.exit(2);
}
const gpu = (() => {
  try {
    execFileSync('nvidia-smi', ['-L'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
})();
const chosen = STEPS.filter((step) =>
  values.only.length > 0
    ? values.only.includes(step.name)
    : step.when === 'always' || (step.when === 'gpu' && gpu) || (step.when === 'long' && values.long),
);
let failed = 0;
for (const step of chosen) {
  const args = [...step.run, ...(values.only.length === 1 ? positionals : [])];
  console.log(`\n== bench: ${step.name} (node ${args.join(' ')})`);
  const result = spawnSync(process.execPath, [join(ROOT, args[0]), ...args.slice(1)], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    console.log(`== bench: ${step.name} failed (exit ${result.status ?? result.signal})`);
  }
}
const skipped = STEPS.filter((step) => !chosen.includes(step)).map((step) => `${step.name} (${step.when})`);
if (skipped.length > 0) console.log(`\n== bench: not run here: ${skipped.join(', ')}`);
process.exit(failed > 0 ? 1 : 0);
