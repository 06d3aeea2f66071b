import { chmod, cp, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, cliEnv, tempDir } from '../support/helpers.js';
import { nodeRuntime, runtimes } from '../support/packaging-runtime.js';

// The packaged program's startup snapshot (scripts/snapshot.mjs, `npm run package -- --snapshot`):
// bin/gpu-textfile starting from it, falling back to a normal start when Node.js refuses it, and the
// build's bytes reproducible. Every command run from it: test/packaging/runtimes.test.ts.

const { version: VERSION } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const { package: packaged, tested } = await runtimes();

/** scripts/snapshot.mjs: a snapshot built by `runtime`'s Node.js into `out`; resolves to its stderr. */
async function buildSnapshot(runtime: string, out: string): Promise<string> {
  const built = await execa(process.execPath, ['scripts/snapshot.mjs', '--node', join(runtime, 'bin/node'), '--out', out], {
    cwd: ROOT,
    timeout: 300_000,
  });
  return built.stderr;
}

/**
 * The package's program tree around `blob`: bin/gpu-textfile, the built dist/, and node/bin/node, which
 * writes each start's arguments into node/starts and runs `runtime`'s Node.js with them.
 */
async function programTree(runtime: string, blob?: string): Promise<string> {
  // As bin/gpu-textfile names it (readlink -f).
  const top = await realpath(await tempDir());
  await mkdir(join(top, 'bin'));
  await mkdir(join(top, 'node/bin'), { recursive: true });
  await symlink(join(runtime, 'bin/node'), join(top, 'node/real-node'));
  await writeFile(join(top, 'node/bin/node'), `#!/bin/sh\necho "$*" >> '${top}/node/starts'\nexec '${top}/node/real-node' "$@"\n`);
  await chmod(join(top, 'node/bin/node'), 0o755);
  await cp(join(ROOT, 'dist'), join(top, 'dist'), { recursive: true });
  if (blob) await cp(blob, join(top, 'dist/gpu-textfile.blob'));
  const launcher = await execa(process.execPath, ['scripts/snapshot.mjs', '--launcher'], { cwd: ROOT, stripFinalNewline: false });
  await writeFile(join(top, 'bin/gpu-textfile'), launcher.stdout);
  await chmod(join(top, 'bin/gpu-textfile'), 0o755);
  return top;
}

const run = (top: string, args: string[]) =>
  execa(join(top, 'bin/gpu-textfile'), args, { env: cliEnv({}), extendEnv: false, reject: false, timeout: 60_000 });

describe('the startup snapshot', () => {
  let runtime = '';
  let other = '';
  let blob = '';
  let dir = '';
  beforeAll(async () => {
    runtime = await nodeRuntime(packaged);
    other = await nodeRuntime(tested[tested.length - 1]!);
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-snapshot-test-'));
    blob = join(dir, 'gpu-textfile.blob');
    await buildSnapshot(runtime, blob);
  }, 600_000);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('is what bin/gpu-textfile starts from', async () => {
    const top = await programTree(runtime, blob);
    const demo = await run(top, ['collect', '--dry-run', '--source', 'demo']);
    expect({ exit: demo.exitCode, err: demo.stderr }).toEqual({ exit: 0, err: '' });
    expect(demo.stdout).toMatch(/^nvidia_gpu_up\{source="demo",gpu="1",/m);
    // One start, from the snapshot, with the launcher's path first (where the program finds dist/).
    const starts = (await readFile(join(top, 'node/starts'), 'utf8')).trim().split('\n');
    expect(starts).toEqual([
      `--snapshot-blob ${top}/bin/../dist/gpu-textfile.blob ${top}/bin/../dist/gpu-textfile.js collect --dry-run --source demo`,
    ]);
  }, 120_000);

  it("is not used by run, whose exit status is its job's: a job that exits 14 runs once", async () => {
    const top = await programTree(runtime, blob);
    const job = await run(top, [
      'run',
      '--source',
      'demo',
      '--interval',
      '200ms',
      '--',
      'sh',
      '-c',
      `echo ran >> '${top}/job-runs'; exit 14`,
    ]);
    expect({ exit: job.exitCode, runs: await readFile(join(top, 'job-runs'), 'utf8') }).toEqual({ exit: 14, runs: 'ran\n' });
    const starts = (await readFile(join(top, 'node/starts'), 'utf8')).trim().split('\n');
    expect(starts[0]).toBe(
      `${top}/bin/../dist/gpu-textfile.js run --source demo --interval 200ms -- sh -c echo ran >> '${top}/job-runs'; exit 14`,
    );
    expect(starts.every((start) => !start.includes('--snapshot-blob'))).toBe(true);
  }, 120_000);

  it('built by another Node.js is refused in one line, and the program starts as usual', async () => {
    const foreign = join(dir, 'other.blob');
    await buildSnapshot(other, foreign);
    const top = await programTree(runtime, foreign);
    for (const args of [['--version'], ['collect', '--dry-run', '--source', 'demo']]) {
      const started = await run(top, args);
      expect({ args, exit: started.exitCode }).toEqual({ args, exit: 0 });
      expect(started.stderr).toMatch(
        new RegExp(
          `^Failed to load the startup snapshot because it was built with ?Node\\.js version ${tested[tested.length - 1]!.replace(/\./g, '\\.')} and the current Node\\.js version is v${packaged.replace(/\./g, '\\.')}\\.$`,
        ),
      );
    }
    expect((await run(top, ['--version'])).stdout).toBe(VERSION);
    // Each start tried the snapshot, then started without it.
    const starts = (await readFile(join(top, 'node/starts'), 'utf8')).trim().split('\n');
    expect(starts.slice(0, 2)).toEqual([
      `--snapshot-blob ${top}/bin/../dist/gpu-textfile.blob ${top}/bin/../dist/gpu-textfile.js --version`,
      `${top}/bin/../dist/gpu-textfile.js --version`,
    ]);
  }, 300_000);

  it('without one, bin/gpu-textfile starts as the npm route does', async () => {
    const top = await programTree(runtime);
    const version = await run(top, ['--version']);
    expect({ exit: version.exitCode, out: version.stdout, err: version.stderr }).toEqual({ exit: 0, out: VERSION, err: '' });
    expect(await readFile(join(top, 'node/starts'), 'utf8')).toBe(`${top}/bin/../dist/gpu-textfile.js --version\n`);
  }, 120_000);

  it('is built reproducibly: two builds of one tree, the same bytes', async () => {
    const again = join(dir, 'again.blob');
    // scripts/snapshot.mjs says on stderr when it could not build in namespaces of its own.
    expect(await buildSnapshot(runtime, again)).toBe('');
    expect((await readFile(again)).equals(await readFile(blob))).toBe(true);
  }, 300_000);
});
