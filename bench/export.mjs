// `export` over generated trails of growing length: rows per second and peak RSS, to show that its
// memory does not grow with the trail (docs/export.md's table). Each trail is written once by
// make-history.mjs (no sidecars: export reads rows) under DIR, then exported to /dev/null, both
// formats; wall and CPU time and peak RSS come from wait4() (measure.py).
//   node bench/export.mjs DIR [GPUS] [DAYS...]      e.g. DIR 8 1 7 30
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const [dir, gpus = '8', ...spans] = process.argv.slice(2);
if (!dir || !(Number(gpus) > 0)) throw new Error('usage: node bench/export.mjs DIR [GPUS] [DAYS...]');
const days = spans.length > 0 ? spans.map(Number) : [1, 7, 30];

const rows = [];
for (const span of days) {
  const trail = join(dir, `${span}d-${gpus}gpu`);
  if (!existsSync(trail))
    execFileSync(process.execPath, [join(ROOT, 'bench/make-history.mjs'), trail, String(span), gpus, '--no-sidecars']);
  const count = span * 5760 * Number(gpus);
  for (const format of ['openmetrics', 'prometheus']) {
    const command = [
      process.execPath,
      join(ROOT, 'dist/gpu-textfile.js'),
      'export',
      '--csv-dir',
      trail,
      '--since',
      '2025-01-01',
      '--format',
      format,
    ];
    const measured = JSON.parse(execFileSync('python3', [join(ROOT, 'bench/measure.py'), '1', '--', ...command], { encoding: 'utf8' }));
    if (measured.exit[0] !== 0) throw new Error(`export exited ${measured.exit[0]}: ${command.join(' ')}`);
    rows.push({
      days: span,
      gpus: Number(gpus),
      format,
      rows: count,
      wall_s: +measured.wall[0].toFixed(1),
      cpu_s: +measured.cpu[0].toFixed(1),
      rows_per_s_wall: Math.round(count / measured.wall[0]),
      rows_per_s_cpu: Math.round(count / measured.cpu[0]),
      peak_rss_mib: Math.round(measured.maxrss_kib[0] / 1024),
    });
  }
}
console.table(rows);
