import type { Nvml, Result } from './api.js';

// NVML's event calls (nvml.h: nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait_v2,
// nvmlEventSetFree), bound beside binding.ts's with its function maker.

type Fn = (...args: unknown[]) => number;
type EventCalls = Pick<Nvml, 'eventSetCreate' | 'registerEvents' | 'eventWait' | 'eventSetFree'>;

const ok = <T>(rc: number, value: () => T): Result<T> => (rc === 0 ? { rc: 0, value: value() } : { rc });

/** The event calls, each bound by `fn` (binding.ts's: a missing entry point answers FUNCTION_NOT_FOUND). */
export function bindEventCalls(fn: (name: string, args: unknown[]) => Fn, outPointer: unknown): EventCalls {
  const create = fn('nvmlEventSetCreate', [outPointer]);
  const register = fn('nvmlDeviceRegisterEvents', ['void *', 'uint64_t', 'void *']);
  const wait = fn('nvmlEventSetWait_v2', ['void *', 'void *', 'uint']);
  const free = fn('nvmlEventSetFree', ['void *']);
  // nvmlEventData_t, read by hand from one buffer kept for the binding: device (a pointer), eventType
  // and eventData (unsigned long long), then gpuInstanceId and computeInstanceId (unsigned int each).
  const data = Buffer.alloc(32);
  return {
    eventSetCreate: () => {
      const set: bigint[] = [0n];
      return ok(create(set), () => set[0]!);
    },
    registerEvents: (device, eventTypes, set) => register(device, eventTypes, set),
    eventWait: (set, timeoutMs) =>
      ok(wait(set, data, timeoutMs), () => ({
        device: data.readBigUInt64LE(0),
        eventType: data.readBigUInt64LE(8),
        eventData: data.readBigUInt64LE(16),
      })),
    eventSetFree: (set) => free(set),
  };
}
