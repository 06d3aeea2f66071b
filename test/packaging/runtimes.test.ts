import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, FAKE_SMI, FIXTURES, ROOT, capture, cliEnv, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';
import { nodeRuntime, runtimes } from '../support/packaging-runtime.js';

const { version: VERSION, engines } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};
const { package: packaged, tested, unsupported } = await runtimes();

/** The built program run by the Node.js in `runtime` (from the startup snapshot `blob`, when given); never rejects. */
const runWith = (runtime: string, args: readonly string[], env: Record<string, string> = {}, cwd?: string, blob?: string) =>
  execa(join(runtime, 'bin/node'), [...(blob ? ['--snapshot-blob', blob] : []), CLI, ...args], {
    env: cliEnv(env),
    extendEnv: false,
    reject: false,
    cwd,
    timeout: 60_000,
  });

// Ubuntu 22.04's Node.js 12 and Ubuntu 24.04's / Debian 12's 18: the distributions most GPU hosts run.
describe.each(unsupported)('on Node.js %s, which engines does not claim', (version) => {
  let runtime = '';
  beforeAll(async () => {
    runtime = await nodeRuntime(version);
  }, 300_000);

  // Every command, and the bare program: one line naming the range needed and the version found, exit 1.
  it.each([
    ['--version'],
    ['collect', '--dry-run', '--source', 'demo'],
    ['archive'],
    ['doctor'],
    ['report'],
    ['pulse'],
    ['run', '--', 'true'],
    ['install', '--dry-run'],
    ['uninstall', '--dry-run'],
    ['completion'],
    [],
  ])('refuses %s in one line', async (...args) => {
    const run = await runWith(runtime, args);
    expect({ exit: run.exitCode, out: run.stdout, err: run.stderr }).toEqual({
      exit: 1,
      out: '',
      err: `gpu-textfile: needs Node.js ${engines.node}, found v${version} (${join(runtime, 'bin/node')})`,
    });
  });
});

// Each line engines claims, and the one the packages ship, also from its startup snapshot (built here
// as `npm run package -- --snapshot` builds it; Node.js would refuse one it did not build, exit 14):
// every command through the built program.
describe.each([...[...tested, packaged].map((version) => ({ version, snapshot: false })), { version: packaged, snapshot: true }])(
  'on Node.js $version (from a startup snapshot: $snapshot)',
  ({ version, snapshot }) => {
    let runtime = '';
    let blob: string | undefined;
    beforeAll(async () => {
      runtime = await nodeRuntime(version);
      if (!snapshot) return;
      blob = join(await mkdtemp(join(tmpdir(), 'gpu-textfile-snapshot-')), 'gpu-textfile.blob');
      await execa(process.execPath, ['scripts/snapshot.mjs', '--node', join(runtime, 'bin/node'), '--out', blob], {
        cwd: ROOT,
        timeout: 300_000,
      });
    }, 300_000);
    afterAll(async () => {
      if (blob) await rm(join(blob, '..'), { recursive: true, force: true });
    });
    const runOn = (runtimeDir: string, args: readonly string[], env: Record<string, string> = {}, cwd?: string) =>
      runWith(runtimeDir, args, env, cwd, blob);

    it('runs every command', async () => {
      const dir = await tempDir();
      const smi = { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') };
      const ok = async (args: string[], env: Record<string, string> = {}) => {
        const run = await runOn(runtime, args, env, dir);
        expect({ args, exit: run.exitCode, err: run.exitCode === 0 ? '' : run.stderr }).toEqual({ args, exit: 0, err: '' });
        return run.stdout;
      };
      expect((await runOn(runtime, ['--version'])).stdout).toBe(VERSION);
      // Through the launcher's code cache too, as the units run it.
      const cache = { ...smi, NODE_COMPILE_CACHE: join(dir, 'cache') };
      const collectArgs = [
        'collect',
        '--nvidia-smi',
        FAKE_SMI,
        '--csv-dir',
        join(dir, 'csv'),
        '--textfile-dir',
        madeDir(join(dir, 'tf')),
        '--state-dir',
        join(dir, 'state'),
      ];
      await ok(collectArgs, cache);
      await ok(collectArgs, cache);
      expect(await readFile(join(dir, 'tf/nvidia_gpu.prom'), 'utf8')).toMatch(/^nvidia_gpu_collector_success 1$/m);
      // koffi's native module, loaded by this runtime.
      await writeFile(join(dir, 'stand-in.conf'), standInConfig(capture('h200x2__580.159.04__linux-idle')));
      expect(
        await ok(['collect', '--dry-run', '--source', 'nvml', '--nvml-library', standInLibrary()], {
          NVML_STAND_IN: join(dir, 'stand-in.conf'),
        }),
      ).toMatch(/^nvidia_gpu_up\{gpu="1",/m);
      expect(JSON.parse(await ok(['report', '--csv-dir', join(dir, 'csv'), '--format', 'json']))).toMatchObject({ by: 'hour' });
      const exported = await ok(['export', '--csv-dir', join(dir, 'csv')]);
      expect(exported).toMatch(/^nvidia_gpu_collector_success\{[^}]*\binstance="[^"]+"[^}]*\} 1 \d+(\.\d+)?$/m);
      // The last line (the runner strips the final newline).
      expect(exported).toMatch(/\n# EOF\n?$/);
      await ok(['archive', '--csv-dir', join(dir, 'csv')]);
      const pulse = JSON.parse(await ok(['pulse', '--json', '--from', join(FIXTURES, 'series/h200__580.159.04__idle__lms200.csv')]));
      expect(pulse).toMatchObject({ verdict: 'idle' });
      // run's summary goes to stderr, its job's output to stdout.
      const job = await runOn(runtime, ['run', '--source', 'demo', '--interval', '200ms', '--', 'echo', 'job done'], {}, dir);
      expect({ exit: job.exitCode, out: job.stdout, summary: /GPU-hours/.test(job.stderr) }).toEqual({
        exit: 0,
        out: 'job done',
        summary: true,
      });
      expect(await ok(['install', '--dry-run', '--root', join(dir, 'root')])).toMatch(/gpu-textfile\.timer/);
      await ok(['uninstall', '--dry-run', '--root', join(dir, 'root')]);
      const doctor = await runOn(runtime, ['doctor', '--json', '--nvidia-smi', FAKE_SMI, '--timeout', '20s'], smi);
      expect(JSON.parse(doctor.stdout)).toMatchObject({ checks: expect.arrayContaining([expect.objectContaining({ id: 'pci_device' })]) });
      expect(await ok(['completion'])).toMatch(/gpu-textfile-completions/);
      expect(await ok(['help', 'collect'])).toMatch(/--textfile-dir/);
      // A dozen runs of the program: a minute on a quiet machine, several beside other work.
    }, 600_000);
  },
);
