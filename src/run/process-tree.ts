import { join } from 'node:path';
import { readTextIfAny, type Host } from '../host/host.js';

/** /proc/PID/stat -> its parent's pid. The command name (2nd field) may hold spaces and parentheses: read after the last ')'. */
export function parseParentPid(stat: string): number | undefined {
  const after = stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .split(/\s+/);
  const ppid = Number(after[1]);
  return Number.isInteger(ppid) && ppid >= 0 ? ppid : undefined;
}

/** Ancestors are followed at most this far: a loop in a fixture tree, or a deep one, ends. */
const MAX_DEPTH = 64;

/**
 * Whether `pid` is `root` or one of its descendants, read from /proc/PID/stat under the host (the
 * job's tree: a launcher's workers, a DataLoader's processes). Only the given pid's ancestors are
 * read, not every process on the host.
 */
export function inTree(pid: number, root: number, host: Host): boolean {
  let current = pid;
  for (let depth = 0; depth < MAX_DEPTH && current > 1; depth++) {
    if (current === root) return true;
    const parent = parseParentPid(readTextIfAny(join(host.proc, String(current), 'stat')) ?? '');
    if (parent === undefined || parent === current) return false;
    current = parent;
  }
  return current === root;
}

/** The UUIDs of the GPUs where a process of the job's tree holds memory (nvidia-smi --query-compute-apps). */
export const treeGpuUuids = (apps: readonly { uuid: string; pid: number }[], root: number, host: Host): Set<string> =>
  new Set(apps.filter((app) => inTree(app.pid, root, host)).map((app) => app.uuid));
