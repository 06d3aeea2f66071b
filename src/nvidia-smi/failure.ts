import type { SmiOutcome } from './run.js';

/**
 * Why a collection failed: a fixed, documented set (it is the `reason` label of
 * nvidia_gpu_collector_error and the `status` column of the CSV trail).
 */
export const FAILURE_REASONS = {
  nvidia_smi_not_found: 'nvidia-smi is not on PATH (no NVIDIA driver installed, or not in this container).',
  nvidia_smi_not_executable: 'nvidia-smi exists but cannot be executed (permissions).',
  driver_unreachable: 'nvidia-smi could not communicate with the NVIDIA driver (exit 9): module not loaded.',
  nvml_library_missing: 'libnvidia-ml.so was not found (exit 12).',
  gpu_access_blocked: 'The operating system blocked access to the GPU (exit 17): device nodes unusable.',
  driver_library_mismatch: 'Kernel module and user-space library versions differ: reboot or reload the module.',
  insufficient_permissions: 'nvidia-smi lacked the permissions for the query (exit 4).',
  no_devices: 'nvidia-smi found no NVIDIA devices (exit 6).',
  gpu_lost: 'A GPU fell off the bus or became inaccessible and no GPU could be read.',
  nvml_unknown_error: 'NVML reported an unknown error (exit 255).',
  invalid_field: 'nvidia-smi rejected a field even after re-learning the driver\'s field list (exit 2).',
  timeout: 'nvidia-smi did not finish within --timeout and was killed.',
  unparsable_output: 'nvidia-smi exited 0 but its output could not be read.',
  nvidia_smi_failed: 'nvidia-smi failed in another way (other exit status or signal).',
  write_failed: 'The textfile could not be written in full (e.g. a full disk): the file holds the health block only, or the previous file stays.',
  internal_error: 'gpu-textfile itself failed (a bug: please report it).',
} as const;

export type FailureReason = keyof typeof FAILURE_REASONS;

/** A failure with the one line a person reads. */
export interface Failure {
  reason: FailureReason;
  message: string;
}

const MESSAGE_RULES: [RegExp, FailureReason][] = [
  [/couldn't communicate with the NVIDIA driver/i, 'driver_unreachable'],
  [/Driver\/library version mismatch/i, 'driver_library_mismatch'],
  [/couldn't find libnvidia-ml\.so|libnvidia-ml\.so.*(not found|cannot open)/i, 'nvml_library_missing'],
  [/GPU access blocked by the operating system/i, 'gpu_access_blocked'],
  [/No devices were found/i, 'no_devices'],
  [/Unable to determine the device handle|GPU is lost|fallen off the bus/i, 'gpu_lost'],
  [/Insufficient Permissions/i, 'insufficient_permissions'],
  [/is not a valid field to query/i, 'invalid_field'],
];

const EXIT_CODES: Record<number, FailureReason> = {
  2: 'invalid_field',
  4: 'insufficient_permissions',
  6: 'no_devices',
  9: 'driver_unreachable',
  12: 'nvml_library_missing',
  15: 'gpu_lost',
  17: 'gpu_access_blocked',
  18: 'driver_library_mismatch',
  255: 'nvml_unknown_error',
};

const firstLine = (text: string): string => text.split('\n').find((line) => line.trim() !== '')?.trim() ?? '';

/** A failed outcome -> reason and message. The message wins over the exit status: it is more specific. */
export function classifyFailure(outcome: Exclude<SmiOutcome, { kind: 'ok' }>, what: string): Failure {
  switch (outcome.kind) {
    case 'not-found':
      return { reason: 'nvidia_smi_not_found', message: `${outcome.command} not found: is the NVIDIA driver installed?` };
    case 'not-executable':
      return { reason: 'nvidia_smi_not_executable', message: `${outcome.command} cannot be executed: ${outcome.message}` };
    case 'timeout':
      return { reason: 'timeout', message: `${what} did not finish within ${outcome.afterMs} ms; killed it` };
    case 'killed':
      return { reason: 'nvidia_smi_failed', message: `${what} was killed by ${outcome.signal}: ${firstLine(outcome.output)}` };
    case 'exit': {
      const reason =
        MESSAGE_RULES.find(([pattern]) => pattern.test(outcome.output))?.[1] ?? EXIT_CODES[outcome.code] ?? 'nvidia_smi_failed';
      return { reason, message: `${what} exited ${outcome.code}: ${firstLine(outcome.output) || '(no output)'}` };
    }
  }
}
