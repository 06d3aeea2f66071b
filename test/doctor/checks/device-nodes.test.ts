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
  it('each outcome whole: what it saw, which nodes, what to do', async () => {
    const facts = await healthyFacts();
    const nodes = (change: (n: (typeof facts.deviceNodes)[number]) => object) => ({
      ...facts,
      deviceNodes: facts.deviceNodes.map((n) => ({ ...n, ...change(n) })),
    });
    expect(deviceNodes(facts)).toMatchObject({ id: 'device_nodes', status: 'ok', summary: 'device nodes present and usable', fix: [] });
    const missing = deviceNodes(nodes((n) => (n.path.match(/nvidia\d$/) ? { exists: false, readWritable: false } : {})));
    expect(missing).toMatchObject({
      id: 'device_nodes',
      summary: 'missing /dev/nvidia0, /dev/nvidia1',
      evidence: ['/dev/nvidiactl: read-write', '/dev/nvidia0: missing', '/dev/nvidia1: missing', '/dev/nvidia-uvm: read-write'],
    });
    expect(missing.fix.join('\n')).toMatch(/nvidia-modprobe -c=0 -u[\s\S]*udev/);
    const denied = deviceNodes(nodes((n) => ({ readWritable: n.path === '/dev/nvidiactl' })));
    expect(denied).toMatchObject({
      id: 'device_nodes',
      summary: 'no read-write access to /dev/nvidia0, /dev/nvidia1, /dev/nvidia-uvm',
      evidence: [
        '/dev/nvidiactl: read-write',
        '/dev/nvidia0: no read-write access',
        '/dev/nvidia1: no read-write access',
        '/dev/nvidia-uvm: no read-write access',
      ],
    });
    expect(denied.fix.join('\n')).toMatch(/ls -l \/dev\/nvidia\*[\s\S]*usermod -aG video/);
    expect(deviceNodes(nodes((n) => (n.path === '/dev/nvidia-uvm' ? { exists: false } : {})))).toEqual({
      id: 'device_nodes',
      status: 'warn',
      summary: '/dev/nvidia-uvm is missing (CUDA programs need it)',
      evidence: ['/dev/nvidiactl: read-write', '/dev/nvidia0: read-write', '/dev/nvidia1: read-write', '/dev/nvidia-uvm: missing'],
      fix: ['sudo nvidia-modprobe -u -c=0'],
    });
    // A missing uvm alongside a missing GPU node: the GPU node is what fails.
    expect(deviceNodes(nodes((n) => (n.path === '/dev/nvidia-uvm' || n.path === '/dev/nvidia1' ? { exists: false } : {}))).summary).toBe(
      'missing /dev/nvidia1',
    );
  });
});
