import { join } from 'node:path';
import { type Host, readTextIfAny } from '../host/host.js';
import { countNvmlXids, countXids, type XidState } from './count.js';
import { openKmsg, type KmsgReader } from './kmsg.js';
import type { XidLine } from './parse.js';

/**
 * One look at the kernel log: whether Xid errors are counted, and the counts and cursor after it.
 * `nvml` is set when NVML's events were counted instead (the log unreadable), naming the GPUs it watches.
 */
export interface XidPoll {
  up: boolean;
  state: XidState | undefined;
  nvml?: { buses: readonly string[] };
}

/** Xid events another reader delivered since it was last asked (NVML's event set), and the GPUs (PCI keys) it watches. */
export interface XidEvents {
  buses: readonly string[];
  events: readonly XidLine[];
}

/**
 * Counts Xid lines from the Host's kernel log (<root>/dev/kmsg), starting from `before` (the state's).
 * The log stays open between polls, so the daemon mode reads only what is new; a one-shot run polls
 * once and closes. A log that cannot be read leaves the counts as they were, unless `nvml` events
 * are given: those are then counted (the log and NVML report the same Xids, so only one of them
 * counts, the log whenever it can be read). Events given while the log is read are dropped.
 */
export interface XidWatch {
  poll(nvml?: XidEvents): XidPoll;
  close(): void;
}

/** When the Host booted, in Unix seconds (<proc>/stat's btime): the kernel log's times are since then. */
export function readBootSeconds(host: Host): number | undefined {
  const match = /^btime (\d{1,12})$/m.exec(readTextIfAny(join(host.proc, 'stat')) ?? '');
  return match ? Number(match[1]) : undefined;
}

/** The Host's boot id (<proc>/sys/kernel/random/boot_id): a new one means a new kernel log. */
export const readBootId = (host: Host): string | undefined =>
  readTextIfAny(join(host.proc, 'sys/kernel/random/boot_id'))?.trim() || undefined;

export function watchXids(host: Host, before: XidState | undefined): XidWatch {
  let state = before;
  let reader: KmsgReader | undefined;
  let bootId: string | undefined;
  let bootSeconds: number | undefined;
  // Read once: the daemon does not outlive a boot.
  const currentBoot = () => (bootId ??= readBootId(host));
  const bootTime = () => (bootSeconds ??= readBootSeconds(host));
  return {
    poll(nvml) {
      if (!reader) {
        reader = openKmsg(join(host.dev, 'kmsg'));
        if (!reader) {
          if (!nvml || nvml.buses.length === 0) return { up: false, state };
          state = countNvmlXids(state, nvml.events, currentBoot());
          return { up: true, state, nvml: { buses: nvml.buses } };
        }
        // The log opens after NVML counted: NVML's events up to now count, then the log's backlog is skipped (countXids).
        if (nvml && state?.backlogCounted) state = countNvmlXids(state, nvml.events, currentBoot());
      }
      state = countXids(state, reader.read(), currentBoot(), bootTime());
      return { up: true, state };
    },
    close() {
      reader?.close();
      reader = undefined;
    },
  };
}
