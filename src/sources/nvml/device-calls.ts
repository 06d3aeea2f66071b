import type { Reading } from '../../collection.js';
import type { FieldSpec } from '../../fields/field-spec.js';
import type { Device, GpmSample, Nvml, Result } from './api.js';
import { fieldOutcome } from './return-codes.js';

// What a field's reader is given: one GPU's calls for this sample (each made once however many fields
// share it), and what the source keeps of that GPU from one sample to the next.

/**
 * One MIG GPU instance's GPM buffers: `identity` says which instance they were taken of (a GPU instance
 * id is reused when MIG is reconfigured), `taken` whether `previous` holds a sample yet.
 */
export interface GpuInstanceGpm {
  identity: string;
  previous: GpmSample;
  next: GpmSample;
  taken: boolean;
  kept?: { at: number; result: Result<Result<number>[]> };
}

/** Kept per GPU across samples: GPM needs the previous sample, the energy counter has its own cadence. */
export interface DeviceState {
  energy?: { at: number; result: Result<Reading> };
  /** GPM's sample buffers: `previous` holds the last sample taken, `next` is filled by the coming one. */
  gpm?: { supported: boolean; previous?: GpmSample; next?: GpmSample; kept?: { at: number; result: Result<Result<number>[]> } };
  /** GPM's sample buffers per MIG GPU instance, by its id (mig-gpm.ts); undefined until this GPU's layout was first read. */
  migGpm?: Map<number, GpuInstanceGpm>;
  /**
   * Settings (limits, modes, error counts) as last read, and when, and the moving fields this GPU does not
   * have: the daemon mode asks them again every settingsEveryMs.
   */
  settings?: Map<string, { at: number; result: Result<Reading> }>;
  /** Fields that cannot change while the driver stays loaded (identity, maxima), as first read. */
  fixed?: Map<string, Result<Reading>>;
  /** Calls that are settings but no field's (the MIG mode readMig asks), as last answered, and when. */
  settingCalls?: Map<string, { at: number; result: Result<unknown> }>;
}

export interface DeviceCalls {
  nvml: Nvml;
  device: Device;
  once<T>(key: string, call: () => Result<T>): Result<T>;
  /** As once, and in the daemon mode kept for settingsEveryMs: a call whose answer only an administrator changes. */
  setting<T>(key: string, call: () => Result<T>): Result<T>;
  state: DeviceState;
  /** Milliseconds since the epoch, when this sample was taken. */
  now: number;
  /** How long an energy reading is reused (the daemon mode's slower cadence; 0 reads it every sample). */
  energyEveryMs: number;
  /** How long a setting's reading is reused (the same slower cadence; 0 reads it every sample). */
  settingsEveryMs: number;
  /** How long GPM's last comparison is reused (the daemon mode's window at least; 0: a new one every sample). */
  gpmEveryMs: number;
}

/** A field's reader: NVML's code when the call failed, else the reading. */
export type FieldReader = (calls: DeviceCalls, field: FieldSpec) => Result<Reading>;

/** Per-GPU calls that share one result per sample. */
export function deviceCalls(
  nvml: Nvml,
  device: Device,
  state: DeviceState,
  timing: { now: number; energyEveryMs: number; settingsEveryMs: number; gpmEveryMs: number },
): DeviceCalls {
  const results = new Map<string, Result<unknown>>();
  const once = <T>(key: string, call: () => Result<T>): Result<T> => {
    let result = results.get(key) as Result<T> | undefined;
    if (!result) results.set(key, (result = call()));
    return result;
  };
  return {
    nvml,
    device,
    state,
    ...timing,
    once,
    setting: <T>(key: string, call: () => Result<T>): Result<T> => {
      if (timing.settingsEveryMs <= 0) return once(key, call);
      const settingCalls = (state.settingCalls ??= new Map());
      const kept = settingCalls.get(key);
      if (kept && timing.now - kept.at < timing.settingsEveryMs) return kept.result as Result<T>;
      const result = once(key, call);
      // Only answers are kept, as with settings' fields: an error is asked again next sample.
      if (result.rc === 0 || fieldOutcome(result.rc).kind === 'absent') settingCalls.set(key, { at: timing.now, result });
      else settingCalls.delete(key);
      return result;
    },
  };
}
