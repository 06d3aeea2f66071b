import { HARDWARE_XIDS } from './codes.js';
import { busIdKey, type KmsgRecord, parseXidLine, type XidLine } from './parse.js';

// Xid errors as counters that survive runs: the counts and the kernel log's cursor live in the state
// directory (src/collect/state.ts keeps them), so a line is counted once however many one-shot runs read it.

/** How often one GPU (by PCI address) logged one Xid. */
export interface XidCount {
  bus: string;
  xid: number;
  count: number;
}

/** What the next run needs: the boot the cursor belongs to, the cursor, and the counts so far. */
export interface XidState {
  /** /proc/sys/kernel/random/boot_id when the cursor was taken; a new boot starts a new log. */
  bootId?: string;
  /** Sequence number of the last Xid record counted in that boot's log; -1 for none. */
  seq: number;
  counts: XidCount[];
  /**
   * Set while NVML's Xid events are counted instead (the log unreadable, src/xid/watch.ts): the log's
   * records after the cursor hold Xids already counted, so the next read moves the cursor past them.
   */
  backlogCounted?: true;
}

/** Distinct (GPU, Xid) pairs kept: a host has a few GPUs and NVIDIA a few hundred codes; more was not written by a driver. */
export const MAX_COUNTS = 1024;

/**
 * The state after reading `records` (oldest first): each Xid record after the cursor counted once.
 * The log restarted (a reboot) when the boot id changed, or when its newest record is older than the
 * cursor (no boot id to tell): then every Xid in it is new. The counts carry over either way: they
 * reset only with the state.
 */
export function countXids(before: XidState | undefined, records: readonly KmsgRecord[], bootId: string | undefined): XidState {
  const knownBoots = bootId !== undefined && before?.bootId !== undefined;
  const behind = before !== undefined && records.length > 0 && records[records.length - 1]!.seq < before.seq;
  // The same boot's log never goes back: a cursor ahead of it is garbage (a state restored or edited).
  if (behind && knownBoots && bootId === before.bootId) return rederived(before, records, bootId);
  const restarted = before !== undefined && ((knownBoots && bootId !== before.bootId) || behind);
  const cursor = before && !restarted ? before.seq : -1;
  // Counted from NVML's events while the log could not be read: never twice. (An Xid logged before
  // NVML began counting and not yet read from the log is missed: the log cannot tell which is which.)
  if (before?.backlogCounted && !restarted)
    return {
      bootId: bootId ?? before.bootId,
      seq: records.reduce((last, record) => Math.max(last, record.seq), cursor),
      counts: before.counts,
    };
  const fresh = records.flatMap((record) => {
    const line = record.seq > cursor ? parseXidLine(record.message) : undefined;
    return line ? [{ ...line, seq: record.seq }] : [];
  });
  // Nothing new (the daemon mode's usual look): the same state, so nobody compares or saves it again.
  if (before && !restarted && fresh.length === 0 && (bootId ?? before.bootId) === before.bootId) return before;
  const seq = fresh.reduce((last, event) => Math.max(last, event.seq), cursor);
  return { bootId: bootId ?? before?.bootId, seq, counts: addXidEvents(before?.counts ?? [], fresh) };
}

/**
 * A state whose cursor is ahead of its own boot's log, re-derived from the log: each count is the
 * larger of the state's and the log's own (every Xid it holds, once), the cursor its last Xid.
 * Adding the log on top, as after a reboot, doubled every count: an increase the alerts fire on. The
 * larger of the two never goes down either, which Prometheus would take for a reset (and increase()
 * for the whole count again); Xids the state may have missed still count.
 */
function rederived(before: XidState, records: readonly KmsgRecord[], bootId: string): XidState {
  const logged = records.flatMap((record) => {
    const line = parseXidLine(record.message);
    return line ? [{ ...line, seq: record.seq }] : [];
  });
  const fromLog = new Map(addXidEvents([], logged).map((c) => [`${c.bus}/${c.xid}`, c]));
  const counts = before.counts.map((c) => ({ ...c, count: Math.max(c.count, fromLog.get(`${c.bus}/${c.xid}`)?.count ?? 0) }));
  const kept = new Set(counts.map((c) => `${c.bus}/${c.xid}`));
  const added = [...fromLog.entries()].filter(([key]) => !kept.has(key)).map(([, c]) => c);
  return {
    bootId,
    seq: logged.reduce((last, event) => Math.max(last, event.seq), -1),
    counts: [...counts, ...added].slice(0, MAX_COUNTS),
  };
}

/**
 * The state after NVML's Xid events (its event set, in the daemon mode) were counted because the log
 * cannot be read. The log's backlog is marked counted, and its cursor restarts at a new boot (the
 * cursor belongs to the boot it was read in). Unchanged, the very object, when nothing changed: the
 * daemon saves the state only when it did. NVML's events cannot be read again: those delivered while
 * no collect ran are lost, as the log's are not.
 */
export function countNvmlXids(before: XidState | undefined, events: readonly XidLine[], bootId: string | undefined): XidState {
  const base: XidState = before ?? { seq: -1, counts: [] };
  const newBoot = bootId !== undefined && bootId !== base.bootId;
  if (events.length === 0 && base.backlogCounted && !newBoot) return base;
  return {
    ...base,
    ...(newBoot ? { bootId, seq: -1 } : {}),
    backlogCounted: true,
    counts: addXidEvents(base.counts, events),
  };
}

/**
 * The counts with each event added once: the kernel log's lines, or NVML's events while the log
 * cannot be read (countNvmlXids); the family and its labels stay one.
 */
export function addXidEvents(counts: readonly XidCount[], events: readonly XidLine[]): XidCount[] {
  const byKey = new Map(counts.map((c) => [`${c.bus}/${c.xid}`, { ...c }]));
  for (const { bus, xid } of events) {
    const known = byKey.get(`${bus}/${xid}`);
    if (known) known.count++;
    else if (byKey.size < MAX_COUNTS) byKey.set(`${bus}/${xid}`, { bus, xid, count: 1 });
  }
  return [...byKey.values()];
}

/** A GPU as the collection names it, with its nvidia-smi pci.bus_id. */
export interface XidGpu {
  gpu: string;
  uuid: string;
  busId: string;
}

/** One series of nvidia_gpu_xid_errors_total. */
export interface XidSeries {
  gpu: string;
  uuid: string;
  xid: number;
  count: number;
}

/**
 * nvidia-smi's GPU indices in number order, '' (a GPU nobody lists) first, as before. Not localeCompare with
 * numeric collation: its first use builds an ICU collator, 15 ms of every one-shot run (profiled).
 */
const byGpuIndex = (a: string, b: string): number => (a === '' || b === '' ? Number(b === '') - Number(a === '') : Number(a) - Number(b));

/**
 * Counts named by the GPUs they belong to (the first of `gpus` with that PCI address: this run's,
 * then the last good run's, since a GPU that fell off the bus is no longer listed). A GPU no one
 * lists gets empty gpu and uuid; counts that end up with the same labels are added. Each GPU of
 * `zeroed` also gets a 0 for every hardware Xid it has not logged: a counter that appears only with
 * its first error shows no increase() there, and the alert on it would miss that first error.
 */
export function xidSeries(counts: readonly XidCount[], gpus: readonly XidGpu[], zeroed: readonly XidGpu[] = []): XidSeries[] {
  const byBus = new Map<string, XidGpu>();
  for (const gpu of gpus) {
    const key = busIdKey(gpu.busId);
    if (key && !byBus.has(key)) byBus.set(key, gpu);
  }
  const series = new Map<string, XidSeries>();
  for (const { bus, xid, count } of counts) {
    const { gpu = '', uuid = '' } = byBus.get(bus) ?? {};
    const key = `${gpu}\u0000${uuid}\u0000${xid}`;
    const known = series.get(key);
    if (known) known.count += count;
    else series.set(key, { gpu, uuid, xid, count });
  }
  for (const { gpu, uuid } of zeroed)
    for (const xid of HARDWARE_XIDS) {
      const key = `${gpu}\u0000${uuid}\u0000${xid}`;
      if (!series.has(key)) series.set(key, { gpu, uuid, xid, count: 0 });
    }
  return [...series.values()].sort((a, b) => byGpuIndex(a.gpu, b.gpu) || a.xid - b.xid);
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const validCount = (value: unknown): value is XidCount =>
  isRecord(value) &&
  typeof value.bus === 'string' &&
  /^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}$/.test(value.bus) &&
  Number.isSafeInteger(value.xid) &&
  (value.xid as number) >= 0 &&
  (value.xid as number) < 100_000 &&
  Number.isSafeInteger(value.count) &&
  (value.count as number) > 0;

/**
 * A state file's Xid part, checked: undefined when it does not fit (the next run then counts the
 * log's Xid lines afresh; a damaged count is not carried on). Duplicate pairs would double a series.
 */
export function validXidState(value: unknown): XidState | undefined {
  if (!isRecord(value) || !Number.isSafeInteger(value.seq) || (value.seq as number) < -1 || !Array.isArray(value.counts)) return undefined;
  if (value.counts.length > MAX_COUNTS || !value.counts.every(validCount)) return undefined;
  const counts = value.counts.map(({ bus, xid, count }) => ({ bus, xid, count }));
  if (new Set(counts.map((c) => `${c.bus}/${c.xid}`)).size !== counts.length) return undefined;
  const { bootId } = value;
  if (bootId !== undefined && (typeof bootId !== 'string' || !/^[0-9a-f-]{1,64}$/.test(bootId))) return undefined;
  if (value.backlogCounted !== undefined && value.backlogCounted !== true) return undefined;
  return {
    ...(bootId === undefined ? {} : { bootId }),
    seq: value.seq as number,
    counts,
    ...(value.backlogCounted ? { backlogCounted: true as const } : {}),
  };
}
