// Cuts bench/pulse-series.sh's recordings into one fixture per phase:
//   node bench/cut-series.mjs DIR GPU__DRIVER [DEST]   (DIR holds phases.txt and lms*.csv)
// A phase runs from its "phase NAME …" line to the next one; its first 0.5 s is left out (the load
// starting), and "rest" and "end" are not phases; rows before the first phase are "idle-before-load". Times are compared as nvidia-smi prints them.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [dir, prefix, dest = 'test/fixtures/series'] = process.argv.slice(2);
if (!dir || !prefix) {
  console.error('usage: node bench/cut-series.mjs DIR GPU__DRIVER [DEST]');
  process.exit(2);
}
// "2026/12/01 11:18:36.650" -> ms; both files carry the GPU host's local time, so reading both as UTC is consistent.
const ms = (text) => {
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3})/.exec(text.trim());
  return m ? Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6], +m[7]) : Number.NaN;
};
// What the recorders saw before load.py's first phase (python starting, before torch takes the GPU) is an idle recording too.
const phases = [
  { name: 'idle-before-load', start: -Infinity },
  ...readFileSync(join(dir, 'phases.txt'), 'utf8')
    .split('\n')
    .flatMap((line) => {
      const m = /^phase (\S+) \S+ (.+)$/.exec(line);
      return m ? [{ name: m[1], start: ms(m[2]) }] : [];
    }),
];
for (const file of readdirSync(dir).filter((f) => /^lms\d+\.csv$/.test(f))) {
  const [header, ...rows] = readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  phases.forEach((phase, i) => {
    const end = phases[i + 1]?.start;
    if (phase.name === 'rest' || phase.name === 'end' || end === undefined) return;
    const kept = rows.filter((row) => {
      const t = ms(row.split(',')[0]);
      return t >= phase.start + 500 && t < end;
    });
    const out = join(dest, `${prefix}__${phase.name}__${file.replace('.csv', '')}.csv`);
    writeFileSync(out, [header, ...kept, ''].join('\n'));
    console.log(`${out}: ${kept.length} rows`);
  });
}
