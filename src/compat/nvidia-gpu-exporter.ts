import { textReading, type Collection, type GpuSample, type MigInstance } from '../collection.js';
import type { MetricFamily, MetricSample } from '../exposition/families.js';
import type { FieldSpec } from '../fields/field-spec.js';
import { FIELDS } from '../fields/fields.js';
import { FABRIC_STATES } from '../fields/fields-nvml.js';

// The collection in utkuozdemir/nvidia_gpu_exporter's names, units and labels (its release 1.14.0), so
// that its dashboards (Grafana 14574 and 25547) read a host it does not run on. It names a field's
// metric after the column nvidia-smi returns for it: "nvidia_smi_" + the column's name with dots as
// underscores, and a unit suffix with a multiplier for the units it knows ("utilization.gpu [%]" ->
// nvidia_smi_utilization_gpu_ratio, x 0.01). Every per-GPU series carries one label, `uuid`: the GPU's
// UUID in lower case without "GPU-"; the rest of the GPU's identity is on nvidia_smi_gpu_info. Every field
// family is a gauge. A field the collection lacks gives no series: absent, never zero (docs/compat.md).

type Labels = readonly (readonly [string, string])[];

/** The units nvidia_gpu_exporter knows in a returned column, the suffix it gives the name, and its multiplier. */
const PEER_UNITS: readonly (readonly [column: string, suffix: string, multiplier: number])[] = [
  [' [W]', '_watts', 1],
  [' [MHz]', '_clock_hz', 1e6],
  [' [MiB]', '_bytes', 1024 * 1024],
  [' [%]', '_ratio', 0.01],
  [' [us]', '_seconds', 1e-6],
];

/** "clocks.current.sm [MHz]" -> nvidia_smi_clocks_current_sm_clock_hz, x 1e6: the peer's rule for a returned column. */
export function peerMetric(column: string): { name: string; multiplier: number } {
  const unit = PEER_UNITS.find(([suffix]) => column.endsWith(suffix));
  const base = unit ? column.slice(0, -unit[0].length) + unit[1] : column;
  const snake = base
    .replaceAll('.', '_')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
  return { name: `nvidia_smi_${snake}`, multiplier: unit?.[2] ?? 1 };
}

/** The units nvidia-smi prints in a column's name (our field table's `unit`); the others (C) it does not. */
const PRINTED_UNITS = new Set(['%', 'MiB', 'MHz', 'W', 'us']);

/** The column nvidia-smi returns for one of our fields on current drivers: its query name, and its unit where printed. */
export const returnedColumn = (field: FieldSpec): string =>
  field.unit && PRINTED_UNITS.has(field.unit) ? `${field.query} [${field.unit}]` : field.query;

/** The identity fields the peer also writes as numbers (it parses any cell with one number; of ours only these mean one). */
const NUMERIC_LABELS = new Set(['index', 'compute_cap']);

/** One of our fields as one of the peer's per-GPU gauges. */
export interface PeerField {
  spec: FieldSpec;
  name: string;
  help: string;
  /** Our base-unit value times this is the peer's. */
  scale: number;
}

/**
 * Our nvidia-smi fields under the peer's names. State fields (compute_mode, gpu_recovery_action) are
 * one gauge there, the state's number in NVML's enum, which is the order of our field's `states`.
 */
export const PEER_FIELDS: readonly PeerField[] = FIELDS.filter(
  (field) => !field.nvml && (field.kind !== 'label' || NUMERIC_LABELS.has(field.query)),
).map((spec) => {
  const column = returnedColumn(spec);
  const { name, multiplier } = peerMetric(column);
  return { spec, name, help: column, scale: multiplier / (spec.factor ?? 1) };
});

/** Conversions by a factor leave float noise (0.07 / 0.01 x 0.01): nvidia-smi's numbers never have more than 12 digits. */
const clean = (value: number): number => Number(value.toPrecision(12));

/** The peer's reading of a cell with exactly one number in it ("9.0" -> 9); undefined otherwise. */
function oneNumber(text: string): number | undefined {
  const numbers = text.match(/[+-]?(\d*[.])?\d+/g) ?? [];
  return numbers.length === 1 ? Number.parseFloat(numbers[0]!) : undefined;
}

function peerValue(field: PeerField, sample: GpuSample): number | undefined {
  const reading = sample.readings.get(field.spec.query);
  if (reading?.kind === 'number') return clean(reading.value * field.scale);
  if (reading?.kind !== 'text') return undefined;
  if (field.spec.kind === 'label') return oneNumber(reading.text);
  const state = field.spec.states?.indexOf(reading.text) ?? -1;
  return state < 0 ? undefined : state;
}

/** The peer's uuid label: lower case, without the "GPU-" (or a MIG device's "MIG-") prefix. */
export const peerUuid = (uuid: string): string =>
  uuid
    .trim()
    .toLowerCase()
    .replace(/^(gpu|mig)-/, '');

const gauge = (name: string, help: string, samples: MetricSample[], type: 'gauge' | 'counter' = 'gauge'): MetricFamily => ({
  name,
  type,
  help,
  samples,
});

/** nvidia_smi_gpu_info's labels in the peer's order; driver_model_* (Windows) and pci_sub_device_id are not read, so absent. */
const INFO_LABELS = [
  ['name', 'name'],
  ['vbios_version', 'vbios_version'],
  ['driver_version', 'driver_version'],
  ['pci_bus_id', 'pci.bus_id'],
  ['serial', 'serial'],
  ['compute_cap', 'compute_cap'],
  ['index', 'index'],
] as const;

function infoFamily(collection: Collection, gpus: readonly { sample: GpuSample; labels: Labels }[], constant: Labels): MetricFamily {
  return gauge(
    'nvidia_smi_gpu_info',
    'A constant 1 labelled by the GPU: uuid, name, vbios_version, driver_version, pci_bus_id, serial, compute_cap, index, cuda_version.',
    gpus.map(({ sample, labels }) => ({
      labels: [
        labels[0]!,
        ...INFO_LABELS.map(([label, query]): readonly [string, string] => [label, textReading(sample, query) ?? '']),
        ['cuda_version', collection.cudaVersion ?? ''],
        ...constant,
      ],
      value: 1,
    })),
  );
}

/**
 * The NVML-only fields the peer's NVML backend writes too, by our query: its name, type, HELP, and the
 * factor from our base unit to its value. PCIe throughput: NVML answers KB/s, which we take as 1024
 * bytes and the peer as 1000 ("pending live calibration, 1000 until proven"): the peer's number is
 * written, so that a panel over hosts of both shows one traffic as one value.
 */
const NVML_PEER: readonly (readonly [query: string, name: string, type: 'gauge' | 'counter', help: string, scale: number])[] = [
  ['nvml.energy', 'nvidia_smi_energy_joules_total', 'counter', 'Energy the GPU consumed since the driver loaded, in joules.', 1],
  [
    'nvml.pcie.throughput.transmit',
    'nvidia_smi_pcie_throughput_tx_bytes_per_second',
    'gauge',
    "PCIe traffic the GPU sent over the last 20 ms, in bytes per second (NVML's KB/s x 1000, as nvidia_gpu_exporter).",
    1000 / 1024,
  ],
  [
    'nvml.pcie.throughput.receive',
    'nvidia_smi_pcie_throughput_rx_bytes_per_second',
    'gauge',
    "PCIe traffic the GPU received over the last 20 ms, in bytes per second (NVML's KB/s x 1000, as nvidia_gpu_exporter).",
    1000 / 1024,
  ],
];

function fieldFamilies(gpus: readonly { sample: GpuSample; labels: Labels }[]): MetricFamily[] {
  const ours = PEER_FIELDS.map((field) =>
    gauge(
      field.name,
      field.help,
      gpus.flatMap(({ sample, labels }) => {
        const value = peerValue(field, sample);
        return value === undefined ? [] : [{ labels, value }];
      }),
    ),
  );
  const nvml = NVML_PEER.map(([query, name, type, help, scale]) =>
    gauge(
      name,
      help,
      gpus.flatMap(({ sample, labels }) => {
        const reading = sample.readings.get(query);
        return reading?.kind === 'number' ? [{ labels, value: clean(reading.value * scale) }] : [];
      }),
      type,
    ),
  );
  // The peer's fabric.state column as its number (nvmlGpuFabricState_t); NVML's fabric info, where it has one.
  const fabric = gauge(
    'nvidia_smi_fabric_state',
    'fabric.state: 0 Not Supported, 1 Not Started, 2 In Progress, 3 Completed (NVSwitch systems).',
    gpus.flatMap(({ sample, labels }) => {
      const state = FABRIC_STATES.indexOf(textReading(sample, 'nvml.fabric.state') as (typeof FABRIC_STATES)[number]);
      return state > 0 ? [{ labels, value: state }] : [];
    }),
  );
  return [...ours, ...nvml, fabric];
}

/** The compute processes, where collect read them (--processes, the default): the peer's --collect.compute-apps families. */
function appFamilies(
  collection: Collection,
  gpus: readonly { sample: GpuSample; labels: Labels }[],
  constant: Labels,
  processesAsked: boolean,
): MetricFamily[] {
  const apps = collection.processes?.apps;
  // Asked for and not read, where the GPUs were: the peer's success 0 and no count, so that "could not
  // see the processes" never looks like "none" (its renderApps).
  if (!apps)
    return processesAsked && gpus.length > 0
      ? [
          gauge('nvidia_smi_compute_apps_last_collect_success', 'Whether the processes were read: 1 yes, 0 no.', [
            { labels: constant, value: 0 },
          ]),
        ]
      : [];
  const known = new Set(gpus.map(({ sample }) => sample.uuid));
  // The same pid can show twice on one GPU (one row per MIG instance): one process, its memory summed,
  // as in our own file; two series with one label set would get the whole file refused.
  const merged = new Map<string, (typeof apps)[number]>();
  for (const app of apps.filter((one) => known.has(one.uuid))) {
    const key = `${app.uuid}/${app.pid}`;
    const before = merged.get(key);
    const unknown = before?.memoryBytes === undefined && app.memoryBytes === undefined;
    merged.set(key, before ? { ...before, memoryBytes: unknown ? undefined : (before.memoryBytes ?? 0) + (app.memoryBytes ?? 0) } : app);
  }
  const mine = [...merged.values()];
  const appLabels = (app: (typeof apps)[number]): Labels => [
    ['uuid', peerUuid(app.uuid)],
    ['pid', String(app.pid)],
    ['process_name', app.name],
    ...constant,
  ];
  return [
    gauge(
      'nvidia_smi_compute_app_info',
      'A constant 1 labelled by a process with a compute context on the GPU.',
      mine.map((app) => ({ labels: appLabels(app), value: 1 })),
    ),
    gauge(
      'nvidia_smi_compute_app_used_memory_bytes',
      'GPU memory the process uses, in bytes.',
      mine.flatMap((app) => (app.memoryBytes === undefined ? [] : [{ labels: appLabels(app), value: app.memoryBytes }])),
    ),
    gauge(
      'nvidia_smi_compute_apps',
      'Processes with a compute context on the GPU.',
      gpus.map(({ sample, labels }) => ({ labels, value: mine.filter((app) => app.uuid === sample.uuid).length })),
    ),
    gauge('nvidia_smi_compute_apps_last_collect_success', 'Whether the processes were read: 1 yes, 0 no.', [
      { labels: constant, value: 1 },
    ]),
  ];
}

/** The GPM ratios per MIG GPU instance, by our whole-GPU field's query. */
const MIG_ACTIVITY: readonly (readonly [query: string, name: string, help: string])[] = [
  [
    'nvml.gpm.graphics_active',
    'nvidia_smi_mig_graphics_activity_ratio',
    "Share of time the GPU instance's graphics or compute engine was busy (0-1).",
  ],
  ['nvml.gpm.sm_active', 'nvidia_smi_mig_sm_activity_ratio', "Share of time the GPU instance's SMs had a warp resident (0-1)."],
  [
    'nvml.gpm.sm_occupancy',
    'nvidia_smi_mig_sm_occupancy_ratio',
    "Resident warps as a share of the most the GPU instance's SMs hold (0-1).",
  ],
  ['nvml.gpm.tensor_active', 'nvidia_smi_mig_tensor_activity_ratio', "Share of time the GPU instance's tensor pipes were busy (0-1)."],
];

/** MIG devices, their GPU instances' memory (shared by its compute instances: written once per GPU instance) and GPM ratios. */
function migFamilies(gpus: readonly { sample: GpuSample; labels: Labels }[], constant: Labels): MetricFamily[] {
  const info: MetricSample[] = [];
  const memory: Record<'total' | 'used' | 'free', MetricSample[]> = { total: [], used: [], free: [] };
  const activity = new Map<string, MetricSample[]>(MIG_ACTIVITY.map(([query]) => [query, []]));
  for (const { sample } of gpus) {
    const uuid = peerUuid(sample.uuid);
    const instanceLabels = (gpuInstance: number): Labels => [['uuid', uuid], ['gpu_instance_id', String(gpuInstance)], ...constant];
    const firstOfInstance = new Map<number, MigInstance>();
    for (const device of sample.mig ?? []) {
      info.push({
        labels: [
          ['uuid', uuid],
          ['mig_uuid', peerUuid(device.uuid)],
          ['gpu_instance_id', String(device.gpuInstance)],
          ['compute_instance_id', String(device.computeInstance)],
          ['profile', device.profile],
          ...constant,
        ],
        value: 1,
      });
      if (device.memory && !firstOfInstance.has(device.gpuInstance)) firstOfInstance.set(device.gpuInstance, device);
    }
    for (const [gpuInstance, device] of firstOfInstance)
      for (const kind of ['total', 'used', 'free'] as const)
        memory[kind].push({ labels: instanceLabels(gpuInstance), value: device.memory![kind] });
    for (const instance of sample.migActivity ?? [])
      for (const [query, ratio] of instance.ratios)
        activity.get(query)?.push({ labels: instanceLabels(instance.gpuInstance), value: clean(ratio) });
  }
  return [
    gauge('nvidia_smi_mig_info', 'A constant 1 labelled by a MIG device: the GPU, its own uuid, GPU and compute instance, profile.', info),
    ...(['total', 'used', 'free'] as const).map((kind) =>
      gauge(`nvidia_smi_mig_memory_${kind}_bytes`, `Memory of the MIG GPU instance (${kind}), in bytes.`, memory[kind]),
    ),
    ...MIG_ACTIVITY.map(([query, name, help]) => gauge(name, help, activity.get(query)!)),
  ];
}

/**
 * The kernel log's Xid counts as the peer's counter (it counts NVML's events since it started; we count
 * the log's). The kernel's, not the GPUs': kept for a GPU that gave no sample (Xid 79: fallen off the
 * bus) and on a failed collection, as in our file.
 */
function xidFamily(collection: Collection, constant: Labels): MetricFamily[] {
  if (!collection.xid?.sourceUp) return [];
  return [
    gauge(
      'nvidia_smi_xid_errors_total',
      'Xid errors the GPU logged, by Xid code, counted from the kernel log.',
      collection.xid.series
        .filter((s) => s.uuid !== '' && s.count > 0)
        .map((s) => ({ labels: [['uuid', peerUuid(s.uuid)], ['xid', String(s.xid)], ...constant], value: s.count })),
      'counter',
    ),
    // The peer's time of each GPU's last Xid of a code (its chart's NvidiaGpuXidCritical/Warning alerts
    // select it): the kernel log's time of the last such line, where the boot time is known.
    gauge(
      'nvidia_smi_xid_last_timestamp_seconds',
      'When the GPU last logged the Xid, in Unix seconds, from the kernel log.',
      collection.xid.series.flatMap((s) =>
        s.uuid === '' || s.count === 0 || s.lastSeconds === undefined
          ? []
          : [{ labels: [['uuid', peerUuid(s.uuid)], ['xid', String(s.xid)], ...constant] as Labels, value: s.lastSeconds }],
      ),
    ),
  ];
}

/** Whether the collection succeeded, when it last did, and how long it took: the peer's health families. */
function healthFamilies(collection: Collection, constant: Labels): MetricFamily[] {
  const { failure, lastSuccessSeconds, durationSeconds } = collection.health;
  return [
    gauge('nvidia_smi_last_collect_success', 'Whether the last collection succeeded: 1 yes, 0 no.', [
      { labels: constant, value: failure ? 0 : 1 },
    ]),
    gauge(
      'nvidia_smi_last_collect_success_timestamp_seconds',
      'When the last successful collection ran, in Unix seconds.',
      lastSuccessSeconds === undefined ? [] : [{ labels: constant, value: lastSuccessSeconds }],
    ),
    gauge('nvidia_smi_last_collect_duration_seconds', 'How long the last collection took, in seconds.', [
      { labels: constant, value: durationSeconds },
    ]),
  ];
}

/** The label names the peer's series carry: a --label of one of these would give a series the same label twice. */
export const NVIDIA_GPU_EXPORTER_LABELS: readonly string[] = [
  'uuid',
  ...INFO_LABELS.map(([label]) => label),
  'cuda_version',
  'pid',
  'process_name',
  'mig_uuid',
  'gpu_instance_id',
  'compute_instance_id',
  'profile',
  'xid',
];

/**
 * The collection as nvidia_gpu_exporter's families. A failed collection has the health families only
 * (nvidia_smi_last_collect_success 0), as the peer's scrape has then; a lost GPU has no series.
 */
export function nvidiaGpuExporterFamilies(collection: Collection, constant: Labels, processesAsked = false): MetricFamily[] {
  const gpus = collection.samples.map((sample) => ({ sample, labels: [['uuid', peerUuid(sample.uuid)] as const, ...constant] as Labels }));
  const families = [
    infoFamily(collection, gpus, constant),
    ...fieldFamilies(gpus),
    ...appFamilies(collection, gpus, constant, processesAsked),
    ...migFamilies(gpus, constant),
    ...xidFamily(collection, constant),
    ...healthFamilies(collection, constant),
  ];
  return families.filter((family) => family.samples.length > 0);
}
