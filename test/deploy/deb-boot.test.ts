import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, ROOT } from '../support/helpers.js';
import { bootContainer, waitFor, type Container } from './boot/container.js';
import { addStandIn, debianRoot, journal, sampleValue, scrape, TEST_DIR } from './boot/deployment.js';
import { runsOf } from './boot/journal.js';

// The .deb as a user installs it (`apt-get install ./gpu-textfile_*.deb`) into the booted minimal
// Debian, which has no Node.js: the package brings its own. Then an upgrade, a remove and a purge.

const { version: VERSION } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
/** A rebuilt package dpkg orders after this one: the upgrade. */
const UPGRADE = `${VERSION}+test1`;
const NODE = '/usr/lib/gpu-textfile/node/bin/node';
const COLLECTOR = 'gpu-textfile.service';
const ENV_FILE = '/etc/default/gpu-textfile';
const PROM = '/var/lib/prometheus/node-exporter/nvidia_gpu.prom';

describe('the .deb, installed into a booted Debian without Node.js', () => {
  let booted: Container | undefined;
  let scratch: string | undefined;
  const box = () => booted ?? expect.fail('the container did not boot (see beforeAll)');
  const tail = async () => (await box().run(['journalctl', '--no-pager', '-n', '80', '-o', 'short-unix'])).stdout;
  const state = async (command: string, unit: string) => (await box().run(['systemctl', command, unit])).stdout;

  beforeAll(async () => {
    const root = await debianRoot();
    const out = await mkdtemp(join(tmpdir(), 'gpu-textfile-deb-'));
    scratch = out;
    for (const version of [VERSION, UPGRADE])
      await execa(
        process.execPath,
        ['scripts/package.mjs', '--arch', 'x64', '--format', 'deb', '--fast', '--version', version, '--out', out],
        {
          cwd: ROOT,
          timeout: 600_000,
        },
      );
    booted = await bootContainer(root, async (upper) => {
      // The stand-in nvidia-smi is a Node.js script: the package's own runtime runs it, none is on PATH.
      await addStandIn(upper, NODE);
      await mkdir(join(upper, TEST_DIR), { recursive: true });
      for (const version of [VERSION, UPGRADE])
        await copyFile(join(out, `gpu-textfile_${version}_amd64.deb`), join(upper, TEST_DIR, `gpu-textfile_${version}_amd64.deb`));
    });
  }, 20 * 60_000);
  afterAll(async () => {
    await booted?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }, 120_000);

  it('installs with apt-get, with no Node.js on the host, and its timer runs within 20 s', async () => {
    expect((await box().run(['sh', '-c', 'command -v node nodejs'])).stdout).toBe('');
    const installed = Date.now() / 1000;
    await box().sh(`apt-get install -y ${TEST_DIR}/gpu-textfile_${VERSION}_amd64.deb`, { timeoutMs: 300_000 });
    expect(await box().sh('systemctl is-enabled gpu-textfile.timer gpu-textfile-archive.timer')).toBe('enabled\nenabled');
    expect(await box().sh('gpu-textfile --version')).toBe(VERSION);
    // systemd's own timestamps: the first run starts within 20 s of the install (the timer fires every 15 s).
    const [first] = await waitFor(
      'a finished run of the collector',
      async () => {
        const runs = runsOf(await journal(box(), ['-u', COLLECTOR]), COLLECTOR);
        return runs[0]?.result ? runs : undefined;
      },
      90_000,
      tail,
    );
    expect(first!.result!.ok).toBe(true);
    expect(first!.start - installed).toBeLessThan(20);
  }, 180_000);

  it("Debian's node_exporter serves the metrics, the stand-in's GPU among them", async () => {
    const text = await scrape(box(), NODE);
    expect(sampleValue(text, 'node_textfile_scrape_error')).toBe(0);
    expect(sampleValue(text, 'nvidia_gpu_collector_success')).toBe(1);
    expect(text).toMatch(/^nvidia_gpu_up\{gpu="0",/m);
  });

  it('an upgrade keeps an edited /etc/default/gpu-textfile and the timer on, and restarts a running daemon on the new program', async () => {
    await box().sh(`echo GPU_TEXTFILE_TASK=edited >> ${ENV_FILE}`);
    const edited = await box().sh(`cat ${ENV_FILE}`);
    // An admin who runs the daemon mode: after the upgrade it must run the new program, not the old.
    // (The timer stopped first, as an admin switching to the daemon does: its collect holding the
    // lock would make the daemon's start exit 75 and restart.)
    const daemon = 'gpu-textfile-daemon.service';
    await box().sh(`systemctl stop gpu-textfile.timer ${COLLECTOR}; systemctl start ${daemon}`);
    const invocation = () => box().sh(`systemctl show -p InvocationID --value ${daemon}`);
    const active = (unit: string) => eventually(async () => (await state('is-active', unit)) === 'active', 60_000);
    expect(await active(daemon)).toBe(true);
    const before = await invocation();
    await box().sh(`apt-get install -y ${TEST_DIR}/gpu-textfile_${UPGRADE}_amd64.deb`, { timeoutMs: 300_000 });
    expect(await box().sh('dpkg-query -W gpu-textfile')).toBe(`gpu-textfile\t${UPGRADE}`);
    expect(await box().sh(`cat ${ENV_FILE}`)).toBe(edited);
    expect(await state('is-enabled', 'gpu-textfile.timer')).toBe('enabled');
    expect(await state('is-active', 'gpu-textfile.timer')).toBe('active');
    expect(await invocation()).not.toBe(before);
    expect(await active(daemon)).toBe(true);
    await box().sh(`systemctl stop ${daemon}`);
  });

  it('dpkg --remove stops and disables the timer, takes the metrics file, keeps the configuration', async () => {
    const edited = await box().sh(`cat ${ENV_FILE}`);
    expect(await state('is-active', 'gpu-textfile.timer')).toBe('active');
    await box().sh('dpkg --remove gpu-textfile');
    expect(await state('is-active', 'gpu-textfile.timer')).not.toBe('active');
    expect(await state('is-enabled', 'gpu-textfile.timer')).not.toBe('enabled');
    expect(await box().sh('systemctl list-timers --no-legend')).not.toMatch(/gpu-textfile/);
    expect(await box().sh(`cat ${ENV_FILE}`)).toBe(edited);
    expect((await box().run(['test', '-e', PROM])).exitCode).toBe(1);
  });

  it('dpkg --purge leaves nothing of ours but the CSV trail', async () => {
    await box().sh('dpkg --purge gpu-textfile');
    const left = await box().sh(
      `find / -xdev \\( -path /proc -o -path /sys -o -path ${TEST_DIR} -o -path /etc/gpu-textfile-test -o -path /var/log/journal \\) -prune -o -name '*gpu-textfile*' -print | sort`,
    );
    expect(left.split('\n').filter((path) => !path.startsWith('/var/log/gpu-textfile/'))).toEqual(['/var/log/gpu-textfile']);
  });
});
