import { chown, chmod, lstat, mkdir, open, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { CLI, cliEnv, runCli, tempDir } from '../support/helpers.js';

/**
 * Runs `write` over `path` (which holds `before`, owned by 1234:1234, mode 0600) while a reader holds
 * it open: replaced by rename, the reader still sees the whole old text, the name the new one, with
 * the owner and mode kept. A file rewritten in place shows the reader the new text or half of it.
 */
async function replacedWhole(path: string, before: string, write: () => Promise<void>) {
  await writeFile(path, before);
  await chown(path, 1234, 1234);
  await chmod(path, 0o600);
  const reader = await open(path, 'r');
  try {
    await write();
    const held = (await reader.readFile()).toString();
    const now = await stat(path);
    return { held, changed: (await readFile(path, 'utf8')) !== before, uid: now.uid, gid: now.gid, mode: now.mode & 0o777 };
  } finally {
    await reader.close();
  }
}

const whole = (before: string) => ({ held: before, changed: true, uid: 1234, gid: 1234, mode: 0o600 });

describe('write-file-atomic where the file is ours or the user named it', () => {
  it('install replaces /etc/default/gpu-textfile and the units whole, keeping owner and mode', async () => {
    const root = await tempDir();
    await mkdir(join(root, 'etc/default'), { recursive: true });
    await mkdir(join(root, 'etc/systemd/system'), { recursive: true });
    const install = () =>
      runCli(['install', '--root', root, '--no-enable', '--task', 'train']).then((run) =>
        expect([run.exitCode, run.stderr]).toEqual([0, '']),
      );
    const before = 'GPU_TEXTFILE_TASK=old\n';
    expect(await replacedWhole(join(root, 'etc/default/gpu-textfile'), before, install)).toEqual(whole(before));
    // A unit: mode 0644 is what install sets; the owner stays.
    const unit = await replacedWhole(join(root, 'etc/systemd/system/gpu-textfile.timer'), '[Unit]\n', install);
    expect(unit).toEqual({ ...whole('[Unit]\n'), mode: 0o644 });
  });

  it('report --out replaces the file whole, keeping owner and mode', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'default.csv'), '');
    const out = join(dir, 'report.txt');
    const result = await replacedWhole(out, 'old report\n', async () => {
      const run = await runCli(['report', '--csv-dir', dir, '--out', out]);
      expect(run.exitCode).toBe(0);
    });
    expect(result).toEqual(whole('old report\n'));
  });

  it('run --summary-json replaces the file whole, keeping owner and mode', async () => {
    const dir = await tempDir();
    const out = join(dir, 's.json');
    const result = await replacedWhole(out, '{}\n', async () => {
      const run = await runCli(['run', '--source', 'demo', '--interval', '200ms', '--summary-json', out, '--', 'true']);
      expect([run.exitCode, run.stderr.includes('cannot write')]).toEqual([0, false]);
    });
    expect(result).toEqual(whole('{}\n'));
  });

  // write-file-atomic resolves the name with realpath: as root in a directory another user can write,
  // a link that user planted would have the report land on its target. There the name is replaced.
  const OUTPUTS = [
    ['report --out', (dir: string, out: string) => ['report', '--csv-dir', dir, '--out', out]],
    [
      'run --summary-json',
      (_: string, out: string) => ['run', '--source', 'demo', '--interval', '200ms', '--summary-json', out, '--', 'true'],
    ],
  ] as const;

  it.each(OUTPUTS)('%s in a directory others can write replaces a planted link, never its target', async (_, args) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'default.csv'), '');
    const victim = join(dir, 'victim');
    await writeFile(victim, 'secret\n', { mode: 0o600 });
    const shared = join(dir, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o1777);
    const out = join(shared, 'out');
    await symlink(victim, out);
    const run = await runCli(args(dir, out));
    expect(run.exitCode).toBe(0);
    expect(await readFile(victim, 'utf8')).toBe('secret\n');
    expect((await lstat(out)).isFile()).toBe(true);
    expect((await readFile(out, 'utf8')).length).toBeGreaterThan(0);
  });

  it.each(OUTPUTS)('%s in a directory only we can write follows the user’s own link to its target', async (_, args) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'default.csv'), '');
    const target = join(dir, 'kept');
    await writeFile(target, 'old\n');
    const out = join(dir, 'out');
    await symlink(target, out);
    const run = await runCli(args(dir, out));
    expect(run.exitCode).toBe(0);
    expect(await readlink(out)).toBe(target);
    expect(await readFile(target, 'utf8')).not.toBe('old\n');
  });

  // A user (not root) replacing their own file keeps its group where they may (write-file-atomic
  // tries the chown whoever runs it): a report shared with a team through a group of theirs stays
  // readable by the team. Run as user 4321, member of group 4322 too.
  it.runIf(process.getuid?.() === 0).each(OUTPUTS)('%s run by a user keeps the group of the file it replaces', async (_, args) => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    await writeFile(join(dir, 'default.csv'), '');
    const home = join(dir, 'home');
    await mkdir(home, { mode: 0o755 });
    await chown(home, 4321, 4321);
    const out = join(home, 'out');
    await writeFile(out, 'old\n', { mode: 0o640 });
    await chown(out, 4321, 4322);
    const run = await execa('setpriv', ['--reuid=4321', '--regid=4321', '--groups=4321,4322', process.execPath, CLI, ...args(dir, out)], {
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      timeout: 20_000,
    });
    expect([run.exitCode, run.stderr.includes('cannot write')]).toEqual([0, false]);
    const now = await stat(out);
    expect({ changed: (await readFile(out, 'utf8')) !== 'old\n', uid: now.uid, gid: now.gid, mode: now.mode & 0o777 }).toEqual({
      changed: true,
      uid: 4321,
      gid: 4322,
      mode: 0o640,
    });
  });

  // `--out /dev/null` as root: /dev is root's alone, so the name would be replaced by rename, and
  // the machine's /dev/null became a regular file holding the report. A device is written into, as
  // a shell's redirection writes it (a terminal: --out /dev/tty). Here a /dev/null of our own.
  it.runIf(process.getuid?.() === 0).each(OUTPUTS)('%s onto a device writes into it, never replaces it', async (_, args) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'default.csv'), '');
    const device = join(dir, 'null');
    await execa('mknod', ['-m', '666', device, 'c', '1', '3']);
    const run = await runCli(args(dir, device));
    expect([run.exitCode, run.stderr.includes('cannot write')]).toEqual([0, false]);
    const now = await lstat(device);
    expect({ device: now.isCharacterDevice(), rdev: now.rdev, mode: now.mode & 0o777 }).toEqual({
      device: true,
      rdev: (await stat('/dev/null')).rdev,
      mode: 0o666,
    });
  });

  // Between resolving the path and renaming onto it, another user able to write a directory ABOVE a
  // trusted one could swap that directory for a link: such a path is never written by path.
  it.each(OUTPUTS)('%s in a directory of ours below one others can write never follows a link', async (_, args) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'default.csv'), '');
    const target = join(dir, 'kept');
    await writeFile(target, 'old\n');
    const open = join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    const ours = join(open, 'ours');
    await mkdir(ours, { mode: 0o755 });
    const out = join(ours, 'out');
    await symlink(target, out);
    const run = await runCli(args(dir, out));
    expect(run.exitCode).toBe(0);
    expect(await readFile(target, 'utf8')).toBe('old\n');
    expect((await lstat(out)).isFile()).toBe(true);
  });
});
