import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/helpers.js';

// What `npm run package` makes (scripts/package.mjs), built here as the tests' dist/ is: the tarball
// for both CPUs, the .rpm. The .deb is installed into a booted Debian by test/deploy/deb-boot.test.ts.

const { version: VERSION } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const PROGRAM = '/usr/lib/gpu-textfile';

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
  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'gpu-textfile-packages-'));
    const build = (arch: string, ...formats: string[]) =>
      execa(process.execPath, ['scripts/package.mjs', '--arch', arch, ...formats.flatMap((f) => ['--format', f]), '--fast', '--out', out], {
        cwd: ROOT,
        timeout: 600_000,
      });
    await build('x64', 'tar', 'rpm', 'deb');
    await build('arm64', 'tar');
  }, 900_000);
  afterAll(() => rm(out, { recursive: true, force: true }));

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
  }, 60_000);

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
    const listed = (await execa('dpkg-deb', ['-c', join(out, `gpu-textfile_${VERSION}_amd64.deb`)])).stdout
      .split('\n')
      .map((line) =>
        line
          .split(/\s+/)
          .slice(5)
          .join(' ')
          .replace(/ -> .*$/, ''),
      )
      .filter((path) => !path.endsWith('/'))
      .map((path) => path.replace(/^\./, '').replace(/^\/lib\/systemd\//, '/usr/lib/systemd/'));
    // The .deb's own: Debian's changelog and lintian's override.
    const debOnly = ['/usr/share/doc/gpu-textfile/changelog.gz', '/usr/share/lintian/overrides/gpu-textfile'];
    const rpmOnlyDirs = rpmFiles.filter((path) => !listed.includes(path) && listed.some((file) => file.startsWith(`${path}/`)));
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

  // Its warnings (hardening-no-pie, no-manual-page) are said and justified in docs/development.md.
  it('lintian finds no error in the .deb', async () => {
    const lint = await execa('lintian', ['--tag-display-limit', '0', join(out, `gpu-textfile_${VERSION}_amd64.deb`)], {
      reject: false,
      timeout: 300_000,
    });
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
  }, 300_000);

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
