import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCollectArgs, type CollectArgs } from '../../src/commands/collect.js';
import { checkExposition } from '../../src/exposition/check.js';
import { FIELDS } from '../../src/fields/fields.js';
import type { Collection, GpuSample, Reading } from '../../src/collection.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { ROOT, runCli, tempDir } from '../support/helpers.js';

const DEFAULTS: CollectArgs = {
  fileName: 'nvidia_gpu.prom',
  dryRun: false,
  nvidiaSmi: 'nvidia-smi',
  source: 'nvidia-smi',
  nvmlLibrary: 'libnvidia-ml.so.1',
  gpmWindow: '100ms',
  demoHost: 'h200x2-load',
  timeout: '10s',
  processes: true,
  label: [],
  excludeFields: [],
  slowFields: false,
  stateDir: '/var/lib/gpu-textfile',
  task: 'default',
  processesInterval: '60s',
  hostRoot: '/',
};
const withLabel = (pair: string) => parseCollectArgs({ ...DEFAULTS, label: [pair] });

/** Label names in every golden file: what real collections produced. */
async function goldenLabelNames(): Promise<Set<string>> {
  const dir = join(ROOT, 'test/golden');
  const names = new Set<string>();
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.prom'))) {
    for (const sample of checkExposition(await readFile(join(dir, file), 'utf8')).samples)
      for (const name of Object.keys(sample.labels)) names.add(name);
  }
  return names;
}

/** A reading for every field, state fields in an unknown state too, one field in error. */
function everyReading(): GpuSample {
  const readings = new Map<string, Reading>(
    FIELDS.map((field): [string, Reading] =>
      field.kind === 'label'
        ? [field.query, { kind: 'text', text: 'x' }]
        : field.kind === 'state'
          ? [field.query, { kind: 'text', text: 'Unheard Of' }]
          : [field.query, { kind: 'number', value: 1, shown: '1' }],
    ),
  );
  readings.set(FIELDS.find((f) => f.kind === 'number')!.query, { kind: 'error', error: 'unknown_error' });
  return { gpu: '0', uuid: 'GPU-1', readings };
}

/** Label names the builders emit when every path is taken: samples, a lost GPU, processes, a failure with its diagnosis. */
function builtLabelNames(): Set<string> {
  const collection: Collection = {
    fields: FIELDS,
    samples: [everyReading()],
    down: [{ gpu: '1', uuid: 'GPU-2', reason: 'gpu_lost' }],
    processes: {
      apps: [
        {
          uuid: 'GPU-1',
          pid: 7,
          name: 'python3',
          memoryBytes: 1,
          user: 'root',
          attribution: { container_id: 'c', pod_uid: 'p', systemd_unit: 'u.service', slurm_job: '1' },
        },
      ],
      dropped: 0,
      skipped: 0,
    },
    health: {
      failure: { reason: 'gpu_lost', message: 'm' },
      diagnosis: { verdict: 'gpu_lost', summary: 's' },
      durationSeconds: 1,
      lastSuccessSeconds: 1,
    },
  };
  return new Set(buildFamilies(collection).flatMap((family) => family.samples.flatMap((sample) => sample.labels.map(([name]) => name))));
}

describe('--label may not take a label name gpu-textfile sets itself', () => {
  it('refuses every label name in the golden files', async () => {
    const names = [...(await goldenLabelNames())].sort();
    expect(names.length).toBeGreaterThan(10);
    for (const name of names)
      expect([name, withLabel(`${name}=x`)]).toEqual([name, `--label: "${name}" is a label gpu-textfile sets itself`]);
  });

  it('refuses every label name of the health, diagnosis, failure and process families, attribution included', () => {
    const names = [...builtLabelNames()].sort();
    expect(names).toEqual(
      expect.arrayContaining([
        'reason',
        'verdict',
        'pid',
        'process_name',
        'user',
        'container_id',
        'pod_uid',
        'systemd_unit',
        'slurm_job',
        'field',
        'error',
        'name',
        'serial',
      ]),
    );
    for (const name of names)
      expect([name, withLabel(`${name}=x`)]).toEqual([name, `--label: "${name}" is a label gpu-textfile sets itself`]);
  });

  it('takes other names', () => {
    expect(withLabel('cluster=a')).toMatchObject({ labels: [['cluster', 'a']] });
  });

  it('the CLI exits 2 with one line and writes nothing', async () => {
    const root = await tempDir();
    const result = await runCli(['collect', '--textfile-dir', join(root, 'tf'), '--state-dir', join(root, 'state'), '--label', 'serial=x']);
    expect({ exit: result.exitCode, stderr: result.stderr, stdout: result.stdout }).toEqual({
      exit: 2,
      stderr: 'gpu-textfile: --label: "serial" is a label gpu-textfile sets itself\n',
      stdout: '',
    });
    expect(await readdir(root)).toEqual([]);
  });
});
