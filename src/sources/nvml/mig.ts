import type { MigInstance } from '../../collection.js';
import type { Device } from './api.js';
import type { DeviceCalls } from './device-calls.js';
import { NVML_ERROR_NOT_FOUND } from './return-codes.js';

// A GPU's MIG devices with their memory, read through the MIG handles (nvmlDeviceGetMigDeviceHandleByIndex).
// On a GPU without MIG enabled only the mode is asked (an H200 with MIG disabled: mode 0/0, max count 0).

/** nvmlDeviceGetMigMode's NVML_DEVICE_MIG_ENABLE. */
const MIG_ENABLED = 1;

/**
 * The profile in a MIG device's name: NVML names a MIG device after its parent and its profile
 * ("NVIDIA H200 MIG 1g.18gb"; profiles as in NVIDIA's MIG user guide, "MIG Device Names"), '' when
 * the name has none.
 */
export function migProfile(name: string): string {
  return /(?:^|\s)((?:\d+c\.)?\d+g\.\d+gb(?:\+\w+)?)$/.exec(name.trim())?.[1] ?? '';
}

function readInstance(calls: DeviceCalls, handle: Device): MigInstance | undefined {
  const { nvml } = calls;
  const gpuInstance = nvml.instanceId('gpuInstance', handle);
  const computeInstance = nvml.instanceId('computeInstance', handle);
  const uuid = nvml.text('uuid', handle);
  if (gpuInstance.rc !== 0 || computeInstance.rc !== 0 || uuid.rc !== 0) return undefined;
  const name = nvml.text('name', handle);
  const memory = nvml.memory(handle);
  return {
    gpuInstance: gpuInstance.value!,
    computeInstance: computeInstance.value!,
    uuid: uuid.value!,
    profile: name.rc === 0 ? migProfile(name.value!) : '',
    ...(memory.rc === 0
      ? { memory: { total: Number(memory.value!.total), used: Number(memory.value!.used), free: Number(memory.value!.free) } }
      : {}),
  };
}

/**
 * The GPU's MIG devices, or undefined when MIG is off or a MIG call failed: a failure leaves this
 * GPU's MIG series out and nothing else (its other fields and the other GPUs are read as before).
 */
export function readMig(calls: DeviceCalls): MigInstance[] | undefined {
  const { nvml, device } = calls;
  // The mode changes only at a GPU reset: on the settings' cadence in the daemon mode, where asking
  // cost 0.5 ms a sample on an H200 host, more than every moving field together.
  const mode = calls.setting('mig', () => nvml.twoModes('mig', device));
  if (mode.rc !== 0 || mode.value![0] !== MIG_ENABLED) return undefined;
  const count = nvml.migCount(device);
  if (count.rc !== 0) return undefined;
  const instances: MigInstance[] = [];
  for (let index = 0; index < count.value!; index++) {
    const handle = nvml.migHandle(device, index);
    // An index without a MIG device: the GPU has room for more instances than were created.
    if (handle.rc === NVML_ERROR_NOT_FOUND) continue;
    if (handle.rc !== 0) return undefined;
    const instance = readInstance(calls, handle.value!);
    if (!instance) return undefined;
    instances.push(instance);
  }
  return instances;
}
