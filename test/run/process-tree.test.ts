import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hostAt } from '../../src/host/host.js';
import { inTree, parseParentPid, treeGpuUuids } from '../../src/run/process-tree.js';
import { tempDir } from '../support/helpers.js';

/** A host root whose proc/PID/stat files give each pid the parent named. */
async function hostWithTree(parents: Record<number, number>) {
  const root = await tempDir();
  for (const [pid, ppid] of Object.entries(parents)) {
    await mkdir(join(root, 'proc', pid), { recursive: true });
    // A command name with a space and a parenthesis: the parent pid is read after the last ')'.
    await writeFile(join(root, 'proc', pid, 'stat'), `${pid} (py (worker) 1) S ${ppid} ${pid} ${pid} 0 -1 4194560 0\n`);
  }
  return hostAt(root);
}

describe('the job process tree', () => {
  it('reads the parent pid after the command name', () => {
    expect(parseParentPid('2006 (python3) S 1999 2006 2006 0 -1')).toBe(1999);
    expect(parseParentPid('7 (a) b) c) R 3 7 7')).toBe(3);
    expect(parseParentPid('')).toBeUndefined();
  });

  it("finds the job's descendants, not its parent's other children", async () => {
    // 100 is the job; 101 its launcher's worker, 102 a DataLoader worker of 101; 200 a sibling job.
    const host = await hostWithTree({ 100: 50, 101: 100, 102: 101, 200: 50 });
    expect([100, 101, 102, 200, 999].map((pid) => inTree(pid, 100, host))).toEqual([true, true, true, false, false]);
    const apps = [
      { uuid: 'GPU-a', pid: 102 },
      { uuid: 'GPU-b', pid: 200 },
      { uuid: 'GPU-c', pid: 101 },
    ];
    expect([...treeGpuUuids(apps, 100, host)].sort()).toEqual(['GPU-a', 'GPU-c']);
  });

  it('ends on a loop in the parent links', async () => {
    const host = await hostWithTree({ 300: 301, 301: 300 });
    expect(inTree(300, 100, host)).toBe(false);
  });
});
