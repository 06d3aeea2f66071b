import { processFile, readTextIfAny, type Host } from './host.js';

// /proc/PID/stat, as far as telling a process asleep in the kernel (state D) and a reused pid go:
// collect's memory of an nvidia-smi that SIGKILL did not end (src/collect/stuck.ts) and doctor's
// stuck-nvidia-smi check read it.

/** The fields of /proc/PID/stat that matter here. */
export interface ProcessStat {
  /** The command's name (field 2), at most 15 characters. */
  comm: string;
  /** R, S, D, Z, T, ... (field 3). */
  state: string;
  /** When it started, in clock ticks since boot (field 22): a pid reused later has another. */
  startTicks: string;
}

/** "PID (COMM) STATE PPID ..." -> its command, state and start; COMM may hold spaces and ')': fields count from the last ')'. */
export function parseProcessStat(text: string): ProcessStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const rest = text.slice(close + 2).split(' ');
  const startTicks = rest[19];
  if (!rest[0] || !startTicks || !/^\d+$/.test(startTicks)) return undefined;
  return { comm: text.slice(open + 1, close), state: rest[0], startTicks };
}

/** Reads /proc/PID/stat under the host; undefined when there is no such process. */
export const readProcessStat = (host: Host, pid: number): ProcessStat | undefined =>
  parseProcessStat(readTextIfAny(processFile(host, pid, 'stat')) ?? '');

/** Reads /proc/PID/wchan: where in the kernel it sleeps ("request_wait_answer"), if the kernel says. */
export const readWaitChannel = (host: Host, pid: number): string | undefined => {
  const text = readTextIfAny(processFile(host, pid, 'wchan'))?.trim();
  return text && text !== '0' ? text.slice(0, 64) : undefined;
};
