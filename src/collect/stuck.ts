import type { Host } from '../host/host.js';
import { readProcessStat, readWaitChannel } from '../host/process-stat.js';

// An nvidia-smi that a SIGKILL did not end: a call into the driver that sleeps uninterruptibly
// (state D), what a GPU fallen off the bus does to every caller. Nothing can end it but the driver,
// a GPU reset or a reboot, so collect remembers it (the state) and starts no other nvidia-smi while
// it is there: each would only join it, one more every timer run. doctor's stuck-nvidia-smi check
// finds such processes whoever started them.

/** An nvidia-smi an earlier run killed and saw not end. */
export interface StuckChild {
  pid: number;
  startTicks: string;
  /** When it was found stuck, in ms since the epoch. */
  since: number;
}

/** The stuck child for `pid` as it is now, or undefined when it is already gone (it did end after all). */
export function rememberStuck(host: Host, pid: number, now: number): StuckChild | undefined {
  const stat = readProcessStat(host, pid);
  return stat && stat.state !== 'Z' ? { pid, startTicks: stat.startTicks, since: now } : undefined;
}

/** Those of `children` still there: same pid, same start (not a reused pid), not a zombie. */
export const stillStuck = (host: Host, children: readonly StuckChild[]): StuckChild[] =>
  children.filter((child) => {
    const stat = readProcessStat(host, child.pid);
    return stat !== undefined && stat.startTicks === child.startTicks && stat.state !== 'Z';
  });

/** The failure's message while one is still there: which, since when, and what to do. */
export function stuckMessage(host: Host, child: StuckChild, now: number): string {
  const minutes = Math.max(0, Math.round((now - child.since) / 60_000));
  const stat = readProcessStat(host, child.pid);
  const wchan = readWaitChannel(host, child.pid);
  const where = [`state ${stat?.state ?? '?'}`, ...(wchan ? [`in ${wchan}`] : [])].join(', ');
  return (
    `nvidia-smi (pid ${child.pid}) has been stuck in the driver for ${minutes} min (${where}) and cannot be killed; ` +
    'not starting another: the GPU likely fell off the bus (dmesg | grep -i xid: Xid 79); a GPU reset or reboot clears it'
  );
}

/** A state file's stuck children, each checked; what does not fit is dropped. */
export function validStuck(value: unknown): StuckChild[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const children = value.filter(
    (child): child is StuckChild =>
      typeof child === 'object' &&
      child !== null &&
      Number.isInteger(child.pid) &&
      child.pid > 1 &&
      typeof child.startTicks === 'string' &&
      /^\d{1,20}$/.test(child.startTicks) &&
      Number.isFinite(child.since),
  );
  return children.slice(0, 16).map(({ pid, startTicks, since }) => ({ pid, startTicks, since }));
}
