#!/usr/bin/env node
// What each NVML call the nvml source makes costs, on this host, through the shipped bundle (dist/nvml.js
// and its koffi): library load + nvmlInit_v2 once, then each call RUNS times per GPU; median and p90 in ms.
//   node bench/nvml-calls.mjs [--runs 50] [--nvml-library PATH]
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { timeCalls } from './nvml-calls-table.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const runs = Number(arg('--runs', 50));
const library = arg('--nvml-library', 'libnvidia-ml.so.1');

const t0 = performance.now();
const { nvmlOpener } = createRequire(import.meta.url)(join(ROOT, 'dist/nvml.js'));
const t1 = performance.now();
const nvml = nvmlOpener({ library, koffiDir: join(ROOT, 'dist/koffi') })();
const t2 = performance.now();
if ('reason' in nvml) {
  console.log(`NVML did not open: ${nvml.reason}: ${nvml.message}`);
  process.exit(1);
}
console.log(`load dist/nvml.js (koffi included) ${(t1 - t0).toFixed(1)} ms; load library + nvmlInit_v2 ${(t2 - t1).toFixed(1)} ms\n`);

timeCalls(nvml, runs);
