import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openKmsg } from '../../src/xid/kmsg.js';
import { tempDir } from '../support/helpers.js';

// Tests run as root (as CI does): mknod makes device nodes like the ones a host's /dev holds.
const mknod = (path: string, kind: 'c' | 'p', ...numbers: string[]) => execFileSync('mknod', [path, kind, ...numbers]);

const opened = (path: string) => {
  const reader = openKmsg(path);
  if (reader) onTestFinished(() => reader.close());
  return reader;
};

describe('openKmsg', () => {
  it('reads a saved log (a regular file) by record, whole at each read', async () => {
    const path = join(await tempDir(), 'kmsg');
    writeFileSync(path, '6,1,5,-;hello\n SUBSYSTEM=pci\n4,2,9,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1\n');
    const reader = opened(path)!;
    expect(reader.read()).toEqual([
      { seq: 1, message: 'hello', usec: 5 },
      { seq: 2, message: 'NVRM: Xid (PCI:0000:00:06): 79, pid=1', usec: 9 },
    ]);
    expect(reader.read().map((r) => r.seq)).toEqual([1, 2]);
  });

  it('reads only the newest bytes of a saved log over the cap, and no record cut in half', async () => {
    const path = join(await tempDir(), 'kmsg');
    const records = ['6,1,5,-;first', '14,2,6,-;second', '6,3,7,-;third'];
    writeFileSync(path, `${records.join('\n')}\n`);
    // The cut falls after the "1" of "14,2,…": what is left still looks like a record, and is not one.
    const reader = openKmsg(path, '4,2,6,-;second\n6,3,7,-;third\n'.length)!;
    onTestFinished(() => reader.close());
    expect(reader.read()).toEqual([{ seq: 3, message: 'third', usec: 7 }]);
  });

  it('reads the kernel log device (1:11) one record at a time; the next read gives only newer records', async () => {
    const path = join(await tempDir(), 'kmsg');
    mknod(path, 'c', '1', '11');
    const reader = opened(path)!;
    const first = reader.read();
    expect(first.length).toBeGreaterThan(0);
    const seqs = first.map((r) => r.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    const newest = seqs[seqs.length - 1]!;
    expect(reader.read().every((r) => r.seq > newest)).toBe(true);
  });

  it('refuses another device, a FIFO (without blocking), a directory and nothing at all', async () => {
    const dir = await tempDir();
    mknod(join(dir, 'null'), 'c', '1', '3');
    mknod(join(dir, 'fifo'), 'p');
    expect(opened(join(dir, 'null'))).toBeUndefined();
    expect(opened(join(dir, 'fifo'))).toBeUndefined();
    expect(opened(dir)).toBeUndefined();
    expect(opened(join(dir, 'absent'))).toBeUndefined();
  });
});
