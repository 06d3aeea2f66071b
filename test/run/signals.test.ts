import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { describe, expect, it } from 'vitest';
import { PASSED_SIGNALS } from '../../src/run/signals.js';
import { CLI, FAKE_SMI, capture, cliEnv, eventually, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// Signals sent to `run` (src/run/signals.ts) and to the daemon, through the built program: none opens
// Node's inspector (a debugger on 127.0.0.1:9229), each of run's reaches the job, and a job that a
// signal ends is reaped and summarised, its textfile removed. Every wait is on a condition.

const H200X2 = capture('h200x2__580.159.04__linux-load');

/** Node's line when its inspector opens (on SIGUSR1, without a listener). */
const INSPECTOR = /Debugger listening/;

/** TCP sockets `pid` listens on, by ss (the inspector's would be 127.0.0.1:9229). */
async function listening(pid: number): Promise<string[]> {
  const { stdout } = await execa('ss', ['-Hltnp']);
  return stdout.split('\n').filter((line) => line.includes(`pid=${pid},`));
}

/** Starts the built program with `args`; its stdout and stderr as they come. */
function start(args: string[], env: Record<string, string> = {}) {
  const child = execa(process.execPath, [CLI, ...args], {
    env: cliEnv({ FAKE_SMI_CAPTURE: H200X2, ...env }),
    extendEnv: false,
    reject: false,
    timeout: 90_000,
    stdin: 'ignore',
  });
  const seen = { out: '', err: '' };
  child.stdout!.on('data', (chunk: Buffer) => (seen.out += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (seen.err += chunk));
  return { child, seen, until: (text: string) => eventually(async () => seen.out.includes(text)) };
}

const runArgs = (dir: string, task: string) => [
  'run',
  '--nvidia-smi',
  FAKE_SMI,
  '--state-dir',
  join(dir, 's'),
  '--textfile-dir',
  madeDir(join(dir, 't')),
  '--interval',
  '100ms',
  '--task',
  task,
];

/** A job that says each of `signals` it gets, and ends once `go` exists. */
const trapping = (signals: string[], go: string) =>
  [...signals.map((s) => `trap 'echo got ${s}' ${s}`), 'echo ready', `while [ ! -e "${go}" ]; do sleep 0.05; done`].join('\n');

async function ended(child: ResultPromise) {
  const result = await child;
  return { exit: result.exitCode, timedOut: result.timedOut };
}

describe('run and signals', () => {
  it('SIGUSR1 and SIGUSR2 reach the job (a checkpoint request), and no debugger ever listens', async () => {
    const dir = await tempDir();
    const go = join(dir, 'go');
    const run = start([...runArgs(dir, 'ckpt'), '--', 'sh', '-c', trapping(['USR1', 'USR2'], go)]);
    expect(await run.until('ready\n')).toBe(true);
    run.child.kill('SIGUSR1');
    expect(await run.until('got USR1\n'), run.seen.err).toBe(true);
    run.child.kill('SIGUSR2');
    expect(await run.until('got USR2\n'), run.seen.err).toBe(true);
    // Both were handled by then: the inspector, had it opened, would be listening now.
    expect(await listening(run.child.pid!)).toEqual([]);
    await writeFile(go, '');
    expect(await ended(run.child)).toEqual({ exit: 0, timedOut: false });
    expect(run.seen.out).toBe('ready\ngot USR1\ngot USR2\n');
    expect(run.seen.err).not.toMatch(INSPECTOR);
    expect(run.seen.err).toContain('gpu-textfile run: ckpt: exit status 0');
  }, 120_000);

  // Those a job does not handle end it; run then ends as the job did, summary printed, file removed.
  it.each(PASSED_SIGNALS.map(({ signal }) => signal).filter((s) => s !== 'SIGUSR1' && s !== 'SIGUSR2'))(
    '%s ends a job that does not handle it, and run reports it',
    async (signal) => {
      const dir = await tempDir();
      const run = start([...runArgs(dir, 'sig'), '--', 'sh', '-c', 'echo ready; while :; do sleep 0.05; done']);
      expect(await run.until('ready\n')).toBe(true);
      // Its file is there while it runs.
      const file = join(dir, 't', 'gpu-textfile-run-sig.prom');
      expect(await eventually(async () => (await stat(file).catch(() => undefined)) !== undefined)).toBe(true);
      run.child.kill(signal);
      const status = 128 + constants.signals[signal];
      expect(await ended(run.child)).toEqual({ exit: status, timedOut: false });
      expect(run.seen.err).toContain(`gpu-textfile run: sig: killed by ${signal} (status ${status})`);
      expect(await readdir(join(dir, 't'))).toEqual([]);
    },
    120_000,
  );

  // SIGXFSZ (run's own write past a file size limit) and the real-time signals, which Node.js cannot
  // listen for: neither ends run under its job; the job goes on and ends as it would.
  it.each([
    ['SIGXFSZ', constants.signals.SIGXFSZ],
    ['SIGRTMIN+3', 34 + 3],
    ['SIGRTMAX', 64],
  ])(
    '%s sent to run leaves run and its job running',
    async (_name, signal) => {
      const dir = await tempDir();
      const go = join(dir, 'go');
      const job = `grep SigIgn /proc/$$/status; echo ready; while [ ! -e "${go}" ]; do sleep 0.05; done; echo done`;
      const run = start([...runArgs(dir, 'rt'), '--', 'sh', '-c', job]);
      expect(await run.until('ready\n')).toBe(true);
      // The job's textfile is up: run is past its start, the job running.
      const file = join(dir, 't', 'gpu-textfile-run-rt.prom');
      expect(await eventually(async () => (await stat(file).catch(() => undefined)) !== undefined)).toBe(true);
      process.kill(run.child.pid!, signal);
      await writeFile(go, '');
      expect(await ended(run.child)).toEqual({ exit: 0, timedOut: false });
      const [ignoredLine, ...rest] = run.seen.out.split('\n');
      expect(rest).toEqual(['ready', 'done', '']);
      // The job itself ignores none of the real-time signals (34 to 64): run ignores them only once it started.
      const ignored = BigInt(`0x${ignoredLine!.split(/\s+/)[1]}`);
      expect(ignored >> 33n).toBe(0n);
      expect(run.seen.err).toContain('gpu-textfile run: rt: exit status 0');
      expect(await readdir(join(dir, 't'))).toEqual([]);
    },
    120_000,
  );

  it('with NVML, the reader process answers SIGUSR1 with no debugger either', async () => {
    const dir = await tempDir();
    const config = join(dir, 'stand-in.conf');
    await writeFile(config, standInConfig(H200X2));
    const go = join(dir, 'go');
    const args = [...runArgs(dir, 'nvml'), '--source', 'nvml', '--nvml-library', standInLibrary()];
    const run = start([...args, '--', 'sh', '-c', trapping([], go)], { NVML_STAND_IN: config });
    expect(await run.until('ready\n')).toBe(true);
    const reader = await eventually(async () => (await readerOf(run.child.pid!)) !== undefined);
    expect(reader).toBe(true);
    const pid = (await readerOf(run.child.pid!))!;
    const file = join(dir, 't', 'gpu-textfile-run-nvml.prom');
    expect(await eventually(async () => (await stat(file).catch(() => undefined)) !== undefined)).toBe(true);
    process.kill(pid, 'SIGUSR1');
    // It goes on sampling: the textfile is written again, ten times, after the signal.
    for (let i = 0; i < 10; i++) {
      const before = (await stat(file)).mtimeMs;
      expect(await eventually(async () => (await stat(file)).mtimeMs > before)).toBe(true);
    }
    expect(await listening(pid)).toEqual([]);
    await writeFile(go, '');
    expect(await ended(run.child)).toEqual({ exit: 0, timedOut: false });
    expect(run.seen.err).not.toMatch(INSPECTOR);
  }, 120_000);
});

/** The pid of run's reader process (dist/gpu-reader.js), a child of `runPid`. */
async function readerOf(runPid: number): Promise<number | undefined> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(join('/proc', entry, 'status'), 'utf8').catch(() => '');
    const cmdline = await readFile(join('/proc', entry, 'cmdline'), 'utf8').catch(() => '');
    if (status.includes(`\nPPid:\t${runPid}\n`) && cmdline.includes('gpu-reader.js')) return Number(entry);
  }
  return undefined;
}
