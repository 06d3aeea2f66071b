import { access, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { FAKE_SMI, ROOT, capture, cliEnv, tempDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('the npm package', () => {
  // What `npm pack` makes is what users install: the bundle must run from it alone, with no
  // package pulled from the registry (the runtime libraries are bundled into dist/).
  it('installs from its tarball with nothing else and runs from anywhere', async () => {
    const work = await tempDir();
    const env = cliEnv({ npm_config_cache: join(work, 'npm-cache'), npm_config_update_notifier: 'false' });
    // --ignore-scripts: dist/ is already built (global set-up); rebuilding it here would pull it
    // from under the CLI tests running beside this one.
    const pack = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: ROOT,
      env,
      extendEnv: false,
    });
    const [{ filename, files }] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
    const paths = files.map((file) => file.path);
    for (const path of [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/gpu-textfile.js',
      'dist/cli.js',
      'systemd/gpu-textfile.timer',
      'cron/gpu-textfile',
      'examples/alerts.yml',
      // The guide the units' Documentation= names, and the README links to.
      'docs/deployment.md',
      // koffi's native modules for --source nvml, for both CPUs the package supports.
      'dist/nvml.js',
      'dist/koffi/linux_x64/koffi.node',
      'dist/koffi/linux_arm64/koffi.node',
    ])
      expect([path, paths.includes(path)]).toEqual([path, true]);
    expect(paths.filter((path) => path.startsWith('src/') || path.startsWith('test/'))).toEqual([]);

    const prefix = join(work, 'prefix');
    const install = await execa(
      'npm',
      ['install', '--global', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(work, filename)],
      { env, extendEnv: false, reject: false },
    );
    expect({ exit: install.exitCode, err: install.stderr }).toMatchObject({ exit: 0 });
    const installed = join(prefix, 'lib/node_modules/gpu-textfile');
    // Nothing pulled in: no node_modules beside the package, no other package installed.
    expect(await exists(join(installed, 'node_modules'))).toBe(false);
    expect(await readdir(join(prefix, 'lib/node_modules'))).toEqual(['gpu-textfile']);

    const command = join(prefix, 'bin/gpu-textfile');
    const cwd = await tempDir();
    const version = await execa(command, ['--version'], { cwd, env: cliEnv(), extendEnv: false, reject: false });
    const { version: expected } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect({ exit: version.exitCode, out: version.stdout }).toEqual({ exit: 0, out: expected });
    const collect = await execa(command, ['collect', '--dry-run', '--nvidia-smi', FAKE_SMI], {
      cwd,
      env: cliEnv({ FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') }),
      extendEnv: false,
      reject: false,
    });
    expect({ exit: collect.exitCode, err: collect.stderr }).toEqual({ exit: 0, err: '' });
    expect(collect.stdout).toMatch(/^nvidia_gpu_collector_success 1$/m);
    // The demo's recordings are found beside the installed bundle, not in this checkout.
    const demo = await execa(command, ['collect', '--dry-run', '--source', 'demo'], {
      cwd,
      env: cliEnv(),
      extendEnv: false,
      reject: false,
    });
    expect({ exit: demo.exitCode, err: demo.stderr }).toEqual({ exit: 0, err: '' });
    expect(demo.stdout).toMatch(/^nvidia_gpu_up\{source="demo",gpu="1",/m);
    // The NVML source runs from the installed copy: its bundle and koffi's native module found beside cli.js.
    await writeFile(join(cwd, 'stand-in.conf'), standInConfig(capture('h200x2__580.159.04__linux-idle')));
    const nvml = await execa(command, ['collect', '--dry-run', '--source', 'nvml', '--nvml-library', standInLibrary()], {
      cwd,
      env: cliEnv({ NVML_STAND_IN: join(cwd, 'stand-in.conf') }),
      extendEnv: false,
      reject: false,
    });
    expect({ exit: nvml.exitCode, err: nvml.stderr }).toEqual({ exit: 0, err: '' });
    expect(nvml.stdout).toMatch(/^nvidia_gpu_up\{gpu="1",/m);
    // report --demo's generator is bundled too: the page is written from the installed copy.
    const page = join(cwd, 'report.html');
    const report = await execa(command, ['report', '--demo', '--format', 'html', '--out', page], {
      cwd,
      env: cliEnv(),
      extendEnv: false,
      reject: false,
    });
    expect(report.exitCode).toBe(0);
    const demoDir = /in (\S+)\n?$/.exec(report.stderr)?.[1];
    if (demoDir) await rm(demoDir, { recursive: true, force: true });
    expect(await readFile(page, 'utf8')).toMatch(/memory_growth/);
  }, 120_000);
});
