import { execFile } from 'node:child_process';
import { chmod, copyFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { runSmi } from '../../../src/sources/nvidia-smi/run.js';
import { CLI, FAKE_BIN, FAKE_SMI, capture, cliEnv, tempDir } from '../../helpers.js';

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
      [CLI, 'collect', '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's'), '--nvidia-smi', hang, '--timeout', '60s'],
      { env: cliEnv(), extendEnv: false, reject: false },
    );
    const pgid = await groupOf(hang);
    collect.kill('SIGKILL');
    expect((await collect).signal).toBe('SIGKILL');
    expect(await groupGone(pgid)).toBe(true);
  });

  it('a SIGKILLed collect --interval leaves no silent nvidia-smi -lms behind', async () => {
    const dir = await tempDir();
    // A link of its own, so that this test's child is told apart from others' by its command line.
    const smi = join(dir, 'nvidia-smi');
    await symlink(FAKE_SMI, smi);
    const collect = execa(
      process.execPath,
      [CLI, 'collect', '--interval', '10s', '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's'), '--nvidia-smi', smi],
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

  it('a missing nvidia-smi is still reported as missing', async () => {
    const dir = await tempDir();
    expect(await runSmi(join(dir, 'nvidia-smi'), [], { timeoutMs: 20_000 })).toEqual({
      kind: 'not-found',
      command: join(dir, 'nvidia-smi'),
    });
  });
});
