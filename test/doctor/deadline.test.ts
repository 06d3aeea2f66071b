import { execa } from 'execa';
import { cp, open, symlink, truncate, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readHostFacts } from '../../src/doctor/facts.js';
import { hostAt } from '../../src/host/host.js';
import { diagnose, formatDiagnosis } from '../../src/doctor/index.js';
import type { HostFacts } from '../../src/doctor/facts.js';
import { FAKE_SMI, FIXTURES, capture, runCli, tempDir } from '../support/helpers.js';

const HEALTHY = join(FIXTURES, 'hosts/h200x2-healthy');
const SMI_OK: HostFacts['smi'] = {
  outcome: { kind: 'ok', stdout: '0, 00000000:00:06.0, Enabled\n' },
  persistence: ['0, 00000000:00:06.0, Enabled'],
};

async function tree(): Promise<string> {
  const root = join(await tempDir(), 'root');
  await cp(HEALTHY, root, { recursive: true, verbatimSymlinks: true });
  return root;
}

const doctor = (root: string) =>
  runCli(['doctor', '--json', '--root', root, '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') });

type Json = { verdict: string; checks: { id: string; status: string; summary: string }[] };

describe('doctor on a hostile tree: no read blocks, none is unbounded', () => {
  it("a FIFO where a file is read, and a 600 MB kernel log ending in an Xid 79: answers, from the log's end", async () => {
    const root = await tree();
    // A FIFO with no writer: a plain open() waits for one for ever.
    for (const path of ['etc/modprobe.d/nvidia.conf', 'proc/1/cgroup', 'etc/prime-discrete']) {
      await rm(join(root, path), { force: true });
      await execa('mkfifo', [join(root, path)]);
    }
    const kmsg = join(root, 'dev/kmsg');
    await truncate(kmsg, 600 * 1024 * 1024); // sparse: no disk used
    const file = await open(kmsg, 'a');
    await file.write("4,881,8812311,-;NVRM: Xid (PCI:0000:00:07): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
    await file.close();
    const result = await doctor(root);
    expect({ exit: result.exitCode, stderr: result.stderr }).toEqual({ exit: 1, stderr: '' });
    const diagnosis = JSON.parse(result.stdout) as Json;
    expect(diagnosis.verdict).toBe('gpu_lost');
    expect(diagnosis.checks.find((c) => c.id === 'kernel_log')?.summary).toBe('Xid 79: a GPU fell off the bus');
  });

  it('/dev/kmsg a link to an endless device: not read, the kernel log check says so', async () => {
    const root = await tree();
    await rm(join(root, 'dev/kmsg'));
    await symlink('/dev/zero', join(root, 'dev/kmsg'));
    const result = await doctor(root);
    expect({ exit: result.exitCode, stderr: result.stderr }).toEqual({ exit: 0, stderr: '' });
    const diagnosis = JSON.parse(result.stdout) as Json;
    expect(diagnosis.verdict).toBe('healthy');
    expect(diagnosis.checks.find((c) => c.id === 'kernel_log')?.status).toBe('skip');
  });
});

describe('the deadline: what is not read by then is marked, not guessed', () => {
  it('with every file read still out, each check that needs one is unfinished and the verdict says so', async () => {
    const stop = new AbortController();
    stop.abort();
    const { facts, unfinished } = await readHostFacts(hostAt(HEALTHY), stop.signal);
    expect(unfinished.length).toBeGreaterThan(5);
    const diagnosis = diagnose({ ...facts, smi: SMI_OK }, undefined, [...unfinished, 'kernelLog']);
    expect(diagnosis.verdict).toBe('unfinished');
    const status = Object.fromEntries(diagnosis.checks.map((c) => [c.id, c.status]));
    expect(status).toMatchObject({
      pci_device: 'unfinished',
      kernel_module: 'unfinished',
      kernel_log: 'unfinished',
      nvidia_smi: 'ok',
      persistence_mode: 'ok',
    });
    expect(diagnosis.checks.find((c) => c.id === 'kernel_module')?.summary).toBe(
      'not finished: still reading /proc/modules when the deadline (--timeout) passed',
    );
    expect(formatDiagnosis(diagnosis)).toMatch(/^\? kernel_module +not finished: still reading \/proc\/modules/m);
  });

  it('only the checks that read a late fact are marked; a cause found elsewhere is still the verdict', async () => {
    const root = await tree();
    await writeFile(join(root, 'proc/modules'), 'kvm 1 0 - Live 0x0\n');
    const { facts, unfinished } = await readHostFacts(hostAt(root), new AbortController().signal);
    expect(unfinished).toEqual([]);
    const diagnosis = diagnose({ ...facts, smi: SMI_OK }, undefined, ['kernelLog']);
    expect(diagnosis.checks.filter((c) => c.status === 'unfinished').map((c) => c.id)).toEqual(['kernel_log']);
    expect(diagnosis.verdict).toBe('module_not_loaded');
  });
});
