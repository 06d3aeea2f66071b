import type { Nvml, Result } from './api.js';

// The MIG calls (nvml.h, "Multi Instance GPU Management"): a MIG device is one compute instance of one
// GPU instance, reached by index under its parent GPU; its handle answers the device calls (UUID, name,
// memory) for that instance alone.

type Fn = (...args: unknown[]) => number;

const ok = <T>(rc: number, value: () => T): Result<T> => (rc === 0 ? { rc: 0, value: value() } : { rc });

/** The MIG part of the binding, declared with `fn` (binding.ts's) and koffi's output types for a handle and an unsigned int. */
export function bindMig(
  fn: (name: string, args: unknown[]) => Fn,
  handleOut: unknown,
  uintOut: unknown,
): Pick<Nvml, 'migCount' | 'migHandle' | 'instanceId'> {
  const maxCount = fn('nvmlDeviceGetMaxMigDeviceCount', ['void *', uintOut]);
  const byIndex = fn('nvmlDeviceGetMigDeviceHandleByIndex', ['void *', 'uint', handleOut]);
  const ids = {
    gpuInstance: fn('nvmlDeviceGetGpuInstanceId', ['void *', uintOut]),
    computeInstance: fn('nvmlDeviceGetComputeInstanceId', ['void *', uintOut]),
  };
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
  };
}
