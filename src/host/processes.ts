import { parseCgroup } from './cgroup.js';
import type { ComputeApp, ProcessSample } from '../collection.js';
import { processFile, readTextIfAny, type Host } from './host.js';

/** /etc/passwd -> uid -> name. */
export function parsePasswd(text: string): Map<string, string> {
  const users = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [name, , uid] = line.split(':');
    if (name && uid && /^\d+$/.test(uid) && !users.has(uid)) users.set(uid, name);
  }
  return users;
}

/** /proc/PID/status -> real uid ("Uid:\t1000\t1000\t1000\t1000"). */
export const parseStatusUid = (text: string): string | undefined => /^Uid:\s+(\d+)/m.exec(text)?.[1];

/**
 * Adds the owning user to each process, read under the host's root (name from passwd, else the uid,
 * else "" when the pid is not visible here, as in a container with its own pid namespace), and what
 * its /proc/PID/cgroup says it runs for (nothing when that file cannot be read). No external
 * command runs.
 */
export function describeProcesses(apps: readonly ComputeApp[], host: Host): ProcessSample[] {
  if (apps.length === 0) return [];
  const users = parsePasswd(readTextIfAny(host.etcPasswd) ?? '');
  return apps.map((app) => {
    const uid = parseStatusUid(readTextIfAny(processFile(host, app.pid, 'status')) ?? '');
    const attribution = parseCgroup(readTextIfAny(processFile(host, app.pid, 'cgroup')) ?? '');
    // A unit of a user's manager runs as that user (user@UID.service): the owner where status could not say.
    const owner = uid ?? /^user@(\d+)\.service$/.exec(attribution.user_manager ?? '')?.[1];
    return {
      ...app,
      user: owner === undefined ? '' : (users.get(owner) ?? owner),
      ...(Object.keys(attribution).length > 0 ? { attribution } : {}),
    };
  });
}

/** Keeps the `max` processes with the most memory; says how many were dropped. */
export function largestProcesses<T extends ComputeApp>(apps: readonly T[], max: number | undefined): { kept: T[]; dropped: number } {
  if (max === undefined || apps.length <= max) return { kept: [...apps], dropped: 0 };
  const kept = [...apps].sort((a, b) => (b.memoryBytes ?? -1) - (a.memoryBytes ?? -1) || a.pid - b.pid).slice(0, max);
  return { kept, dropped: apps.length - kept.length };
}
