import { describe, expect, it } from 'vitest';
import { deviceNodes } from '../../../src/doctor/checks/device-nodes.js';
import { healthyFacts } from './healthy-host.js';

describe('device-nodes', () => {
  it('passes with nvidiactl, one node per GPU and nvidia-uvm, all read-write', async () => {
    const check = deviceNodes(await healthyFacts());
    expect(check.status).toBe('ok');
    expect(check.evidence).toEqual([
      '/dev/nvidiactl: read-write',
      '/dev/nvidia0: read-write',
      '/dev/nvidia1: read-write',
      '/dev/nvidia-uvm: read-write',
    ]);
  });
  it('fails when a GPU node is missing: device_nodes_missing', async () => {
    const facts = await healthyFacts();
    const check = deviceNodes({
      ...facts,
      deviceNodes: facts.deviceNodes.map((n) => (n.path === '/dev/nvidia1' ? { ...n, exists: false, readWritable: false } : n)),
    });
    expect([check.status, check.verdict, check.summary]).toEqual(['fail', 'device_nodes_missing', 'missing /dev/nvidia1']);
  });
  it('fails when a node is there but not read-write: device_permission_denied', async () => {
    const facts = await healthyFacts();
    const check = deviceNodes({
      ...facts,
      deviceNodes: facts.deviceNodes.map((n) => ({ ...n, readWritable: n.path !== '/dev/nvidiactl' })),
    });
    expect([check.status, check.verdict]).toEqual(['fail', 'device_permission_denied']);
  });
  it('only warns when nvidia-uvm alone is missing', async () => {
    const facts = await healthyFacts();
    const check = deviceNodes({
      ...facts,
      deviceNodes: facts.deviceNodes.map((n) => (n.path === '/dev/nvidia-uvm' ? { ...n, exists: false } : n)),
    });
    expect(check.status).toBe('warn');
  });
});
