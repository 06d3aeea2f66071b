import { MAX_JOBS_PER_GPU } from '../host/job.js';
import { busIdKey } from '../xid/parse.js';
import { textReading, type Collection, type GpuSample } from '../collection.js';
import type { MetricFamily, MetricSample } from '../exposition/families.js';
import { DCGM_PROFILES, profileFields, xidGaugeName, type DcgmField, type DcgmProfile } from './dcgm-fields.js';

// The collection in dcgm-exporter's names, units and labels, so that its dashboards (Grafana 12239)
// and alert rules read a host without DCGM, in the generation --compat names (src/compat/dcgm-fields.ts).
// The names, types, units and HELP texts are dcgm-exporter's (etc/default-counters.csv); our fields give
// them in base units, converted back here. A field the
// collection lacks gives no series: absent, never zero (docs/compat.md lists which and why).

type Labels = readonly (readonly [string, string])[];

/** What the dcgm file needs beside the collection: dcgm-exporter's Hostname label, and the user's --label pairs. */
export interface DcgmContext {
  hostname: string;
  labels: readonly (readonly [string, string])[];
  /** The GPUs' device minor numbers by PCI bus id as busIdKey writes it ("nvidia<minor>" is dcgm's device label); a GPU not in it has none. */
  minors?: ReadonlyMap<string, number>;
  /** Whether collect reads the processes (--processes): nvidia_gpu_exporter's file says when it could not. */
  processes?: boolean;
}

/** Conversions by a factor leave float noise (0.45 x 100 = 45.00000000000001): DCGM's units never need more than 9 digits. */
const clean = (value: number): number => Number(value.toPrecision(12));

/** dcgm-exporter's labels of one GPU, in its order; `device` only where the minor number is known. */
function gpuLabels(sample: GpuSample, context: DcgmContext, profile: DcgmProfile): Labels {
  const bus = textReading(sample, 'pci.bus_id') ?? '';
  const key = busIdKey(bus);
  const minor = key === undefined ? undefined : context.minors?.get(key);
  return [
    ['gpu', sample.gpu],
    ['UUID', sample.uuid],
    ['pci_bus_id', bus],
    ['device', minor === undefined ? '' : `nvidia${minor}`],
    ['modelName', textReading(sample, 'name') ?? ''],
    [profile.hostnameLabel, context.hostname],
    [profile.driverLabel, textReading(sample, 'driver_version') ?? ''],
    ...context.labels,
  ];
}

/** The label names of the dcgm file's series: a --label of one of these would give a series the same label twice. */
export const dcgmLabelNames = (profile: DcgmProfile): readonly string[] => [
  'gpu',
  'UUID',
  'pci_bus_id',
  'device',
  'modelName',
  profile.hostnameLabel,
  profile.driverLabel,
  'GPU_I_PROFILE',
  'GPU_I_ID',
  'xid',
  'container',
  'hpc_job',
];

/** The MIG labels dcgm-exporter adds; whole-GPU series of a family that has MIG series carry them empty (Prometheus drops an empty label). */
const NO_MIG: Labels = [
  ['GPU_I_PROFILE', ''],
  ['GPU_I_ID', ''],
];

/** "1c.3g.71gb" (a compute instance's profile) -> "3g.71gb": DCGM's GPU_I_PROFILE names the GPU instance. */
const gpuInstanceProfile = (profile: string): string => profile.replace(/^\d+c\./, '');

/**
 * A field's values per MIG GPU instance, in our base units: GPM's ratios of each GPU instance, and its
 * memory, which its compute instances share (each MIG device reports the same: the first one's is taken).
 * NVML gives no clocks, temperature or power per MIG device: those fields have no MIG series.
 */
function migValues(field: DcgmField, sample: GpuSample): { gpuInstance: number; profile: string; value: number }[] {
  const ratios = (sample.migActivity ?? []).flatMap(({ gpuInstance, profile, ratios }) => {
    const value = ratios.get(field.query);
    return value === undefined ? [] : [{ gpuInstance, profile, value }];
  });
  const kind = field.migMemory;
  if (!kind) return ratios;
  const memory = new Map<number, { gpuInstance: number; profile: string; value: number }>();
  for (const device of sample.mig ?? [])
    if (device.memory && !memory.has(device.gpuInstance))
      memory.set(device.gpuInstance, {
        gpuInstance: device.gpuInstance,
        profile: gpuInstanceProfile(device.profile),
        value: device.memory[kind],
      });
  return [...ratios, ...memory.values()];
}

function fieldFamily(field: DcgmField, samples: readonly { sample: GpuSample; labels: Labels }[]): MetricFamily {
  const series: MetricSample[] = [];
  for (const { sample, labels } of samples) {
    const reading = sample.readings.get(field.query);
    if (reading?.kind === 'number') series.push({ labels, value: clean(reading.value * field.scale) });
  }
  const migSeries = samples.flatMap(({ sample, labels }) =>
    migValues(field, sample).map(({ gpuInstance, profile, value }) => ({
      labels: [...labels, ['GPU_I_PROFILE', profile], ['GPU_I_ID', String(gpuInstance)]] as Labels,
      value: clean(value * field.scale),
    })),
  );
  const all = migSeries.length === 0 ? series : [...series.map((s) => ({ ...s, labels: [...s.labels, ...NO_MIG] })), ...migSeries];
  return { name: field.name, type: field.type, help: field.help, samples: all };
}

/**
 * A GPU the kernel log names that gave no sample (lost, or every GPU when the collection failed): its
 * Xids matter most then (79: fallen off the bus). Its gpu and UUID are known, its bus id, model and
 * minor number not (empty: absent in Prometheus); the driver is the host's.
 */
function lostGpuLabels(gpu: string, uuid: string, collection: Collection, context: DcgmContext, profile: DcgmProfile): Labels {
  const driver = collection.samples.map((sample) => textReading(sample, 'driver_version')).find((version) => version !== undefined);
  return [
    ['gpu', gpu],
    ['UUID', uuid],
    ['pci_bus_id', ''],
    ['device', ''],
    ['modelName', ''],
    [profile.hostnameLabel, context.hostname],
    [profile.driverLabel, driver ?? ''],
    ...context.labels,
  ];
}

/**
 * DCGM_FI_DEV_XID_ERRORS is the value of the last Xid. The kernel log's counts say which codes came,
 * not in which order: the value is 0 where the GPU logged none, the code where it logged only one,
 * and absent where it logged several (which came last is unknown). The counter beside it has them all.
 * The kernel's, not the GPUs', so kept for a lost GPU and on a failed collection, as in our file.
 */
function xidFamilies(
  collection: Collection,
  answered: ReadonlyMap<string, Labels>,
  context: DcgmContext,
  profile: DcgmProfile,
): MetricFamily[] {
  if (!collection.xid?.sourceUp) return [];
  const byUuid = new Map(answered);
  for (const { gpu, uuid } of collection.xid.series)
    if (uuid !== '' && !byUuid.has(uuid)) byUuid.set(uuid, lostGpuLabels(gpu, uuid, collection, context, profile));
  const last: MetricSample[] = [];
  const counts: MetricSample[] = [];
  for (const [uuid, labels] of byUuid) {
    const logged = collection.xid.series.filter((s) => s.uuid === uuid && s.count > 0);
    const codes = new Set(logged.map((s) => s.xid));
    if (codes.size <= 1) last.push({ labels, value: codes.size === 0 ? 0 : [...codes][0]! });
    for (const s of collection.xid.series.filter((x) => x.uuid === uuid))
      counts.push({ labels: [...labels, ['xid', String(s.xid)]], value: s.count });
  }
  return [
    { name: xidGaugeName(profile), type: 'gauge', help: 'Value of the last XID error encountered.', samples: last },
    {
      name: 'DCGM_EXP_XID_ERRORS_total',
      type: 'counter',
      help: 'Xid errors the GPU logged, by Xid code, counted from the kernel log (gpu-textfile; not a DCGM field).',
      samples: counts,
    },
  ];
}

/**
 * Who the GPU's processes run for, in dcgm-exporter's label names (container, hpc_job): one info
 * series per GPU and owner, at most MAX_JOBS_PER_GPU per GPU as our nvidia_gpu_holder_info (the
 * owners holding the most memory; a GPU shared by hundreds of jobs must not multiply the series).
 */
function attributionFamily(collection: Collection, byUuid: ReadonlyMap<string, Labels>): MetricFamily[] {
  const owners = new Map<string, { uuid: string; container: string; hpc_job: string; memory: number }>();
  for (const app of collection.processes?.apps ?? []) {
    const container = app.attribution?.container_id ?? '';
    const hpc_job = app.attribution?.slurm_job ?? '';
    if (!byUuid.has(app.uuid) || (container === '' && hpc_job === '')) continue;
    const key = `${app.uuid}\u0000${container}\u0000${hpc_job}`;
    const owner = owners.get(key) ?? { uuid: app.uuid, container, hpc_job, memory: 0 };
    owner.memory += app.memoryBytes ?? 0;
    owners.set(key, owner);
  }
  const samples: MetricSample[] = [];
  for (const [uuid, labels] of byUuid) {
    const onGpu = [...owners.values()]
      .filter((owner) => owner.uuid === uuid)
      .sort((a, b) => b.memory - a.memory || a.container.localeCompare(b.container) || a.hpc_job.localeCompare(b.hpc_job))
      .slice(0, MAX_JOBS_PER_GPU);
    for (const { container, hpc_job } of onGpu)
      samples.push({ labels: [...labels, ['container', container], ['hpc_job', hpc_job]], value: 1 });
  }
  if (samples.length === 0) return [];
  return [
    {
      name: 'DCGM_EXP_GPU_ATTRIBUTION_INFO',
      type: 'gauge',
      help: 'The container or Slurm job a process on the GPU runs for (gpu-textfile; join on gpu and UUID).',
      samples,
    },
  ];
}

/** The collection as dcgm-exporter's families; a failed collection has none but the kernel log's Xids (else the file is empty, which node_exporter accepts). */
export function dcgmFamilies(collection: Collection, context: DcgmContext, profile: DcgmProfile = DCGM_PROFILES.dcgm): MetricFamily[] {
  const labelled = collection.samples.map((sample) => ({ sample, labels: gpuLabels(sample, context, profile) }));
  const byUuid = new Map(labelled.map(({ sample, labels }) => [sample.uuid, labels]));
  const families = profileFields(profile).map((field) => fieldFamily(field, labelled));
  return [...families, ...xidFamilies(collection, byUuid, context, profile), ...attributionFamily(collection, byUuid)].filter(
    (f) => f.samples.length > 0,
  );
}
