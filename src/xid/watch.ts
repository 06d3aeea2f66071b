import { join } from 'node:path';
import { type Host, readTextIfAny } from '../host.js';
import { countXids, type XidState } from './count.js';
import { openKmsg, type KmsgReader } from './kmsg.js';

/** One look at the kernel log: whether it could be read, and the counts and cursor after it. */
export interface XidPoll {
  up: boolean;
  state: XidState | undefined;
}

/**
 * Counts Xid lines from the Host's kernel log (<root>/dev/kmsg), starting from `before` (the state's).
 * The log stays open between polls, so the daemon mode reads only what is new; a one-shot run polls
 * once and closes. A log that cannot be read leaves the counts as they were.
 */
export interface XidWatch {
  poll(): XidPoll;
  close(): void;
}

/** The Host's boot id (<proc>/sys/kernel/random/boot_id): a new one means a new kernel log. */
export const readBootId = (host: Host): string | undefined =>
  readTextIfAny(join(host.proc, 'sys/kernel/random/boot_id'))?.trim() || undefined;

export function watchXids(host: Host, before: XidState | undefined): XidWatch {
  let state = before;
  let reader: KmsgReader | undefined;
  let bootId: string | undefined;
  return {
    poll() {
      if (!reader) {
        reader = openKmsg(join(host.dev, 'kmsg'));
        if (!reader) return { up: false, state };
        // Read once: the daemon does not outlive a boot.
        bootId = readBootId(host);
      }
      state = countXids(state, reader.read(), bootId);
      return { up: true, state };
    },
    close() {
      reader?.close();
      reader = undefined;
    },
  };
}
