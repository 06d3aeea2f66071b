import { describe, expect, it } from 'vitest';
import { kernelModule } from '../../../src/doctor/checks/kernel-module.js';
import { healthyFacts } from './healthy-host.js';

describe('kernel-module', () => {
  it("passes with nvidia and nvidia_uvm in the H200 host's /proc/modules", async () => {
    const check = kernelModule(await healthyFacts());
    expect(check.status).toBe('ok');
    expect(check.evidence).toEqual(['loaded: nvidia, nvidia_uvm']);
  });
  it('fails without nvidia: module_not_loaded', async () => {
    const check = kernelModule({ ...(await healthyFacts()), modules: new Set(['kvm']) });
    expect([check.status, check.verdict]).toEqual(['fail', 'module_not_loaded']);
  });
  it('warns with nvidia but not nvidia_uvm', async () => {
    const check = kernelModule({ ...(await healthyFacts()), modules: new Set(['nvidia']) });
    expect(check.status).toBe('warn');
  });
});
