import { readFileSync } from 'node:fs';
import { OWN_PROC as PROC } from '../host/host.js';

// The kernel's view of our own processes (not a --host-root: a lock is about this machine's processes).

/**
 * Who holds a lock: one process on one boot. A pid alone is not enough: after a reboot (or a
 * wrap-around) the same number names another process, which would hold the lock for ever.
 */
export interface Owner {
  pid: number;
  /** Field 22 of /proc/PID/stat: when the process started, in clock ticks since boot. */
  startTicks: string;
  /** /proc/sys/kernel/random/boot_id: changes at every boot. */
  bootId: string;
}

/** "PID (COMM) STATE PPID ..." -> field 22 (starttime). COMM may hold spaces and ')': fields count from the last ')'. */
export function parseStartTicks(stat: string): string | undefined {
  const end = stat.lastIndexOf(')');
  if (end < 0) return undefined;
  // After ") " come fields 3, 4, ...: field 22 is the 20th.
  const ticks = stat.slice(end + 2).split(' ')[19];
  return ticks !== undefined && /^\d+$/.test(ticks) ? ticks : undefined;
}

/** An owner as the one line a lock file holds: "PID STARTTICKS BOOTID". */
export const formatOwner = (owner: Owner): string => `${owner.pid} ${owner.startTicks} ${owner.bootId}\n`;

/** The line formatOwner wrote -> the owner; anything else (empty, cut short, an old "PID" lock) is undefined. */
export function parseOwner(text: string): Owner | undefined {
  const match = /^([1-9]\d{0,9}) (\d{1,20}) ([\w-]{1,64})\n$/.exec(text);
  return match ? { pid: Number(match[1]), startTicks: match[2]!, bootId: match[3]! } : undefined;
}

const readIfAlive = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    // ENOENT: no such process (or no such file); ESRCH: it exited while we read.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return undefined;
    throw error;
  }
};

/** Reads /proc/sys/kernel/random/boot_id ("unknown" where procfs hides it). */
export const readBootId = (): string => readIfAlive(`${PROC}/sys/kernel/random/boot_id`)?.trim() || 'unknown';

/** Reads /proc/PID/stat: the process's start time, or undefined when there is no such process. */
export const readStartTicks = (pid: number): string | undefined => {
  const stat = readIfAlive(`${PROC}/${pid}/stat`);
  return stat === undefined ? undefined : parseStartTicks(stat);
};

/** This process, as a lock records it. */
export function currentOwner(): Owner {
  const startTicks = readStartTicks(process.pid);
  if (startTicks === undefined) throw new Error(`cannot read ${PROC}/${process.pid}/stat: is procfs mounted?`);
  return { pid: process.pid, startTicks, bootId: readBootId() };
}

/** Whether the process that wrote `owner` still runs: same boot, and its pid still names a process that started when it did. */
export const isAlive = (owner: Owner): boolean => owner.bootId === readBootId() && readStartTicks(owner.pid) === owner.startTicks;
