import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition, type ParsedSample } from '../../../src/exposition/check.js';
import { CLOCK_EVENT_REASON_BITS, type FieldSpec } from '../../../src/fields/field-spec.js';
import { FIELDS } from '../../../src/fields/fields.js';
import { FAKE_SMI, FIXTURES, capture, runCli, tempDir } from '../../support/helpers.js';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';

// Both sources on one real H200 at the same moments (test/fixtures/nvml-equivalence/, see its SOURCE.md),
// replayed through our code: each moment's nvidia-smi answer is rebuilt as a capture from what the
// nvidia-smi source recorded (every field's printed cell), the stand-in nvidia-smi replays it to the
// nvidia-smi source and the stand-in libnvidia-ml answers the same values (plus the NVML-only ones the
// NVML source recorded) to the NVML source. What the two sources render must be the same series with
// the same values, and each must agree with what that source rendered on the GPU.

const DIR = join(FIXTURES, 'nvml-equivalence/h200__580.159.04');
// The same driver's capture: its header (every column that driver has, with units) and its
// --help-query-gpu give the stand-in nvidia-smi the columns; each value of GPU 0 is then replaced.
const TEMPLATE = capture('h200x2__580.159.04__linux-load');
const NVML_ONLY = new Set([
  ...FIELDS.filter((field) => field.nvml).map((field) => field.metric!),
  // Per-process utilization: NVML's alone too (test/sources/nvml/process-utilization.test.ts).
  'nvidia_gpu_process_sm_utilization_ratio',
  'nvidia_gpu_process_memory_utilization_ratio',
]);
const MIB = 1024 * 1024;

const recorded = async (name: string) => checkExposition(await readFile(join(DIR, name), 'utf8')).samples;
const key = (s: ParsedSample) => `${s.name}${JSON.stringify(s.labels)}`;
/** Lines that differ between any two runs: how long it took, when it succeeded. */
const TIMING = new Set(['nvidia_gpu_collector_duration_seconds', 'nvidia_gpu_collector_last_success_timestamp_seconds']);

/** How nvidia-smi printed the value a series of `field` holds ("1485 MHz", "Enabled", "P0"), or undefined. */
function cellOf(field: FieldSpec, samples: readonly ParsedSample[], unit: string | undefined): string | undefined {
  const gpu0 = samples.filter((s) => s.labels.gpu === '0');
  if (field.kind === 'label') return gpu0.find((s) => s.name === 'nvidia_gpu_info')?.labels[field.label!];
  const series = gpu0.filter((s) => s.name === field.metric && Object.entries(field.labels ?? {}).every(([k, v]) => s.labels[k] === v));
  if (field.kind === 'state') return series.find((s) => s.value === 1)?.labels[field.stateLabel!];
  if (series.length !== 1) return undefined;
  const value = series[0]!.value;
  switch (field.kind) {
    case 'enabled':
      return value ? 'Enabled' : 'Disabled';
    case 'active':
      return value ? 'Active' : 'Not Active';
    case 'yes-no':
      return value ? 'Yes' : 'No';
    case 'pstate':
      return `P${value}`;
    default: {
      const printed = String(Number((value / (field.factor ?? 1)).toPrecision(12)));
      return unit ? `${printed} ${unit}` : printed;
    }
  }
}

/** A capture folder holding the moment as nvidia-smi printed it, rebuilt from the series it rendered. */
async function captureOf(smi: readonly ParsedSample[], dir: string): Promise<string> {
  await cp(TEMPLATE, dir, { recursive: true });
  const [header = '', row = ''] = (await readFile(join(TEMPLATE, 'query-gpu.csv'), 'utf8')).split('\n');
  const columns = header.split(', ').map((column) => /^(.+?)(?: \[(.+)\])?$/.exec(column)!.slice(1, 3) as [string, string | undefined]);
  const cells = row.split(', ');
  columns.forEach(([name, unit], i) => {
    const field = FIELDS.find((f) => f.query === name || f.aliases?.includes(name));
    const cell = field && cellOf(field, smi, unit);
    if (cell !== undefined) cells[i] = cell;
  });
  // The mask NVML answers the event reasons with, from the reasons nvidia-smi printed one by one.
  const active = smi.filter((s) => s.name === 'nvidia_gpu_clocks_event_reason_active' && s.value === 1).map((s) => s.labels.reason!);
  const mask = active.reduce((bits, reason) => bits | CLOCK_EVENT_REASON_BITS[reason]!, 0n);
  cells[columns.findIndex(([name]) => name === 'clocks_event_reasons.active')] = `0x${mask.toString(16).toUpperCase().padStart(16, '0')}`;
  await writeFile(join(dir, 'query-gpu.csv'), `${header}\n${cells.join(', ')}\n`);
  const uuid = smi.find((s) => s.name === 'nvidia_gpu_info')!.labels.uuid!;
  const processes = smi
    .filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes')
    .map((s) => `2026/12/01 00:00:00.000, NVIDIA H200, , , ${uuid}, ${s.labels.pid}, ${s.labels.process_name}, ${s.value / MIB} MiB`);
  await writeFile(
    join(dir, 'query-compute-apps.csv'),
    ['timestamp, gpu_name, gpu_bus_id, gpu_serial, gpu_uuid, pid, process_name, used_gpu_memory [MiB]', ...processes, ''].join('\n'),
  );
  return dir;
}

/** The stand-in library's keys for what only NVML measures, as the NVML source recorded it. */
function nvmlOnlyKeys(nvml: readonly ParsedSample[]): string[] {
  const value = (name: string) => nvml.find((s) => s.name === name && s.labels.gpu === '0')?.value;
  const keys = [
    `0.energy_mj=${Math.round(value('nvidia_gpu_energy_joules_total')! * 1000)}`,
    `0.replay=${value('nvidia_gpu_pcie_replay_errors_total')}`,
  ];
  const gpm: [string, number][] = [
    ['nvidia_gpu_sm_active_ratio', 2],
    ['nvidia_gpu_sm_occupancy_ratio', 3],
    ['nvidia_gpu_tensor_active_ratio', 5],
    ['nvidia_gpu_dram_active_ratio', 10],
  ];
  if (gpm.every(([name]) => value(name) !== undefined))
    keys.push('0.gpm=1', ...gpm.map(([name, id]) => `0.gpm.${id}=${value(name)! * 100}`));
  return keys;
}

/** How far two reads of a family may differ on the GPU: moving values get a tolerance, everything else none. */
function tolerance(name: string, value: number): number {
  if (name.endsWith('_bytes')) return MIB; // nvidia-smi prints whole MiB, NVML gives bytes
  if (name.startsWith('nvidia_gpu_power_draw')) return Math.max(5, 0.05 * value);
  if (name.endsWith('_celsius')) return 2;
  if (name.endsWith('_clock_hertz')) return 0.03 * value;
  return 0;
}

/** Series of `ours` that `theirs` has too and whose values lie further apart than `within` allows. */
const apart = (ours: readonly ParsedSample[], theirs: readonly ParsedSample[], within: (name: string, value: number) => number) => {
  const values = new Map(theirs.map((s) => [key(s), s.value]));
  return ours
    .filter((s) => !TIMING.has(s.name) && values.has(key(s)))
    .filter((s) => !(Math.abs(s.value - values.get(key(s))!) <= within(s.name, s.value)))
    .map((s) => `${key(s)} ${s.value} vs ${values.get(key(s))}`);
};

describe.each(['idle', 'load', 'h2d'])('recorded on an H200, %s, replayed through both sources', (moment) => {
  it('renders the same series and values from both, each as its source did on the GPU', { timeout: 60_000 }, async () => {
    const [smiRecorded, nvmlRecorded] = [await recorded(`${moment}.nvidia-smi.prom`), await recorded(`${moment}.nvml.prom`)];
    const dir = await tempDir();
    const captured = await captureOf(smiRecorded, join(dir, 'capture'));
    // The recorded processes' owners (root, on the GPU machine) under a host root of their own: no
    // process of this machine lends its owner to the recorded pids.
    await mkdir(join(dir, 'host/etc'), { recursive: true });
    await writeFile(join(dir, 'host/etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    for (const s of smiRecorded.filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes')) {
      expect(s.labels.user).toBe('root');
      await mkdir(join(dir, 'host/proc', s.labels.pid!), { recursive: true });
      await writeFile(join(dir, 'host/proc', s.labels.pid!, 'status'), 'Name:\tpython3\nUid:\t0\t0\t0\t0\n');
    }
    const common = ['collect', '--dry-run', '--host-root', join(dir, 'host'), '--gpm-window', '20ms'];
    const smiRun = await runCli([...common, '--state-dir', join(dir, 's1'), '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: captured });
    await writeFile(join(dir, 'conf'), standInConfig(captured, nvmlOnlyKeys(nvmlRecorded)));
    const nvmlRun = await runCli([...common, '--state-dir', join(dir, 's2'), '--source', 'nvml', '--nvml-library', standInLibrary()], {
      NVML_STAND_IN: join(dir, 'conf'),
    });
    expect([smiRun.exitCode, smiRun.stderr, nvmlRun.exitCode, nvmlRun.stderr]).toEqual([0, '', 0, '']);
    const [smi, nvml] = [checkExposition(smiRun.stdout), checkExposition(nvmlRun.stdout)];
    expect([smi.problems, nvml.problems]).toEqual([[], []]);

    // The two sources: the same series, the same values, NVML's own families besides.
    const shared = (samples: readonly ParsedSample[]) =>
      samples
        .filter((s) => !TIMING.has(s.name) && !NVML_ONLY.has(s.name))
        .map((s) => `${key(s)} ${s.value}`)
        .sort();
    expect(shared(nvml.samples)).toEqual(shared(smi.samples));
    expect(nvml.samples.filter((s) => NVML_ONLY.has(s.name)).length).toBeGreaterThanOrEqual(moment === 'idle' ? 2 : 6);

    // Each against its source on the GPU. A family renamed or relabelled since the recording (the
    // checkout that recorded it is older: nvidia_gpu_info's cuda_version, the ECC counters) is not
    // compared; every other recorded series must be rendered.
    const shape = (s: ParsedSample) => `${s.name}{${Object.keys(s.labels).sort().join()}}`;
    for (const [ours, theirs] of [
      [smi.samples, smiRecorded],
      [nvml.samples, nvmlRecorded],
    ] as const) {
      const shapes = new Set(ours.map(shape));
      const comparable = theirs.filter((s) => shapes.has(shape(s)) && !TIMING.has(s.name));
      const rendered = new Set(ours.map(key));
      expect(comparable.filter((s) => !rendered.has(key(s))).map(key)).toEqual([]);
      expect(comparable.length).toBeGreaterThan(0.85 * theirs.length);
    }
    expect(apart(smi.samples, smiRecorded, () => 0)).toEqual([]);
    // NVML read the GPU a few milliseconds after nvidia-smi did: what moves may have moved; what only
    // NVML measures was fed back as it recorded it.
    expect(
      apart(nvml.samples, nvmlRecorded, (name, value) => (NVML_ONLY.has(name) ? 1e-12 * Math.abs(value) : tolerance(name, value))),
    ).toEqual([]);
  });
});

it('under host-to-device copies only, utilization.gpu reads busy while GPM says no SM or tensor work ran', async () => {
  const nvml = await recorded('h2d.nvml.prom');
  const value = (name: string) => nvml.find((s) => s.name === name)?.value;
  expect([value('nvidia_gpu_utilization_ratio'), value('nvidia_gpu_sm_active_ratio'), value('nvidia_gpu_tensor_active_ratio')]).toEqual([
    1, 0, 0,
  ]);
});
