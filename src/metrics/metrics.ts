import { ATTRIBUTION_LABELS } from '../host/cgroup.js';
import { jobsOnGpu } from '../host/job.js';
import { reservedOnGpu, type Reservations } from '../host/reservation.js';
import { textReading, type Collection, type GpuSample, type ProcessSample } from '../collection.js';
import type { FieldSpec } from '../fields/field-spec.js';
import type { MetricFamily, MetricSample } from '../exposition/families.js';
import { FIXED_FAMILIES, fieldFamilies, MIG_GPM_FAMILIES } from './metrics-catalog.js';

// A collection -> metric families, nothing else: the model is src/collection.ts, the text format src/exposition/.

import { keptArray, labelsFor, newLabelArrays, type GpuLabels, type LabelArrays, type Labels } from './metrics-labels.js';

const family = (spec: Pick<MetricFamily, 'name' | 'type' | 'help'>, samples: MetricSample[]): MetricFamily => ({
  name: spec.name,
  type: spec.type,
  help: spec.help,
  samples,
});

/** Appends a field's series for one GPU to `series` (no array of its own: this runs for every series of every sample). */
function fieldSamples(
  series: MetricSample[],
  field: FieldSpec,
  sample: GpuSample,
  gpuLabels: Labels,
  arrays: LabelArrays,
  gpuKey: string,
): void {
  const reading = sample.readings.get(field.query);
  // Without labels of its own a field's series shares the GPU's labels array.
  const labels: Labels = field.labels
    ? keptArray(arrays, `${gpuKey}\u0000${field.query}`, () => [...gpuLabels, ...Object.entries(field.labels!)])
    : gpuLabels;
  if (reading?.kind === 'number') series.push({ labels, value: reading.value });
  else if (reading?.kind === 'text' && field.kind === 'state' && field.stateLabel) {
    const states = field.states ?? [];
    const stateLabels = (state: string) =>
      keptArray(arrays, `${gpuKey}\u0000${field.query}\u0000${state}`, () => [...labels, [field.stateLabel!, state] as const]);
    for (const state of states) series.push({ labels: stateLabels(state), value: state === reading.text ? 1 : 0 });
    if (!states.includes(reading.text)) series.push({ labels: stateLabels(reading.text), value: 1 });
  }
}

/**
 * Samples and health -> metric families, in a fixed order. `constant` labels go on every series.
 * `arrays`: see LabelArrays; by default the arrays are shared within this collection only.
 */
export function buildFamilies(collection: Collection, constant: Labels = [], arrays: LabelArrays = newLabelArrays()): MetricFamily[] {
  const { fields, samples } = collection;
  const { gpuKey, gpuLabels, constantWith } = labelsFor(arrays, constant);
  const labelFields = fields.filter((field) => field.kind === 'label' && field.label !== 'gpu' && field.label !== 'uuid');
  const families: MetricFamily[] = [];

  families.push(
    family(
      FIXED_FAMILIES.info,
      samples.map((sample) => ({
        labels: gpuLabels.with(sample, 'info', [
          ...labelFields.map((field): readonly [string, string] => [field.label!, textReading(sample, field.query) ?? '']),
          ['cuda_version', collection.cudaVersion ?? ''],
        ]),
        value: 1,
      })),
    ),
  );
  families.push(
    family(FIXED_FAMILIES.up, [
      ...samples.map((sample) => ({ labels: gpuLabels(sample), value: 1 })),
      ...collection.down.map((gpu) => ({ labels: gpuLabels(gpu), value: 0 })),
    ]),
  );
  // The bulk of every sample (fields x GPUs): plain loops, each GPU's labels looked up once.
  const labelled = samples.map((sample) => ({ sample, labels: gpuLabels(sample), key: gpuKey(sample) }));
  for (const { spec, fields: members } of fieldFamilies(fields)) {
    const series: MetricSample[] = [];
    for (const { sample, labels, key } of labelled) for (const field of members) fieldSamples(series, field, sample, labels, arrays, key);
    families.push(family({ name: spec.metric!, type: spec.type ?? 'gauge', help: spec.help ?? '' }, series));
  }
  families.push(
    family(
      FIXED_FAMILIES.fieldError,
      samples.flatMap((sample) =>
        fields.flatMap((field) => {
          const reading = sample.readings.get(field.query);
          return reading?.kind === 'error'
            ? [
                {
                  labels: gpuLabels.with(sample, 'error', [
                    ['field', field.query],
                    ['error', reading.error],
                  ]),
                  value: 1,
                },
              ]
            : [];
        }),
      ),
    ),
  );
  if (collection.processes) families.push(...processFamilies(collection.processes.apps, samples, gpuLabels));
  if (collection.processes?.reservations)
    families.push(...reservationFamilies(collection.processes.reservations, samples, gpuLabels, constantWith));
  families.push(...migFamilies(samples, gpuLabels));
  if (collection.xid) families.push(xidFamily(collection.xid.series, constantWith));
  families.push(...healthFamilies(collection, constant, constantWith));
  return families;
}

function processFamilies(apps: readonly ProcessSample[], samples: readonly GpuSample[], gpuLabels: GpuLabels['gpuLabels']): MetricFamily[] {
  const gpuOf = new Map(samples.map((sample) => [sample.uuid, sample.gpu]));
  // The same pid can show twice on one GPU (one row per MIG instance): one series, memory summed.
  const merged = new Map<string, ProcessSample & { gpu: string }>();
  for (const app of apps) {
    const gpu = gpuOf.get(app.uuid);
    if (gpu === undefined) continue;
    const key = `${app.uuid}/${app.pid}`;
    const before = merged.get(key);
    merged.set(key, before ? { ...before, memoryBytes: (before.memoryBytes ?? 0) + (app.memoryBytes ?? 0) } : { ...app, gpu });
  }
  const all = [...merged.values()];
  const shown = all.filter((app) => app.memoryBytes !== undefined);
  // One label set per family (node_exporter fills a missing label with "" anyway, and Prometheus
  // stores "" as absent): an attribution label is written only when some process has it, and then
  // as "" for the others. A host without containers, units or jobs gets the same series as before.
  const attribution = ATTRIBUTION_LABELS.filter((label) => all.some((app) => app.attribution?.[label] !== undefined));
  const processLabels = (app: ProcessSample & { gpu: string }): Labels =>
    gpuLabels.with(app, 'process', [
      ['pid', String(app.pid)],
      ['process_name', app.name],
      ['user', app.user],
      ...attribution.map((label): readonly [string, string] => [label, app.attribution?.[label] ?? '']),
    ]);
  const ratio = (spec: Pick<MetricFamily, 'name' | 'type' | 'help'>, value: (app: ProcessSample) => number | undefined) =>
    family(
      spec,
      all.flatMap((app) => (value(app) === undefined ? [] : [{ labels: processLabels(app), value: value(app)! }])),
    );
  return [
    family(
      FIXED_FAMILIES.processes,
      samples.map((sample) => ({
        labels: gpuLabels(sample),
        value: [...merged.values()].filter((app) => app.uuid === sample.uuid).length,
      })),
    ),
    family(
      FIXED_FAMILIES.processMemory,
      shown.map((app) => ({ labels: processLabels(app), value: app.memoryBytes! })),
    ),
    ratio(FIXED_FAMILIES.processSmUtilization, (app) => app.smUtilization),
    ratio(FIXED_FAMILIES.processMemoryUtilization, (app) => app.memoryUtilization),
    ...jobFamilies(apps, samples, gpuLabels),
  ];
}

/**
 * The jobs on each GPU: one info series per job and GPU (joined to the GPU's series on gpu and uuid,
 * so no GPU series is multiplied by jobs as a job label on it would), at most MAX_JOBS_PER_GPU per
 * GPU, and how many jobs there were in all.
 */
function jobFamilies(apps: readonly ProcessSample[], samples: readonly GpuSample[], gpuLabels: GpuLabels['gpuLabels']): MetricFamily[] {
  const perGpu = samples.map((sample) => ({ sample, ...jobsOnGpu(apps, sample.uuid) }));
  return [
    family(
      FIXED_FAMILIES.jobInfo,
      perGpu.flatMap(({ sample, jobs }) =>
        jobs.map((job) => ({
          labels: gpuLabels.with(sample, 'job', [
            ['job_kind', job.kind],
            ['job_id', job.id],
            ['user', job.user],
          ]),
          value: 1,
        })),
      ),
    ),
    family(
      FIXED_FAMILIES.jobs,
      perGpu.map(({ sample, jobs, dropped }) => ({ labels: gpuLabels(sample), value: jobs.length + dropped })),
    ),
  ];
}

/**
 * The jobs that reserved each GPU, as the holders are written (an info series per job and GPU, at
 * most MAX_JOBS_PER_GPU), how many there were, and how many jobs' reservations could not be read.
 */
function reservationFamilies(
  reservations: Reservations,
  samples: readonly GpuSample[],
  gpuLabels: GpuLabels['gpuLabels'],
  constantWith: GpuLabels['constantWith'],
): MetricFamily[] {
  const perGpu = samples.map((sample) => ({ sample, ...reservedOnGpu(reservations, sample) }));
  return [
    family(
      FIXED_FAMILIES.reservationInfo,
      perGpu.flatMap(({ sample, jobs }) =>
        jobs.map((job) => ({
          labels: gpuLabels.with(sample, 'reservation', [
            ['job_kind', job.kind],
            ['job_id', job.id],
            ['user', job.user],
          ]),
          value: 1,
        })),
      ),
    ),
    family(
      FIXED_FAMILIES.reservations,
      perGpu.map(({ sample, jobs, dropped }) => ({ labels: gpuLabels(sample), value: jobs.length + dropped })),
    ),
    family(FIXED_FAMILIES.reservationUnknown, [{ labels: constantWith('reservation', []), value: reservations.unknown }]),
  ];
}

/** Each MIG device's memory, and each MIG GPU instance's GPM ratios, under its GPU's labels and its own (NVML, MIG enabled). */
function migFamilies(samples: readonly GpuSample[], gpuLabels: GpuLabels['gpuLabels']): MetricFamily[] {
  const devices = samples.flatMap((sample) =>
    (sample.mig ?? []).map((mig) => ({
      mig,
      labels: gpuLabels.with(sample, 'mig', [
        ['gpu_instance', String(mig.gpuInstance)],
        ['compute_instance', String(mig.computeInstance)],
        ['mig_uuid', mig.uuid],
        ['mig_profile', mig.profile],
      ]),
    })),
  );
  const part = (spec: Pick<MetricFamily, 'name' | 'type' | 'help'>, key: 'used' | 'total' | 'free') =>
    family(
      spec,
      devices.flatMap(({ mig, labels }) => (mig.memory ? [{ labels, value: mig.memory[key] }] : [])),
    );
  // GPM per GPU instance: one series for the instance, however many compute instances share it.
  const instances = samples.flatMap((sample) =>
    (sample.migActivity ?? []).map(({ gpuInstance, profile, ratios }) => ({
      ratios,
      labels: gpuLabels.with(sample, 'mig-gpm', [
        ['gpu_instance', String(gpuInstance)],
        ['mig_profile', profile],
      ]),
    })),
  );
  return [
    part(FIXED_FAMILIES.migMemoryUsed, 'used'),
    part(FIXED_FAMILIES.migMemoryTotal, 'total'),
    part(FIXED_FAMILIES.migMemoryFree, 'free'),
    ...Object.entries(MIG_GPM_FAMILIES).map(([query, spec]) =>
      family(
        spec,
        instances.flatMap(({ ratios, labels }) => (ratios.has(query) ? [{ labels, value: ratios.get(query)! }] : [])),
      ),
    ),
  ];
}

function xidFamily(series: NonNullable<Collection['xid']>['series'], constantWith: GpuLabels['constantWith']): MetricFamily {
  return family(
    FIXED_FAMILIES.xidErrors,
    series.map(({ gpu, uuid, xid, count }) => ({
      labels: constantWith('xid', [
        ['gpu', gpu],
        ['uuid', uuid],
        ['xid', String(xid)],
      ]),
      value: count,
    })),
  );
}

function healthFamilies(collection: Collection, constant: Labels, constantWith: GpuLabels['constantWith']): MetricFamily[] {
  const { health, processes } = collection;
  const one = (value: number): MetricSample[] => [{ labels: constant, value }];
  return [
    family(FIXED_FAMILIES.success, one(health.failure ? 0 : 1)),
    family(FIXED_FAMILIES.error, health.failure ? [{ labels: constantWith('error', [['reason', health.failure.reason]]), value: 1 }] : []),
    family(
      FIXED_FAMILIES.diagnosis,
      health.diagnosis ? [{ labels: constantWith('diagnosis', [['verdict', health.diagnosis.verdict]]), value: 1 }] : [],
    ),
    family(FIXED_FAMILIES.duration, one(health.durationSeconds)),
    family(FIXED_FAMILIES.lastSuccess, health.lastSuccessSeconds === undefined ? [] : one(health.lastSuccessSeconds)),
    ...(collection.xid
      ? [
          family(FIXED_FAMILIES.xidSourceUp, [
            { labels: constantWith('source', [['source', collection.xid.source]]), value: collection.xid.sourceUp ? 1 : 0 },
          ]),
        ]
      : []),
    ...(processes
      ? [family(FIXED_FAMILIES.processesDropped, one(processes.dropped)), family(FIXED_FAMILIES.processRowsSkipped, one(processes.skipped))]
      : []),
  ];
}
