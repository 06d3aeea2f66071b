import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { container } from '../../../src/doctor/checks/container.js';
import { readHostFacts } from '../../../src/doctor/facts.js';
import { hostAt } from '../../../src/host/host.js';
import { FIXTURES, tempDir } from '../../support/helpers.js';
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
  it('says what it saw and what to do: the whole result', async () => {
    const facts = await healthyFacts();
    expect(container(facts)).toEqual({
      id: 'container',
      status: 'ok',
      summary: 'in a container (docker (/.dockerenv)) with the GPU device nodes',
      evidence: ['docker (/.dockerenv)'],
      fix: [],
    });
    expect(container({ ...facts, container: undefined })).toEqual({
      id: 'container',
      status: 'ok',
      summary: 'not in a container',
      evidence: [],
      fix: [],
    });
    // Only /dev/nvidiactl counts: the GPU nodes alone are not the runtime's GPU.
    const withoutCtl = { ...facts, deviceNodes: facts.deviceNodes.map((n) => (n.path === '/dev/nvidiactl' ? { ...n, exists: false } : n)) };
    const failed = container(withoutCtl);
    expect({ ...failed, fix: failed.fix.length }).toEqual({
      id: 'container',
      status: 'fail',
      summary: 'in a container (docker (/.dockerenv)) started without the GPU',
      evidence: ['docker (/.dockerenv)', '/dev/nvidiactl is missing'],
      fix: 3,
      verdict: 'container_without_gpu',
    });
    expect(failed.fix.join('\n')).toMatch(/--gpus all[\s\S]*nvidia-ctk runtime configure[\s\S]*nvidia\.com\/gpu/);
    expect(container({ ...facts, deviceNodes: facts.deviceNodes.filter((n) => n.path !== '/dev/nvidiactl') }).status).toBe('fail');
  });
});

describe('container, read from a host tree', () => {
  const readFacts = async (root: string) => (await readHostFacts(hostAt(root), new AbortController().signal)).facts;

  it('systemd-nspawn is a container: /run/systemd/container names its manager', async () => {
    const facts = await readFacts(join(FIXTURES, 'hosts/container-nspawn'));
    expect(facts.container).toBe('systemd-nspawn (/run/systemd/container)');
    const check = container(facts);
    expect([check.status, check.summary, check.verdict]).toEqual([
      'fail',
      'in a container (systemd-nspawn (/run/systemd/container)) started without the GPU',
      'container_without_gpu',
    ]);
    expect(check.fix.join('\n')).toContain('--bind=/dev/nvidiactl');
  });

  it('a mark that is no manager name (binary, a long run) is not taken as one', async () => {
    const root = await tempDir();
    await mkdir(join(root, 'run/systemd'), { recursive: true });
    await writeFile(join(root, 'run/systemd/container'), `${'x'.repeat(100_000)}\n`);
    expect((await readFacts(root)).container).toBe('a container (/run/systemd/container)');
    await writeFile(join(root, 'run/systemd/container'), '\u001b[2J\n');
    expect((await readFacts(root)).container).toBe('a container (/run/systemd/container)');
  });
});
