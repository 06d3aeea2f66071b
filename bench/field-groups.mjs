#!/usr/bin/env node
// What each metric family of the field table adds to gpu-textfile's --query-gpu call on this host:
// the default query timed whole, and without each family's fields (RUNS runs each, medians).
// Usage: node bench/field-groups.mjs GROUPS.json [--nvidia-smi PATH] [--runs 5]
// GROUPS.json: { "family": ["query name", …], … } in this driver's names (scripts/field-groups.mjs writes it).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const smi = arg('--nvidia-smi', 'nvidia-smi');
const runs = Number(arg('--runs', 5));
const groups = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const all = Object.values(groups).flat();

const time = (fields) => {
  const walls = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    execFileSync(smi, [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'], { stdio: 'pipe' });
    walls.push(performance.now() - start);
  }
  return walls.sort((a, b) => a - b)[Math.floor(runs / 2)];
};

const whole = time(all);
const identity = time(['index', 'uuid']);
console.log(`default set (${all.length} fields): ${whole.toFixed(1)} ms; index,uuid alone: ${identity.toFixed(1)} ms (median of ${runs})`);
console.log('| family | fields | saved when left out, ms |');
console.log('|---|---|---|');
const rows = Object.entries(groups)
  .filter(([family]) => family !== 'identity')
  .map(([family, fields]) => ({ family, fields, saved: whole - time(all.filter((f) => !fields.includes(f))) }))
  .sort((a, b) => b.saved - a.saved);
for (const r of rows) console.log(`| ${r.family} | ${r.fields.length} | ${r.saved.toFixed(1)} |`);
