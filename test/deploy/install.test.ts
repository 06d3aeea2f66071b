import { existsSync } from 'node:fs';
import { link, mkdir, readFile, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { copyTree, hiddenFromUnits } from '../../src/deploy/program.js';
import { parseEnvironmentFile, renderEnvironmentFile } from '../../src/deploy/units.js';
import { checkExposition } from '../../src/exposition/check.js';
import { CLI, FAKE_BIN, capture, cliEnv, runCli, tempDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

const UNITS = 'etc/systemd/system';
const PROGRAM = 'usr/local/lib/gpu-textfile';

async function install(root: string, ...args: string[]) {
  const result = await runCli(['install', '--root', root, '--no-enable', ...args]);
  expect([result.exitCode, result.stderr]).toEqual([0, '']);
  return result;
}

describe('install puts the program where the units can run it', () => {
  it('copies dist/ (and the unit templates) under /usr/local/lib/gpu-textfile, which every ExecStart runs', async () => {
    const root = await tempDir();
    await install(root);
    const script = join(root, PROGRAM, 'current/dist/gpu-textfile.js');
    const version = await execa(process.execPath, [script, '--version'], { cwd: '/', env: cliEnv(), extendEnv: false });
    expect(version.stdout).toBe((await runCli(['--version'])).stdout.trim());
    expect(existsSync(join(root, PROGRAM, 'current/systemd/gpu-textfile.service'))).toBe(true);
    const service = await readFile(join(root, UNITS, 'gpu-textfile.service'), 'utf8');
    expect(/^ExecStart=(.*)$/m.exec(service)?.[1]).toBe(
      `${process.execPath} /usr/local/lib/gpu-textfile/current/dist/gpu-textfile.js collect`,
    );
  });

  it('replaces it by renaming a link: a second install keeps the release it replaced, a third removes the oldest', async () => {
    const root = await tempDir();
    const releases = async () => (await readdir(join(root, PROGRAM))).filter((name) => name.startsWith('release-')).sort();
    await install(root);
    const first = await readlink(join(root, PROGRAM, 'current'));
    await install(root);
    const second = await readlink(join(root, PROGRAM, 'current'));
    expect(await releases()).toEqual([first, second].sort());
    await install(root);
    const third = await readlink(join(root, PROGRAM, 'current'));
    expect(await releases()).toEqual([second, third].sort());
  });

  it('copies no link: one inside the tree is refused', async () => {
    const from = join(await tempDir(), 'from');
    await mkdir(from);
    await writeFile(join(from, 'a.js'), '');
    await symlink('/root/elsewhere.js', join(from, 'b.js'));
    await expect(copyTree(from, join(await tempDir(), 'to'))).rejects.toThrow(/b\.js is not a regular file or directory; not copied/);
  });

  it.each([
    ['/root/.nvm/versions/node/v20.19.0/bin/node', '/root'],
    ['/home/ann/.local/bin/node', '/home'],
    ['/tmp/node', '/tmp'],
    ['/usr/bin/node', undefined],
    ['/usr/local/bin/node', undefined],
    ['/homeless/node', undefined],
  ])('%s is hidden from the units by %s', (path, hidden) => expect(hiddenFromUnits(path)).toBe(hidden));

  it('says on stderr when the node running it sits where the units cannot reach it', async () => {
    // A node under /tmp (PrivateTmp= hides it from the units, as ProtectHome= hides nvm's under /root).
    const dir = await tempDir();
    await link(process.execPath, join(dir, 'node'));
    const root = join(dir, 'root');
    const result = await execa(join(dir, 'node'), [CLI, 'install', '--root', root, '--no-enable'], {
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
    });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      `gpu-textfile: warning: the units will run ${dir}/node, under /tmp, which their sandbox hides (ProtectHome=, PrivateTmp=): they cannot start; install Node.js where every user can reach it (e.g. /usr/bin/node) and run install with it\n`,
    );
  });
});

describe('install switches modes; uninstall removes what install recorded', () => {
  it('--daemon after a timer install removes the timer, and a timer install removes the daemon', async () => {
    const root = await tempDir();
    await install(root);
    expect((await readdir(join(root, UNITS))).sort()).toEqual(['gpu-textfile.service', 'gpu-textfile.timer']);
    const toDaemon = await install(root, '--daemon');
    expect(toDaemon.stdout).toContain(`remove ${join(root, UNITS, 'gpu-textfile.timer')}`);
    expect(await readdir(join(root, UNITS))).toEqual(['gpu-textfile-daemon.service']);
    await install(root);
    expect((await readdir(join(root, UNITS))).sort()).toEqual(['gpu-textfile.service', 'gpu-textfile.timer']);
  });

  it('without options, keeps the environment file and writes the units for the directories it names', async () => {
    const root = await tempDir();
    await install(root, '--csv-dir', '/srv/csv', '--textfile-dir', '/srv/tf');
    const env = await readFile(join(root, 'etc/default/gpu-textfile'), 'utf8');
    await install(root, '--daemon');
    expect(await readFile(join(root, 'etc/default/gpu-textfile'), 'utf8')).toBe(env);
    expect(await readFile(join(root, UNITS, 'gpu-textfile-daemon.service'), 'utf8')).toMatch(/^ReadWritePaths=-\/srv\/tf -\/srv\/csv$/m);
    // The archiver may write the CSV directory, and only that.
    expect(await readFile(join(root, UNITS, 'gpu-textfile-archive.service'), 'utf8')).toMatch(/^ReadWritePaths=-\/srv\/csv$/m);
  });

  it('uninstall removes the metrics file where install recorded it (--textfile-dir, --file-name), and the program', async () => {
    const root = await tempDir();
    await install(root, '--textfile-dir', '/srv/tf', '--file-name', 'gpus.prom');
    await writeFile(join(root, 'srv/tf/gpus.prom'), 'nvidia_gpu_up 1\n');
    await writeFile(join(root, 'srv/tf/other.prom'), 'other 1\n');
    const result = await runCli(['uninstall', '--root', root, '--no-enable']);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(await readdir(join(root, 'srv/tf'))).toEqual(['other.prom']);
    expect(existsSync(join(root, PROGRAM))).toBe(false);
    expect(await readdir(join(root, UNITS))).toEqual([]);
  });

  it("uninstall removes the peers' files (--compat) beside the metrics file too, whether or not --compat still names them", async () => {
    const root = await tempDir();
    await install(root, '--textfile-dir', '/srv/tf', '--file-name', 'gpus.prom', '--compat', 'dcgm');
    // The nvidia_gpu_exporter file is an earlier install's: the peers' names carry no time, so a file
    // left behind is served with its last values for ever.
    for (const name of ['gpus.prom', 'gpus_dcgm.prom', 'gpus_nvidia_gpu_exporter.prom', 'other.prom'])
      await writeFile(join(root, 'srv/tf', name), 'x 1\n');
    const result = await runCli(['uninstall', '--root', root, '--no-enable']);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toContain(`remove ${join(root, 'srv/tf/gpus_dcgm.prom')}`);
    expect(await readdir(join(root, 'srv/tf'))).toEqual(['other.prom']);
  });
});

describe('install passes collect options on through /etc/default/gpu-textfile', () => {
  it('lists and switches reach collect as the units and cron read the file', async () => {
    const root = await tempDir();
    await install(
      root,
      '--label',
      'env=prod',
      '--label',
      'site=x',
      '--exclude-fields',
      'ecc*',
      '--exclude-fields',
      'power*',
      '--slow-fields',
      '--max-processes',
      '3',
    );
    const file = join(root, 'etc/default/gpu-textfile');
    expect(await readFile(file, 'utf8')).toMatch(
      /^GPU_TEXTFILE_LABEL="env=prod site=x"\nGPU_TEXTFILE_EXCLUDE_FIELDS="ecc\* power\*"\nGPU_TEXTFILE_SLOW_FIELDS=true\nGPU_TEXTFILE_MAX_PROCESSES=3$/m,
    );
    // As the cron.d file runs it: sh sources the file with set -a, then runs the command.
    const run = await execa('sh', ['-c', 'set -a; . "$1"; shift; exec "$@"', 'sh', file, process.execPath, CLI, 'collect', '--dry-run'], {
      env: cliEnv({ PATH: `${FAKE_BIN}:${process.env.PATH}`, FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load') }),
      extendEnv: false,
      reject: false,
      stripFinalNewline: false,
    });
    expect([run.exitCode, run.stderr]).toEqual([0, '']);
    const { samples, problems } = checkExposition(run.stdout);
    expect(problems).toEqual([]);
    expect(samples.every((s) => s.labels.env === 'prod' && s.labels.site === 'x')).toBe(true);
    const names = new Set(samples.map((s) => s.name));
    expect([...names].filter((name) => /ecc|power_draw/.test(name))).toEqual([]);
    expect(names.has('nvidia_gpu_power_enforced_limit_watts')).toBe(true); // enforced.power.limit: not power*
    expect(names.has('nvidia_gpu_memory_used_bytes')).toBe(true);
    expect(names.has('nvidia_gpu_clocks_event_reason_seconds_total')).toBe(true);
  });

  // --source nvml reaches collect: the timer's runs then read NVML (here the stand-in library).
  it('--source nvml and --nvml-library are written for collect', async () => {
    const root = await tempDir();
    await install(root, '--source', 'nvml', '--nvml-library', standInLibrary());
    const file = join(root, 'etc/default/gpu-textfile');
    expect(await readFile(file, 'utf8')).toMatch(/^GPU_TEXTFILE_SOURCE=nvml\nGPU_TEXTFILE_NVML_LIBRARY=\S+libnvidia-ml\.so\.1$/m);
    const config = join(root, 'stand-in.conf');
    await writeFile(config, standInConfig(capture('h200x2__580.159.04__linux-load'), ['0.gpm=1', '0.gpm.2=50']));
    const run = await execa('sh', ['-c', 'set -a; . "$1"; shift; exec "$@"', 'sh', file, process.execPath, CLI, 'collect', '--dry-run'], {
      env: cliEnv({ NVML_STAND_IN: config }),
      extendEnv: false,
      reject: false,
    });
    expect([run.exitCode, run.stderr]).toEqual([0, '']);
    expect(checkExposition(run.stdout).samples.find((s) => s.name === 'nvidia_gpu_sm_active_ratio')?.value).toBe(0.5);
  });

  it.each([
    [['--label', 'site=a b'], '--label: "site=a b" has a comma or a space, which GPU_TEXTFILE_LABEL cannot hold (they separate its items)'],
    [
      ['--exclude-fields', 'ecc*,power*'],
      '--exclude-fields: "ecc*,power*" has a comma or a space, which GPU_TEXTFILE_EXCLUDE_FIELDS cannot hold (they separate its items)',
    ],
    [['--label', 'gpu=1'], '--label: "gpu" is a label gpu-textfile sets itself'],
    [['--interval', '1s'], "--interval is the daemon mode's cadence: add --daemon (the timer runs every 15 s)"],
    [['--daemon', '--interval', '10ms'], '--interval: "10ms" must be a duration of at least 100ms'],
    [['--timeout', 'soon'], '--timeout: "soon" is not a duration (use 10, 10s or 500ms)'],
    [['--file-name', 'gpu.txt'], '--file-name: "gpu.txt" must be a plain name ending in .prom (node_exporter reads only those)'],
    [['--source', 'nvlm'], '--source: "nvlm" is not one of nvidia-smi, demo, nvml'],
    [['--source', 'nvml', '--gpm-window', '1ms'], '--gpm-window: "1ms" must be a duration from 10ms to 5s'],
  ])('refuses %j as collect would: exit 2, one line, nothing written', async (args, message) => {
    const root = await tempDir();
    const result = await runCli(['install', '--root', root, '--no-enable', ...args]);
    expect([result.exitCode, result.stderr]).toEqual([2, `gpu-textfile: ${message}\n`]);
    expect(await readdir(root)).toEqual([]);
  });

  it('the environment file reads back as written', () => {
    const text = renderEnvironmentFile({
      textfileDir: '/srv/a "b" $c',
      csvDir: '/x',
      collect: { label: ['a=1', 'b=$2'], 'slow-fields': true, 'max-processes': 4 },
    });
    expect(Object.fromEntries(parseEnvironmentFile(text))).toEqual({
      GPU_TEXTFILE_TEXTFILE_DIR: '/srv/a "b" $c',
      GPU_TEXTFILE_CSV_DIR: '/x',
      GPU_TEXTFILE_LABEL: 'a=1 b=$2',
      GPU_TEXTFILE_SLOW_FIELDS: 'true',
      GPU_TEXTFILE_MAX_PROCESSES: '4',
    });
  });

  // Issue 39: the packages ship this same text, where no `gpu-textfile install` ran, and no task: the
  // units then name the trail after the host, as install's documented --task "$(hostname)" does.
  it('says what it is, not who wrote it, and where the task comes from when it names none', () => {
    const text = renderEnvironmentFile({ textfileDir: '/t', csvDir: '/x' });
    expect(text).not.toMatch(/install/);
    expect(text).toMatch(/^# GPU_TEXTFILE_TASK names the CSV trail's <task>\.csv; unset, the units use this host's short name\.$/m);
    expect(renderEnvironmentFile({ textfileDir: '/t', csvDir: '/x', task: 'train' })).toMatch(/^GPU_TEXTFILE_TASK=train$/m);
  });
});
