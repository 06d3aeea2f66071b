import { parseCgroup } from './cgroup.js';
import type { ComputeApp, ProcessSample } from '../collection.js';
import { processFile, readTextIfAny, type Host } from './host.js';
import { commandUnread } from './job.js';
import { parsePasswd, parseStatusUid } from './owners.js';

/** /proc/PID/stat -> the process's start time (field 22, clock ticks since boot): with the pid, one process. */
export const parseStartTicks = (stat: string): string | undefined =>
  /^\d+$/.exec(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '')?.[0];

/**
 * What the daemon last knew of each GPU process (its command, user and cgroup), by pid and start
 * time. A short CUDA process is still listed by the driver a moment after its /proc entry is gone
 * (or while it exits, its command line empty): then what was read of it a moment before stands,
 * rather than nothing (a job named [Not Found]). A pid whose start time differs is another process.
 * Holds the processes of the last listing only.
 */
export class ProcessMemory {
  private known = new Map<number, { start: string; sample: ProcessSample }>();

  /** Each process with what was last known of it where it could not be read now; remembers the rest. */
  recall(samples: readonly { sample: ProcessSample; start?: string }[]): ProcessSample[] {
    const next = new Map<number, { start: string; sample: ProcessSample }>();
    const out = samples.map(({ sample, start }) => {
      const before = this.known.get(sample.pid);
      // Gone from /proc (no start time): the pid listed a moment ago. There still: only the same process.
      const same = before !== undefined && (start === undefined || start === before.start) ? before : undefined;
      const known: ProcessSample = same
        ? {
            ...sample,
            name: commandUnread(sample.name) ? same.sample.name : sample.name,
            user: sample.user || same.sample.user,
            ...(sample.attribution === undefined && same.sample.attribution ? { attribution: same.sample.attribution } : {}),
          }
        : sample;
      const at = start ?? same?.start;
      if (at !== undefined) next.set(sample.pid, { start: at, sample: known });
      return known;
    });
    this.known = next;
    return out;
  }
}

/**
 * Adds the owning user to each process, read under the host's root (name from passwd, else the uid,
 * else "" when the pid is not visible here, as in a container with its own pid namespace), and what
 * its /proc/PID/cgroup says it runs for (nothing when that file cannot be read). No external
 * command runs. With `memory` (the daemon's), a process that can no longer be read keeps what was
 * read of it a moment before.
 */
export function describeProcesses(apps: readonly ComputeApp[], host: Host, memory?: ProcessMemory): ProcessSample[] {
  if (apps.length === 0) return memory ? memory.recall([]) : [];
  const users = parsePasswd(readTextIfAny(host.etcPasswd) ?? '');
  const described = apps.map((app) => {
    const stat = readTextIfAny(processFile(host, app.pid, 'stat'));
    return { sample: describeOne(app, host, users), start: stat === undefined ? undefined : parseStartTicks(stat) };
  });
  return memory ? memory.recall(described) : described.map((d) => d.sample);
}

/** One process, as /proc says it now. */
function describeOne(app: ComputeApp, host: Host, users: Map<string, string>): ProcessSample {
  const uid = parseStatusUid(readTextIfAny(processFile(host, app.pid, 'status')) ?? '');
  const attribution = parseCgroup(readTextIfAny(processFile(host, app.pid, 'cgroup')) ?? '');
  // A unit of a user's manager runs as that user (user@UID.service): the owner where status could not say.
  const owner = uid ?? /^user@(\d+)\.service$/.exec(attribution.user_manager ?? '')?.[1];
  return {
    ...app,
    user: owner === undefined ? '' : (users.get(owner) ?? owner),
    ...(Object.keys(attribution).length > 0 ? { attribution } : {}),
  };
}

/** Keeps the `max` processes with the most memory; says how many were dropped. */
export function largestProcesses<T extends ComputeApp>(apps: readonly T[], max: number | undefined): { kept: T[]; dropped: number } {
  if (max === undefined || apps.length <= max) return { kept: [...apps], dropped: 0 };
  const kept = [...apps].sort((a, b) => (b.memoryBytes ?? -1) - (a.memoryBytes ?? -1) || a.pid - b.pid).slice(0, max);
  return { kept, dropped: apps.length - kept.length };
}
