import { textReading, type Collection, type GpuSample, type ProcessSample } from './collection.js';
import { FIELDS, type FieldSpec } from './fields.js';
import type { MetricFamily, MetricSample } from './exposition/families.js';

// A collection -> metric families, nothing else: the model is src/collection.ts, the text format src/exposition/.

type FixedFamily = Omit<MetricFamily, 'samples'> & { labels: readonly string[] };

const fixed = (name: string, type: 'gauge' | 'counter', help: string, labels: string[]): FixedFamily => ({ name, type, help, labels });

/** Families that do not come from one field of the table. */
export const FIXED_FAMILIES = {
  info: fixed('nvidia_gpu_info', 'gauge', 'Identity of each GPU in its labels; the value is always 1.', []),
  up: fixed('nvidia_gpu_up', 'gauge', 'Whether the GPU answered this collection: 1 yes, 0 no (lost, or its row could not be read).', [
    'gpu',
    'uuid',
  ]),
  fieldError: fixed(
    'nvidia_gpu_field_error',
    'gauge',
    'A field nvidia-smi answered with an error instead of a value (the series for that field is left out).',
    ['gpu', 'uuid', 'field', 'error'],
  ),
  processes: fixed('nvidia_gpu_processes', 'gauge', 'Number of compute processes on the GPU.', ['gpu', 'uuid']),
  processMemory: fixed('nvidia_gpu_process_memory_used_bytes', 'gauge', 'GPU memory used by a compute process, in bytes.', [
    'gpu',
    'uuid',
    'pid',
    'process_name',
    'user',
  ]),
  success: fixed(
    'nvidia_gpu_collector_success',
    'gauge',
    'Whether the last collection read the GPUs: 1 yes, 0 no (see nvidia_gpu_collector_error).',
    [],
  ),
  error: fixed('nvidia_gpu_collector_error', 'gauge', 'Why the last collection failed; present only when it failed.', ['reason']),
  diagnosis: fixed(
    'nvidia_gpu_collector_diagnosis',
    'gauge',
    "What the host's files say caused the failure (the verdict of gpu-textfile doctor); present only then.",
    ['verdict'],
  ),
  duration: fixed('nvidia_gpu_collector_duration_seconds', 'gauge', 'How long the last collection took, in seconds.', []),
  lastSuccess: fixed(
    'nvidia_gpu_collector_last_success_timestamp_seconds',
    'gauge',
    'Unix time of the last successful collection, in seconds.',
    [],
  ),
  processesDropped: fixed(
    'nvidia_gpu_collector_processes_dropped',
    'gauge',
    'Compute processes left out of the last collection by --max-processes.',
    [],
  ),
  processRowsSkipped: fixed(
    'nvidia_gpu_collector_process_rows_skipped',
    'gauge',
    'Rows of --query-compute-apps output that could not be read in the last collection.',
    [],
  ),
} as const;

/**
 * Every label name the collector sets itself, from the tables the builders below read: the fixed
 * families' labels and each field's info label, its own labels and its state label. A --label may
 * take none of them (test/metrics-labels.test.ts checks the builders' output against this set).
 */
export function ownLabelNames(fields: readonly FieldSpec[] = FIELDS): Set<string> {
  const fromFields = fields.flatMap((field) => [
    ...(field.label ? [field.label] : []),
    ...Object.keys(field.labels ?? {}),
    ...(field.stateLabel ? [field.stateLabel] : []),
  ]);
  return new Set([...Object.values(FIXED_FAMILIES).flatMap((family) => family.labels), ...fromFields]);
}

type Labels = (readonly [string, string])[];

const family = (spec: Pick<MetricFamily, 'name' | 'type' | 'help'>, samples: MetricSample[]): MetricFamily => ({
  name: spec.name,
  type: spec.type,
  help: spec.help,
  samples,
});

/** The families fed by the field table, in table order, each listed once with its fields. */
export function fieldFamilies(fields: readonly FieldSpec[]): { spec: FieldSpec; fields: FieldSpec[] }[] {
  const byName = new Map<string, { spec: FieldSpec; fields: FieldSpec[] }>();
  for (const field of fields) {
    if (!field.metric) continue;
    const entry = byName.get(field.metric) ?? { spec: field, fields: [] };
    entry.fields.push(field);
    byName.set(field.metric, entry);
  }
  return [...byName.values()];
}

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
      [...merged.values()]
        .filter((app) => app.memoryBytes !== undefined)
        .map((app) => ({
          labels: [...gpuLabels(app), ['pid', String(app.pid)], ['process_name', app.name], ['user', app.user]] as Labels,
          value: app.memoryBytes!,
        })),
    ),
  ];
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
    ...(processes
      ? [family(FIXED_FAMILIES.processesDropped, one(processes.dropped)), family(FIXED_FAMILIES.processRowsSkipped, one(processes.skipped))]
      : []),
  ];
}

/** Every family the collector can emit, with its labels: the README's table and the rules' check use it. */
export function metricCatalog(): { name: string; type: string; help: string; labels: string[]; unit: string; source: string }[] {
  const infoLabels = FIELDS.filter((field) => field.kind === 'label').map((field) => field.label!);
  const row = (f: FixedFamily, source: string, labels = f.labels) => ({
    name: f.name,
    type: f.type,
    help: f.help,
    labels: [...labels],
    unit: '',
    source,
  });
  return [
    row(
      FIXED_FAMILIES.info,
      FIELDS.filter((f) => f.kind === 'label')
        .map((f) => f.query)
        .join(', '),
      infoLabels,
    ),
    row(FIXED_FAMILIES.up, 'whether the GPU answered'),
    ...fieldFamilies(FIELDS).map(({ spec, fields }) => ({
      name: spec.metric!,
      type: spec.type ?? 'gauge',
      help: spec.help ?? '',
      labels: ['gpu', 'uuid', ...Object.keys(spec.labels ?? {}), ...(spec.stateLabel ? [spec.stateLabel] : [])],
      unit: spec.unit ?? '',
      source: fields.map((f) => f.query).join(', '),
    })),
    row(FIXED_FAMILIES.fieldError, 'error tokens in any field'),
    row(FIXED_FAMILIES.processes, '--query-compute-apps'),
    row(FIXED_FAMILIES.processMemory, '--query-compute-apps used_gpu_memory; user from /proc/PID/status and /etc/passwd'),
    row(FIXED_FAMILIES.success, 'collector'),
    row(FIXED_FAMILIES.error, 'collector'),
    row(FIXED_FAMILIES.diagnosis, "gpu-textfile doctor's file checks, when nvidia-smi fails"),
    row(FIXED_FAMILIES.duration, 'collector'),
    row(FIXED_FAMILIES.lastSuccess, 'collector (carried over from the previous file when a run fails)'),
    row(FIXED_FAMILIES.processesDropped, 'collector (--max-processes)'),
    row(FIXED_FAMILIES.processRowsSkipped, 'collector'),
  ];
}
