// The NVML source's pipeline without the CLI around it, for GPU hosts that can be sent only a small
// file (bench/nvml-device-probe.sh bundles it): NVML read -> collection -> exposition, as collect builds it.
//   node nvml-probe.js oneshot KOFFI_DIR [GPM_WINDOW_MS] [no-gpm]   prints the exposition
//   node nvml-probe.js daemon KOFFI_DIR SECONDS [no-gpm]            samples every 250 ms; prints CPU per sample (all threads)
//   node nvml-probe.js calls KOFFI_DIR RUNS                          each NVML call's cost (bench/nvml-calls-table.mjs)
import { readdirSync, readFileSync } from 'node:fs';
import { collect } from '../src/collect/collect.js';
import { render } from '../src/exposition/render.js';
import { FIELDS } from '../src/fields/fields.js';
import { selectFields } from '../src/fields/field-select.js';
import { hostAt } from '../src/host/host.js';
import { buildFamilies } from '../src/metrics/metrics.js';
import { nvmlOpener, nvmlSource } from '../src/sources/nvml/source.js';
import { timeCalls } from './nvml-calls-table.mjs';

const [mode, koffiDir = '', third = '100', flag] = process.argv.slice(2);
const fields = selectFields(FIELDS, flag === 'no-gpm' ? ['nvml.gpm.*'] : []);
const gpmWindowMs = mode === 'oneshot' ? Number(third) : 100;
const source = nvmlSource({ library: 'libnvidia-ml.so.1', koffiDir, gpmWindowMs });
const host = hostAt('/');
const once = async () => {
  const { collection } = await collect({ reads: source.reads(), fields, processes: true, state: {}, host, now: Date.now });
  return render(buildFamilies(collection));
};
const cpu = () =>
  readdirSync('/proc/self/task').reduce(
    (sum, t) => sum + Number(readFileSync(`/proc/self/task/${t}/schedstat`, 'utf8').split(' ')[0]) / 1e9,
    0,
  );

if (mode === 'calls') {
  const nvml = nvmlOpener({ library: 'libnvidia-ml.so.1', koffiDir })();
  if ('reason' in nvml) console.log(nvml.message);
  else timeCalls(nvml, Number(third));
} else if (mode === 'oneshot') process.stdout.write(await once());
else {
  await once();
  const seconds = Number(third);
  const start = cpu();
  let samples = 0;
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const read = await source.reads().gpus({ fields, knownGpus: [] });
    if (read.kind === 'ok') render(buildFamilies({ fields: read.fields, samples: read.samples, down: [], health: { durationSeconds: 0 } }));
    samples++;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
  console.log(
    `${samples} samples, ${(((cpu() - start) / samples) * 1000).toFixed(3)} ms CPU per sample (all threads), RSS ${rss.toFixed(1)} MiB`,
  );
}
