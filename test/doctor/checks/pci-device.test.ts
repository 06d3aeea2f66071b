import { describe, expect, it } from 'vitest';
import { pciDevice } from '../../../src/doctor/checks/pci-device.js';
import { healthyFacts, withNvidia } from './healthy-host.js';

describe('pci-device', () => {
  it('passes with both H200s bound to nvidia', async () => {
    const check = pciDevice(await healthyFacts());
    expect([check.status, check.summary]).toEqual(['ok', '2 NVIDIA device(s) on the PCI bus']);
    expect(check.evidence[0]).toBe('0000:00:06.0 device 0x2335 class 0x030200: driver nvidia, runtime active, D0');
  });
  it('fails with no NVIDIA device on the bus: no_gpu_on_pci', async () => {
    const check = pciDevice({ ...(await healthyFacts()), pci: [] });
    expect([check.status, check.verdict]).toEqual(['fail', 'no_gpu_on_pci']);
  });
  it('warns when a device is bound to no driver', async () => {
    const facts = await healthyFacts();
    const check = pciDevice({ ...facts, pci: withNvidia(facts, { driver: undefined }) });
    expect([check.status, check.summary]).toEqual(['warn', '2 NVIDIA device(s), 2 bound to no driver']);
  });
});
