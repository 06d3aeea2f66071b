import type { Nvml, Result } from './api.js';

// The MIG calls (nvml.h, "Multi Instance GPU Management"): a MIG device is one compute instance of one
// GPU instance, reached by index under its parent GPU; its handle answers the device calls (UUID, name,
// memory) for that instance alone. And GPM per GPU instance (nvml.h, "GPM Functions"):
// nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample) takes
// the parent's handle and the GPU instance id; its buffers come and go with the instances, so
// nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) is bound here too.

type Fn = (...args: unknown[]) => number;

const ok = <T>(rc: number, value: () => T): Result<T> => (rc === 0 ? { rc: 0, value: value() } : { rc });

/** The MIG part of the binding, declared with `fn` (binding.ts's) and koffi's output types for a handle and an unsigned int. */
export function bindMig(
  fn: (name: string, args: unknown[]) => Fn,
  handleOut: unknown,
  uintOut: unknown,
): Pick<Nvml, 'migCount' | 'migHandle' | 'instanceId' | 'gpmMigTake' | 'gpmFree'> {
  const maxCount = fn('nvmlDeviceGetMaxMigDeviceCount', ['void *', uintOut]);
  const byIndex = fn('nvmlDeviceGetMigDeviceHandleByIndex', ['void *', 'uint', handleOut]);
  const ids = {
    gpuInstance: fn('nvmlDeviceGetGpuInstanceId', ['void *', uintOut]),
    computeInstance: fn('nvmlDeviceGetComputeInstanceId', ['void *', uintOut]),
  };
  const gpmMigGet = fn('nvmlGpmMigSampleGet', ['void *', 'uint', 'void *']);
  const gpmFree = fn('nvmlGpmSampleFree', ['void *']);
  return {
    migCount: (device) => {
      const value = [0];
      return ok(maxCount(device, value), () => value[0]!);
    },
    migHandle: (device, index) => {
      const handle: bigint[] = [0n];
      return ok(byIndex(device, index, handle), () => handle[0]!);
    },
    instanceId: (which, device) => {
      const value = [0];
      return ok(ids[which](device, value), () => value[0]!);
    },
    gpmMigTake: (device, gpuInstanceId, sample) => gpmMigGet(device, gpuInstanceId, sample),
    gpmFree: (sample) => gpmFree(sample),
  };
}
