import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/helpers.js';
import { bootContainer, waitFor, type Container } from './boot/container.js';
import { addStandIn, sampleValue, scrape } from './boot/deployment.js';

// examples/ansible/gpu-textfile.yml as a fleet runs it, by Debian's ansible-playbook, against a booted
// Debian (systemd-nspawn) as one host of the inventory: once with the .deb, once with the tarball.
// Ansible reaches the container through community.docker's nsenter connection (Debian's ansible 7
// ships it): the commands and modules run in the container's namespaces, as on a host reached by
// SSH; the root has python3 and python3-apt, as any Debian managed by Ansible has.

const { version: VERSION } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const PLAYBOOK = join(ROOT, 'examples/ansible/gpu-textfile.yml');
const PACKAGES = 'systemd,systemd-sysv,dbus,libstdc++6,prometheus-node-exporter,cron,python3,python3-apt';
const TARBALL_DIR = `/opt/gpu-textfile/gpu-textfile-${VERSION}-linux-x64`;
const PROM = '/var/lib/prometheus/node-exporter/nvidia_gpu.prom';

/** What a fleet's group_vars would say: a task per host, labels for the scrape. */
const OPTIONS = {
  'textfile-dir': '/var/lib/prometheus/node-exporter',
  'csv-dir': '/var/log/gpu-textfile',
  task: 'rack12-node',
  label: ['site=lab', 'rack=r12'],
};

/** The playbook against the container, as the only host of the gpu_hosts group; its output, whether it failed or not. */
async function play(box: Container, scratch: string, vars: Record<string, unknown>) {
  // The nsenter connection runs everything as root already: no sudo (the root has none).
  const inventory = `[gpu_hosts]\nbox ansible_connection=community.docker.nsenter ansible_nsenter_pid=${box.init()} ansible_python_interpreter=/usr/bin/python3 ansible_become=false\n`;
  await writeFile(join(scratch, 'inventory.ini'), inventory);
  await writeFile(join(scratch, 'vars.json'), JSON.stringify({ gpu_textfile_options: OPTIONS, ...vars }));
  return execa('ansible-playbook', ['-i', join(scratch, 'inventory.ini'), PLAYBOOK, '-e', `@${join(scratch, 'vars.json')}`], {
    reject: false,
    timeout: 600_000,
    all: true,
    env: { ANSIBLE_NOCOLOR: '1', ANSIBLE_HOST_KEY_CHECKING: 'False', ANSIBLE_LOCAL_TEMP: join(scratch, 'ansible-local') },
  });
}

/** The PLAY RECAP's counts for the host. */
const recap = (output: string) => {
  const line = /^box\s+:\s+(.*)$/m.exec(output)?.[1] ?? '';
  return Object.fromEntries([...line.matchAll(/(\w+)=(\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
};

/** What the playbook must leave on the host, whichever way it installed the program. */
async function expectDeployed(box: Container, node: string): Promise<void> {
  const variables = (await box.sh('cat /etc/default/gpu-textfile')).split('\n').filter((line) => !line.startsWith('#'));
  expect(variables).toEqual([
    'GPU_TEXTFILE_CSV_DIR="/var/log/gpu-textfile"',
    // The task joins the labels (gpu_textfile_task_label): the store's series then name it, as export's do.
    'GPU_TEXTFILE_LABEL="site=lab rack=r12 task=rack12-node"',
    'GPU_TEXTFILE_TASK="rack12-node"',
    'GPU_TEXTFILE_TEXTFILE_DIR="/var/lib/prometheus/node-exporter"',
  ]);
  expect(await box.sh('systemctl is-enabled gpu-textfile.timer')).toBe('enabled');
  expect(await box.sh('systemctl is-active gpu-textfile.timer')).toBe('active');
  // The collector reads the file: its labels on the series node_exporter serves (which sorts them), its task naming the trail.
  const text = await waitFor(
    'node_exporter serving the labelled textfile',
    async () => {
      const served = await scrape(box, node).catch(() => '');
      return sampleValue(served, 'nvidia_gpu_collector_success{rack="r12",site="lab",task="rack12-node"}') === 1 ? served : undefined;
    },
    120_000,
    async () => `${(await box.run(['cat', PROM])).stdout}\n${await scrape(box, node).catch((error: Error) => error.message)}`,
  );
  expect(text).toMatch(/^nvidia_gpu_up\{gpu="0",rack="r12",site="lab",task="rack12-node",uuid="[^"]+"\} 1$/m);
  expect((await box.run(['test', '-s', '/var/log/gpu-textfile/rack12-node.csv'])).exitCode).toBe(0);
  expect((await box.run(['test', '-f', PROM])).exitCode).toBe(0);
}

describe.each([
  ['deb', '/usr/lib/gpu-textfile/node/bin/node'],
  ['tarball', `${TARBALL_DIR}/node/bin/node`],
] as const)('the Ansible playbook with the %s, against a booted Debian', (method, node) => {
  let booted: Container | undefined;
  let scratch = '';
  const box = () => booted ?? expect.fail('the container did not boot (see beforeAll)');
  const file = method === 'deb' ? `gpu-textfile_${VERSION}_amd64.deb` : `gpu-textfile-${VERSION}-linux-x64.tar.gz`;
  const vars = () =>
    method === 'deb'
      ? { gpu_textfile_package: 'deb', gpu_textfile_deb: join(scratch, file) }
      : { gpu_textfile_package: 'tarball', gpu_textfile_tarball: join(scratch, file) };

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'gpu-textfile-ansible-'));
    // The package built here, as deb-boot.test.ts does; or one built already (a directory holding it), to rerun quickly.
    const packaged = process.env.GPU_TEXTFILE_TEST_PACKAGES;
    if (packaged) await copyFile(join(packaged, file), join(scratch, file));
    else
      await execa(
        process.execPath,
        ['scripts/package.mjs', '--arch', 'x64', '--format', method === 'deb' ? 'deb' : 'tar', '--fast', '--out', scratch],
        { cwd: ROOT, timeout: 600_000 },
      );
    const root = (
      await execa(join(ROOT, 'test/deploy/boot/debian-root.sh'), ['bookworm', PACKAGES], { timeout: 30 * 60_000 })
    ).stdout.trim();
    // The stand-in nvidia-smi is a Node.js script: the program's own runtime runs it, once installed.
    booted = await bootContainer(root, (upper) => addStandIn(upper, node));
  }, 40 * 60_000);
  afterAll(async () => {
    await booted?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }, 120_000);

  it('installs, writes the conffile from the variables, enables the timer; its textfile appears', async () => {
    expect((await box().run(['sh', '-c', 'command -v gpu-textfile'])).stdout).toBe('');
    const run = await play(box(), scratch, vars());
    expect(run.exitCode, run.all).toBe(0);
    expect(recap(run.all ?? '')).toMatchObject({ failed: 0, unreachable: 0 });
    if (method === 'deb')
      expect((await box().sh('dpkg -s gpu-textfile')).split('\n')).toEqual(
        expect.arrayContaining(['Status: install ok installed', `Version: ${VERSION}`]),
      );
    else expect(await box().sh(`${TARBALL_DIR}/bin/gpu-textfile --version`)).toBe(VERSION);
    await expectDeployed(box(), node);
  }, 900_000);

  it('a second run changes nothing', async () => {
    const run = await play(box(), scratch, vars());
    expect(run.exitCode, run.all).toBe(0);
    expect(recap(run.all ?? '')).toMatchObject({ changed: 0, failed: 0 });
  }, 900_000);

  it('refuses variables that name no package, before changing anything', async () => {
    const run = await play(box(), scratch, { gpu_textfile_package: 'rpm' });
    expect(run.exitCode).not.toBe(0);
    expect(run.all).toContain('set gpu_textfile_package to deb');
    expect(recap(run.all ?? '')).toMatchObject({ changed: 0, failed: 1 });
  }, 300_000);
});
