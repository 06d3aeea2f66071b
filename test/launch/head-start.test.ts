import { chmodSync, chownSync, existsSync, linkSync, readFileSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { headStartFor } from '../../src/launch/head-start.js';
import { parseProcessStat } from '../../src/host/process-stat.js';
import { currentOwner, formatOwner } from '../../src/locks/owner.js';
import { dropCall } from '../../src/sources/nvidia-smi/call.js';
import { headStartName, keepRecord, parseRecord } from '../../src/sources/nvidia-smi/head-start.js';
import { startRecordedCalls } from '../../src/sources/nvidia-smi/head-start-calls.js';
import { execa } from 'execa';
import { CLI, FAKE_SMI, capture, cliEnv, collectIn, eventually, runCli, tempDir, madeDir } from '../support/helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');
const QUERY = ['--query-gpu=index,uuid', '--format=csv,noheader,nounits'];
const uid = process.geteuid?.() ?? 0;

/** Whether process `pid` is still running (a zombie has ended). */
function running(pid: number): boolean {
  try {
    return parseProcessStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state !== 'Z';
  } catch {
    return false;
  }
}

/** A command that writes its pid to `marker` and then waits ten minutes, as a hung nvidia-smi would. */
function hangingCommand(dir: string, marker: string): string {
  const command = join(dir, 'hang');
  writeFileSync(command, `#!/bin/sh\necho $$ > '${marker}.tmp' && mv '${marker}.tmp' '${marker}'\nexec sleep 600\n`, { mode: 0o755 });
  return command;
}

describe('headStartFor', { timeout: 120_000 }, () => {
  /** A cache directory holding a record of a hanging call for `args`; the record's path and the call's pid file. */
  async function withRecord(args: string[]) {
    const dir = await tempDir();
    const cache = join(dir, 'cache');
    const file = join(cache, headStartName(args, process.env));
    const marker = join(dir, 'started');
    const command = hangingCommand(dir, marker);
    expect(keepRecord(file, { command, calls: [QUERY], timeoutMs: 600_000 })).toBeUndefined();
    return { dir, cache, file, marker, command };
  }

  it('starts the calls of this command line’s record and claims it: a second start finds none', async () => {
    const { cache, file, marker, command } = await withRecord(['collect']);
    const first = headStartFor(cache, ['collect'], process.env, uid, () => startRecordedCalls);
    expect(first.file).toBe(file);
    expect(existsSync(file)).toBe(false);
    expect(await eventually(async () => existsSync(marker), 60_000)).toBe(true);
    const second = headStartFor(cache, ['collect'], process.env, uid, () => startRecordedCalls);
    expect(second.take(command, QUERY)).toBeUndefined();
    first.drop();
    const pid = Number(readFileSync(marker, 'utf8'));
    expect(await eventually(async () => !running(pid), 60_000)).toBe(true);
  });

  it('starts nothing for another command line', async () => {
    const { cache, file } = await withRecord(['collect']);
    const other = headStartFor(cache, ['collect', '--no-processes'], process.env, uid, () => startRecordedCalls);
    expect(other.file).not.toBe(file);
    expect(existsSync(file)).toBe(true);
  });

  /** Starts from the record after `spoil`, then says whether a call started (it would have claimed the record). */
  const refused = async (spoil: (file: string, dir: string) => void) => {
    const { dir, cache, file, marker, command } = await withRecord(['collect']);
    spoil(file, dir);
    const headStart = headStartFor(cache, ['collect'], process.env, uid, () => startRecordedCalls);
    const taken = headStart.take(command, QUERY);
    if (taken) dropCall(taken);
    return { started: taken !== undefined || existsSync(marker), claimed: !existsSync(file) };
  };

  it.each([
    ['writable by its group', (file: string) => chmodSync(file, 0o664)],
    ['writable by everyone', (file: string) => chmodSync(file, 0o646)],
    ['owned by another user', (file: string) => chownSync(file, 65534, 65534)],
    ['with a second name (a planted hard link)', (file: string, dir: string) => linkSync(file, join(dir, 'second-name'))],
  ])('refuses a record %s, and leaves it', async (_what, spoil) => {
    expect(await refused(spoil)).toEqual({ started: false, claimed: false });
  });

  it('refuses a link to a record', async () => {
    const result = await refused((file, dir) => {
      // The name is a link to a record that would otherwise be read.
      writeFileSync(join(dir, 'elsewhere.json'), readFileSync(file), { mode: 0o644 });
      unlinkSync(file);
      symlinkSync(join(dir, 'elsewhere.json'), file);
    });
    expect(result.started).toBe(false);
  });

  it('refuses a record written more than ten minutes ago (a configuration no longer in use), and leaves it', async () => {
    const old = new Date(Date.now() - 11 * 60_000);
    expect(await refused((file) => utimesSync(file, old, old))).toEqual({ started: false, claimed: false });
  });

  it('claims and starts nothing from a damaged record', async () => {
    expect(await refused((file) => writeFileSync(file, '{"version":1,"command":'))).toEqual({ started: false, claimed: true });
  });
});

/** A stand-in nvidia-smi that logs each call's arguments, one JSON line each, then answers from the capture. */
function loggingSmi(dir: string): { command: string; calls: () => string[][] } {
  const log = join(dir, 'calls.log');
  const command = join(dir, 'logging-smi');
  writeFileSync(command, `#!/bin/sh\nFAKE_SMI_LOG='${log}' exec '${process.execPath}' '${FAKE_SMI}' "$@"\n`, { mode: 0o755 });
  return {
    command,
    calls: () =>
      existsSync(log)
        ? readFileSync(log, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as string[])
        : [],
  };
}

const queries = (calls: string[][]) => calls.filter((args) => args[0]?.startsWith('--query-')).map((args) => args[0]!.split('=')[0]);

/**
 * A hanging command (its pid in `<dir>/started` once it runs) and a record of a call of it, planted
 * for the command line `argsFor(hang)` under `env`: what a launcher given that line begins.
 */
function hangingRecord(dir: string, env: Record<string, string>, argsFor: (hang: string) => string[]) {
  const marker = join(dir, 'started');
  const hang = hangingCommand(dir, marker);
  const args = argsFor(hang);
  const file = join(env.NODE_COMPILE_CACHE!, headStartName(args, cliEnv(env)));
  expect(keepRecord(file, { command: hang, calls: [QUERY], timeoutMs: 600_000 })).toBeUndefined();
  /** Whether the hanging call ran and has ended since (killed: it never ends on its own). */
  const ranAndEnded = async () =>
    existsSync(marker) && (await eventually(async () => !running(Number(readFileSync(marker, 'utf8'))), 60_000));
  return { marker, args, file, ranAndEnded };
}

describe('collect with a head start (NODE_COMPILE_CACHE set, as the units run it)', { timeout: 180_000 }, () => {
  // Loading Node's child_process takes 3-4 ms of a start: a command that starts no process must not pay it.
  it('loads the code that starts calls only when there is a record to start', async () => {
    const dir = await tempDir();
    const preload = join(dir, 'loaded.cjs');
    writeFileSync(
      preload,
      "process.on('exit', () => require('fs').writeSync(2, process.moduleLoadList.includes('NativeModule child_process') ? 'loaded' : 'not loaded'));\n",
    );
    const args = ['collect', '--dry-run', '--source', 'demo'];
    const env = cliEnv({ NODE_COMPILE_CACHE: join(dir, 'cache') });
    const run = await execa(process.execPath, ['-r', preload, CLI, ...args], { env, extendEnv: false, reject: false });
    expect([run.exitCode, run.stderr]).toEqual([0, 'not loaded']);
    // With a record for this command line, its calls start at once: child_process is loaded.
    keepRecord(join(dir, 'cache', headStartName(args, env)), { command: FAKE_SMI, calls: [QUERY], timeoutMs: 10_000 });
    const started = await execa(process.execPath, ['-r', preload, CLI, ...args], { env, extendEnv: false, reject: false });
    expect([started.exitCode, started.stderr]).toEqual([0, 'loaded']);
  });

  it('leaves a record after a run that succeeded; the next run takes its calls over and starts none again', async () => {
    const dir = await tempDir();
    const smi = loggingSmi(dir);
    const cache = join(dir, 'cache');
    // Each call takes a while: a call the launcher began and the run did not take over would be seen.
    const env = { FAKE_SMI_CAPTURE: H200, NODE_COMPILE_CACHE: cache, FAKE_SMI_DELAY_MS: '1000' };
    const args = collectIn(dir, '--nvidia-smi', smi.command);
    const file = join(cache, headStartName(args, cliEnv(env)));

    const first = await runCli(args, env);
    expect([first.exitCode, first.stderr]).toEqual([0, '']);
    // The first run learned the names: its first calls were --help-query-gpu and the processes.
    expect(parseRecord(readFileSync(file, 'utf8'))?.calls.map((call) => call[0]?.split('=')[0])).toEqual(['--query-compute-apps']);
    const second = await runCli(args, env);
    expect([second.exitCode, second.stderr]).toEqual([0, '']);
    const record = parseRecord(readFileSync(file, 'utf8'));
    expect(record?.calls.map((call) => call[0]?.split('=')[0])).toEqual(['--query-gpu', '--query-compute-apps']);
    expect(record?.command).toBe(smi.command);
    const before = smi.calls().length;

    const third = await runCli(args, env);
    expect([third.exitCode, third.stderr]).toEqual([0, '']);
    // One call of each: both begun by the launcher and taken over, none started twice.
    expect(queries(smi.calls().slice(before))).toEqual(expect.arrayContaining(['--query-gpu', '--query-compute-apps']));
    expect(smi.calls().slice(before)).toHaveLength(2);
    expect(smi.calls().slice(before)).toEqual(expect.arrayContaining(record!.calls));
    expect(readFileSync(join(dir, 't/nvidia_gpu.prom'), 'utf8')).toMatch(/^nvidia_gpu_power_draw_watts\{gpu="0"/m);
    expect(existsSync(file)).toBe(true);
  });

  it('kills a call of the record it would not have started, and runs its own', async () => {
    const dir = await tempDir();
    const env = { FAKE_SMI_CAPTURE: H200, NODE_COMPILE_CACHE: join(dir, 'cache') };
    // Its own nvidia-smi answers only once the record's call runs: proof that the launcher began it.
    const waiting = join(dir, 'waiting-smi');
    const marker = join(dir, 'started');
    writeFileSync(
      waiting,
      `#!/bin/sh\ni=0\nwhile [ ! -e '${marker}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\nexec '${process.execPath}' '${FAKE_SMI}' "$@"\n`,
      { mode: 0o755 },
    );
    // A record of another binary: the run would not start that call. A generous --timeout: its own
    // call waits for the record's to run, on a machine that may be busy.
    const { args, file, ranAndEnded } = hangingRecord(dir, env, () =>
      collectIn(dir, '--nvidia-smi', waiting, '--no-processes', '--timeout', '60s'),
    );

    const run = await runCli(args, env);
    expect([run.exitCode, run.stderr]).toEqual([0, '']);
    expect(await ranAndEnded()).toBe(true);
    // Claimed, and not written again: that run's first call asked for the field names, no --query-*.
    expect(existsSync(file)).toBe(false);
    expect((await runCli(args, env)).exitCode).toBe(0);
    expect(parseRecord(readFileSync(file, 'utf8'))?.command).toBe(waiting);
  });

  it('leaves no record after a run whose calls were answered but whose sample was not all kept', async () => {
    const dir = await tempDir();
    const cache = join(dir, 'cache');
    const env = { FAKE_SMI_CAPTURE: H200, NODE_COMPILE_CACHE: cache };
    // The CSV trail cannot be written (a file where its directory should be): the run fails, exit 1.
    writeFileSync(join(dir, 'not-a-dir'), '');
    const args = collectIn(dir, '--nvidia-smi', FAKE_SMI, '--csv-dir', join(dir, 'not-a-dir'));
    const file = join(cache, headStartName(args, cliEnv(env)));
    for (let run = 0; run < 2; run++) {
      const result = await runCli(args, env);
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(/not-a-dir/);
    }
    expect(existsSync(join(dir, 't/nvidia_gpu.prom'))).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('a collect killed while a call of the record runs takes it along (the guard)', async () => {
    const dir = await tempDir();
    const env = { FAKE_SMI_CAPTURE: H200, NODE_COMPILE_CACHE: join(dir, 'cache') };
    const { marker, args, ranAndEnded } = hangingRecord(dir, env, (hang) =>
      collectIn(dir, '--nvidia-smi', hang, '--no-processes', '--timeout', '60s'),
    );
    const collect = execa(process.execPath, [CLI, ...args], { env: cliEnv(env), extendEnv: false, reject: false });
    expect(await eventually(async () => existsSync(marker), 60_000)).toBe(true);
    collect.kill('SIGKILL');
    expect((await collect).signal).toBe('SIGKILL');
    expect(await ranAndEnded()).toBe(true);
  });

  it('a collect that finds another holding the lock (exit 75) kills the calls it began and leaves no record', async () => {
    const dir = await tempDir();
    const env = { NODE_COMPILE_CACHE: join(dir, 'cache') };
    const { marker, args, file, ranAndEnded } = hangingRecord(dir, env, (hang) => collectIn(dir, '--nvidia-smi', hang));
    // The lock of a collect still running: this test's own process, as owner.ts writes an owner.
    writeFileSync(join(dir, 't/.nvidia_gpu.prom.lock'), formatOwner(currentOwner()));
    const run = await runCli(args, env);
    expect([run.exitCode, run.stderr]).toEqual([75, expect.stringMatching(/another collect \(pid \d+\) is still running/)]);
    expect(existsSync(file)).toBe(false);
    // Began (the launcher claimed the record and started it), then killed.
    expect(await eventually(async () => existsSync(marker), 60_000)).toBe(true);
    expect(await ranAndEnded()).toBe(true);
  });

  it('leaves no record after a run that failed, or with --dry-run', async () => {
    const dir = await tempDir();
    const failing = join(dir, 'failing-capture');
    madeDir(failing);
    writeFileSync(join(failing, 'fail.txt'), 'Failed to initialize NVML: Unknown Error\n');
    writeFileSync(join(failing, 'fail.exit'), '255');
    const cache = join(dir, 'cache');
    const args = collectIn(dir, '--nvidia-smi', FAKE_SMI);
    const failedRun = { FAKE_SMI_CAPTURE: failing, NODE_COMPILE_CACHE: cache };
    const file = join(cache, headStartName(args, cliEnv(failedRun)));
    keepRecord(file, { command: FAKE_SMI, calls: [QUERY], timeoutMs: 10_000 });
    expect((await runCli(args, failedRun)).exitCode).toBe(1);
    expect(existsSync(file)).toBe(false);

    const dryArgs = ['collect', '--dry-run', '--nvidia-smi', FAKE_SMI];
    const dry = { FAKE_SMI_CAPTURE: H200, NODE_COMPILE_CACHE: cache };
    for (let run = 0; run < 2; run++) expect((await runCli(dryArgs, dry)).exitCode).toBe(0);
    expect(existsSync(join(cache, headStartName(dryArgs, cliEnv(dry))))).toBe(false);
  });
});
