import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { renderUnit } from '../../src/deploy/units.js';
import { ROOT, runCli, tempDir } from '../support/helpers.js';

const SYSTEMD = join(ROOT, 'systemd');

async function installed(...more: string[]) {
  const root = await tempDir();
  const result = await runCli(['install', '--root', root, '--no-enable', '--csv-dir', '/var/log/gpu-textfile', '--task', 'train', ...more]);
  expect([result.exitCode, result.stderr]).toEqual([0, '']);
  return { root, units: join(root, 'etc/systemd/system') };
}

describe('systemd units', () => {
  it('install --root writes every unit with ExecStart at this installation, and they verify', async () => {
    const { root, units } = await installed();
    const names = (await readdir(units)).sort();
    expect(names).toEqual(['gpu-textfile-archive.service', 'gpu-textfile-archive.timer', 'gpu-textfile.service', 'gpu-textfile.timer']);
    const service = await readFile(join(units, 'gpu-textfile.service'), 'utf8');
    expect(service).toContain(`ExecStart=${process.execPath} /usr/local/lib/gpu-textfile/current/dist/gpu-textfile.js collect`);
    expect(service).toMatch(/^ReadWritePaths=-\/var\/lib\/\S+ -\/var\/log\/gpu-textfile$/m);
    expect(await readFile(join(root, 'etc/default/gpu-textfile'), 'utf8')).toMatch(
      /^GPU_TEXTFILE_CSV_DIR=\/var\/log\/gpu-textfile\nGPU_TEXTFILE_TASK=train\n$/m,
    );
    for (const dir of ['var/lib/gpu-textfile', 'var/log/gpu-textfile']) expect(existsSync(join(root, dir))).toBe(true);
    const verify = await execa('systemd-analyze', ['verify', '--recursive-errors=yes', '--man=no', ...names.map((n) => join(units, n))], {
      reject: false,
    });
    expect({ exit: verify.exitCode, out: verify.stdout + verify.stderr }).toEqual({ exit: 0, out: '' });
  });

  it("every service's offline security exposure is 5.5 or lower", async () => {
    const services = (await readdir(SYSTEMD)).filter((n) => n.endsWith('.service'));
    expect(services.sort()).toEqual(['gpu-textfile-archive.service', 'gpu-textfile-daemon.service', 'gpu-textfile.service']);
    for (const name of services) {
      const result = await execa('systemd-analyze', ['security', '--offline=true', join(SYSTEMD, name)], { reject: false });
      const exposure = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(result.stdout)?.[1]);
      expect([name, exposure <= 5.5]).toEqual([name, true]);
    }
  });

  it('the timer runs every 15 s with 1 s accuracy; the service cannot outlast the period', async () => {
    const timer = await readFile(join(SYSTEMD, 'gpu-textfile.timer'), 'utf8');
    // A calendar: OnUnitActiveSec=15s counts from each activation, and runs landed 16 s apart.
    expect(timer).not.toMatch(/^OnUnitActiveSec=/m);
    const calendar = /^OnCalendar=(.+)$/m.exec(timer)?.[1];
    const next = await execa('systemd-analyze', ['calendar', '--iterations=5', calendar ?? 'missing'], {
      env: { ...process.env, TZ: 'UTC' },
    });
    const elapses = [...next.stdout.matchAll(/(?:Next elapse|Iter\. #\d+): \w{3} (\S+ \S+) UTC$/gm)].map((m) => Date.parse(`${m[1]}Z`));
    expect(elapses).toHaveLength(5);
    expect(elapses.slice(1).map((t, i) => (t - elapses[i]!) / 1000)).toEqual([15, 15, 15, 15]);
    expect(timer).toMatch(/^AccuracySec=1s$/m);
    const service = await readFile(join(SYSTEMD, 'gpu-textfile.service'), 'utf8');
    expect(service).toMatch(/^Type=oneshot$/m);
    expect(Number(/^TimeoutStartSec=(\d+)s$/m.exec(service)?.[1])).toBeLessThan(15);
    // A GPU_TEXTFILE_INTERVAL meant for the daemon would turn each timer run into a daemon.
    expect(service).toMatch(/^EnvironmentFile=.*\n(#.*\n)*UnsetEnvironment=GPU_TEXTFILE_INTERVAL$/m);
    expect(service).toMatch(/^EnvironmentFile=-\/etc\/default\/gpu-textfile$/m);
    expect(service).toMatch(/^Environment=GPU_TEXTFILE_TASK=%l\nEnvironmentFile=-\/etc\/default\/gpu-textfile$/m);
    // collect's code cache (src/launch/) in the directory systemd creates for the service.
    expect(service).toMatch(/^CacheDirectory=gpu-textfile$/m);
    expect(service).toMatch(/^Environment=NODE_COMPILE_CACHE=\/var\/cache\/gpu-textfile$/m);
    expect(service).not.toMatch(/^PrivateDevices=yes/m);
    expect(service).not.toMatch(/^MemoryDenyWriteExecute=yes/m);
    const archive = await readFile(join(SYSTEMD, 'gpu-textfile-archive.timer'), 'utf8');
    expect(archive).toMatch(/^OnCalendar=daily$/m);
    expect(archive).toMatch(/^Persistent=true$/m);
  });

  it('install --daemon writes the daemon service instead of the timer, and it verifies', async () => {
    const { units } = await installed('--daemon');
    expect((await readdir(units)).sort()).toEqual([
      'gpu-textfile-archive.service',
      'gpu-textfile-archive.timer',
      'gpu-textfile-daemon.service',
    ]);
    const daemon = await readFile(join(units, 'gpu-textfile-daemon.service'), 'utf8');
    expect(daemon).toMatch(/^Type=simple$/m);
    expect(daemon).toMatch(/^Restart=always$/m);
    expect(daemon).toMatch(/^Environment=GPU_TEXTFILE_INTERVAL=15s\nEnvironmentFile=-\/etc\/default\/gpu-textfile$/m);
    // The task where the file names none: the host's short name, the file's own overriding it.
    expect(daemon).toMatch(/^Environment=GPU_TEXTFILE_TASK=%l\n(?:.*\n)*EnvironmentFile=-\/etc\/default\/gpu-textfile$/m);
    // enable gives it a place in the boot (is-enabled says enabled, not static).
    expect(daemon).toMatch(/^\[Install\]\nWantedBy=multi-user\.target$/m);
    const verify = await execa(
      'systemd-analyze',
      ['verify', '--recursive-errors=yes', '--man=no', join(units, 'gpu-textfile-daemon.service')],
      { reject: false },
    );
    expect({ exit: verify.exitCode, out: verify.stdout + verify.stderr }).toEqual({ exit: 0, out: '' });
  });

  it('uninstall --root removes what install wrote and leaves the data', async () => {
    const { root, units } = await installed();
    const result = await runCli(['uninstall', '--root', root, '--no-enable']);
    expect(result.exitCode).toBe(0);
    expect(await readdir(units)).toEqual([]);
    expect(existsSync(join(root, 'etc/default/gpu-textfile'))).toBe(false);
    expect(existsSync(join(root, 'var/log/gpu-textfile'))).toBe(true);
  });

  it('--dry-run says what it would do and writes nothing', async () => {
    const root = await tempDir();
    const result = await runCli(['install', '--root', root, '--dry-run']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^would write .*gpu-textfile\.service$/m);
    expect(await readdir(root)).toEqual([]);
  });
});

describe('cron.d file', () => {
  it('is a valid cron.d file: no dot in its name, PATH set, % escaped, final newline, four runs a minute under flock -n', async () => {
    const files = await readdir(join(ROOT, 'cron'));
    expect(files).toEqual(['gpu-textfile']);
    const text = await readFile(join(ROOT, 'cron/gpu-textfile'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text).toMatch(/^PATH=\S+$/m);
    expect(text).toMatch(/^NODE_COMPILE_CACHE=\/var\/cache\/gpu-textfile$/m);
    const jobs = text.split('\n').filter((line) => /^[\d*]/.test(line));
    for (const job of jobs) {
      expect(job.split(/\s+/)[5]).toBe('root');
      expect(job).not.toMatch(/(^|[^\\])%/);
    }
    const collects = jobs.filter((job) => job.includes('gpu-textfile collect'));
    expect(collects.map((job) => /sleep (\d+)/.exec(job)?.[1] ?? '0')).toEqual(['0', '15', '30', '45']);
    expect(collects.every((job) => job.includes('flock -n'))).toBe(true);
    expect(jobs.filter((job) => job.includes('gpu-textfile archive'))).toHaveLength(1);
  });
});

const verifyUnits = (...paths: string[]) =>
  execa('systemd-analyze', ['verify', '--recursive-errors=yes', '--man=no', ...paths], { reject: false });
const TEMPLATE = (name: string) => readFile(join(SYSTEMD, name), 'utf8');

describe("install quotes what it writes, by each reader's rules", () => {
  // Spaces, a % (a specifier to systemd), a $ (a variable to systemd and sh), a quote and a backslash.
  const TEXTFILE_DIR = '/srv/prom metrics/100% "ours"';
  const CSV_DIR = '/var/log/gpu trail/$HOME\\x';

  it('a path with spaces, %, $, quotes and a backslash stays one ReadWritePaths= word, the units verify, sh reads the environment file back', async () => {
    const root = await tempDir();
    const result = await runCli([
      'install',
      '--root',
      root,
      '--no-enable',
      '--textfile-dir',
      TEXTFILE_DIR,
      '--csv-dir',
      CSV_DIR,
      '--task',
      'train',
    ]);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const units = join(root, 'etc/systemd/system');
    const service = await readFile(join(units, 'gpu-textfile.service'), 'utf8');
    expect(service).toMatch(/^ReadWritePaths="-\/srv\/prom metrics\/100%% \\"ours\\"" "-\/var\/log\/gpu trail\/\$HOME\\\\x"$/m);
    const names = (await readdir(units)).map((n) => join(units, n));
    expect(await verifyUnits(...names).then((v) => ({ exit: v.exitCode, out: v.stdout + v.stderr }))).toEqual({ exit: 0, out: '' });
    // The environment file as sh reads it (the cron.d file sources it; systemd's EnvironmentFile= takes the same quoting).
    const read = await execa(
      'sh',
      [
        '-c',
        'set -a; . "$1"; printf "%s\\n" "$GPU_TEXTFILE_TEXTFILE_DIR" "$GPU_TEXTFILE_CSV_DIR" "$GPU_TEXTFILE_TASK"',
        'sh',
        join(root, 'etc/default/gpu-textfile'),
      ],
      {
        env: { PATH: process.env.PATH, HOME: '/should-not-appear' },
        extendEnv: false,
      },
    );
    expect(read.stdout.split('\n')).toEqual([TEXTFILE_DIR, CSV_DIR, 'train']);
  });

  it('systemd reads each ReadWritePaths= word back as the path given', async () => {
    // systemd-analyze verify names a path only when it refuses it: relative paths make it say how it read each word.
    const dirs = ['rel ative/100% "q"', 'x\\y/$HOME z'];
    const program = { node: process.execPath, script: '/opt/gpu-textfile/dist/gpu-textfile.js' };
    const unit = renderUnit('gpu-textfile.service', await TEMPLATE('gpu-textfile.service'), program, {
      textfileDir: dirs[0]!,
      csvDir: dirs[1]!,
    });
    const file = join(await tempDir(), 'gpu-textfile.service');
    await writeFile(file, unit);
    const verify = await verifyUnits(file);
    const read = [...(verify.stdout + verify.stderr).matchAll(/ReadWritePaths= path is not absolute, ignoring: (.*)$/gm)].map((m) => m[1]);
    expect(read).toEqual(dirs);
  });

  it("ExecStart= quotes the program's paths: %% for %, $$ for $ in arguments, and verifies", async () => {
    const dir = join(await tempDir(), 'node js');
    await mkdir(dir);
    await symlink(process.execPath, join(dir, 'node'));
    const program = { node: join(dir, 'node'), script: '/opt/gpu $HOME 100%/dist/gpu-textfile.js' };
    const unit = renderUnit('gpu-textfile.service', await TEMPLATE('gpu-textfile.service'), program, { textfileDir: '/srv/tf' });
    expect(unit).toMatch(/^ExecStart=.*$/m);
    expect(/^ExecStart=.*$/m.exec(unit)![0]).toBe(`ExecStart="${dir}/node" "/opt/gpu $$HOME 100%%/dist/gpu-textfile.js" collect`);
    const file = join(dir, 'gpu-textfile.service');
    await writeFile(file, unit);
    expect(await verifyUnits(file).then((v) => ({ exit: v.exitCode, out: v.stdout + v.stderr }))).toEqual({ exit: 0, out: '' });
  });

  it.each([
    [
      '--textfile-dir',
      '/srv/tf\nExecStartPre=/bin/sh -c "touch /pwned"',
      /^gpu-textfile: --textfile-dir: "\/srv\/tf\\nExecStartPre=.*" has a control character; a path for a unit file may not\n$/,
    ],
    [
      '--csv-dir',
      '/var/log/x\ty',
      /^gpu-textfile: --csv-dir: "\/var\/log\/x\\ty" has a control character; a path for a unit file may not\n$/,
    ],
    ['--csv-dir', 'var/log/x', /^gpu-textfile: --csv-dir: "var\/log\/x" must be an absolute path \(ReadWritePaths= takes no other\)\n$/],
    ['--task', 'a\nb', /^gpu-textfile: --task: "a\\nb" must be letters, digits/],
  ])('refuses %s %j: exit 2, one line, nothing written', async (option, value, message) => {
    const root = await tempDir();
    const result = await runCli(['install', '--root', root, '--no-enable', option, value]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.split('\n')).toHaveLength(2);
    expect(await readdir(root)).toEqual([]);
  });
});
