import { describe, expect, it } from 'vitest';
import { nouveau } from '../../../src/doctor/checks/nouveau.js';
import { healthyFacts, withNvidia } from './healthy-host.js';

describe('nouveau', () => {
  it('passes when nouveau is neither loaded nor bound', async () => {
    expect(nouveau(await healthyFacts()).status).toBe('ok');
  });
  it('fails when nouveau drives the GPU: nouveau_active, with the blacklist to write', async () => {
    const facts = await healthyFacts();
    const check = nouveau({ ...facts, pci: withNvidia(facts, { driver: 'nouveau' }), modules: new Set(['nouveau']) });
    expect([check.status, check.verdict]).toEqual(['fail', 'nouveau_active']);
    expect(check.fix[0]).toMatch(/blacklist nouveau/);
  });
  it('says the initramfs lacks the blacklist when one is written but nouveau still drives the GPU', async () => {
    const facts = await healthyFacts();
    const check = nouveau({
      ...facts,
      pci: withNvidia(facts, { driver: 'nouveau' }),
      nouveauBlacklisted: ['/etc/modprobe.d/blacklist-nouveau.conf'],
    });
    expect(check.fix[0]).toBe('the blacklist is there but not in the initramfs:');
  });
  it('warns when nouveau is loaded but bound to no NVIDIA GPU', async () => {
    const facts = await healthyFacts();
    expect(nouveau({ ...facts, modules: new Set([...facts.modules, 'nouveau']) }).status).toBe('warn');
  });
});
