import { ATTRIBUTION_LABELS } from './cgroup.js';
import { textReading, type Collection, type GpuSample, type ProcessSample } from './collection.js';
import type { FieldSpec } from './fields.js';
import type { MetricFamily, MetricSample } from './exposition/families.js';
import { FIXED_FAMILIES, fieldFamilies } from './metrics-catalog.js';

// A collection -> metric families, nothing else: the model is src/collection.ts, the text format src/exposition/.

type Labels = (readonly [string, string])[];

const family = (spec: Pick<MetricFamily, 'name' | 'type' | 'help'>, samples: MetricSample[]): MetricFamily => ({
  name: spec.name,
  type: spec.type,
  help: spec.help,
  samples,
});

function fieldSamples(field: FieldSpec, sample: GpuSample, gpuLabels: Labels): MetricSample[] {
  const reading = sample.readings.get(field.query);
  // Without labels of its own a field's series shares the GPU's labels array (render and the checks
  // then see each array once).
  const labels: Labels = field.labels ? [...gpuLabels, ...Object.entries(field.labels)] : gpuLabels;
  if (reading?.kind === 'number') return [{ labels, value: reading.value }];
  if (reading?.kind === 'text' && field.kind === 'state' && field.stateLabel) {
    const states = field.states ?? [];
    const known = states.map((state) => ({
      labels: [...labels, [field.stateLabel!, state] as const],
      value: state === reading.text ? 1 : 0,
    }));
    return states.includes(reading.text) ? known : [...known, { labels: [...labels, [field.stateLabel, reading.text] as const], value: 1 }];
  }
  return [];
}

/** Samples and health -> metric families, in a fixed order. `constant` labels go on every series. */
export function buildFamilies(collection: Collection, constant: Labels = []): MetricFamily[] {
  const { fields, samples } = collection;
  // Built once per GPU: every family of every sample starts with them.
  const cached = new Map<string, Labels>();
  const gpuLabels = (sample: { gpu: string; uuid: string }): Labels => {
    const key = `${sample.gpu}\u0000${sample.uuid}`;
    let labels = cached.get(key);
    if (!labels) cached.set(key, (labels = [...constant, ['gpu', sample.gpu], ['uuid', sample.uuid]]));
    return labels;
  };
  const labelFields = fields.filter((field) => field.kind === 'label' && field.label !== 'gpu' && field.label !== 'uuid');
  const families: MetricFamily[] = [];

  families.push(
    family(
      FIXED_FAMILIES.info,
      samples.map((sample) => ({
        labels: [
          ...gpuLabels(sample),
          ...labelFields.map((field): readonly [string, string] => [field.label!, textReading(sample, field.query) ?? '']),
          ['cuda_version', collection.cudaVersion ?? ''],
        ],
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
  const labelled = samples.map((sample) => ({ sample, labels: gpuLabels(sample) }));
  for (const { spec, fields: members } of fieldFamilies(fields)) {
    const series: MetricSample[] = [];
    for (const { sample, labels } of labelled) for (const field of members) series.push(...fieldSamples(field, sample, labels));
    families.push(family({ name: spec.metric!, type: spec.type ?? 'gauge', help: spec.help ?? '' }, series));
  }
  families.push(
    family(
      FIXED_FAMILIES.fieldError,
      samples.flatMap((sample) =>
        fields.flatMap((field) => {
          const reading = sample.readings.get(field.query);
          return reading?.kind === 'error'
            ? [{ labels: [...gpuLabels(sample), ['field', field.query], ['error', reading.error]] as Labels, value: 1 }]
            : [];
        }),
      ),
    ),
  );
  if (collection.processes) families.push(...processFamilies(collection.processes.apps, samples, gpuLabels));
  if (collection.xid) families.push(xidFamily(collection.xid.series, constant));
  families.push(...healthFamilies(collection, constant));
  return families;
}

function processFamilies(
  apps: readonly ProcessSample[],
  samples: readonly GpuSample[],
  gpuLabels: (gpu: { gpu: string; uuid: string }) => Labels,
): MetricFamily[] {
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
  const shown = [...merged.values()].filter((app) => app.memoryBytes !== undefined);
  // One label set per family (node_exporter fills a missing label with "" anyway, and Prometheus
  // stores "" as absent): an attribution label is written only when some process has it, and then
  // as "" for the others. A host without containers, units or jobs gets the same series as before.
  const attribution = ATTRIBUTION_LABELS.filter((label) => shown.some((app) => app.attribution?.[label] !== undefined));
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
      shown.map((app) => ({
        labels: [
          ...gpuLabels(app),
          ['pid', String(app.pid)],
          ['process_name', app.name],
          ['user', app.user],
          ...attribution.map((label): readonly [string, string] => [label, app.attribution?.[label] ?? '']),
        ],
        value: app.memoryBytes!,
      })),
    ),
  ];
}

function xidFamily(series: NonNullable<Collection['xid']>['series'], constant: Labels): MetricFamily {
  return family(
    FIXED_FAMILIES.xidErrors,
    series.map(({ gpu, uuid, xid, count }) => ({
      labels: [...constant, ['gpu', gpu], ['uuid', uuid], ['xid', String(xid)]],
      value: count,
    })),
  );
}

function healthFamilies(collection: Collection, constant: Labels): MetricFamily[] {
  const { health, processes } = collection;
  const one = (value: number): MetricSample[] => [{ labels: constant, value }];
  return [
    family(FIXED_FAMILIES.success, one(health.failure ? 0 : 1)),
    family(FIXED_FAMILIES.error, health.failure ? [{ labels: [...constant, ['reason', health.failure.reason]], value: 1 }] : []),
    family(FIXED_FAMILIES.diagnosis, health.diagnosis ? [{ labels: [...constant, ['verdict', health.diagnosis.verdict]], value: 1 }] : []),
    family(FIXED_FAMILIES.duration, one(health.durationSeconds)),
    family(FIXED_FAMILIES.lastSuccess, health.lastSuccessSeconds === undefined ? [] : one(health.lastSuccessSeconds)),
    ...(collection.xid
      ? [
          family(FIXED_FAMILIES.xidSourceUp, [
            { labels: [...constant, ['source', collection.xid.source]], value: collection.xid.sourceUp ? 1 : 0 },
          ]),
        ]
      : []),
    ...(processes
      ? [family(FIXED_FAMILIES.processesDropped, one(processes.dropped)), family(FIXED_FAMILIES.processRowsSkipped, one(processes.skipped))]
      : []),
  ];
}
