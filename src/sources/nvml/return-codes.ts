import type { FailureReason, FieldError } from '../../collection.js';
import { NVML_RETURN_REASONS } from '../nvml-return-reasons.js';

// NVML's return codes (nvmlReturn_t in nvml.h) -> the pipeline's failure reasons and field errors.
// nvidia-smi exits with the same numbers (src/sources/nvidia-smi/failure.ts), so a failure reads the
// same whichever source met it.

export const NVML_SUCCESS = 0;
export const NVML_ERROR_INVALID_ARGUMENT = 2;
export const NVML_ERROR_NOT_SUPPORTED = 3;
export const NVML_ERROR_NOT_FOUND = 6;
export const NVML_ERROR_INSUFFICIENT_SIZE = 7;
export const NVML_ERROR_FUNCTION_NOT_FOUND = 13;
export const NVML_ERROR_GPU_IS_LOST = 15;

/** NVML's names for its codes, for messages ("NVML_ERROR_DRIVER_NOT_LOADED (9)"). */
const NAMES: Record<number, string> = {
  0: 'SUCCESS',
  1: 'UNINITIALIZED',
  2: 'INVALID_ARGUMENT',
  3: 'NOT_SUPPORTED',
  4: 'NO_PERMISSION',
  5: 'ALREADY_INITIALIZED',
  6: 'NOT_FOUND',
  7: 'INSUFFICIENT_SIZE',
  8: 'INSUFFICIENT_POWER',
  9: 'DRIVER_NOT_LOADED',
  10: 'TIMEOUT',
  11: 'IRQ_ISSUE',
  12: 'LIBRARY_NOT_FOUND',
  13: 'FUNCTION_NOT_FOUND',
  14: 'CORRUPTED_INFOROM',
  15: 'GPU_IS_LOST',
  16: 'RESET_REQUIRED',
  17: 'OPERATING_SYSTEM',
  18: 'LIB_RM_VERSION_MISMATCH',
  19: 'IN_USE',
  20: 'MEMORY',
  21: 'NO_DATA',
  22: 'VGPU_ECC_NOT_SUPPORTED',
  23: 'INSUFFICIENT_RESOURCES',
  24: 'FREQ_NOT_SUPPORTED',
  25: 'ARGUMENT_VERSION_MISMATCH',
  26: 'DEPRECATED',
  27: 'NOT_READY',
  28: 'GPU_NOT_FOUND',
  29: 'INVALID_STATE',
  999: 'UNKNOWN',
};

/** "NVML_ERROR_DRIVER_NOT_LOADED (9)" */
export const describeReturn = (rc: number): string => `NVML_${rc === 0 ? '' : 'ERROR_'}${NAMES[rc] ?? 'UNRECOGNIZED'} (${rc})`;

/** A code that fails the whole collection (nvmlInit, the device count) -> its reason, as nvidia-smi's exit status. */
const COLLECTION_REASONS: Record<number, FailureReason> = {
  ...NVML_RETURN_REASONS,
  // NVML_ERROR_GPU_NOT_FOUND: no GPU answered, as nvidia-smi says "No devices were found".
  28: 'no_devices',
};

/** Why a collection failed, from the code of the call that failed it. */
export const collectionReason = (rc: number): FailureReason => COLLECTION_REASONS[rc] ?? 'nvml_unknown_error';

/** What a failed per-GPU call means for its field: no value (quietly), or an error reported as such. */
export type FieldOutcome = { kind: 'absent' } | { kind: 'error'; error: FieldError } | { kind: 'lost' };

/**
 * A field's call failed: NOT_SUPPORTED, NOT_FOUND, NO_DATA and a function this driver lacks are "no
 * value" (nvidia-smi prints [N/A] or [Not Supported]); GPU_IS_LOST takes the whole GPU out; the rest
 * are errors, named as nvidia-smi names them in a cell.
 */
export function fieldOutcome(rc: number): FieldOutcome {
  switch (rc) {
    case 3:
    case 6:
    case 13:
    case 21:
    case 26:
      return { kind: 'absent' };
    case 15:
      return { kind: 'lost' };
    case 4:
      return { kind: 'error', error: 'insufficient_permissions' };
    case 16:
      return { kind: 'error', error: 'gpu_requires_reset' };
    case 999:
      return { kind: 'error', error: 'unknown_error' };
    default:
      return { kind: 'error', error: 'unrecognized' };
  }
}
