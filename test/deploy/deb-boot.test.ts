import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, ROOT } from '../support/helpers.js';
import { bootContainer, waitFor, type Container } from './boot/container.js';
import { addStandIn, debianRoot, journal, sampleValue, scrape, TEST_DIR } from './boot/deployment.js';
import { calendarMarks, parseShownSpan, parseShownTime, runsOf } from './boot/journal.js';

// The .deb as a user installs it (`apt-get install ./gpu-textfile_*.deb`) into the booted minimal
// Debian, which has no Node.js: the package brings its own. Then an upgrade, a remove and a purge.

const { version: VERSION } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
/** A rebuilt package dpkg orders after this one: the upgrade. */
const UPGRADE = `${VERSION}+test1`;
const NODE = '/usr/lib/gpu-textfile/node/bin/node';
const COLLECTOR = 'gpu-textfile.service';
const ENV_FILE = '/etc/default/gpu-textfile';
const TEXTFILE_DIR = '/var/lib/prometheus/node-exporter';
const PROM = `${TEXTFILE_DIR}/nvidia_gpu.prom`;
/** Where a test moves the textfile (GPU_TEXTFILE_TEXTFILE_DIR): a directory nothing made before. */
const MOVED_DIR = '/srv/gpu-metrics';

describe('the .deb, installed into a booted Debian without Node.js', () => {
  let booted: Container | undefined;
  let scratch: string | undefined;
  const box = () => booted ?? expect.fail('the container did not boot (see beforeAll)');
  const tail = async () => (await box().run(['journalctl', '--no-pager', '-n', '80', '-o', 'short-unix'])).stdout;
  const state = async (command: string, unit: string) => (await box().run(['systemctl', command, unit])).stdout;
  /** The collector's first finished run that started after `after` (the container's clock, in seconds). */
  const nextRun = (after: number, what: string) =>
    waitFor(
      what,
      async () => runsOf(await journal(box(), ['-u', COLLECTOR]), COLLECTOR).find((run) => run.start > after && run.result),
      180_000,
      tail,
    );

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

  it('installs with apt-get, with no Node.js on the host; its timer is set every 15 s and its first run writes the textfile', async () => {
    expect((await box().run(['sh', '-c', 'command -v node nodejs'])).stdout).toBe('');
    await box().sh(`apt-get install -y ${TEST_DIR}/gpu-textfile_${VERSION}_amd64.deb`, { timeoutMs: 300_000 });
    expect(await box().sh('systemctl is-enabled gpu-textfile.timer gpu-textfile-archive.timer gpu-textfile-config.path')).toBe(
      'enabled\nenabled\nenabled',
    );
    expect(await box().sh('gpu-textfile --version')).toBe(VERSION);
    // The schedule as systemd loaded it: every 15 s from the minute, to the second, its next elapse
    // on a quarter-minute mark (how soon a run follows its mark is the machine's load: not asserted).
    const shown = await box().sh('systemctl show --timestamp=us+utc -p TimersCalendar -p AccuracyUSec gpu-textfile.timer');
    expect(shown).toMatch(/^TimersCalendar=\{ OnCalendar=\*-\*-\* \*:\*:00\/15 ; next_elapse=.+ \}$/m);
    expect(parseShownSpan(/^AccuracyUSec=(.*)$/m.exec(shown)?.[1] ?? '')).toBe(1);
    const nextElapse = parseShownTime(/next_elapse=([^}]+)/.exec(shown)?.[1] ?? '');
    expect(calendarMarks([nextElapse ?? Number.NaN], 15)[0]!.after).toBe(0);
    const [first] = await waitFor(
      'a finished run of the collector',
      async () => {
        const runs = runsOf(await journal(box(), ['-u', COLLECTOR]), COLLECTOR);
        return runs[0]?.result ? runs : undefined;
      },
      180_000,
      tail,
    );
    expect(first!.result!.ok).toBe(true);
    expect(sampleValue(await box().sh(`cat ${PROM}`), 'nvidia_gpu_collector_success')).toBe(1);
    // The generator's drop-in: the directories /etc/default/gpu-textfile names, and only those.
    expect(await box().sh(`systemctl show -p ReadWritePaths ${COLLECTOR}`)).toBe(
      'ReadWritePaths=-/var/lib/prometheus/node-exporter -/var/log/gpu-textfile',
    );
    expect(await box().sh(`systemctl show -p SyslogIdentifier --value ${COLLECTOR}`)).toBe('gpu-textfile');
  }, 420_000);

  it("Debian's node_exporter serves the metrics, the stand-in's GPU among them", async () => {
    const text = await scrape(box(), NODE);
    expect(sampleValue(text, 'node_textfile_scrape_error')).toBe(0);
    expect(sampleValue(text, 'nvidia_gpu_collector_success')).toBe(1);
    expect(text).toMatch(/^nvidia_gpu_up\{gpu="0",/m);
  }, 120_000);

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
  }, 420_000);

  it('dpkg --remove stops and disables the timer, takes the metrics file, keeps the configuration', async () => {
    const edited = await box().sh(`cat ${ENV_FILE}`);
    expect(await state('is-active', 'gpu-textfile.timer')).toBe('active');
    await box().sh('dpkg --remove gpu-textfile');
    expect(await state('is-active', 'gpu-textfile.timer')).not.toBe('active');
    expect(await state('is-enabled', 'gpu-textfile.timer')).not.toBe('enabled');
    expect(await box().sh('systemctl list-timers --no-legend')).not.toMatch(/gpu-textfile/);
    expect(await box().sh(`cat ${ENV_FILE}`)).toBe(edited);
    expect((await box().run(['test', '-e', PROM])).exitCode).toBe(1);
  }, 120_000);

  it('dpkg --purge leaves nothing of ours but the CSV trail', async () => {
    await box().sh('dpkg --purge gpu-textfile');
    const left = await box().sh(
      `find / -xdev \\( -path /proc -o -path /sys -o -path ${TEST_DIR} -o -path /etc/gpu-textfile-test -o -path /var/log/journal \\) -prune -o -name '*gpu-textfile*' -print | sort`,
    );
    expect(left.split('\n').filter((path) => !path.startsWith('/var/log/gpu-textfile/'))).toEqual(['/var/log/gpu-textfile']);
  }, 120_000);

  // Without Debian's node_exporter (only a Recommends): nothing but the package makes the textfile
  // directory, and the sandbox (ProtectSystem=strict) lets no run create it.
  it('without the node_exporter package, the textfile directory is there after install and the first run succeeds', async () => {
    await box().sh('dpkg --purge prometheus-node-exporter && rm -rf /var/lib/prometheus', { timeoutMs: 300_000 });
    const installed = Number(await box().sh('date +%s.%N'));
    await box().sh(`apt-get install -y ${TEST_DIR}/gpu-textfile_${VERSION}_amd64.deb`, { timeoutMs: 300_000 });
    expect((await box().run(['test', '-d', TEXTFILE_DIR])).exitCode).toBe(0);
    const run = await nextRun(installed, 'a run after the install');
    expect(run.result!.ok).toBe(true);
    expect(sampleValue(await box().sh(`cat ${PROM}`), 'nvidia_gpu_collector_success')).toBe(1);
  }, 420_000);

  it('GPU_TEXTFILE_TEXTFILE_DIR changed in /etc/default/gpu-textfile: the next runs write there, with no daemon-reload by hand', async () => {
    // A directory that does not exist yet, and the peers' files too (--compat), for the remove below.
    await box().sh(
      `sed -i 's|^GPU_TEXTFILE_TEXTFILE_DIR=.*|GPU_TEXTFILE_TEXTFILE_DIR=${MOVED_DIR}|' ${ENV_FILE} && echo GPU_TEXTFILE_COMPAT=dcgm,nvidia_gpu_exporter >> ${ENV_FILE}`,
    );
    const written = await waitFor(
      `our three files in ${MOVED_DIR}`,
      async () => {
        const listed = (await box().run(['ls', MOVED_DIR])).stdout.split('\n').sort();
        return listed.length === 3 ? listed : undefined;
      },
      180_000,
      tail,
    );
    expect(written).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom', 'nvidia_gpu_nvidia_gpu_exporter.prom']);
    expect(sampleValue(await box().sh(`cat ${MOVED_DIR}/nvidia_gpu.prom`), 'nvidia_gpu_collector_success')).toBe(1);
    expect(await box().sh(`systemctl show -p ReadWritePaths ${COLLECTOR}`)).toBe(`ReadWritePaths=-${MOVED_DIR} -/var/log/gpu-textfile`);
  }, 300_000);

  it('apt remove with a /etc/default/gpu-textfile that is not valid sh succeeds, and takes every .prom of ours', async () => {
    await box().sh(`printf '%s\\n' 'if then (' 'GPU_TEXTFILE_LABEL="unterminated' >> ${ENV_FILE}`);
    expect((await box().run(['sh', '-n', ENV_FILE])).exitCode).not.toBe(0);
    const removed = await box().run(['apt-get', 'remove', '-y', 'gpu-textfile'], { timeoutMs: 300_000 });
    expect({ exit: removed.exitCode, err: removed.stderr }).toMatchObject({ exit: 0 });
    expect(await box().sh(`find ${MOVED_DIR} ${TEXTFILE_DIR} -name '*.prom'`)).toBe('');
    expect(await box().sh('dpkg -s gpu-textfile')).toMatch(/^Status: deinstall ok config-files$/m);
  }, 420_000);

  it('apt remove with /etc/default/gpu-textfile deleted succeeds, and takes the .prom the defaults name', async () => {
    await box().sh(`apt-get install -y ${TEST_DIR}/gpu-textfile_${VERSION}_amd64.deb`, { timeoutMs: 300_000 });
    await box().sh(`rm ${ENV_FILE}`);
    // The file gone, its defaults apply by the next runs: the package's textfile directory.
    await waitFor(
      `a textfile in ${TEXTFILE_DIR} after the file was deleted`,
      async () => ((await box().run(['test', '-e', PROM])).exitCode === 0 ? true : undefined),
      180_000,
      tail,
    );
    expect(sampleValue(await box().sh(`cat ${PROM}`), 'nvidia_gpu_collector_success')).toBe(1);
    const removed = await box().run(['apt-get', 'remove', '-y', 'gpu-textfile'], { timeoutMs: 300_000 });
    expect({ exit: removed.exitCode, err: removed.stderr }).toMatchObject({ exit: 0 });
    expect(await box().sh(`find ${TEXTFILE_DIR} -name '*.prom'`)).toBe('');
  }, 600_000);
});
