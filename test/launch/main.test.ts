import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, cliEnv, eventually, tempDir, madeDir } from '../support/helpers.js';

describe('the installed command', () => {
  it('prints the package version from any working directory', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const run = await execa(process.execPath, [CLI, '--version'], { cwd: await tempDir(), env: cliEnv(), extendEnv: false, reject: false });
    expect({ exit: run.exitCode, out: run.stdout, err: run.stderr }).toEqual({ exit: 0, out: version, err: '' });
  });

  // `| head -1` closes the pipe after one line; `true` before the first: no stack trace, and a status the pipeline accepts.
  it('stops quietly when its reader closes the pipe', async () => {
    const root = await tempDir();
    for (const reader of ['head -1', 'true']) {
      const run = await execa(
        'bash',
        ['-o', 'pipefail', '-c', `"${process.execPath}" "${CLI}" install --dry-run --root "$1" | ${reader}`, 'sh', root],
        {
          env: cliEnv(),
          extendEnv: false,
          reject: false,
        },
      );
      expect({ reader, exit: run.exitCode, err: run.stderr, lines: run.stdout === '' ? 0 : run.stdout.split('\n').length }).toEqual({
        reader,
        exit: 0,
        err: '',
        lines: reader === 'true' ? 0 : 1,
      });
    }
  });
});

// A collect ends as soon as its work is written (src/launch/start.ts), but not before what it
// printed has gone: a pipe takes 64 KiB at once and the rest as its reader reads.
describe('collect --dry-run into a slow reader', () => {
  it('gets every line through, as a file does', async () => {
    const dir = await tempDir();
    // --compat and a long constant label make the sample far larger than a pipe holds (over 100 KiB).
    // An empty host root: the demo's processes are looked up on the host (their owners), and this
    // machine's pids come and go between the two runs (a busy machine's did, test:load).
    const args = [
      'collect',
      '--source',
      'demo',
      '--dry-run',
      '--compat',
      'dcgm,nvidia_gpu_exporter',
      '--label',
      `a=${'x'.repeat(300)}`,
      '--host-root',
      madeDir(join(dir, 'empty-host')),
    ];
    const run = (into: string) =>
      execa('bash', ['-o', 'pipefail', '-c', `"${process.execPath}" "${CLI}" "$@" ${into}`, 'sh', ...args], {
        env: cliEnv(),
        extendEnv: false,
      });
    expect((await run(`> "${join(dir, 'file')}"`)).exitCode).toBe(0);
    // The reader starts reading a second after the writer: the writer has long resolved its main() by then.
    expect((await run(`| (sleep 1; cat > "${join(dir, 'pipe')}")`)).exitCode).toBe(0);
    const file = await readFile(join(dir, 'file'), 'utf8');
    const pipe = await readFile(join(dir, 'pipe'), 'utf8');
    expect(file.length).toBeGreaterThan(100 * 1024);
    // The demo's values move with the clock between the two runs; its series, their order and the
    // comments do not: every line, less a sample's value.
    const lines = (text: string) => text.split('\n').map((line) => (line.startsWith('#') ? line : line.replace(/ [^ ]*$/, '')));
    expect(pipe.endsWith('\n')).toBe(true);
    expect(lines(pipe)).toEqual(lines(file));
  });
});

// Node's inspector opens on SIGUSR1 (a debugger on 127.0.0.1:9229) unless a listener is installed:
// the launcher installs one for every command. The daemon, run as root, is where it matters most.
describe('SIGUSR1', () => {
  it('the collect daemon goes on publishing, with no debugger listening', async () => {
    const dir = await tempDir();
    const textfiles = madeDir(join(dir, 't'));
    const daemon = execa(
      process.execPath,
      [CLI, 'collect', '--source', 'demo', '--interval', '100ms', '--textfile-dir', textfiles, '--state-dir', join(dir, 's')],
      { env: cliEnv(), extendEnv: false, reject: false, timeout: 90_000, stdin: 'ignore' },
    );
    const file = join(textfiles, 'nvidia_gpu.prom');
    expect(await eventually(async () => (await stat(file).catch(() => undefined)) !== undefined)).toBe(true);
    daemon.kill('SIGUSR1');
    // Ten more writes: the loop ran on well after the signal (the inspector, had it started, opens within them).
    for (let i = 0; i < 10; i++) {
      const before = (await stat(file)).mtimeMs;
      expect(await eventually(async () => (await stat(file)).mtimeMs > before)).toBe(true);
    }
    const { stdout } = await execa('ss', ['-Hltnp']);
    expect(stdout.split('\n').filter((line) => line.includes(`pid=${daemon.pid},`))).toEqual([]);
    daemon.kill('SIGTERM');
    const result = await daemon;
    expect([result.exitCode, result.timedOut]).toEqual([0, false]);
    expect(result.stderr).not.toMatch(/Debugger listening/);
  }, 120_000);
});
