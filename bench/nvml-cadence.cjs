// What the daemon mode's NVML read costs at its own cadence: readGpus (the source's read of every GPU,
// through the bundle users run) every --every ms as `collect --interval` calls it, with every NVML call
// timed. Calls made far apart cost several times what they cost back to back (caches, the driver's
// state), so bench/nvml-calls.mjs's table is the lower bound and this one what a sample pays.
//   node bench/nvml-cadence.cjs [--every 250] [--seconds 15] [--nvml-library PATH] [--exclude-fields 'nvml.gpm.*,...'] [--json]
// --json prints one line instead of the table: NVML's calls and the whole read, ms per sample (bench/side-by-side.mjs).
const { join } = require('node:path');
const ROOT = join(__dirname, '..');
const { nvmlOpener, readGpus, readPlan, FIELDS, selectFields } = require(join(ROOT, 'dist/nvml.js'));

const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const every = Number(arg('--every', 250));
const seconds = Number(arg('--seconds', 15));
const excluded = arg('--exclude-fields', '').split(',').filter(Boolean);
const WARMUP_MS = 5000;
// The daemon mode's cadences (src/sources/nvml/source.ts).
const timing = { gpmWindowMs: 100, energyEveryMs: 10_000, settingsEveryMs: 30_000, gpmEveryMs: 1000 };

const opened = nvmlOpener({ library: arg('--nvml-library', 'libnvidia-ml.so.1'), koffiDir: join(ROOT, 'dist/koffi') })();
if ('reason' in opened) {
  console.error(`NVML did not open: ${opened.reason}: ${opened.message}`);
  process.exit(1);
}
/** Each call's count and time, by method (and its first string argument: which getter, which clock). */
const calls = new Map();
const nvml = new Proxy(opened, {
  get(target, name) {
    const method = target[name];
    if (typeof method !== 'function') return method;
    return (...args) => {
      const started = process.hrtime.bigint();
      const result = method.apply(target, args);
      const us = Number(process.hrtime.bigint() - started) / 1e3;
      const key = [name, ...args.filter((a) => typeof a === 'string')].join(':');
      const seen = calls.get(key) ?? { n: 0, us: 0 };
      calls.set(key, { n: seen.n + 1, us: seen.us + us });
      return result;
    };
  },
});
const plan = readPlan(selectFields(FIELDS, excluded, false));
const kept = new Map();
let handles;
let samples = 0;
let readUs = 0;
let gpus = 0;
const started = Date.now();
const tick = async () => {
  const at = process.hrtime.bigint();
  const read = await readGpus(nvml, plan, { knownGpus: [] }, kept, { ...timing, takenAt: Date.now() }, handles);
  handles = read.kind === 'ok' ? read.handles : undefined;
  gpus = read.kind === 'ok' ? read.samples.length : 0;
  if (Date.now() - started < WARMUP_MS) calls.clear();
  else {
    samples++;
    readUs += Number(process.hrtime.bigint() - at) / 1e3;
  }
  if (Date.now() - started < WARMUP_MS + seconds * 1000) setTimeout(tick, every);
  else report();
};
function report() {
  const perSample = (us) => (us / samples / 1000).toFixed(3);
  const rows = [...calls].sort((a, b) => b[1].us - a[1].us);
  const energy = calls.get('energy')?.us ?? 0;
  const allCalls = rows.reduce((sum, [, c]) => sum + c.us, 0);
  if (process.argv.includes('--json')) {
    const perMs = (us) => us / samples / 1000;
    console.log(JSON.stringify({ every, gpus, samples, callsMsPerSample: perMs(allCalls), readMsPerSample: perMs(readUs) }));
    return;
  }
  console.log(`## The daemon mode's NVML read at a ${every} ms cadence (${gpus} GPU(s), ${samples} samples after ${WARMUP_MS / 1000} s)\n`);
  console.log('| NVML call | calls per sample | ms per call | ms per sample |');
  console.log('|---|---|---|---|');
  for (const [key, c] of rows)
    console.log(`| ${key} | ${(c.n / samples).toFixed(2)} | ${(c.us / c.n / 1000).toFixed(3)} | ${perSample(c.us)} |`);
  console.log(
    `\nper sample: the read ${perSample(readUs)} ms, of which NVML's calls ${perSample(allCalls)} ms (the energy read, every 10 s: ${perSample(energy)} ms) and the source's JavaScript ${perSample(readUs - allCalls)} ms`,
  );
}
void tick();
