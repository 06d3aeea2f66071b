#!/usr/bin/env node
// What each --query-gpu field costs on this GPU host: every field nvidia-smi --help-query-gpu lists,
// queried alone (with index) RUNS times; the median, against index alone. Then the default set
// gpu-textfile queries and all fields together. Usage: node bench/field-costs.mjs [--nvidia-smi PATH] [--runs 3]
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';

const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const smi = arg('--nvidia-smi', 'nvidia-smi');
const runs = Number(arg('--runs', 3));
const defaultSet = arg('--default', '');

function time(fields) {
  const walls = [];
  let ok = true;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    try {
      execFileSync(smi, [`--query-gpu=${fields}`, '--format=csv,noheader,nounits'], { stdio: 'pipe' });
    } catch {
      ok = false;
    }
    walls.push(performance.now() - start);
  }
  walls.sort((a, b) => a - b);
  return { ms: walls[Math.floor(walls.length / 2)], ok };
}

const help = execFileSync(smi, ['--help-query-gpu']).toString();
const names = [
  ...new Set(
    help
      .split('\n')
      .filter((l) => /^"[A-Za-z_][\w.]*"/.test(l))
      .map((l) => /^"([^"]+)"/.exec(l)[1]),
  ),
];
const base = time('index').ms;
const rows = names.map((name) => ({ name, ...time(`index,${name}`) })).filter((r) => r.ok);
rows.sort((a, b) => b.ms - a.ms);
console.log(`index alone: ${base.toFixed(1)} ms (median of ${runs})`);
console.log('| field | wall ms | over index alone |');
console.log('|---|---|---|');
for (const r of rows.slice(0, 25)) console.log(`| ${r.name} | ${r.ms.toFixed(1)} | ${(r.ms - base).toFixed(1)} |`);
console.log(`(${rows.length} fields accepted; the 25 slowest shown)`);
const all = time(rows.map((r) => r.name).join(','));
console.log(`all ${rows.length} fields together: ${all.ms.toFixed(1)} ms`);
if (defaultSet) console.log(`gpu-textfile's default set (${defaultSet.split(',').length} fields): ${time(defaultSet).ms.toFixed(1)} ms`);
