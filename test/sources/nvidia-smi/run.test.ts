import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, copyFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { execa } from 'execa';
import { describe, expect, it, vi } from 'vitest';
import { gated } from '../../../src/sources/nvidia-smi/orphan-guard.js';
import { runSmi, streamSmi } from '../../../src/sources/nvidia-smi/run.js';
import { CLI, FAKE_BIN, FAKE_SMI, ROOT, capture, cliEnv, tempDir, madeDir, collectIn } from '../../support/helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');

/** Every process now: pid, process group, command line. */
async function processes() {
  const { stdout } = await promisify(execFile)('ps', ['-eo', 'pid=,pgid=,args=']);
  return stdout.split('\n').flatMap((line) => {
    const match = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    return match ? [{ pid: Number(match[1]), pgid: Number(match[2]), args: match[3]! }] : [];
  });
}

/** Polls until `check` holds, up to a generous deadline; returns its last value. */
async function waitFor<T>(check: () => Promise<T | undefined>, what: string, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await sleep(50);
  }
}

/** The process group led by a process whose command line has all of `texts` (nvidia-smi leads its own), once it runs. */
const groupOf = (...texts: string[]) =>
  waitFor(
    async () => (await processes()).find((p) => p.pid === p.pgid && texts.every((text) => p.args.includes(text)))?.pgid,
    `a group led by ${texts.join(' … ')}`,
  );
/** Resolves once no process of group `pgid` is left; fails after the deadline. */
const groupGone = (pgid: number) =>
  waitFor(async () => ((await processes()).some((p) => p.pgid === pgid) ? undefined : true), `process group ${pgid} to end`);

// Each wait may take up to a minute on a loaded machine (CI has two cores): the tests get two.
describe('no nvidia-smi outlives gpu-textfile', { timeout: 120_000 }, () => {
  it('a SIGKILLed collect leaves no hung nvidia-smi behind (hang ignores SIGTERM and sleeps a minute)', async () => {
    const dir = await tempDir();
    const hang = join(dir, 'hang');
    await copyFile(join(FAKE_BIN, 'hang'), hang);
    await chmod(hang, 0o755);
    const collect = execa(
      process.execPath,
      [CLI, 'collect', '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), '--nvidia-smi', hang, '--timeout', '60s'],
      { env: cliEnv(), extendEnv: false, reject: false },
    );
    const pgid = await groupOf(hang);
    collect.kill('SIGKILL');
    expect((await collect).signal).toBe('SIGKILL');
    expect(await groupGone(pgid)).toBe(true);
  });

  it('a SIGKILLed collect leaves neither of its two nvidia-smi calls behind: one guard watches both', async () => {
    const dir = await tempDir();
    // A link of its own (told apart from other tests' children by its command line), and a state
    // directory that knows the names: the next run asks --query-gpu and --query-compute-apps at once.
    const smi = join(dir, 'nvidia-smi');
    await symlink(FAKE_SMI, smi);
    const args = collectIn(dir, '--nvidia-smi', smi, '--timeout', '90s');
    const first = await execa(process.execPath, [CLI, ...args], {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200 }),
      extendEnv: false,
      reject: false,
    });
    expect(first.exitCode).toBe(0);
    const collect = execa(process.execPath, [CLI, ...args], {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200, FAKE_SMI_DELAY_MS: '90000' }),
      extendEnv: false,
      reject: false,
    });
    const groups = [await groupOf(`${smi} --query-gpu`), await groupOf(`${smi} --query-compute-apps`)];
    collect.kill('SIGKILL');
    expect((await collect).signal).toBe('SIGKILL');
    for (const pgid of groups) expect(await groupGone(pgid)).toBe(true);
  });

  it('a guard lets go of a group released, and kills the one still watched when gpu-textfile dies', async () => {
    const dir = await tempDir();
    // The guard module, bundled for a process of its own that plays gpu-textfile: two children in
    // groups of their own watched by one guard, the first released, then that process SIGKILLed.
    await build({
      stdin: {
        contents: `import { spawn } from 'node:child_process';
import { guardPool } from ${JSON.stringify(join(ROOT, 'src/sources/nvidia-smi/orphan-guard.ts'))};
const pool = guardPool();
const guards = [pool.guard(), pool.guard()];
const children = ['300', '301'].map((seconds) => spawn('sleep', [seconds], { detached: true, stdio: 'ignore' }));
children.forEach((child, i) => guards[i].watch(child.pid));
guards[0].release();
process.stdout.write(JSON.stringify(children.map((child) => child.pid)) + '\\n');
setInterval(() => {}, 1000);`,
        resolveDir: ROOT,
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: join(dir, 'plays-collect.mjs'),
      logLevel: 'silent',
    });
    const player = execa(process.execPath, [join(dir, 'plays-collect.mjs')], { reject: false, buffer: false });
    const [released, watched] = await new Promise<number[]>((resolve) =>
      player.stdout!.once('data', (data) => resolve(JSON.parse(String(data)))),
    );
    try {
      player.kill('SIGKILL');
      await player;
      expect(await groupGone(watched!)).toBe(true);
      // The guard read the release before the end of its pipe: the released group lives on.
      expect((await processes()).some((p) => p.pgid === released)).toBe(true);
    } finally {
      process.kill(-released!, 'SIGKILL');
    }
  });

  it('a SIGKILLed collect --interval leaves no silent nvidia-smi -lms behind', async () => {
    const dir = await tempDir();
    // A link of its own, so that this test's child is told apart from others' by its command line.
    const smi = join(dir, 'nvidia-smi');
    await symlink(FAKE_SMI, smi);
    const collect = execa(
      process.execPath,
      [CLI, 'collect', '--interval', '10s', '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), '--nvidia-smi', smi],
      {
        // Silent from the start: it never writes, so no SIGPIPE would ever end it.
        env: cliEnv({ FAKE_SMI_CAPTURE: H200, FAKE_SMI_LOOP_STALL_AFTER: '0' }),
        extendEnv: false,
        reject: false,
      },
    );
    const pgid = await groupOf(`${smi} --query-gpu`, ' -lms 10000');
    collect.kill('SIGKILL');
    expect((await collect).signal).toBe('SIGKILL');
    expect(await groupGone(pgid)).toBe(true);
  });

  it('a child that finishes is left alone: its exit status and output come through', async () => {
    const outcome = await runSmi(FAKE_SMI, ['--query-gpu=index,uuid', '--format=csv,noheader'], {
      timeoutMs: 20_000,
      env: { FAKE_SMI_CAPTURE: H200 },
    });
    expect(outcome).toEqual({ kind: 'ok', stdout: expect.stringMatching(/^0, GPU-d9041e44/) });
  });

  // Issue 33: gpu-textfile killed between the child's start and the guard learning its group left
  // the guard nothing to kill. The child now waits at a gate until the guard knows: killed before
  // that, we never open it, and nvidia-smi never runs.
  it('a gate never opened (gpu-textfile killed before its guard knew the group) runs no nvidia-smi', async () => {
    const dir = await tempDir();
    const log = join(dir, 'argv.log');
    const [file, args] = gated(FAKE_SMI, ['--query-gpu=index', '--format=csv', '-lms', '100']);
    const gate = spawn(file, args, { stdio: ['pipe', 'ignore', 'ignore'], env: cliEnv({ FAKE_SMI_CAPTURE: H200, FAKE_SMI_LOG: log }) });
    const exited = new Promise<number | null>((resolve) => gate.once('exit', resolve));
    // What the kernel does to our end of the pipe when we are killed.
    gate.stdin!.destroy();
    expect(await exited).toBe(0);
    expect(existsSync(log)).toBe(false);
  });

  it('an nvidia-smi that cannot be executed is reported so', async () => {
    const dir = await tempDir();
    await copyFile(FAKE_SMI, join(dir, 'nvidia-smi'));
    await chmod(join(dir, 'nvidia-smi'), 0o644);
    expect(await runSmi(join(dir, 'nvidia-smi'), [], { timeoutMs: 20_000 })).toEqual({
      kind: 'not-executable',
      command: join(dir, 'nvidia-smi'),
      message: 'Permission denied',
    });
  });

  it('an nvidia-smi -lms that cannot be executed is reported so too, not as an exit status of the gate', async () => {
    const dir = await tempDir();
    await copyFile(FAKE_SMI, join(dir, 'nvidia-smi'));
    await chmod(join(dir, 'nvidia-smi'), 0o644);
    const stream = streamSmi(join(dir, 'nvidia-smi'), ['--query-gpu=index', '--format=csv', '-lms', '1000']);
    for await (const _ of stream.lines);
    expect(await stream.ended).toEqual({ kind: 'not-executable', command: join(dir, 'nvidia-smi'), message: 'Permission denied' });
  });

  it("a child that cannot be started at all (an environment over the kernel's limit) is an outcome, not an exception", async () => {
    // execve refuses a single environment string over 128 KiB (E2BIG), which spawn() throws.
    const env = { HUGE: 'x'.repeat(300_000) };
    const outcome = await runSmi(FAKE_SMI, ['-L'], { timeoutMs: 20_000, env });
    expect(outcome).toEqual({ kind: 'exit', code: -1, output: expect.stringContaining('E2BIG') });
    const stream = streamSmi(FAKE_SMI, ['-lms', '1000'], { env });
    for await (const _ of stream.lines);
    expect(await stream.ended).toEqual({ kind: 'exit', code: -1, output: expect.stringContaining('E2BIG') });
  });

  it('an -lms child stopped after it ended on its own: no signal goes to its group, whose id may be reused', async () => {
    const stream = streamSmi('/bin/sh', ['-c', 'echo one line']);
    for await (const _ of stream.lines);
    expect(await stream.ended).toEqual({ kind: 'exit', code: 0, output: 'one line' });
    const kill = vi.spyOn(process, 'kill');
    try {
      stream.stop();
      expect(kill).not.toHaveBeenCalled();
    } finally {
      kill.mockRestore();
    }
  });

  it("an -lms child's last words are the end of its stderr, without its final newline", async () => {
    const dir = await tempDir();
    const smi = join(dir, 'nvidia-smi');
    // 100 KiB of warnings first, then the error that says why it stopped.
    await writeFile(
      smi,
      `#!/bin/sh\necho line1\ni=0; while [ $i -lt 2000 ]; do echo "warning $i: a line of fifty bytes or so, repeated" >&2; i=$((i+1)); done\necho 'Failed to initialize NVML: Driver/library version mismatch' >&2\nexit 9\n`,
    );
    await chmod(smi, 0o755);
    const stream = streamSmi(smi, ['-lms', '1000']);
    for await (const _ of stream.lines);
    const ended = await stream.ended;
    expect(ended).toEqual({ kind: 'exit', code: 9, output: expect.any(String) });
    const output = (ended as { output: string }).output;
    expect(output.endsWith('Failed to initialize NVML: Driver/library version mismatch\nline1')).toBe(true);
    expect(output.length).toBeLessThanOrEqual(64 * 1024 + 'line1'.length + 1);
  });

  it('a missing nvidia-smi is still reported as missing', async () => {
    const dir = await tempDir();
    expect(await runSmi(join(dir, 'nvidia-smi'), [], { timeoutMs: 20_000 })).toEqual({
      kind: 'not-found',
      command: join(dir, 'nvidia-smi'),
    });
  });
});
