import type { FieldSpec } from './fields/field-spec.js';
import type { Attribution } from './host/cgroup.js';
import type { Reservations } from './host/reservation.js';
import type { XidSeries } from './xid/count.js';

// The data model every stage speaks: what a source read (samples per GPU, processes, or a failure)
// and how the collection went. Sources build it; metrics, the CSV trail and publish read it.

/**
 * Why a collection failed: a fixed, documented set (it is the `reason` label of
 * nvidia_gpu_collector_error and the `status` column of the CSV trail).
 */
export const FAILURE_REASONS = {
  nvidia_smi_not_found: 'nvidia-smi is not on PATH (no NVIDIA driver installed, or not in this container).',
  nvidia_smi_not_executable: 'nvidia-smi exists but cannot be executed (permissions).',
  driver_unreachable: 'nvidia-smi could not communicate with the NVIDIA driver (exit 9): module not loaded.',
  nvml_library_missing: 'libnvidia-ml.so was not found (nvidia-smi exit 12; with --source nvml, the library could not be loaded).',
  gpu_access_blocked: 'The operating system blocked access to the GPU (exit 17): device nodes unusable.',
  driver_library_mismatch: 'Kernel module and user-space library versions differ: reboot or reload the module.',
  insufficient_permissions: 'nvidia-smi lacked the permissions for the query (exit 4).',
  no_devices: 'nvidia-smi found no NVIDIA devices (exit 6).',
  gpu_lost: 'A GPU fell off the bus or became inaccessible and no GPU could be read.',
  nvml_unknown_error: 'NVML reported an unknown error (exit 255).',
  invalid_field: "nvidia-smi rejected a field even after re-learning the driver's field list (exit 2).",
  timeout: 'nvidia-smi did not finish within --timeout and was killed.',
  nvidia_smi_stuck:
    'An nvidia-smi an earlier run killed is still asleep in the driver (state D; the GPU likely fell off the bus): no other is started until it is gone.',
  unparsable_output: 'nvidia-smi exited 0 but its output could not be read.',
  nvidia_smi_failed: 'nvidia-smi failed in another way (other exit status or signal).',
  write_failed:
    'The textfile could not be written in full (e.g. a full disk): the file holds the health block only, or the previous file stays.',
  internal_error: 'gpu-textfile itself failed (a bug: please report it).',
  collector_stopped:
    'collect was stopped (SIGTERM, SIGINT: systemctl stop), the daemon cleanly or a one-shot run before its sample was read: no GPU values until it runs again.',
} as const;

export type FailureReason = keyof typeof FAILURE_REASONS;

/** A failure with the one line a person reads. */
export interface Failure {
  reason: FailureReason;
  message: string;
}

/** Bounded set of per-field error names (they become a label value). */
export type FieldError =
  | 'unknown_error'
  | 'gpu_requires_reset'
  | 'insufficient_permissions'
  | 'gpu_lost'
  | 'err'
  | 'unrecognized'
  | 'unparsable';

/** One field's value in one sample. */
export type Reading =
  | { kind: 'number'; value: number; shown: string } // value in base units; shown as the source printed it
  | { kind: 'text'; text: string }
  | { kind: 'absent' }
  | { kind: 'error'; error: FieldError };

/** One GPU at one moment, values in base units. */
export interface GpuSample {
  gpu: string;
  uuid: string;
  readings: ReadonlyMap<string, Reading>; // by FieldSpec.query
  /** When the source took it (ms since the epoch), where the source says: the daemon mode's sample cost starts there. */
  takenAt?: number;
  /** The GPU's MIG devices, where MIG is enabled and the source can tell (NVML only). */
  mig?: readonly MigInstance[];
  /** GPM's activity per MIG GPU instance, where MIG is enabled and the GPU has GPM (NVML only). */
  migActivity?: readonly MigActivity[];
}

/** One MIG device (a compute instance in a GPU instance) and its share of the GPU's memory. */
export interface MigInstance {
  gpuInstance: number;
  computeInstance: number;
  uuid: string;
  /** The MIG profile ("1g.18gb", "1c.3g.71gb"), '' where the device's name does not say. */
  profile: string;
  /** In bytes; absent where the driver did not answer. */
  memory?: { total: number; used: number; free: number };
}

/** One MIG GPU instance's GPM ratios (0-1): GPM samples a GPU instance, not each of its compute instances. */
export interface MigActivity {
  gpuInstance: number;
  /** The GPU instance's profile ("3g.71gb"), '' where its MIG devices' names do not say. */
  profile: string;
  /** By the query of the whole GPU's field of the same metric ("nvml.gpm.sm_active"); a metric NVML did not answer is absent. */
  ratios: ReadonlyMap<string, number>;
}

/** A text field's value in a sample (a label, a state), if it has one. */
export const textReading = (sample: GpuSample, query: string): string | undefined => {
  const reading = sample.readings.get(query);
  return reading?.kind === 'text' ? reading.text : undefined;
};

/** Why a row could not become a sample. */
export interface RowProblem {
  line: string;
  message: string;
  /** What the row's first cells say about which GPU it was, when they look right. */
  gpu?: string;
  uuid?: string;
}

export const isSample = (value: GpuSample | RowProblem): value is GpuSample => 'readings' in value;

/** A GPU as the last good run (or the kernel) knew it: enough to ask for it alone. */
export interface KnownGpu {
  gpu: string;
  uuid: string;
  busId: string;
}

/** A compute process holding memory on a GPU. */
export interface ComputeApp {
  uuid: string;
  pid: number;
  name: string;
  /** Absent where the driver cannot tell (Windows WDDM prints [N/A]). */
  memoryBytes?: number;
  /** Share of the window the process's kernels ran on the SMs, and read or wrote device memory (0-1; NVML only). */
  smUtilization?: number;
  memoryUtilization?: number;
}

/** A compute process with the user that runs it and what its cgroup says it runs for. */
export interface ProcessSample extends ComputeApp {
  user: string;
  /** Container, pod, unit or Slurm job, each only where the cgroup shows it. */
  attribution?: Attribution;
}

/** How the collection went, kept apart from the data. */
export interface Health {
  failure?: Failure;
  /** What the host's files say caused the failure (gpu-textfile doctor's verdict). */
  diagnosis?: { verdict: string; summary: string };
  durationSeconds: number;
  /** Unix time of the last successful collection, this one or an earlier one. */
  lastSuccessSeconds?: number;
}

/** Everything one collection produced; on failure only `health` carries anything. */
export interface Collection {
  fields: readonly FieldSpec[];
  samples: readonly GpuSample[];
  /** GPUs known to exist that gave no sample this time. */
  down: readonly { gpu: string; uuid: string; reason: FailureReason }[];
  /**
   * The processes, and (read with them, where asked) which GPUs each job on the host reserved,
   * whether or not it runs anything on them (src/host/reservations.ts).
   */
  processes?: { apps: readonly ProcessSample[]; dropped: number; skipped: number; reservations?: Reservations };
  /**
   * Xid errors counted from the kernel log, and whether it could be read this time; absent when not
   * looked at (the demo source). Kept on a failed collection too: they come from the kernel, not the
   * GPU read, and matter most when a GPU fell off the bus. `source` is what counted them: the log, or
   * NVML's event set while the log cannot be read (the daemon mode of --source nvml).
   */
  xid?: { sourceUp: boolean; source: 'kmsg' | 'nvml'; series: readonly XidSeries[] };
  /** The driver's CUDA version (a label on nvidia_gpu_info), where known. */
  cudaVersion?: string;
  health: Health;
}

/** What a source read of the GPUs when at least one answered. */
export interface GpuRows {
  samples: GpuSample[];
  problems: RowProblem[];
  /** GPUs that did not answer while others did. */
  lost: (KnownGpu & { message: string })[];
  /** Fields in query order. */
  fields: FieldSpec[];
}

/** A collection that carries only its health: never the last run's GPU values. */
export function failedCollection(failure: Failure, durationSeconds: number, lastSuccessSeconds?: number): Collection {
  return { fields: [], samples: [], down: [], health: { failure, durationSeconds, lastSuccessSeconds } };
}

/** Samples read from a source -> a collection, with a line for every GPU that gave none. */
export function toCollection(
  gpus: GpuRows,
  processes: Collection['processes'],
  timing: { durationSeconds: number; nowSeconds: number },
): { collection: Collection; warnings: string[] } {
  const warnings = [
    ...gpus.lost.map((gpu) => `GPU ${gpu.gpu || gpu.busId} (${gpu.uuid || 'uuid unknown'}) did not answer: ${gpu.message}`),
    ...gpus.problems.map((p) => `nvidia-smi --query-gpu: ${p.message}: "${p.line.slice(0, 120)}"`),
  ];
  const down = [
    ...gpus.lost.map((gpu) => ({ gpu: gpu.gpu, uuid: gpu.uuid, reason: 'gpu_lost' as const })),
    ...gpus.problems
      .filter((p) => p.gpu !== undefined && p.uuid !== undefined)
      .map((p) => ({ gpu: p.gpu!, uuid: p.uuid!, reason: 'unparsable_output' as const })),
  ];
  return {
    collection: {
      fields: gpus.fields,
      samples: gpus.samples,
      down,
      processes,
      health: { durationSeconds: timing.durationSeconds, lastSuccessSeconds: Math.floor(timing.nowSeconds) },
    },
    warnings,
  };
}
