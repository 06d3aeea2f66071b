import type { FailureReason } from '../collection.js';

/**
 * NVML's return codes (nvmlReturn_t in nvml.h) that fail a whole collection, and the reason each is.
 * nvidia-smi exits with these same numbers, so both sources read them from this one table and a
 * failure reads the same whichever source met it.
 */
export const NVML_RETURN_REASONS: Readonly<Record<number, FailureReason>> = {
  4: 'insufficient_permissions',
  6: 'no_devices',
  9: 'driver_unreachable',
  12: 'nvml_library_missing',
  15: 'gpu_lost',
  17: 'gpu_access_blocked',
  18: 'driver_library_mismatch',
};
