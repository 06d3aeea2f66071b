import { describe, expect, it } from 'vitest';
import { container } from '../../../src/doctor/checks/container.js';
import { healthyFacts } from './healthy-host.js';

describe('container', () => {
  it('passes in the VM carrying /.dockerenv, whose device nodes are there', async () => {
    const check = container(await healthyFacts());
    expect([check.status, check.summary]).toEqual(['ok', 'in a container (docker (/.dockerenv)) with the GPU device nodes']);
  });
  it('passes outside a container', async () => {
    expect(container({ ...(await healthyFacts()), container: undefined }).summary).toBe('not in a container');
  });
  it('fails in a container without /dev/nvidiactl: container_without_gpu', async () => {
    const facts = await healthyFacts();
    const check = container({ ...facts, deviceNodes: facts.deviceNodes.map((n) => ({ ...n, exists: false })) });
    expect([check.status, check.verdict]).toEqual(['fail', 'container_without_gpu']);
  });
});
