// The floor under a one-shot `collect --source nvml`: Node.js, koffi's native module, nvmlInit_v2 and
// one read of every default field of every GPU through the source's own readers (dist/nvml.js), with
// nothing rendered, checked, locked or written. bench/nvml.mjs runs it beside the CLI: what the CLI
// costs above it is ours; what it costs above `node -e 0` is the library's and the driver's (the first
// call of each NVML function in a process is far slower than the next: measured in the same run).
//   node bench/nvml-floor.cjs [libnvidia-ml.so.1] [--timed]
const { join } = require('node:path');
const ROOT = join(__dirname, '..');
const started = process.hrtime.bigint();
const { nvmlOpener, readGpus, readPlan, FIELDS, selectFields } = require(join(ROOT, 'dist/nvml.js'));
const loaded = process.hrtime.bigint();
const nvml = nvmlOpener({ library: process.argv[2] ?? 'libnvidia-ml.so.1', koffiDir: join(ROOT, 'dist/koffi') })();
if ('reason' in nvml) {
  console.error(`${nvml.reason}: ${nvml.message}`);
  process.exit(1);
}
const opened = process.hrtime.bigint();
const plan = readPlan(selectFields(FIELDS, ['nvml.gpm.*'], false));
const read = () => readGpus(nvml, plan, { knownGpus: [] }, new Map(), { gpmWindowMs: 0, energyEveryMs: 0, settingsEveryMs: 0 });
read().then(async (first) => {
  if (first.kind !== 'ok') process.exit(1);
  const firstDone = process.hrtime.bigint();
  if (!process.argv.includes('--timed')) return;
  await read();
  const second = process.hrtime.bigint();
  const ms = (a, b) => (Number(b - a) / 1e6).toFixed(1);
  console.log(
    JSON.stringify({
      loadMs: ms(started, loaded),
      openMs: ms(loaded, opened),
      firstReadMs: ms(opened, firstDone),
      secondReadMs: ms(firstDone, second),
      gpus: first.samples.length,
    }),
  );
});
