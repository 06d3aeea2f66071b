import { describe, expect, it } from 'vitest';
import { hybridGraphics } from '../../../src/doctor/checks/hybrid-graphics.js';
import type { HostFacts } from '../../../src/doctor/facts.js';
import { healthyFacts, recordedFailure, withNvidia } from './healthy-host.js';

/** The healthy host with an integrated Intel GPU beside the H200s, as on a laptop. */
async function hybrid(): Promise<HostFacts> {
  const facts = await healthyFacts();
  return {
    ...facts,
    pci: [{ address: '0000:00:02.0', vendor: '0x8086', device: '0x9a49', pciClass: '0x030000', driver: 'i915' }, ...facts.pci],
  };
}

describe('hybrid-graphics', () => {
  it('skips without an integrated GPU', async () => {
    expect(hybridGraphics(await healthyFacts()).status).toBe('skip');
  });
  it('passes with the NVIDIA GPU powered', async () => {
    expect(hybridGraphics(await hybrid()).status).toBe('ok');
  });
  it('fails when the NVIDIA GPU sleeps in D3cold and nvidia-smi fails: hybrid_gpu_powered_down', async () => {
    const facts = await hybrid();
    const outcome = await recordedFailure('constructed__driver-unreachable');
    const check = hybridGraphics({ ...facts, pci: withNvidia(facts, { powerState: 'D3cold' }), smi: { outcome, persistence: [] } });
    expect([check.status, check.verdict]).toEqual(['fail', 'hybrid_gpu_powered_down']);
  });
  it('only warns when it sleeps but nvidia-smi answers', async () => {
    const facts = await hybrid();
    expect(hybridGraphics({ ...facts, pci: withNvidia(facts, { runtimeStatus: 'suspended' }) }).status).toBe('warn');
  });
});
