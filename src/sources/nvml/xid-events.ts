import { busIdKey, type XidLine } from '../../xid/parse.js';
import type { XidEvents } from '../../xid/watch.js';
import type { Device, EventSet, Nvml } from './api.js';

// Xid errors as NVML delivers them: an event set with every GPU registered for
// nvmlEventTypeXidCriticalError, drained without waiting once per sample of the daemon mode. The
// kernel log says the same; src/xid/watch.ts decides which of the two counts.

/** nvml.h's nvmlEventTypeXidCriticalError: the event's data is the Xid code. */
export const XID_CRITICAL_ERROR = 0x8n;
/** Events read in one drain at most: more is a storm, and the rest waits for the next sample. */
export const DRAIN_MAX = 256;

/** An open event set: drain() gives what arrived since the last drain; free() releases it. */
export interface XidEventSet {
  drain(): XidEvents;
  free(): void;
}

/**
 * Registers every GPU for Xid events on one new set. A GPU whose driver does not support them
 * (NOT_SUPPORTED), or that refuses for another reason, is left out, the others still count;
 * undefined when none registers (or the driver has no event sets).
 */
export function openXidEvents(nvml: Nvml): XidEventSet | undefined {
  const count = nvml.count();
  if (count.rc !== 0) return undefined;
  const set = nvml.eventSetCreate();
  if (set.rc !== 0) return undefined;
  const busOf = new Map<Device, string>();
  for (let index = 0; index < count.value!; index++) {
    const device = nvml.handle(index).value;
    const bus = device === undefined ? undefined : nvml.text('busId', device);
    if (device === undefined || bus?.rc !== 0) continue;
    const key = busIdKey(bus.value!);
    if (key && nvml.registerEvents(device, XID_CRITICAL_ERROR, set.value!) === 0) busOf.set(device, key);
  }
  if (busOf.size === 0) {
    nvml.eventSetFree(set.value!);
    return undefined;
  }
  const buses = [...busOf.values()];
  return {
    drain: () => ({ buses, events: drainEvents(nvml, set.value!, busOf) }),
    free: () => nvml.eventSetFree(set.value!),
  };
}

/** The Xid events waiting on `set`, oldest first; an event from a device not registered here is not one of ours. */
function drainEvents(nvml: Nvml, set: EventSet, busOf: ReadonlyMap<Device, string>): XidLine[] {
  const events: XidLine[] = [];
  for (let i = 0; i < DRAIN_MAX; i++) {
    const event = nvml.eventWait(set, 0);
    // NVML_ERROR_TIMEOUT: none left. Any other code (a GPU lost meanwhile) ends this drain too; the reads say why.
    if (event.rc !== 0) break;
    const { device, eventType, eventData } = event.value!;
    const bus = busOf.get(device);
    if (bus !== undefined && (eventType & XID_CRITICAL_ERROR) !== 0n && eventData < 100_000n) events.push({ bus, xid: Number(eventData) });
  }
  return events;
}
