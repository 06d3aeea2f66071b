import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { failedCollection, type Collection, type GpuSample } from '../../src/collection.js';
import { nvidiaGpuExporterFamilies, PEER_FIELDS, peerMetric } from '../../src/compat/nvidia-gpu-exporter.js';
import { checkExposition, checkFamilies } from '../../src/exposition/check.js';
import { collectCapture } from '../support/capture-replay.js';
import { capture, FAKE_SMI, FIXTURES, ROOT, runCli, tempDir, madeDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { collectWithStandIn, NVML_CALLS, standInConfig } from '../support/nvml-stand-in.js';
import { recorded } from './recording.js';

const LOAD = 'h200x2__580.159.04__linux-load';

const series = (collection: Collection, name: string) =>
  nvidiaGpuExporterFamilies(collection, [])
    .find((f) => f.name === name)
    ?.samples.map((s) => ({ labels: Object.fromEntries(s.labels), value: s.value }));

// nvidia-smi's returned columns and the names nvidia_gpu_exporter 1.14.0 gives them, as its own recorded
// scrape of an H200 shows (internal/integration/testdata/linux-x86_64__nvidia-h200__590.48.01__load.metrics).
const PEER_NAMES: [column: string, name: string, multiplier: number][] = [
  ['utilization.gpu [%]', 'nvidia_smi_utilization_gpu_ratio', 0.01],
  ['memory.used [MiB]', 'nvidia_smi_memory_used_bytes', 1048576],
  ['clocks.current.sm [MHz]', 'nvidia_smi_clocks_current_sm_clock_hz', 1e6],
  ['enforced.power.limit [W]', 'nvidia_smi_enforced_power_limit_watts', 1],
  ['clocks_event_reasons_counters.sw_power_cap [us]', 'nvidia_smi_clocks_event_reasons_counters_sw_power_cap_seconds', 1e-6],
  ['temperature.gpu', 'nvidia_smi_temperature_gpu', 1],
  ['ecc.errors.uncorrected.aggregate.total', 'nvidia_smi_ecc_errors_uncorrected_aggregate_total', 1],
  ['encoder.stats.sessionCount', 'nvidia_smi_encoder_stats_session_count', 1],
];

describe('nvidia_gpu_exporter names', () => {
  it.each(PEER_NAMES)('%s -> %s', (column, name, multiplier) => {
    expect(peerMetric(column)).toEqual({ name, multiplier });
  });

  it("names each field after the column nvidia-smi returns for it: every one is a column of the recorded H200's output", () => {
    const header = readFileSync(join(capture(LOAD), 'query-gpu.csv'), 'utf8')
      .split('\n')[0]!
      .split(', ');
    for (const field of PEER_FIELDS) expect(header, field.spec.query).toContain(field.help);
  });

  it('docs/compat.md lists every name written, with the field it comes from', async () => {
    const doc = await readFile(join(ROOT, 'docs/compat.md'), 'utf8');
    for (const field of PEER_FIELDS) expect(doc, field.name).toContain(`| \`${field.name}\` | \`${field.spec.query}\` |`);
  });
});

describe('nvidiaGpuExporterFamilies', () => {
  it("gives the recording's values in the peer's units (ratios, bytes, hertz, watts, C) on the uuid label it writes", async () => {
    const { collection } = await collectCapture(LOAD);
    const values = (name: string) => series(collection, name)?.map((s) => s.value);
    expect(values('nvidia_smi_utilization_gpu_ratio')).toEqual(recorded(capture(LOAD), 'utilization.gpu').map((v) => v / 100));
    expect(values('nvidia_smi_memory_total_bytes')).toEqual(recorded(capture(LOAD), 'memory.total').map((v) => v * 1048576));
    expect(values('nvidia_smi_clocks_current_sm_clock_hz')).toEqual(recorded(capture(LOAD), 'clocks.current.sm').map((v) => v * 1e6));
    expect(values('nvidia_smi_power_draw_watts')).toEqual(recorded(capture(LOAD), 'power.draw'));
    expect(values('nvidia_smi_temperature_gpu')).toEqual(recorded(capture(LOAD), 'temperature.gpu'));
    expect(values('nvidia_smi_index')).toEqual([0, 1]);
    expect(values('nvidia_smi_compute_cap')).toEqual([9, 9]);
    // "Default" is the peer's compute mode 0, "None" its recovery action 0 (NVML's enums).
    expect(values('nvidia_smi_compute_mode')).toEqual([0, 0]);
    expect(values('nvidia_smi_gpu_recovery_action')).toEqual([0, 0]);
    // GPU 1 was idle (clocks_event_reasons.gpu_idle Active): 1, GPU 0 not.
    expect(values('nvidia_smi_clocks_event_reasons_gpu_idle')).toEqual([0, 1]);
    expect(series(collection, 'nvidia_smi_temperature_gpu')!.map((s) => s.labels)).toEqual([
      { uuid: 'd9041e44-56fa-e7d7-44d1-12664904be3d' },
      { uuid: '697eaabb-1770-71c5-54ee-1d10ad7a70cb' },
    ]);
    expect(series(collection, 'nvidia_smi_gpu_info')![0]!.labels).toEqual({
      uuid: 'd9041e44-56fa-e7d7-44d1-12664904be3d',
      name: 'NVIDIA H200',
      vbios_version: '96.00.A5.00.1A',
      driver_version: '580.159.04',
      pci_bus_id: '00000000:00:06.0',
      serial: '1653924042984',
      compute_cap: '9.0',
      index: '0',
      cuda_version: collection.cudaVersion,
    });
    // nvidia-smi has no energy counter: absent, never zero.
    expect(series(collection, 'nvidia_smi_energy_joules_total')).toBeUndefined();
  });

  it("the processes as the peer's compute app families, each GPU's count with them", async () => {
    const { collection } = await collectCapture(LOAD);
    const info = series(collection, 'nvidia_smi_compute_app_info')!;
    expect(info.length).toBe(collection.processes!.apps.length);
    expect(info[0]!.labels).toEqual({ uuid: 'd9041e44-56fa-e7d7-44d1-12664904be3d', pid: '2006', process_name: 'python3' });
    expect(series(collection, 'nvidia_smi_compute_app_used_memory_bytes')![0]!.value).toBe(3682 * 1048576);
    expect(series(collection, 'nvidia_smi_compute_apps')!.map((s) => s.value)).toEqual([3, 1]);
  });

  it('processes asked for but not read: nvidia_smi_compute_apps_last_collect_success 0 and no count, as the peer (never an idle-looking 0)', () => {
    const collection: Collection = {
      fields: [],
      samples: [{ gpu: '0', uuid: 'GPU-AB', readings: new Map() }],
      down: [],
      health: { durationSeconds: 0.1, lastSuccessSeconds: 1 },
    };
    const names = (asked: boolean) =>
      nvidiaGpuExporterFamilies(collection, [], asked)
        .filter((f) => f.name.startsWith('nvidia_smi_compute_app'))
        .map((f) => [f.name, f.samples.map((s) => s.value)]);
    expect(names(true)).toEqual([['nvidia_smi_compute_apps_last_collect_success', [0]]]);
    // --no-processes: not asked, so nothing said (as the peer without --collect.compute-apps).
    expect(names(false)).toEqual([]);
  });

  it("PCIe throughput as the peer converts NVML's KB/s: x 1000 (its pcieThroughputKBMultiplier), so hosts of both agree", () => {
    const kb = { transmit: 1500, receive: 250 };
    const readings = new Map(
      Object.entries(kb).map(([direction, value]) => [
        `nvml.pcie.throughput.${direction}`,
        { kind: 'number' as const, value: value * 1024, shown: String(value) },
      ]),
    );
    const collection: Collection = {
      fields: [],
      samples: [{ gpu: '0', uuid: 'GPU-AB', readings }],
      down: [],
      health: { durationSeconds: 0.1, lastSuccessSeconds: 1 },
    };
    expect(series(collection, 'nvidia_smi_pcie_throughput_tx_bytes_per_second')).toEqual([{ labels: { uuid: 'ab' }, value: 1_500_000 }]);
    expect(series(collection, 'nvidia_smi_pcie_throughput_rx_bytes_per_second')).toEqual([{ labels: { uuid: 'ab' }, value: 250_000 }]);
  });

  it('a pid on two rows of one GPU (one per MIG instance) is one process: one series, memory summed, counted once', () => {
    const apps = [
      { uuid: 'GPU-AB', pid: 7, name: 'train', user: 'ada', memoryBytes: 100 },
      { uuid: 'GPU-AB', pid: 7, name: 'train', user: 'ada', memoryBytes: 50 },
      { uuid: 'GPU-AB', pid: 8, name: 'eval', user: 'ada' },
    ];
    const collection: Collection = {
      fields: [],
      samples: [{ gpu: '0', uuid: 'GPU-AB', readings: new Map() }],
      down: [],
      processes: { apps, dropped: 0, skipped: 0 },
      health: { durationSeconds: 0.1, lastSuccessSeconds: 1 },
    };
    const families = nvidiaGpuExporterFamilies(collection, []);
    expect(checkFamilies(families)).toEqual([]);
    expect(series(collection, 'nvidia_smi_compute_app_info')).toEqual([
      { labels: { uuid: 'ab', pid: '7', process_name: 'train' }, value: 1 },
      { labels: { uuid: 'ab', pid: '8', process_name: 'eval' }, value: 1 },
    ]);
    expect(series(collection, 'nvidia_smi_compute_app_used_memory_bytes')).toEqual([
      { labels: { uuid: 'ab', pid: '7', process_name: 'train' }, value: 150 },
    ]);
    expect(series(collection, 'nvidia_smi_compute_apps')).toEqual([{ labels: { uuid: 'ab' }, value: 2 }]);
  });

  it('MIG devices, memory once per GPU instance, GPM ratios per GPU instance; energy in joules from NVML', () => {
    const device = (gpuInstance: number, computeInstance: number, profile: string, used: number) => ({
      gpuInstance,
      computeInstance,
      uuid: `MIG-${gpuInstance}${computeInstance}`,
      profile,
      memory: { total: 100, used, free: 100 - used },
    });
    const sample: GpuSample = {
      gpu: '0',
      uuid: 'GPU-ABC',
      readings: new Map([['nvml.energy', { kind: 'number', value: 1234.567, shown: '1234567' }]]),
      mig: [device(1, 0, '1c.3g.71gb', 40), device(1, 1, '2c.3g.71gb', 40), device(2, 0, '1g.18gb', 5)],
      migActivity: [{ gpuInstance: 1, profile: '3g.71gb', ratios: new Map([['nvml.gpm.sm_active', 0.25]]) }],
    };
    const collection: Collection = { fields: [], samples: [sample], down: [], health: { durationSeconds: 0.1 } };
    expect(series(collection, 'nvidia_smi_energy_joules_total')).toEqual([{ labels: { uuid: 'abc' }, value: 1234.567 }]);
    expect(series(collection, 'nvidia_smi_mig_info')!.map((s) => s.labels)).toEqual([
      { uuid: 'abc', mig_uuid: '10', gpu_instance_id: '1', compute_instance_id: '0', profile: '1c.3g.71gb' },
      { uuid: 'abc', mig_uuid: '11', gpu_instance_id: '1', compute_instance_id: '1', profile: '2c.3g.71gb' },
      { uuid: 'abc', mig_uuid: '20', gpu_instance_id: '2', compute_instance_id: '0', profile: '1g.18gb' },
    ]);
    expect(series(collection, 'nvidia_smi_mig_memory_used_bytes')!.map((s) => [s.labels.gpu_instance_id, s.value])).toEqual([
      ['1', 40],
      ['2', 5],
    ]);
    expect(series(collection, 'nvidia_smi_mig_sm_activity_ratio')).toEqual([
      { labels: { uuid: 'abc', gpu_instance_id: '1' }, value: 0.25 },
    ]);
  });

  it("a lost GPU's Xids stay in the counter (Xid 79 is why it is lost), on its uuid; also when no GPU answered", () => {
    const xid = { sourceUp: true, source: 'kmsg' as const, series: [{ gpu: '1', uuid: 'GPU-AB', xid: 79, count: 1 }] };
    const collection: Collection = {
      fields: [],
      samples: [{ gpu: '0', uuid: 'GPU-CD', readings: new Map() }],
      down: [],
      xid,
      health: { durationSeconds: 0.1, lastSuccessSeconds: 1 },
    };
    const expected = [{ labels: { uuid: 'ab', xid: '79' }, value: 1 }];
    expect(series(collection, 'nvidia_smi_xid_errors_total')).toEqual(expected);
    expect(series({ ...failedCollection({ reason: 'gpu_lost', message: 'x' }, 1), xid }, 'nvidia_smi_xid_errors_total')).toEqual(expected);
  });

  it('a failed collection gives the health families alone, saying it failed; Xids from the kernel log as the counter', () => {
    const failed = failedCollection({ reason: 'gpu_lost', message: 'x' }, 1.5, 1700000000);
    expect(nvidiaGpuExporterFamilies(failed, []).map((f) => [f.name, f.samples.map((s) => s.value)])).toEqual([
      ['nvidia_smi_last_collect_success', [0]],
      ['nvidia_smi_last_collect_success_timestamp_seconds', [1700000000]],
      ['nvidia_smi_last_collect_duration_seconds', [1.5]],
    ]);
    const gpu: GpuSample = { gpu: '0', uuid: 'GPU-A', readings: new Map() };
    const withXids: Collection = {
      fields: [],
      samples: [gpu],
      down: [],
      xid: { sourceUp: true, source: 'kmsg', series: [{ gpu: '0', uuid: 'GPU-A', xid: 79, count: 2 }] },
      health: { durationSeconds: 0 },
    };
    expect(series(withXids, 'nvidia_smi_xid_errors_total')).toEqual([{ labels: { uuid: 'a', xid: '79' }, value: 2 }]);
  });
});

/** promtool's lint lines that the peer's own names cause (its ECC counts are gauges named ..._total): nothing else may show. */
const PEER_OWN_LINT = /^nvidia_smi_ecc_errors_\w+_total non-counter metrics should not have "_total" suffix$/;

async function promtoolOn(text: string): Promise<string[]> {
  const result = await execa('promtool', ['check', 'metrics'], { input: text, reject: false });
  return `${result.stdout}\n${result.stderr}`.split('\n').filter((line) => line.trim() !== '' && !PEER_OWN_LINT.test(line));
}

describe('collect --compat nvidia_gpu_exporter', () => {
  const FILE = 'nvidia_gpu_nvidia_gpu_exporter.prom';
  const served = async (textfile: string) => {
    const exporter = await startNodeExporter(textfile);
    onTestFinished(() => exporter.stop());
    const scraped = checkExposition(await exporter.scrape()).samples;
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    return scraped;
  };
  const run = async (captureDir: string, compat = 'nvidia_gpu_exporter') => {
    const dir = await tempDir();
    const textfile = madeDir(join(dir, 't'));
    const result = await runCli(
      [
        'collect',
        '--compat',
        compat,
        '--nvidia-smi',
        FAKE_SMI,
        '--host-root',
        join(FIXTURES, 'hosts/h200x2-healthy'),
        '--textfile-dir',
        textfile,
        '--state-dir',
        join(dir, 's'),
      ],
      { FAKE_SMI_CAPTURE: capture(captureDir) },
    );
    return { result, textfile, files: (await readdir(textfile)).sort() };
  };

  it('writes a file of its own beside ours, and beside the dcgm file with a comma list; promtool and node_exporter accept it', async () => {
    const { result, textfile, files } = await run(LOAD, 'dcgm,nvidia_gpu_exporter');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(files).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom', FILE]);
    expect(await promtoolOn(await readFile(join(textfile, FILE), 'utf8'))).toEqual([]);
    const scraped = await served(textfile);
    const temperatures = scraped.filter((s) => s.name === 'nvidia_smi_temperature_gpu').map((s) => [s.labels.uuid, s.value]);
    expect(temperatures.sort()).toEqual(
      [
        ['d9041e44-56fa-e7d7-44d1-12664904be3d', recorded(capture(LOAD), 'temperature.gpu')[0]],
        ['697eaabb-1770-71c5-54ee-1d10ad7a70cb', recorded(capture(LOAD), 'temperature.gpu')[1]],
      ].sort(),
    );
    expect(scraped.some((s) => s.name === 'DCGM_FI_DEV_GPU_TEMP')).toBe(true);
  });

  it.each([
    ['a lost GPU', 'h200x2__580.159.04__gpu-lost', ['0'], 1],
    ['a failed collection', 'h200x2__580.159.04__no-devices', [], 0],
  ])(
    '%s gives a compatible file node_exporter accepts: the GPUs that answered, and whether it succeeded',
    async (_what, captureDir, gpus, success) => {
      const { textfile } = await run(captureDir);
      expect(await promtoolOn(await readFile(join(textfile, FILE), 'utf8'))).toEqual([]);
      const scraped = await served(textfile);
      expect(scraped.filter((s) => s.name === 'nvidia_smi_index').map((s) => String(s.value))).toEqual(gpus);
      expect(scraped.find((s) => s.name === 'nvidia_smi_last_collect_success')?.value).toBe(success);
    },
  );

  it('a MIG host (NVML stand-in): MIG devices, GPU instance memory and GPM ratios equal to our own MIG series', async () => {
    const dir = await tempDir();
    const textfile = madeDir(join(dir, 't'));
    const keys = async (file: string) =>
      (await readFile(join(NVML_CALLS, 'h200-mig__590.48.01__constructed', file), 'utf8'))
        .split('\n')
        .filter((line) => line.includes('=') && !line.startsWith('#'));
    const config = standInConfig(capture('h200-mig__590.48.01__linux-load'), [
      ...(await keys('mig.conf')),
      ...(await keys('mig-gpm.conf')),
    ]);
    const result = await collectWithStandIn(config, '--compat', 'nvidia_gpu_exporter', '--textfile-dir', textfile, '--gpm-window', '20ms');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(await promtoolOn(await readFile(join(textfile, FILE), 'utf8'))).toEqual([]);
    const scraped = await served(textfile);
    const ours = scraped
      .filter((s) => s.name === 'nvidia_gpu_mig_sm_active_ratio')
      .map((s) => [s.labels.gpu_instance, s.value])
      .sort();
    const peer = scraped
      .filter((s) => s.name === 'nvidia_smi_mig_sm_activity_ratio')
      .map((s) => [s.labels.gpu_instance_id, s.value])
      .sort();
    expect(ours.length).toBeGreaterThan(1);
    expect(peer).toEqual(ours);
    // One info series per MIG device, as ours has one memory series per MIG device.
    expect(scraped.filter((s) => s.name === 'nvidia_smi_mig_info').length).toBe(
      scraped.filter((s) => s.name === 'nvidia_gpu_mig_memory_total_bytes').length,
    );
  });

  it('rejects an unknown --compat in a list, and a --label the peer puts on its series (exit 2)', async () => {
    const bad = await runCli(['collect', '--compat', 'dcgm,nvidia', '--dry-run']);
    expect([bad.exitCode, bad.stderr]).toEqual([
      2,
      expect.stringContaining('--compat: "nvidia" is not one of dcgm, dcgm-4.8.3, dcgm-4.9, dcgm-4.10, nvidia_gpu_exporter'),
    ]);
    const label = await runCli(['collect', '--compat', 'nvidia_gpu_exporter', '--label', 'profile=x', '--dry-run']);
    expect([label.exitCode, label.stderr]).toEqual([
      2,
      expect.stringContaining('--label: "profile" is a label of --compat nvidia_gpu_exporter'),
    ]);
    const dcgm = await runCli(['collect', '--compat', 'dcgm', '--label', 'device=x', '--dry-run']);
    expect([dcgm.exitCode, dcgm.stderr]).toEqual([2, expect.stringContaining('--label: "device" is a label of --compat dcgm')]);
  });

  it('install --compat dcgm,nvidia_gpu_exporter writes the list to GPU_TEXTFILE_COMPAT', async () => {
    const root = await tempDir();
    const installed = await runCli(['install', '--root', root, '--no-enable', '--compat', 'dcgm,nvidia_gpu_exporter']);
    expect([installed.exitCode, installed.stderr]).toEqual([0, '']);
    expect(await readFile(join(root, 'etc/default/gpu-textfile'), 'utf8')).toMatch(/^GPU_TEXTFILE_COMPAT=dcgm,nvidia_gpu_exporter$/m);
  });
});
