import { ATTRIBUTION_LABELS } from '../host/cgroup.js';
import type { MetricFamily } from '../exposition/families.js';
import { FIELDS } from '../fields/fields.js';
import type { FieldSpec } from '../fields/field-spec.js';

// The metric families the collector emits, described: the fixed ones, the ones the field table feeds, and
// every label name they carry. src/metrics/metrics.ts fills them from a collection; the README's table, the example
// rules' check and --label's reserved names read them from here without building any.

type FixedFamily = Omit<MetricFamily, 'samples'> & { labels: readonly string[] };

const fixed = (name: string, type: 'gauge' | 'counter', help: string, labels: string[]): FixedFamily => ({ name, type, help, labels });

/** The labels of every per-process family. */
const PROCESS_LABELS = ['gpu', 'uuid', 'pid', 'process_name', 'user', ...ATTRIBUTION_LABELS];
/** A MIG device: its GPU, its GPU and compute instance ids, its UUID and profile (DCGM's GPU_I_ID, GPU_I_PROFILE). */
const MIG_LABELS = ['gpu', 'uuid', 'gpu_instance', 'compute_instance', 'mig_uuid', 'mig_profile'];
/** A MIG GPU instance: GPM samples the GPU instance, which its compute instances share (DCGM's GPU_I_ID, GPU_I_PROFILE). */
const GPU_INSTANCE_LABELS = ['gpu', 'uuid', 'gpu_instance', 'mig_profile'];

/** Families that do not come from one field of the table. */
export const FIXED_FAMILIES = {
  // Its other labels are the field table's identity fields.
  info: fixed('nvidia_gpu_info', 'gauge', 'Identity of each GPU in its labels; the value is always 1.', ['cuda_version']),
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
  processMemory: fixed('nvidia_gpu_process_memory_used_bytes', 'gauge', 'GPU memory used by a compute process, in bytes.', PROCESS_LABELS),
  // NVML only (collect --source nvml): nvidia-smi's --query-compute-apps has no utilization.
  processSmUtilization: fixed(
    'nvidia_gpu_process_sm_utilization_ratio',
    'gauge',
    "Share of time a compute process's kernels ran on the GPU's SMs (0-1), the driver's sampled average since the previous read (a one-shot run: every sample the driver keeps, about the last 15 s).",
    PROCESS_LABELS,
  ),
  processMemoryUtilization: fixed(
    'nvidia_gpu_process_memory_utilization_ratio',
    'gauge',
    "Share of time a compute process read or wrote device memory (0-1), the driver's sampled average since the previous read (a one-shot run: every sample the driver keeps, about the last 15 s).",
    PROCESS_LABELS,
  ),
  jobInfo: fixed(
    'nvidia_gpu_holder_info',
    'gauge',
    "A job holding the GPU: its processes' Slurm job, pod, container, systemd unit or command, in its labels; the value is always 1.",
    ['gpu', 'uuid', 'job_kind', 'job_id', 'user'],
  ),
  jobs: fixed(
    'nvidia_gpu_holders',
    'gauge',
    'Number of jobs whose processes hold the GPU (named in nvidia_gpu_holder_info, at most 8 of them).',
    ['gpu', 'uuid'],
  ),
  reservationInfo: fixed(
    'nvidia_gpu_reservation_info',
    'gauge',
    "A job that reserved the GPU (its Slurm job, pod or container, read from its processes' environment or its cgroup), whether or not it runs anything on it, in its labels; the value is always 1.",
    ['gpu', 'uuid', 'job_kind', 'job_id', 'user'],
  ),
  reservations: fixed(
    'nvidia_gpu_reservations',
    'gauge',
    'Number of jobs that reserved the GPU (named in nvidia_gpu_reservation_info, at most 8 of them).',
    ['gpu', 'uuid'],
  ),
  reservationUnknown: fixed(
    'nvidia_gpu_reservation_unknown_jobs',
    'gauge',
    "Jobs on the host whose reserved GPUs could not be read (no process's environment readable): any GPU may be reserved by them.",
    [],
  ),
  migMemoryUsed: fixed('nvidia_gpu_mig_memory_used_bytes', 'gauge', 'Memory in use in a MIG device, in bytes.', MIG_LABELS),
  migMemoryTotal: fixed('nvidia_gpu_mig_memory_total_bytes', 'gauge', 'Memory of a MIG device (its GPU instance), in bytes.', MIG_LABELS),
  migMemoryFree: fixed('nvidia_gpu_mig_memory_free_bytes', 'gauge', 'Memory free in a MIG device, in bytes.', MIG_LABELS),
  migGraphicsActive: fixed(
    'nvidia_gpu_mig_graphics_active_ratio',
    'gauge',
    'Share of time a graphics or compute context of a MIG GPU instance was busy (0-1).',
    GPU_INSTANCE_LABELS,
  ),
  migSmActive: fixed(
    'nvidia_gpu_mig_sm_active_ratio',
    'gauge',
    "Share of time at least one warp was resident on an SM, averaged over a MIG GPU instance's SMs (0-1).",
    GPU_INSTANCE_LABELS,
  ),
  migSmOccupancy: fixed(
    'nvidia_gpu_mig_sm_occupancy_ratio',
    'gauge',
    "Resident warps as a share of the most an SM can hold, averaged over a MIG GPU instance's SMs (0-1).",
    GPU_INSTANCE_LABELS,
  ),
  migTensorActive: fixed(
    'nvidia_gpu_mig_tensor_active_ratio',
    'gauge',
    'Share of time any tensor core pipe of a MIG GPU instance was busy (0-1).',
    GPU_INSTANCE_LABELS,
  ),
  migDramActive: fixed(
    'nvidia_gpu_mig_dram_active_ratio',
    'gauge',
    "Share of time a MIG GPU instance's device memory was sending or receiving data (0-1).",
    GPU_INSTANCE_LABELS,
  ),
  xidErrors: fixed(
    'nvidia_gpu_xid_errors_total',
    'counter',
    'Xid errors the NVIDIA driver reported, by Xid code: from the kernel log, or NVML events while it cannot be read (counted since the state directory was created).',
    ['gpu', 'uuid', 'xid'],
  ),
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
  xidSourceUp: fixed(
    'nvidia_gpu_collector_xid_source_up',
    'gauge',
    'Whether Xid errors were counted in the last collection: 1 yes, 0 no; source says from what (kmsg, or nvml while the kernel log cannot be read).',
    ['source'],
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

/** The MIG GPU instance families of GPM, by the query of the whole GPU's field of the same metric. */
export const MIG_GPM_FAMILIES: Readonly<Record<string, FixedFamily>> = {
  'nvml.gpm.graphics_active': FIXED_FAMILIES.migGraphicsActive,
  'nvml.gpm.sm_active': FIXED_FAMILIES.migSmActive,
  'nvml.gpm.sm_occupancy': FIXED_FAMILIES.migSmOccupancy,
  'nvml.gpm.tensor_active': FIXED_FAMILIES.migTensorActive,
  'nvml.gpm.dram_active': FIXED_FAMILIES.migDramActive,
};

/** The label on every series of `collect --source demo`. */
export const DEMO_LABEL: [string, string] = ['source', 'demo'];

/**
 * Every label name the collector sets itself, from the tables the builders in src/metrics/metrics.ts read: the fixed
 * families' labels and each field's info label, its own labels and its state label. A --label may
 * take none of them (test/commands/reserved-labels.test.ts checks the builders' output against this set).
 */
export function ownLabelNames(fields: readonly FieldSpec[] = FIELDS): Set<string> {
  const fromFields = fields.flatMap((field) => [
    ...(field.label ? [field.label] : []),
    ...Object.keys(field.labels ?? {}),
    ...(field.stateLabel ? [field.stateLabel] : []),
  ]);
  return new Set([...Object.values(FIXED_FAMILIES).flatMap((family) => family.labels), ...fromFields, DEMO_LABEL[0]]);
}

/** The families fed by the field table, in table order, each listed once with its fields. */
export function fieldFamilies(fields: readonly FieldSpec[]): readonly { spec: FieldSpec; fields: FieldSpec[] }[] {
  // The daemon mode builds every sample's families from the very same fields array: grouped once.
  let grouped = GROUPED.get(fields);
  if (!grouped) GROUPED.set(fields, (grouped = groupFields(fields)));
  return grouped;
}

const GROUPED = new WeakMap<readonly FieldSpec[], readonly { spec: FieldSpec; fields: FieldSpec[] }[]>();

function groupFields(fields: readonly FieldSpec[]): { spec: FieldSpec; fields: FieldSpec[] }[] {
  const byName = new Map<string, { spec: FieldSpec; fields: FieldSpec[] }>();
  for (const field of fields) {
    if (!field.metric) continue;
    const entry = byName.get(field.metric) ?? { spec: field, fields: [] };
    entry.fields.push(field);
    byName.set(field.metric, entry);
  }
  return [...byName.values()];
}

/** Every family the collector can emit, with its labels: the README's table and the rules' check use it. */
export function metricCatalog(): { name: string; type: string; help: string; labels: string[]; unit: string; source: string }[] {
  const infoLabels = [...FIELDS.filter((field) => field.kind === 'label').map((field) => field.label!), ...FIXED_FAMILIES.info.labels];
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
        .join(', ')
        .concat('; cuda_version from nvidia-smi --version, once per driver'),
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
    row(
      FIXED_FAMILIES.processMemory,
      '--query-compute-apps used_gpu_memory; user from /proc/PID/status and /etc/passwd; container_id, pod_uid, systemd_unit, slurm_job from /proc/PID/cgroup, each only when some process has it',
    ),
    row(FIXED_FAMILIES.processSmUtilization, 'NVML only: nvmlDeviceGetProcessUtilization smUtil; 0 for a listed process without a sample'),
    row(
      FIXED_FAMILIES.processMemoryUtilization,
      'NVML only: nvmlDeviceGetProcessUtilization memUtil; 0 for a listed process without a sample',
    ),
    row(
      FIXED_FAMILIES.jobInfo,
      "the processes of --query-compute-apps grouped by job: slurm_job, else pod_uid, else container_id (12 characters), else systemd_unit from /proc/PID/cgroup, else the command (job_kind process); user of the job's largest process; the 8 with the most memory per GPU (docs/jobs.md)",
    ),
    row(FIXED_FAMILIES.jobs, 'the processes of --query-compute-apps grouped by job (docs/jobs.md)'),
    row(
      FIXED_FAMILIES.reservationInfo,
      "every Slurm job, pod and container cgroup under /sys/fs/cgroup, running on a GPU or not: SLURM_JOB_GPUS and SLURM_STEP_GPUS (device minors), UUIDs in CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES from a few of its processes' /proc/PID/environ; cgroup v1's devices.list; the 8 first by kind and id per GPU (docs/jobs.md)",
    ),
    row(FIXED_FAMILIES.reservations, 'the job cgroups whose reservation names the GPU (docs/jobs.md)'),
    row(FIXED_FAMILIES.reservationUnknown, "job cgroups none of whose processes' environ could be read whole (docs/jobs.md)"),
    ...[FIXED_FAMILIES.migMemoryUsed, FIXED_FAMILIES.migMemoryTotal, FIXED_FAMILIES.migMemoryFree].map((family) =>
      row(family, 'NVML only, MIG enabled: nvmlDeviceGetMemoryInfo_v2 on each MIG device handle; mig_profile from its name'),
    ),
    ...Object.entries(MIG_GPM_FAMILIES).map(([query, family]) =>
      row(family, `NVML only, MIG enabled, GPM supported: nvmlGpmMigSampleGet per GPU instance, compared as ${query}`),
    ),
    row(
      FIXED_FAMILIES.xidErrors,
      "NVRM Xid lines in the kernel log (/dev/kmsg), matched to GPUs by PCI bus id; while it cannot be read, NVML's Xid events (daemon mode of --source nvml)",
    ),
    row(FIXED_FAMILIES.success, 'collector'),
    row(FIXED_FAMILIES.error, 'collector'),
    row(FIXED_FAMILIES.diagnosis, "gpu-textfile doctor's file checks, when nvidia-smi fails"),
    row(FIXED_FAMILIES.duration, 'collector'),
    row(FIXED_FAMILIES.lastSuccess, 'collector (carried over from the previous file when a run fails)'),
    row(FIXED_FAMILIES.xidSourceUp, 'collector'),
    row(FIXED_FAMILIES.processesDropped, 'collector (--max-processes)'),
    row(FIXED_FAMILIES.processRowsSkipped, 'collector'),
  ];
}
