import { execa } from 'execa';
import { cp, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { dcgmFamilies } from '../../src/compat/dcgm.js';
import { DCGM_FIELDS } from '../../src/compat/dcgm-fields.js';
import { FIELDS } from '../../src/fields/fields.js';
import { parseDeviceMinor } from '../../src/compat/compat-file.js';
import { failedCollection, type Collection, type GpuSample } from '../../src/collection.js';
import { checkExposition, checkFamilies } from '../../src/exposition/check.js';
import { collectCapture } from '../support/capture-replay.js';
import { capture, CLI, cliEnv, eventually, FAKE_BIN, FAKE_SMI, FIXTURES, ROOT, runCli, tempDir, madeDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { recorded } from './recording.js';

const LOAD = 'h200x2__580.159.04__linux-load';
const context = { hostname: 'gpu-node-1', labels: [] };
const series = (collection: Collection, name: string) =>
  dcgmFamilies(collection, context)
    .find((f) => f.name === name)
    ?.samples.map((s) => ({ labels: Object.fromEntries(s.labels), value: s.value }));

describe('dcgmFamilies', () => {
  it('reads only fields of the field table, and the same field the table names for a DCGM field', () => {
    for (const field of DCGM_FIELDS)
      expect(
        FIELDS.map((f) => f.query),
        field.name,
      ).toContain(field.query);
    for (const field of FIELDS.filter((f) => f.nvml)) {
      const ours = DCGM_FIELDS.find((d) => d.name === field.nvml!.dcgm);
      if (ours) expect(ours.query, field.nvml!.dcgm).toBe(field.query);
    }
  });

  it("gives dcgm-exporter's names in its units, the recorded values: MHz, W, C, %, MiB", async () => {
    const { collection } = await collectCapture(LOAD);
    const values = (name: string) => series(collection, name)?.map((s) => s.value);
    expect(values('DCGM_FI_DEV_SM_CLOCK')).toEqual(recorded(capture(LOAD), 'clocks.current.sm'));
    expect(values('DCGM_FI_DEV_MEM_CLOCK')).toEqual(recorded(capture(LOAD), 'clocks.current.memory'));
    expect(values('DCGM_FI_DEV_POWER_USAGE')).toEqual(recorded(capture(LOAD), 'power.draw'));
    expect(values('DCGM_FI_DEV_GPU_TEMP')).toEqual(recorded(capture(LOAD), 'temperature.gpu'));
    expect(values('DCGM_FI_DEV_GPU_UTIL')).toEqual(recorded(capture(LOAD), 'utilization.gpu'));
    expect(values('DCGM_FI_DEV_MEM_COPY_UTIL')).toEqual(recorded(capture(LOAD), 'utilization.memory'));
    expect(values('DCGM_FI_DEV_FB_USED')).toEqual(recorded(capture(LOAD), 'memory.used'));
    expect(values('DCGM_FI_DEV_FB_FREE')).toEqual(recorded(capture(LOAD), 'memory.free'));
    // nvidia-smi has no energy counter and no GPM: absent, never zero.
    expect(series(collection, 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')).toBeUndefined();
    expect(series(collection, 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE')).toBeUndefined();
  });

  it('labels every series as dcgm-exporter does: gpu, UUID, pci_bus_id, device, modelName, Hostname, DCGM_FI_DRIVER_VERSION', async () => {
    const { collection } = await collectCapture(LOAD);
    const minors = new Map([['0000:00:06', 3]]);
    const labels = dcgmFamilies(collection, { ...context, minors, labels: [['cluster', 'a']] })[0]!.samples.map((s) =>
      Object.fromEntries(s.labels),
    );
    expect(labels[0]).toEqual({
      gpu: '0',
      UUID: collection.samples[0]!.uuid,
      pci_bus_id: '00000000:00:06.0',
      device: 'nvidia3',
      modelName: 'NVIDIA H200',
      Hostname: 'gpu-node-1',
      DCGM_FI_DRIVER_VERSION: '580.159.04',
      cluster: 'a',
    });
    // GPU 1's minor number is not known: no device label (empty, which Prometheus drops), never a guess from the index.
    expect(labels[1]!.device).toBe('');
  });

  it("docs/compat.md's mapping table names every DCGM field written, from the field it is read from", async () => {
    const doc = await readFile(join(ROOT, 'docs/compat.md'), 'utf8');
    for (const field of DCGM_FIELDS)
      expect(doc, field.name).toMatch(
        new RegExp(`^\\| \`${field.name}\` \\| ${field.type} \\| [^|]+ \\| \`${field.query.replaceAll('.', '\\.')}\``, 'm'),
      );
  });

  it('energy in mJ and the profiling ratios (0-1) from NVML; MIG series add GPU_I_PROFILE and GPU_I_ID', () => {
    const sample: GpuSample = {
      gpu: '0',
      uuid: 'GPU-a',
      readings: new Map([
        ['nvml.energy', { kind: 'number', value: 1234.567, shown: '1234567' }],
        ['nvml.gpm.tensor_active', { kind: 'number', value: 0.42, shown: '42' }],
      ]),
      migActivity: [{ gpuInstance: 2, profile: '3g.71gb', ratios: new Map([['nvml.gpm.tensor_active', 0.7]]) }],
    };
    const collection: Collection = { fields: [], samples: [sample], down: [], health: { durationSeconds: 0 } };
    expect(series(collection, 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')?.map((s) => s.value)).toEqual([1234567]);
    expect(series(collection, 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE')?.map((s) => [s.labels.GPU_I_PROFILE, s.labels.GPU_I_ID, s.value])).toEqual(
      [
        ['', '', 0.42],
        ['3g.71gb', '2', 0.7],
      ],
    );
  });

  it('DCGM_FI_DEV_XID_ERRORS is the last Xid where it is known (none: 0, one code: it), absent where several codes came; the counter has them all', () => {
    const gpu = (n: string): GpuSample => ({ gpu: n, uuid: `GPU-${n}`, readings: new Map() });
    const collection: Collection = {
      fields: [],
      samples: [gpu('0'), gpu('1'), gpu('2')],
      down: [],
      xid: {
        sourceUp: true,
        source: 'kmsg',
        series: [
          { gpu: '1', uuid: 'GPU-1', xid: 79, count: 2 },
          { gpu: '2', uuid: 'GPU-2', xid: 13, count: 1 },
          { gpu: '2', uuid: 'GPU-2', xid: 31, count: 1 },
        ],
      },
      health: { durationSeconds: 0 },
    };
    expect(series(collection, 'DCGM_FI_DEV_XID_ERRORS')?.map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 0],
      ['1', 79],
    ]);
    expect(series(collection, 'DCGM_EXP_XID_ERRORS_total')?.map((s) => [s.labels.gpu, s.labels.xid, s.value])).toEqual([
      ['1', '79', 2],
      ['2', '13', 1],
      ['2', '31', 1],
    ]);
    // The kernel log unreadable: not known, so absent (not 0).
    expect(series({ ...collection, xid: { ...collection.xid!, sourceUp: false } }, 'DCGM_FI_DEV_XID_ERRORS')).toBeUndefined();
  });

  it("a lost GPU's Xids stay (Xid 79 is why it is lost), on its gpu and UUID; also when no GPU answered", () => {
    const answered: GpuSample = {
      gpu: '0',
      uuid: 'GPU-0',
      readings: new Map([['driver_version', { kind: 'text', text: '580.159.04' }]]),
    };
    const xid = { sourceUp: true, source: 'kmsg' as const, series: [{ gpu: '1', uuid: 'GPU-1', xid: 79, count: 1 }] };
    const collection: Collection = { fields: [], samples: [answered], down: [], xid, health: { durationSeconds: 0 } };
    const lost = { gpu: '1', UUID: 'GPU-1', pci_bus_id: '', device: '', modelName: '', Hostname: 'gpu-node-1' };
    expect(series(collection, 'DCGM_FI_DEV_XID_ERRORS')).toEqual([
      { labels: expect.objectContaining({ gpu: '0', UUID: 'GPU-0' }), value: 0 },
      { labels: { ...lost, DCGM_FI_DRIVER_VERSION: '580.159.04' }, value: 79 },
    ]);
    expect(series(collection, 'DCGM_EXP_XID_ERRORS_total')).toEqual([
      { labels: { ...lost, DCGM_FI_DRIVER_VERSION: '580.159.04', xid: '79' }, value: 1 },
    ]);
    const failed = { ...failedCollection({ reason: 'gpu_lost', message: 'x' }, 1), xid };
    expect(series(failed, 'DCGM_FI_DEV_XID_ERRORS')).toEqual([{ labels: { ...lost, DCGM_FI_DRIVER_VERSION: '' }, value: 79 }]);
    expect(checkFamilies(dcgmFamilies(collection, context))).toEqual([]);
  });

  it('container and Slurm job as one info series per GPU and owner, joined on gpu and UUID, never on every series', async () => {
    const { collection } = await collectCapture(LOAD);
    const uuid = collection.samples[0]!.uuid;
    const app = { uuid, pid: 1, name: 'python', user: 'alice' };
    const withOwners: Collection = {
      ...collection,
      processes: {
        apps: [
          { ...app, attribution: { slurm_job: '4242' } },
          { ...app, pid: 2, attribution: { slurm_job: '4242' } },
          { ...app, pid: 3, attribution: { container_id: 'abc123' } },
          { ...app, pid: 4 },
        ],
        dropped: 0,
        skipped: 0,
      },
    };
    const info = series(withOwners, 'DCGM_EXP_GPU_ATTRIBUTION_INFO')!;
    expect(info.map((s) => [s.labels.gpu, s.labels.UUID, s.labels.container, s.labels.hpc_job, s.value])).toEqual([
      ['0', uuid, '', '4242', 1],
      ['0', uuid, 'abc123', '', 1],
    ]);
    expect(series(withOwners, 'DCGM_FI_DEV_GPU_TEMP')!.every((s) => !('hpc_job' in s.labels) && !('container' in s.labels))).toBe(true);
  });

  it('at most 8 owners per GPU, as nvidia_gpu_holder_info: the ones holding the most memory', async () => {
    const { collection } = await collectCapture(LOAD);
    const [first, second] = collection.samples.map((sample) => sample.uuid);
    const MIB = 1024 * 1024;
    // 20 jobs on the first GPU, job N holding N MiB; one on the second, which keeps its series.
    const apps = Array.from({ length: 20 }, (_, n) => ({
      uuid: first!,
      pid: 100 + n,
      name: 'python',
      user: 'alice',
      memoryBytes: (n + 1) * MIB,
      attribution: { slurm_job: String(1000 + n) },
    }));
    apps.push({ ...apps[0]!, uuid: second!, pid: 99, attribution: { slurm_job: '7' } });
    const info = series({ ...collection, processes: { apps, dropped: 0, skipped: 0 } }, 'DCGM_EXP_GPU_ATTRIBUTION_INFO')!;
    expect(info.map((s) => [s.labels.UUID, s.labels.hpc_job])).toEqual([
      ...['1019', '1018', '1017', '1016', '1015', '1014', '1013', '1012'].map((job) => [first, job]),
      [second, '7'],
    ]);
  });

  it('a failed collection has no series', () => {
    expect(dcgmFamilies(failedCollection({ reason: 'gpu_lost', message: 'x' }, 1), context)).toEqual([]);
  });

  it("reads the device minor number from the kernel's information file, as the driver writes it", () => {
    const information =
      'Model: \t\t NVIDIA H200\nIRQ:   \t\t 0\nGPU UUID: \t GPU-d9041e44\nVideo BIOS: \t 96.00.a5.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t 0000:00:06.0\nDevice Minor: \t 1\nGPU Excluded:\t No\n';
    expect(parseDeviceMinor(information)).toBe(1);
    expect(parseDeviceMinor('Model: NVIDIA H200\n')).toBeUndefined();
  });
});

/** A copy of the h200x2 host with the minor numbers swapped against the indices: the device label must come from the file. */
async function hostWithMinors(dir: string): Promise<string> {
  const root = join(dir, 'host');
  await cp(join(FIXTURES, 'hosts/h200x2-healthy'), root, { recursive: true });
  const gpus = join(root, 'proc/driver/nvidia/gpus');
  for (const [i, bus] of (await readdir(gpus)).sort().entries()) {
    const file = join(gpus, bus, 'information');
    await writeFile(file, `${await readFile(file, 'utf8')}Device Minor: \t ${1 - i}\n`);
  }
  return root;
}

/** promtool's lint lines that dcgm-exporter's own names cause (camelCase labels, counters without _total): nothing else may show. */
const DCGM_OWN_LINT = [
  /^DCGM_\w+ label names should be written in 'snake_case' not 'camelCase'$/,
  /^DCGM_FI_\w+ counter metrics should have "_total" suffix$/,
];

async function promtoolOn(text: string): Promise<string[]> {
  const result = await execa('promtool', ['check', 'metrics'], { input: text, reject: false });
  return `${result.stdout}\n${result.stderr}`
    .split('\n')
    .filter((line) => line.trim() !== '' && !DCGM_OWN_LINT.some((re) => re.test(line)));
}

describe('collect --compat dcgm', () => {
  const run = async (captureDir: string, more: string[] = []) => {
    const dir = await tempDir();
    const root = await hostWithMinors(dir);
    const textfile = madeDir(join(dir, 't'));
    const exporter = await startNodeExporter(textfile);
    onTestFinished(() => exporter.stop());
    const result = await runCli(
      [
        'collect',
        '--compat',
        'dcgm',
        '--nvidia-smi',
        FAKE_SMI,
        '--host-root',
        root,
        '--textfile-dir',
        textfile,
        '--state-dir',
        join(dir, 's'),
        ...more,
      ],
      { FAKE_SMI_CAPTURE: capture(captureDir) },
    );
    const text = await readFile(join(textfile, 'nvidia_gpu_dcgm.prom'), 'utf8');
    const scraped = checkExposition(await exporter.scrape()).samples;
    return { result, text, scraped, exporter, files: (await readdir(textfile)).sort() };
  };

  it("writes a second file beside ours; promtool finds nothing but what DCGM's names cause; node_exporter serves both without error", async () => {
    const { result, text, scraped, exporter, files } = await run(LOAD);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(files).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom']);
    expect(await promtoolOn(text)).toEqual([]);
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    const temp = scraped.filter((s) => s.name === 'DCGM_FI_DEV_GPU_TEMP').sort((a, b) => a.labels.gpu!.localeCompare(b.labels.gpu!));
    expect(temp.map((s) => [s.labels.gpu, s.labels.device, s.value])).toEqual([
      ['0', 'nvidia1', recorded(capture(LOAD), 'temperature.gpu')[0]],
      ['1', 'nvidia0', recorded(capture(LOAD), 'temperature.gpu')[1]],
    ]);
    expect(scraped.some((s) => s.name === 'nvidia_gpu_temperature_celsius')).toBe(true);
  });

  it.each([
    ['a lost GPU', 'h200x2__580.159.04__gpu-lost', ['0']],
    ['a failed collection', 'h200x2__580.159.04__no-devices', []],
  ])('%s gives a compatible file node_exporter accepts, with only the GPUs that answered', async (_what, captureDir, gpus) => {
    const { text, scraped, exporter } = await run(captureDir);
    expect(await promtoolOn(text)).toEqual([]);
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    expect(scraped.filter((s) => s.name === 'DCGM_FI_DEV_GPU_TEMP').map((s) => s.labels.gpu)).toEqual(gpus);
  });

  it('rejects an unknown --compat (exit 2), and writes no second file without it', async () => {
    const bad = await runCli(['collect', '--compat', 'dcgm-exporter', '--dry-run']);
    expect([bad.exitCode, bad.stderr]).toEqual([2, expect.stringContaining('--compat: "dcgm-exporter" is not one of dcgm')]);
    const dir = await tempDir();
    const plain = await runCli(
      ['collect', '--nvidia-smi', FAKE_SMI, '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's')],
      {
        FAKE_SMI_CAPTURE: capture(LOAD),
      },
    );
    expect(plain.exitCode).toBe(0);
    expect(await readdir(join(dir, 't'))).toEqual(['nvidia_gpu.prom']);
  });

  it('removes the temp files a killed run left of the dcgm file, as of ours', async () => {
    const dir = await tempDir();
    const textfile = join(dir, 't');
    await mkdir(textfile);
    const left = '.nvidia_gpu_dcgm.prom.0123456789abcdef.tmp';
    await writeFile(join(textfile, left), 'half a file');
    const result = await runCli(
      ['collect', '--compat', 'dcgm', '--nvidia-smi', FAKE_SMI, '--textfile-dir', textfile, '--state-dir', join(dir, 's')],
      {
        FAKE_SMI_CAPTURE: capture(LOAD),
      },
    );
    expect(result.exitCode).toBe(0);
    expect((await readdir(textfile)).sort()).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom']);
  });

  it('the daemon mode publishes the dcgm file at every sample, as it does ours', async () => {
    const dir = await tempDir();
    const child = execa(
      process.execPath,
      [
        CLI,
        'collect',
        '--compat',
        'dcgm',
        '--interval',
        '200ms',
        '--nvidia-smi',
        FAKE_SMI,
        '--textfile-dir',
        madeDir(join(dir, 't')),
        '--state-dir',
        join(dir, 's'),
      ],
      { env: cliEnv({ FAKE_SMI_CAPTURE: capture(LOAD) }), extendEnv: false, reject: false },
    );
    onTestFinished(async () => {
      child.kill('SIGTERM');
      await child;
    });
    const temps = () =>
      readFile(join(dir, 't/nvidia_gpu_dcgm.prom'), 'utf8').then(
        (text) => checkExposition(text).samples.filter((s) => s.name === 'DCGM_FI_DEV_GPU_TEMP'),
        () => [],
      );
    expect(await eventually(async () => (await temps()).length === 2, 30_000)).toBe(true);
    expect((await temps()).map((s) => s.value)).toEqual(recorded(capture(LOAD), 'temperature.gpu'));
  });

  it('install --compat dcgm writes GPU_TEXTFILE_COMPAT, and collect run as the units run it writes the dcgm file', async () => {
    const root = await tempDir();
    const installed = await runCli(['install', '--root', root, '--no-enable', '--compat', 'dcgm']);
    expect([installed.exitCode, installed.stderr]).toEqual([0, '']);
    const file = join(root, 'etc/default/gpu-textfile');
    expect(await readFile(file, 'utf8')).toMatch(/^GPU_TEXTFILE_COMPAT=dcgm$/m);
    const textfile = madeDir(join(root, 't'));
    const run = await execa(
      'sh',
      [
        '-c',
        'set -a; . "$1"; shift; exec "$@"',
        'sh',
        file,
        process.execPath,
        CLI,
        'collect',
        '--textfile-dir',
        textfile,
        '--state-dir',
        join(root, 's'),
      ],
      {
        env: cliEnv({ PATH: `${FAKE_BIN}:${process.env.PATH}`, FAKE_SMI_CAPTURE: capture(LOAD) }),
        extendEnv: false,
        reject: false,
      },
    );
    expect([run.exitCode, run.stderr]).toEqual([0, '']);
    expect((await readdir(textfile)).sort()).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom']);
    const bad = await runCli(['install', '--root', root, '--no-enable', '--compat', 'nvidia']);
    expect([bad.exitCode, bad.stderr]).toEqual([2, expect.stringContaining('--compat: "nvidia" is not one of dcgm')]);
  });
});
