import { describe, expect, it } from 'vitest';
import { failedCollection, type Collection, type GpuSample, type Reading } from '../../src/collection.js';
import { FIELDS } from '../../src/fields/fields.js';
import type { FieldSpec } from '../../src/fields/field-spec.js';
import { checkFamilies } from '../../src/exposition/check.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { newLabelArrays } from '../../src/metrics/metrics-labels.js';
import { expectFamilies } from '../support/families.js';

const field = (query: string): FieldSpec => FIELDS.find((f) => f.query === query)!;
const FIELDS_USED = ['index', 'uuid', 'name', 'power.draw', 'compute_mode'].map(field);
const sample = (gpu: string, readings: Record<string, Reading>): GpuSample => ({
  gpu,
  uuid: `GPU-${gpu}`,
  readings: new Map(Object.entries(readings)),
});
const gpu0 = { gpu: '0', uuid: 'GPU-0' };

const collection = (samples: GpuSample[], more: Partial<Collection> = {}): Collection => ({
  fields: FIELDS_USED,
  samples,
  down: [],
  health: { durationSeconds: 0.5, lastSuccessSeconds: 1000 },
  ...more,
});

describe('buildFamilies', () => {
  it('a number reading is a series with the GPU labels; an absent or error reading is none, and an error is named', () => {
    const families = buildFamilies(
      collection([
        sample('0', { 'power.draw': { kind: 'number', value: 70.5, shown: '70.50' } }),
        sample('1', { 'power.draw': { kind: 'error', error: 'unknown_error' } }),
        sample('2', { 'power.draw': { kind: 'absent' } }),
      ]),
    );
    expectFamilies(families, {
      nvidia_gpu_power_draw_watts: [{ labels: gpu0, value: 70.5 }],
      nvidia_gpu_field_error: [{ labels: { gpu: '1', uuid: 'GPU-1', field: 'power.draw', error: 'unknown_error' }, value: 1 }],
    });
  });

  it('a state reading is 1 for the current state, 0 for the others, and a state not in the table is added', () => {
    const known = buildFamilies(collection([sample('0', { compute_mode: { kind: 'text', text: 'Prohibited' } })]));
    expectFamilies(known, {
      nvidia_gpu_compute_mode: ['Default', 'Exclusive_Thread', 'Prohibited', 'Exclusive_Process'].map((mode) => ({
        labels: { ...gpu0, mode },
        value: mode === 'Prohibited' ? 1 : 0,
      })),
    });
    const unknown = buildFamilies(collection([sample('0', { compute_mode: { kind: 'text', text: 'Shared' } })]));
    expectFamilies(unknown, {
      nvidia_gpu_compute_mode: [
        ...['Default', 'Exclusive_Thread', 'Prohibited', 'Exclusive_Process'].map((mode) => ({ labels: { ...gpu0, mode }, value: 0 })),
        { labels: { ...gpu0, mode: 'Shared' }, value: 1 },
      ],
    });
  });

  it('info carries the label fields (empty when absent); up is 1 for each sample and 0 for each GPU down', () => {
    const families = buildFamilies(
      collection([sample('0', { name: { kind: 'text', text: 'NVIDIA H200' } })], {
        down: [{ gpu: '1', uuid: 'GPU-1', reason: 'gpu_lost' }],
      }),
    );
    expectFamilies(families, {
      nvidia_gpu_info: [{ labels: { ...gpu0, name: 'NVIDIA H200', cuda_version: '' }, value: 1 }],
      nvidia_gpu_up: [
        { labels: gpu0, value: 1 },
        { labels: { gpu: '1', uuid: 'GPU-1' }, value: 0 },
      ],
    });
  });

  it("info carries the driver's CUDA version where the collection knows it", () => {
    const families = buildFamilies(collection([sample('0', { name: { kind: 'text', text: 'NVIDIA H200' } })], { cudaVersion: '13.0' }));
    expectFamilies(families, { nvidia_gpu_info: [{ labels: { ...gpu0, name: 'NVIDIA H200', cuda_version: '13.0' }, value: 1 }] });
  });

  it('a pid on two rows of one GPU (MIG instances) is one series, memory summed; a process of an unknown GPU is left out', () => {
    const apps = [
      { uuid: 'GPU-0', pid: 7, name: 'train', user: 'ada', memoryBytes: 100 },
      { uuid: 'GPU-0', pid: 7, name: 'train', user: 'ada', memoryBytes: 50 },
      { uuid: 'GPU-9', pid: 8, name: 'other', user: 'bob', memoryBytes: 1 },
    ];
    const families = buildFamilies(collection([sample('0', {})], { processes: { apps, dropped: 2, skipped: 1 } }));
    expectFamilies(families, {
      nvidia_gpu_processes: [{ labels: gpu0, value: 1 }],
      nvidia_gpu_process_memory_used_bytes: [{ labels: { ...gpu0, pid: '7', process_name: 'train', user: 'ada' }, value: 150 }],
      nvidia_gpu_collector_processes_dropped: [{ labels: {}, value: 2 }],
      nvidia_gpu_collector_process_rows_skipped: [{ labels: {}, value: 1 }],
    });
  });

  it('attribution labels: each written when some process has it, "" for the others, in one label set', () => {
    const apps = [
      { uuid: 'GPU-0', pid: 7, name: 'train', user: 'ada', memoryBytes: 100, attribution: { container_id: 'c1', pod_uid: 'p-1' } },
      { uuid: 'GPU-0', pid: 8, name: 'job', user: 'bob', memoryBytes: 50, attribution: { systemd_unit: 'train.service' } },
      { uuid: 'GPU-0', pid: 9, name: 'shell', user: 'cy', memoryBytes: 1 },
    ];
    const families = buildFamilies(collection([sample('0', {})], { processes: { apps, dropped: 0, skipped: 0 } }));
    const row = (pid: string, name: string, user: string, container_id: string, pod_uid: string, systemd_unit: string) => ({
      ...gpu0,
      pid,
      process_name: name,
      user,
      container_id,
      pod_uid,
      systemd_unit,
    });
    expectFamilies(families, {
      nvidia_gpu_process_memory_used_bytes: [
        { labels: row('7', 'train', 'ada', 'c1', 'p-1', ''), value: 100 },
        { labels: row('8', 'job', 'bob', '', '', 'train.service'), value: 50 },
        { labels: row('9', 'shell', 'cy', '', '', ''), value: 1 },
      ],
    });
    expect(checkFamilies(families)).toEqual([]);
  });

  it('ECC: lifetime and since-load counts are two families, so a sum over one counts each error once', () => {
    const queries = ['corrected', 'uncorrected'].flatMap((error) => ['volatile', 'aggregate'].map((c) => `ecc.errors.${error}.${c}.total`));
    // The volatile count is part of the aggregate one: 2 of the 7 uncorrected errors came since the driver loaded.
    const values: Record<string, number> = { corrected: 10, uncorrected: 7 };
    const readings = Object.fromEntries(
      queries.map((q): [string, Reading] => {
        const total = values[q.split('.')[2]!]!;
        const value = q.includes('volatile') ? total - 5 : total;
        return [q, { kind: 'number', value, shown: String(value) }];
      }),
    );
    const families = buildFamilies(collection([sample('0', readings)], { fields: queries.map(field) }));
    expectFamilies(families, {
      nvidia_gpu_ecc_errors_total: [
        { labels: { ...gpu0, error_type: 'corrected' }, value: 10 },
        { labels: { ...gpu0, error_type: 'uncorrected' }, value: 7 },
      ],
      nvidia_gpu_ecc_volatile_errors_total: [
        { labels: { ...gpu0, error_type: 'corrected' }, value: 5 },
        { labels: { ...gpu0, error_type: 'uncorrected' }, value: 2 },
      ],
    });
  });

  it('processes are counted per GPU, each pid apart; a process without a memory figure (WDDM) counts but has no memory series', () => {
    const apps = [
      { uuid: 'GPU-0', pid: 7, name: 'train', user: 'ada', memoryBytes: 100 },
      { uuid: 'GPU-0', pid: 9, name: 'eval', user: 'ada' },
      { uuid: 'GPU-1', pid: 7, name: 'train', user: 'ada', memoryBytes: 30 },
    ];
    const families = buildFamilies(collection([sample('0', {}), sample('1', {})], { processes: { apps, dropped: 0, skipped: 0 } }));
    const gpu1 = { gpu: '1', uuid: 'GPU-1' };
    expectFamilies(families, {
      nvidia_gpu_processes: [
        { labels: gpu0, value: 2 },
        { labels: gpu1, value: 1 },
      ],
      nvidia_gpu_process_memory_used_bytes: [
        { labels: { ...gpu0, pid: '7', process_name: 'train', user: 'ada' }, value: 100 },
        { labels: { ...gpu1, pid: '7', process_name: 'train', user: 'ada' }, value: 30 },
      ],
    });
  });

  it('a diagnosis is a series with its verdict', () => {
    const failed = failedCollection({ reason: 'driver_unreachable', message: 'x' }, 1);
    const families = buildFamilies({ ...failed, health: { ...failed.health, diagnosis: { verdict: 'module_not_loaded', summary: 's' } } });
    expectFamilies(families, {
      nvidia_gpu_collector_diagnosis: [{ labels: { verdict: 'module_not_loaded' }, value: 1 }],
      nvidia_gpu_collector_last_success_timestamp_seconds: [],
    });
  });

  it('a failed collection carries the health families only, with the reason and the last success carried over', () => {
    const families = buildFamilies(failedCollection({ reason: 'timeout', message: 'slow' }, 10, 900), [['site', 'x']]);
    expectFamilies(families, {
      nvidia_gpu_info: [],
      nvidia_gpu_up: [],
      nvidia_gpu_collector_success: [{ labels: { site: 'x' }, value: 0 }],
      nvidia_gpu_collector_error: [{ labels: { site: 'x', reason: 'timeout' }, value: 1 }],
      nvidia_gpu_collector_duration_seconds: [{ labels: { site: 'x' }, value: 10 }],
      nvidia_gpu_collector_last_success_timestamp_seconds: [{ labels: { site: 'x' }, value: 900 }],
    });
    // Without a process query there is nothing to have dropped.
    expect(families.map((f) => f.name)).not.toContain('nvidia_gpu_collector_processes_dropped');
  });
});

describe("buildFamilies: the NVML source's families", () => {
  it("per-process utilization: a series for each process with a figure, under the memory series' labels", () => {
    const apps = [
      { uuid: 'GPU-0', pid: 7, name: 'train', user: 'ada', memoryBytes: 100, smUtilization: 0.99, memoryUtilization: 0.23 },
      // Listed by nvidia-smi, which has no utilization per process: no ratio series, memory only.
      { uuid: 'GPU-0', pid: 8, name: 'job', user: 'bob', memoryBytes: 50 },
      // No memory figure (WDDM), a utilization figure all the same.
      { uuid: 'GPU-0', pid: 9, name: 'idle', user: 'cy', smUtilization: 0, memoryUtilization: 0 },
    ];
    const families = buildFamilies(collection([sample('0', {})], { processes: { apps, dropped: 0, skipped: 0 } }));
    const labels = (pid: string, name: string, user: string) => ({ ...gpu0, pid, process_name: name, user });
    expectFamilies(families, {
      nvidia_gpu_process_memory_used_bytes: [
        { labels: labels('7', 'train', 'ada'), value: 100 },
        { labels: labels('8', 'job', 'bob'), value: 50 },
      ],
      nvidia_gpu_process_sm_utilization_ratio: [
        { labels: labels('7', 'train', 'ada'), value: 0.99 },
        { labels: labels('9', 'idle', 'cy'), value: 0 },
      ],
      nvidia_gpu_process_memory_utilization_ratio: [
        { labels: labels('7', 'train', 'ada'), value: 0.23 },
        { labels: labels('9', 'idle', 'cy'), value: 0 },
      ],
    });
    expect(checkFamilies(families)).toEqual([]);
  });

  it("MIG devices: used, total and free under the GPU's labels and the instance's; a device without memory has none", () => {
    const mig = [
      { gpuInstance: 1, computeInstance: 0, uuid: 'MIG-a', profile: '1g.18gb', memory: { used: 5, total: 20, free: 15 } },
      { gpuInstance: 2, computeInstance: 0, uuid: 'MIG-b', profile: '', memory: undefined },
    ];
    const families = buildFamilies(collection([{ ...sample('0', {}), mig }, sample('1', {})]));
    const labels = { ...gpu0, gpu_instance: '1', compute_instance: '0', mig_uuid: 'MIG-a', mig_profile: '1g.18gb' };
    expectFamilies(families, {
      nvidia_gpu_mig_memory_used_bytes: [{ labels, value: 5 }],
      nvidia_gpu_mig_memory_total_bytes: [{ labels, value: 20 }],
      nvidia_gpu_mig_memory_free_bytes: [{ labels, value: 15 }],
    });
  });

  it('MIG GPU instances: one series per instance and ratio NVML answered, under the GPU labels, gpu_instance and mig_profile', () => {
    const migActivity = [
      {
        gpuInstance: 1,
        profile: '3g.71gb',
        ratios: new Map([
          ['nvml.gpm.sm_active', 0.975],
          ['nvml.gpm.dram_active', 0.31],
        ]),
      },
      { gpuInstance: 13, profile: '', ratios: new Map([['nvml.gpm.sm_active', 0]]) },
    ];
    const families = buildFamilies(collection([{ ...sample('0', {}), migActivity }, sample('1', {})]));
    const labels = (gpuInstance: string, profile: string) => ({ ...gpu0, gpu_instance: gpuInstance, mig_profile: profile });
    expectFamilies(families, {
      nvidia_gpu_mig_sm_active_ratio: [
        { labels: labels('1', '3g.71gb'), value: 0.975 },
        { labels: labels('13', ''), value: 0 },
      ],
      nvidia_gpu_mig_sm_occupancy_ratio: [],
      nvidia_gpu_mig_tensor_active_ratio: [],
      nvidia_gpu_mig_dram_active_ratio: [{ labels: labels('1', '3g.71gb'), value: 0.31 }],
    });
    expect(checkFamilies(families)).toEqual([]);
  });

  it('Xid: the source that counts is a label of the source-up gauge', () => {
    const xid = { sourceUp: true, source: 'nvml' as const, series: [{ gpu: '0', uuid: 'GPU-0', xid: 79, count: 2 }] };
    const families = buildFamilies(collection([sample('0', {})], { xid }), [['site', 'a']]);
    expectFamilies(families, {
      nvidia_gpu_xid_errors_total: [{ labels: { site: 'a', gpu: '0', uuid: 'GPU-0', xid: '79' }, value: 2 }],
      nvidia_gpu_collector_xid_source_up: [{ labels: { site: 'a', source: 'nvml' }, value: 1 }],
    });
  });

  it('a text reading of a field that is not a state (the name) makes no series of its own', () => {
    const families = buildFamilies(collection([sample('0', { name: { kind: 'text', text: 'NVIDIA H200' } })]));
    expect(families.filter((f) => f.samples.some((s) => s.labels.some(([label]) => label === 'name'))).map((f) => f.name)).toEqual([
      'nvidia_gpu_info',
    ]);
  });

  it('kept label arrays: the same arrays for the same series, and those of series gone are dropped', () => {
    const arrays = newLabelArrays();
    const readings = {
      'power.draw': { kind: 'number', value: 70, shown: '70' } as Reading,
      compute_mode: { kind: 'text', text: 'Default' } as Reading,
    };
    const first = buildFamilies(collection([sample('0', readings)]), [], arrays);
    const second = buildFamilies(collection([sample('0', readings)]), [], arrays);
    const labelsOf = (families: typeof first, name: string) => families.find((f) => f.name === name)!.samples.map((s) => s.labels);
    for (const name of ['nvidia_gpu_power_draw_watts', 'nvidia_gpu_compute_mode'])
      expect(labelsOf(second, name).every((labels, i) => labels === labelsOf(first, name)[i])).toBe(true);
    // Every other series too: identity, field errors, processes, MIG devices, Xid codes, health.
    const rich = (name: string) =>
      collection(
        [
          {
            ...sample('0', { ...readings, name: { kind: 'text', text: name }, 'power.draw': { kind: 'error', error: 'unknown_error' } }),
            mig: [{ gpuInstance: 1, computeInstance: 0, uuid: 'MIG-a', profile: '1g.18gb', memory: { used: 5, total: 20, free: 15 } }],
            migActivity: [{ gpuInstance: 1, profile: '1g.18gb', ratios: new Map([['nvml.gpm.sm_active', 0.5]]) }],
          },
        ],
        {
          processes: { apps: [{ uuid: 'GPU-0', pid: 7, name: 'train', user: 'ada', memoryBytes: 100 }], dropped: 0, skipped: 0 },
          xid: { sourceUp: true, source: 'kmsg', series: [{ gpu: '0', uuid: 'GPU-0', xid: 79, count: 2 }] },
          health: {
            durationSeconds: 0.5,
            lastSuccessSeconds: 1000,
            failure: { reason: 'gpu_lost', message: 'm' },
            diagnosis: { verdict: 'gpu_lost', summary: 's' },
          },
        },
      );
    // One store per set of constant labels, as a publisher keeps it (the same array every sample).
    const constant: [string, string][] = [['site', 'a']];
    const richFirst = buildFamilies(rich('NVIDIA H200'), constant, arrays);
    const richSecond = buildFamilies(rich('NVIDIA H200'), constant, arrays);
    const renamed = buildFamilies(rich('NVIDIA H100'), constant, arrays);
    const series = (families: typeof first) => families.flatMap((f) => f.samples.map((s) => s.labels));
    expect(series(richFirst).length).toBeGreaterThanOrEqual(14);
    expect(series(richSecond).every((labels, i) => labels === series(richFirst)[i])).toBe(true);
    // A different value is a different array: the info series of the renamed GPU, and only it.
    expect(series(renamed).filter((labels, i) => labels !== series(richFirst)[i])).toEqual([
      series(renamed).find((labels) => labels.some(([label, value]) => label === 'name' && value === 'NVIDIA H100')),
    ]);
    // Other constant labels: another store, never an array with the old ones.
    const otherSite = buildFamilies(rich('NVIDIA H200'), [['site', 'b']], arrays);
    expect(otherSite).toEqual(buildFamilies(rich('NVIDIA H200'), [['site', 'b']]));
    // A host whose pids keep changing (short jobs): the store holds about the last build's series,
    // not every series it saw, and each build is what a fresh store gives.
    const churn = newLabelArrays();
    for (let pid = 1; pid <= 5000; pid++) {
      const apps = [{ uuid: 'GPU-0', pid, name: 'job', user: 'ada', memoryBytes: 1 }];
      const built = buildFamilies(collection([sample('0', readings)], { processes: { apps, dropped: 0, skipped: 0 } }), constant, churn);
      if (pid % 1000 === 0)
        expect(built).toEqual(
          buildFamilies(collection([sample('0', readings)], { processes: { apps, dropped: 0, skipped: 0 } }), constant),
        );
    }
    expect(churn.kept.size).toBeLessThan(1100);
    // A GPU missing from one sample only (a read that failed) gets its very arrays back: no re-check.
    const two = newLabelArrays();
    const seriesOf = (samples: GpuSample[]) =>
      buildFamilies(collection(samples), constant, two).flatMap((f) => f.samples.map((s) => s.labels));
    const before = seriesOf([sample('0', readings), sample('1', readings)]);
    seriesOf([sample('0', readings)]);
    expect(seriesOf([sample('0', readings), sample('1', readings)]).every((labels, i) => labels === before[i])).toBe(true);
  });
});
