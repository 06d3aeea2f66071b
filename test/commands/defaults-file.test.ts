import { execFileSync } from 'node:child_process';
import { chmod, chown, lchown, mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readDefaultsFile, withDefaultsFile } from '../../src/commands/defaults-file.js';
import { execa } from 'execa';
import { CLI, cliEnv, FIXTURES, runCli, tempDir } from '../support/helpers.js';

// /etc/default/gpu-textfile as every command's defaults (src/commands/defaults-file.ts): read as the
// units' EnvironmentFile= reads it, and only where root or the user running the command controls it.

/** A user that is neither root nor the test (nobody). */
const OTHER = 65534;
const ME = process.geteuid!();

async function defaultsFile(text: string): Promise<string> {
  const path = join(await tempDir(), 'gpu-textfile');
  await writeFile(path, text, { mode: 0o644 });
  return path;
}

describe('readDefaultsFile', () => {
  it('reads the GPU_TEXTFILE_* assignments install writes and hand edits, and nothing else', async () => {
    const path = await defaultsFile(
      [
        '# Options for gpu-textfile',
        'GPU_TEXTFILE_CSV_DIR=/var/log/gpu-textfile',
        'GPU_TEXTFILE_LABEL="env=prod site=x"',
        "export GPU_TEXTFILE_TASK='train'",
        'GPU_TEXTFILE_FILE_NAME=first.prom',
        'GPU_TEXTFILE_FILE_NAME=last.prom',
        'PATH=/tmp/evil',
        'GPU_TEXTFILE_DEFAULTS_FILE=/tmp/elsewhere',
        'GPU_TEXTFILE_EXCLUDE_FIELDS=$(touch /tmp/x)',
        'if then (',
      ].join('\n'),
    );
    expect(readDefaultsFile(path, ME)).toEqual({
      GPU_TEXTFILE_CSV_DIR: '/var/log/gpu-textfile',
      GPU_TEXTFILE_LABEL: 'env=prod site=x',
      GPU_TEXTFILE_TASK: 'train',
      GPU_TEXTFILE_FILE_NAME: 'last.prom',
    });
  });

  it('a missing file sets nothing', async () => {
    expect(readDefaultsFile(join(await tempDir(), 'absent'), ME)).toEqual({});
  });

  it("a link owned by another user is refused; root's is followed", async () => {
    const target = await defaultsFile('GPU_TEXTFILE_TASK=linked\n');
    const link = join(await tempDir(), 'gpu-textfile');
    await symlink(target, link);
    expect(readDefaultsFile(link, ME)).toEqual({ GPU_TEXTFILE_TASK: 'linked' });
    await lchown(link, OTHER, OTHER);
    expect(readDefaultsFile(link, ME)).toBe(`${link}: a link owned by user ${OTHER}; not read`);
  });

  it('a file owned by another user, or writable by everyone, is refused', async () => {
    const owned = await defaultsFile('GPU_TEXTFILE_TASK=x\n');
    await chown(owned, OTHER, OTHER);
    expect(readDefaultsFile(owned, ME)).toBe(`${owned}: owned by user ${OTHER}, not by root or you; not read`);
    const open = await defaultsFile('GPU_TEXTFILE_TASK=x\n');
    await chmod(open, 0o666);
    expect(readDefaultsFile(open, ME)).toBe(`${open}: writable by every user; not read`);
  });

  it('a FIFO or a directory is refused without hanging; a file past 64 KiB is refused', async () => {
    const dir = await tempDir();
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    expect(readDefaultsFile(join(dir, 'fifo'), ME)).toBe(`${join(dir, 'fifo')}: not a regular file; not read`);
    await mkdir(join(dir, 'dir'));
    expect(readDefaultsFile(join(dir, 'dir'), ME)).toBe(`${join(dir, 'dir')}: not a regular file; not read`);
    const large = await defaultsFile(`GPU_TEXTFILE_TASK=x\n${'#'.repeat(64 * 1024)}\n`);
    expect(readDefaultsFile(large, ME)).toBe(`${large}: larger than 65536 bytes; not read`);
    const atLimit = await defaultsFile(`GPU_TEXTFILE_TASK=x\n${'#'.repeat(64 * 1024 - 21)}\n`);
    expect(readDefaultsFile(atLimit, ME)).toEqual({ GPU_TEXTFILE_TASK: 'x' });
  });
});

describe('withDefaultsFile', () => {
  it('the environment wins over the file; an empty GPU_TEXTFILE_DEFAULTS_FILE reads none', async () => {
    const path = await defaultsFile('GPU_TEXTFILE_TASK=file\nGPU_TEXTFILE_CSV_DIR=/from/file\n');
    expect(withDefaultsFile({ GPU_TEXTFILE_DEFAULTS_FILE: path, GPU_TEXTFILE_TASK: 'env' }, ME)).toEqual({
      GPU_TEXTFILE_DEFAULTS_FILE: path,
      GPU_TEXTFILE_TASK: 'env',
      GPU_TEXTFILE_CSV_DIR: '/from/file',
    });
    expect(withDefaultsFile({ GPU_TEXTFILE_DEFAULTS_FILE: '' }, ME)).toEqual({ GPU_TEXTFILE_DEFAULTS_FILE: '' });
  });

  it("the units' collector's own settings are no other command's defaults: its cadence none's, its task and file name collect's alone", async () => {
    const path = await defaultsFile(
      'GPU_TEXTFILE_INTERVAL=1s\nGPU_TEXTFILE_TASK=train\nGPU_TEXTFILE_FILE_NAME=gpus.prom\nGPU_TEXTFILE_CSV_DIR=/from/file\n',
    );
    const env = { GPU_TEXTFILE_DEFAULTS_FILE: path };
    const fromFile = (command: string) => {
      const read = withDefaultsFile(env, ME, command);
      return typeof read === 'string'
        ? read
        : Object.keys(read)
            .filter((name) => name !== 'GPU_TEXTFILE_DEFAULTS_FILE')
            .sort();
    };
    expect(fromFile('collect')).toEqual(['GPU_TEXTFILE_CSV_DIR', 'GPU_TEXTFILE_FILE_NAME', 'GPU_TEXTFILE_TASK']);
    for (const command of ['run', 'report', 'export', 'pulse']) expect(fromFile(command)).toEqual(['GPU_TEXTFILE_CSV_DIR']);
    // Set in the environment, they are the caller's own choice, as before.
    expect(withDefaultsFile({ ...env, GPU_TEXTFILE_TASK: 'mine' }, ME, 'report')).toMatchObject({ GPU_TEXTFILE_TASK: 'mine' });
  });
});

describe('a command on a packaged host', () => {
  it('report without --csv-dir reads the trail the defaults file names; the environment and the command line win', async () => {
    const [fromFile, fromEnv, fromArgs] = [await tempDir(), await tempDir(), await tempDir()];
    const path = await defaultsFile(`GPU_TEXTFILE_CSV_DIR=${fromFile}\n`);
    const noSamples = (dir: string) => [0, `gpu-textfile: no samples in ${dir} match\n`];
    const report = async (args: string[], env: Record<string, string>) => {
      const result = await runCli(['report', ...args], { GPU_TEXTFILE_DEFAULTS_FILE: path, TZ: 'UTC', ...env });
      return [result.exitCode, result.stderr];
    };
    expect(await report([], {})).toEqual(noSamples(fromFile));
    expect(await report([], { GPU_TEXTFILE_CSV_DIR: fromEnv })).toEqual(noSamples(fromEnv));
    expect(await report(['--csv-dir', fromArgs], { GPU_TEXTFILE_CSV_DIR: fromEnv })).toEqual(noSamples(fromArgs));
  });

  it("collect by hand on a host whose file sets the daemon's GPU_TEXTFILE_INTERVAL collects once and exits, as the timer's unit does", async () => {
    const path = await defaultsFile('GPU_TEXTFILE_INTERVAL=1s\n');
    const result = await runCli(['collect', '--source', 'demo', '--dry-run'], { GPU_TEXTFILE_DEFAULTS_FILE: path }, 60_000);
    expect([result.timedOut, result.exitCode]).toEqual([false, 0]);
    expect(result.stdout.match(/^nvidia_gpu_collector_success\b/gm)).toHaveLength(1);
  });

  it("export on a host whose file gives the collector the label task=NAME (the playbook's) exports, that label its own", async () => {
    const trail = await tempDir();
    const path = await defaultsFile(`GPU_TEXTFILE_CSV_DIR=${trail}\nGPU_TEXTFILE_LABEL="task=train"\n`);
    const result = await runCli(['export'], { GPU_TEXTFILE_DEFAULTS_FILE: path });
    expect([result.exitCode, result.stdout]).toEqual([0, '# EOF\n']);
  });

  it('a defaults file that is refused is one line and exit 2', async () => {
    const path = await defaultsFile('GPU_TEXTFILE_CSV_DIR=/x\n');
    await chmod(path, 0o666);
    const result = await runCli(['report'], { GPU_TEXTFILE_DEFAULTS_FILE: path });
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      `gpu-textfile: ${path}: writable by every user; not read; set GPU_TEXTFILE_DEFAULTS_FILE= to read none (see --help)\n`,
    ]);
  });

  it("a file the user may not read (an admin's 0600) is passed over: that user's commands run without it", async () => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    const path = join(dir, 'gpu-textfile');
    await writeFile(path, 'GPU_TEXTFILE_INTERVAL=nonsense\n', { mode: 0o600 });
    const series = join(FIXTURES, 'series/h200__580.159.04__idle__lms200.csv');
    // As nobody: root reads any file, so only another user meets EACCES.
    const result = await execa(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, 'pulse', '--json', '--from', series],
      {
        env: cliEnv({ GPU_TEXTFILE_DEFAULTS_FILE: path }),
        extendEnv: false,
        reject: false,
        timeout: 60_000,
      },
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(JSON.parse(result.stdout)).toMatchObject({ verdict: 'idle' });
  });
});
