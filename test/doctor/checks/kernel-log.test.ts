import { describe, expect, it } from 'vitest';
import { kernelLog } from '../../../src/doctor/checks/kernel-log.js';
import { healthyFacts } from './healthy-host.js';

// From a real kernel log (NVIDIA's Xid documentation's form), on the healthy host's bus addresses.
const XID_79 = "[ 8812.311] NVRM: Xid (PCI:0000:00:07): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
const XID_13 = '[ 7001.002] NVRM: Xid (PCI:0000:00:06): 13, pid=4242, name=python, Graphics Exception: ESR 0x504648=0x10000\n';

describe('kernel-log', () => {
  it("passes on the healthy host's NVRM lines, which hold no Xid", async () => {
    const check = kernelLog(await healthyFacts());
    expect(check.status).toBe('ok');
    expect(check.summary).toMatch(/^no Xid errors \(\d+ NVRM lines\)$/);
  });
  it('fails on Xid 79: gpu_lost, explained', async () => {
    const facts = await healthyFacts();
    const check = kernelLog({ ...facts, kernelLog: facts.kernelLog + XID_79 });
    expect([check.status, check.verdict]).toEqual(['fail', 'gpu_lost']);
    expect(check.evidence).toContain(`Xid 79: GPU has fallen off the bus: power, thermals or seating; it needs a reset or a reboot`);
  });
  it("warns on an application's Xid 13", async () => {
    const facts = await healthyFacts();
    expect(kernelLog({ ...facts, kernelLog: facts.kernelLog + XID_13 }).status).toBe('warn');
  });
  it('skips when /dev/kmsg cannot be read', async () => {
    expect(kernelLog({ ...(await healthyFacts()), kernelLog: undefined }).status).toBe('skip');
  });
});
