import { HARDWARE_XIDS } from './codes.js';
import { busIdKey, type KmsgRecord, parseXidLine, type XidLine } from './parse.js';

// Xid errors as counters that survive runs: the counts and the kernel log's cursor live in the state
// directory (src/collect/state.ts keeps them), so a line is counted once however many one-shot runs read it.

/** How often one GPU (by PCI address) logged one Xid. */
export interface XidCount {
  bus: string;
  xid: number;
  count: number;
  /** When the last of them was logged, in Unix seconds, where known (nvidia_gpu_exporter's nvidia_smi_xid_last_timestamp_seconds). */
  last?: number;
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
export function countXids(
  before: XidState | undefined,
  records: readonly KmsgRecord[],
  bootId: string | undefined,
  bootSeconds?: number,
): XidState {
  const knownBoots = bootId !== undefined && before?.bootId !== undefined;
  const behind = before !== undefined && records.length > 0 && records[records.length - 1]!.seq < before.seq;
  // The same boot's log never goes back: a cursor ahead of it is garbage (a state restored or edited).
  if (behind && knownBoots && bootId === before.bootId) return rederived(before, records, bootId, bootSeconds);
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
    return line ? [{ ...line, seq: record.seq, ...loggedAt(record, bootSeconds) }] : [];
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
function rederived(before: XidState, records: readonly KmsgRecord[], bootId: string, bootSeconds: number | undefined): XidState {
  const logged = records.flatMap((record) => {
    const line = parseXidLine(record.message);
    return line ? [{ ...line, seq: record.seq, ...loggedAt(record, bootSeconds) }] : [];
  });
  const fromLog = new Map(addXidEvents([], logged).map((c) => [`${c.bus}/${c.xid}`, c]));
  const counts = before.counts.map((c) => {
    const log = fromLog.get(`${c.bus}/${c.xid}`);
    return { ...c, count: Math.max(c.count, log?.count ?? 0), ...latest(c.last, log?.last) };
  });
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
  for (const { bus, xid, at } of events) {
    const known = byKey.get(`${bus}/${xid}`);
    if (known) Object.assign(known, { count: known.count + 1 }, latest(known.last, at));
    else if (byKey.size < MAX_COUNTS) byKey.set(`${bus}/${xid}`, { bus, xid, count: 1, ...latest(undefined, at) });
  }
  return [...byKey.values()];
}

/** `{ last }`: the later of two times, either unknown; {} when both are. */
const latest = (a: number | undefined, b: number | undefined): { last?: number } =>
  a === undefined && b === undefined ? {} : { last: Math.max(a ?? b!, b ?? a!) };

/**
 * A record's time in Unix seconds: the boot's time (/proc/stat btime) plus its time since boot. None
 * without either; the kernel's clock since boot does not count suspended time, so after a suspend it
 * is early by that long, which an alert on "the last 10 minutes" can only miss, never invent.
 */
const loggedAt = (record: KmsgRecord, bootSeconds: number | undefined): { at?: number } =>
  bootSeconds === undefined || record.usec === undefined ? {} : { at: bootSeconds + Math.floor(record.usec / 1e6) };

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
  /** When the last of them was logged, in Unix seconds, where known. */
  lastSeconds?: number;
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
  for (const { bus, xid, count, last } of counts) {
    const { gpu = '', uuid = '' } = byBus.get(bus) ?? {};
    const key = `${gpu}\u0000${uuid}\u0000${xid}`;
    const known = series.get(key);
    const lastSeconds = latest(known?.lastSeconds, last).last;
    if (known) Object.assign(known, { count: known.count + count }, lastSeconds === undefined ? {} : { lastSeconds });
    else series.set(key, { gpu, uuid, xid, count, ...(lastSeconds === undefined ? {} : { lastSeconds }) });
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
  (value.count as number) > 0 &&
  (value.last === undefined || (Number.isSafeInteger(value.last) && (value.last as number) > 0));

/**
 * A state file's Xid part, checked: undefined when it does not fit (the next run then counts the
 * log's Xid lines afresh; a damaged count is not carried on). Duplicate pairs would double a series.
 */
export function validXidState(value: unknown): XidState | undefined {
  if (!isRecord(value) || !Number.isSafeInteger(value.seq) || (value.seq as number) < -1 || !Array.isArray(value.counts)) return undefined;
  if (value.counts.length > MAX_COUNTS || !value.counts.every(validCount)) return undefined;
  const counts = value.counts.map(({ bus, xid, count, last }) => ({ bus, xid, count, ...(last === undefined ? {} : { last }) }));
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
