import { MAX_JOBS_PER_GPU } from '../host/job.js';
import { busIdKey } from '../xid/parse.js';
import { textReading, type Collection, type GpuSample } from '../collection.js';
import type { MetricFamily, MetricSample } from '../exposition/families.js';

// The collection in dcgm-exporter's names, units and labels, so that its dashboards (Grafana 12239)
// and alert rules read a host without DCGM. The names, types, units and HELP texts are dcgm-exporter's
// (etc/default-counters.csv); our fields give them in base units, converted back here. A field the
// collection lacks gives no series: absent, never zero (docs/compat.md lists which and why).

type Labels = readonly (readonly [string, string])[];

/** One dcgm-exporter field we can fill: from which of our fields (by query), and the factor from our base unit to its unit. */
interface DcgmField {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  query: string;
  /** Our base-unit value times this is DCGM's (hertz -> MHz: 1e-6; a ratio -> %: 100). */
  scale: number;
  /** The MIG GPU instance's memory that DCGM's GPU_I entity reports for this field (NVML: each MIG device's), in bytes. */
  migMemory?: 'used' | 'free';
}

const MHZ = 1e-6;
const MIB = 1 / (1024 * 1024);

/** In default-counters.csv's order; the profiling ratios after, from GPM (Hopper and later, --source nvml). */
export const DCGM_FIELDS: readonly DcgmField[] = [
  { name: 'DCGM_FI_DEV_SM_CLOCK', type: 'gauge', help: 'SM clock frequency (in MHz).', query: 'clocks.current.sm', scale: MHZ },
  { name: 'DCGM_FI_DEV_MEM_CLOCK', type: 'gauge', help: 'Memory clock frequency (in MHz).', query: 'clocks.current.memory', scale: MHZ },
  { name: 'DCGM_FI_DEV_MEMORY_TEMP', type: 'gauge', help: 'Memory temperature (in C).', query: 'temperature.memory', scale: 1 },
  { name: 'DCGM_FI_DEV_GPU_TEMP', type: 'gauge', help: 'GPU temperature (in C).', query: 'temperature.gpu', scale: 1 },
  { name: 'DCGM_FI_DEV_POWER_USAGE', type: 'gauge', help: 'Power draw (in W).', query: 'power.draw', scale: 1 },
  {
    name: 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
    type: 'counter',
    help: 'Total energy consumption since boot (in mJ).',
    query: 'nvml.energy',
    scale: 1000,
  },
  {
    name: 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
    type: 'counter',
    help: 'Total number of PCIe retries.',
    query: 'nvml.pcie.replay_counter',
    scale: 1,
  },
  { name: 'DCGM_FI_DEV_GPU_UTIL', type: 'gauge', help: 'GPU utilization (in %).', query: 'utilization.gpu', scale: 100 },
  { name: 'DCGM_FI_DEV_MEM_COPY_UTIL', type: 'gauge', help: 'Memory utilization (in %).', query: 'utilization.memory', scale: 100 },
  { name: 'DCGM_FI_DEV_ENC_UTIL', type: 'gauge', help: 'Encoder utilization (in %).', query: 'utilization.encoder', scale: 100 },
  { name: 'DCGM_FI_DEV_DEC_UTIL', type: 'gauge', help: 'Decoder utilization (in %).', query: 'utilization.decoder', scale: 100 },
  {
    name: 'DCGM_FI_DEV_FB_FREE',
    type: 'gauge',
    help: 'Framebuffer memory free (in MiB).',
    query: 'memory.free',
    scale: MIB,
    migMemory: 'free',
  },
  {
    name: 'DCGM_FI_DEV_FB_USED',
    type: 'gauge',
    help: 'Framebuffer memory used (in MiB).',
    query: 'memory.used',
    scale: MIB,
    migMemory: 'used',
  },
  {
    name: 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for uncorrectable errors',
    query: 'remapped_rows.uncorrectable',
    scale: 1,
  },
  {
    name: 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for correctable errors',
    query: 'remapped_rows.correctable',
    scale: 1,
  },
  {
    name: 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
    type: 'gauge',
    help: 'Whether remapping of rows has failed',
    query: 'remapped_rows.failure',
    scale: 1,
  },
  {
    name: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
    type: 'gauge',
    help: 'Ratio of time the graphics engine is active.',
    query: 'nvml.gpm.graphics_active',
    scale: 1,
  },
  {
    name: 'DCGM_FI_PROF_SM_ACTIVE',
    type: 'gauge',
    help: 'The ratio of cycles an SM has at least 1 warp assigned.',
    query: 'nvml.gpm.sm_active',
    scale: 1,
  },
  {
    name: 'DCGM_FI_PROF_SM_OCCUPANCY',
    type: 'gauge',
    help: 'The ratio of number of warps resident on an SM.',
    query: 'nvml.gpm.sm_occupancy',
    scale: 1,
  },
  {
    name: 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE',
    type: 'gauge',
    help: 'Ratio of cycles the tensor (HMMA) pipe is active.',
    query: 'nvml.gpm.tensor_active',
    scale: 1,
  },
  {
    name: 'DCGM_FI_PROF_DRAM_ACTIVE',
    type: 'gauge',
    help: 'Ratio of cycles the device memory interface is active sending or receiving data.',
    query: 'nvml.gpm.dram_active',
    scale: 1,
  },
];

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
function gpuLabels(sample: GpuSample, context: DcgmContext): Labels {
  const bus = textReading(sample, 'pci.bus_id') ?? '';
  const key = busIdKey(bus);
  const minor = key === undefined ? undefined : context.minors?.get(key);
  return [
    ['gpu', sample.gpu],
    ['UUID', sample.uuid],
    ['pci_bus_id', bus],
    ['device', minor === undefined ? '' : `nvidia${minor}`],
    ['modelName', textReading(sample, 'name') ?? ''],
    ['Hostname', context.hostname],
    ['DCGM_FI_DRIVER_VERSION', textReading(sample, 'driver_version') ?? ''],
    ...context.labels,
  ];
}

/** The label names of the dcgm file's series: a --label of one of these would give a series the same label twice. */
export const DCGM_LABELS: readonly string[] = [
  'gpu',
  'UUID',
  'pci_bus_id',
  'device',
  'modelName',
  'Hostname',
  'DCGM_FI_DRIVER_VERSION',
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
function lostGpuLabels(gpu: string, uuid: string, collection: Collection, context: DcgmContext): Labels {
  const driver = collection.samples.map((sample) => textReading(sample, 'driver_version')).find((version) => version !== undefined);
  return [
    ['gpu', gpu],
    ['UUID', uuid],
    ['pci_bus_id', ''],
    ['device', ''],
    ['modelName', ''],
    ['Hostname', context.hostname],
    ['DCGM_FI_DRIVER_VERSION', driver ?? ''],
    ...context.labels,
  ];
}

/**
 * DCGM_FI_DEV_XID_ERRORS is the value of the last Xid. The kernel log's counts say which codes came,
 * not in which order: the value is 0 where the GPU logged none, the code where it logged only one,
 * and absent where it logged several (which came last is unknown). The counter beside it has them all.
 * The kernel's, not the GPUs', so kept for a lost GPU and on a failed collection, as in our file.
 */
function xidFamilies(collection: Collection, answered: ReadonlyMap<string, Labels>, context: DcgmContext): MetricFamily[] {
  if (!collection.xid?.sourceUp) return [];
  const byUuid = new Map(answered);
  for (const { gpu, uuid } of collection.xid.series)
    if (uuid !== '' && !byUuid.has(uuid)) byUuid.set(uuid, lostGpuLabels(gpu, uuid, collection, context));
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
    { name: 'DCGM_FI_DEV_XID_ERRORS', type: 'gauge', help: 'Value of the last XID error encountered.', samples: last },
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
export function dcgmFamilies(collection: Collection, context: DcgmContext): MetricFamily[] {
  const labelled = collection.samples.map((sample) => ({ sample, labels: gpuLabels(sample, context) }));
  const byUuid = new Map(labelled.map(({ sample, labels }) => [sample.uuid, labels]));
  const families = DCGM_FIELDS.map((field) => fieldFamily(field, labelled));
  return [...families, ...xidFamilies(collection, byUuid, context), ...attributionFamily(collection, byUuid)].filter(
    (f) => f.samples.length > 0,
  );
}
