import type { Failure, FailureReason } from '../../collection.js';
import { NVML_RETURN_REASONS } from '../nvml-return-reasons.js';
import type { SmiOutcome } from './run.js';

// How nvidia-smi says it failed (its messages and exit statuses) -> the pipeline's failure reasons.

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

// nvidia-smi's exit statuses: NVML's return codes (it exits with the code of the call that failed),
// and two of its own.
const EXIT_CODES: Record<number, FailureReason> = {
  ...NVML_RETURN_REASONS,
  2: 'invalid_field',
  255: 'nvml_unknown_error',
};

const firstLine = (text: string): string =>
  text
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim() ?? '';

/** A failed outcome -> reason and message. The message wins over the exit status: it is more specific. */
export function classifyFailure(outcome: Exclude<SmiOutcome, { kind: 'ok' }>, what: string): Failure {
  switch (outcome.kind) {
    case 'not-found':
      return { reason: 'nvidia_smi_not_found', message: `${outcome.command} not found: is the NVIDIA driver installed?` };
    case 'not-executable':
      return { reason: 'nvidia_smi_not_executable', message: `${outcome.command} cannot be executed: ${outcome.message}` };
    case 'timeout':
      return { reason: 'timeout', message: `${what} did not finish within ${outcome.afterMs} ms; killed it` };
    case 'stuck':
      return {
        reason: 'timeout',
        message: `${what} did not finish within ${outcome.afterMs} ms, and SIGKILL did not end it: pid ${outcome.pid} is stuck in the driver`,
      };
    case 'killed':
      return { reason: 'nvidia_smi_failed', message: `${what} was killed by ${outcome.signal}: ${firstLine(outcome.output)}` };
    case 'exit': {
      const reason =
        MESSAGE_RULES.find(([pattern]) => pattern.test(outcome.output))?.[1] ?? EXIT_CODES[outcome.code] ?? 'nvidia_smi_failed';
      return { reason, message: `${what} exited ${outcome.code}: ${firstLine(outcome.output) || '(no output)'}` };
    }
  }
}
