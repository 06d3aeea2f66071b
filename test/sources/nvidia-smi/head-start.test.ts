import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseProcessStat } from '../../../src/host/process-stat.js';
import {
  forgetRecords,
  headStartName,
  keepRecord,
  parseRecord,
  recordFits,
  recordText,
} from '../../../src/sources/nvidia-smi/head-start.js';
import { startRecordedCalls } from '../../../src/sources/nvidia-smi/head-start-calls.js';
import { runSmi } from '../../../src/sources/nvidia-smi/run.js';
import { FAKE_SMI, capture, eventually, tempDir } from '../../support/helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');
const QUERY = ['--query-gpu=index,uuid,power.draw', '--format=csv,noheader,nounits'];
const APPS = ['--query-compute-apps=gpu_uuid,pid', '--format=csv,noheader,nounits'];

/** Whether process `pid` is still running (a zombie has ended). */
function running(pid: number): boolean {
  try {
    return parseProcessStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state !== 'Z';
  } catch {
    return false;
  }
}

/** A command that writes its pid to `<dir>/pid` and then waits ten minutes, as a hung nvidia-smi would. */
function hangingCommand(dir: string): { command: string; pid: () => number | undefined } {
  const command = join(dir, 'hang');
  const pidFile = join(dir, 'pid');
  writeFileSync(command, `#!/bin/sh\necho $$ > '${pidFile}.tmp' && mv '${pidFile}.tmp' '${pidFile}'\nexec sleep 600\n`, { mode: 0o755 });
  return { command, pid: () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) : undefined) };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('a head start record', () => {
  const record = { command: '/usr/bin/nvidia-smi', calls: [QUERY, APPS], timeoutMs: 10_000 };

  it('reads back as written', () => expect(parseRecord(recordText(record))).toEqual(record));

  it.each([
    ['not JSON', '{"version":1,'],
    ['another version', recordText(record).replace('"version":1', '"version":2')],
    ['a call that is no --query-*', recordText({ ...record, calls: [['--help-query-gpu']] })],
    ['a call that starts with -i', recordText({ ...record, calls: [['-i', '0', ...QUERY]] })],
    ['a call that writes a file (-f)', recordText({ ...record, calls: [[...QUERY, '-f', '/etc/passwd']] })],
    ['another format', recordText({ ...record, calls: [[QUERY[0]!, '--format=csv']] })],
    ['a field name no driver has', recordText({ ...record, calls: [['--query-gpu=index;reboot', QUERY[1]!]] })],
    ['another query', recordText({ ...record, calls: [['--query-retired-pages=gpu_uuid', QUERY[1]!]] })],
    ['three calls', recordText({ ...record, calls: [QUERY, APPS, QUERY] })],
    ['no call', recordText({ ...record, calls: [] })],
    ['a NUL in an argument', recordText({ ...record, calls: [[`${QUERY[0]}\0`]] })],
    ['an empty command', recordText({ ...record, command: '' })],
    ['a timeout of 0', recordText({ ...record, timeoutMs: 0 })],
    ['a timeout past an hour', recordText({ ...record, timeoutMs: 3_600_001 })],
    ['a fractional timeout', recordText({ ...record, timeoutMs: 1.5 })],
  ])('is refused with %s', (_what, text) => expect(parseRecord(text)).toBeUndefined());
});

describe('recordFits', () => {
  const now = Date.UTC(2026, 11, 3, 14, 0);
  it('takes a small record written in the last ten minutes, either way of a clock step', () => {
    expect(recordFits({ size: 900, mtimeMs: now - 15_000 }, now)).toBe(true);
    expect(recordFits({ size: 900, mtimeMs: now - 10 * 60_000 }, now)).toBe(true);
    expect(recordFits({ size: 900, mtimeMs: now + 60_000 }, now)).toBe(true);
  });
  it('refuses one from a configuration gone for longer, or one too large to be ours', () => {
    expect(recordFits({ size: 900, mtimeMs: now - 10 * 60_000 - 1 }, now)).toBe(false);
    expect(recordFits({ size: 900, mtimeMs: now + 11 * 60_000 }, now)).toBe(false);
    expect(recordFits({ size: 64 * 1024 + 1, mtimeMs: now }, now)).toBe(false);
  });
});

describe('headStartName', () => {
  const env = { GPU_TEXTFILE_TASK: 'a', PATH: '/usr/bin' };

  it('is one name per command line and GPU_TEXTFILE_* settings', () => {
    const name = headStartName(['collect'], env);
    expect(name).toMatch(/^gpu-textfile-head-start-[0-9a-f]{8}\.json$/);
    // Other variables, and the order the settings come in, do not matter.
    expect(headStartName(['collect'], { PATH: '/bin', GPU_TEXTFILE_TASK: 'a' })).toBe(name);
    expect(headStartName(['collect', '--no-processes'], env)).not.toBe(name);
    expect(headStartName(['collect'], { ...env, GPU_TEXTFILE_TASK: 'b' })).not.toBe(name);
    expect(headStartName(['collect'], { ...env, GPU_TEXTFILE_SLOW_FIELDS: '1' })).not.toBe(name);
  });
});

describe('keepRecord and forgetRecords', () => {
  it('write a record only this user may change, and remove every record but nothing else', async () => {
    const dir = await tempDir();
    const file = join(dir, 'cache', headStartName(['collect'], {}));
    const other = join(dir, 'cache', headStartName(['collect', '--no-processes'], {}));
    expect(keepRecord(file, { command: 'nvidia-smi', calls: [QUERY], timeoutMs: 10_000 })).toBeUndefined();
    expect(keepRecord(other, { command: 'nvidia-smi', calls: [APPS], timeoutMs: 10_000 })).toBeUndefined();
    expect(statSync(file).mode & 0o777).toBe(0o644);
    expect(parseRecord(readFileSync(file, 'utf8'))?.calls).toEqual([QUERY]);
    writeFileSync(join(dir, 'cache', 'gpu-textfile-0123-v24.0.0-x64.v8cache'), 'bytecode');
    expect(forgetRecords(file)).toBeUndefined();
    expect(readdirSync(join(dir, 'cache'))).toEqual(['gpu-textfile-0123-v24.0.0-x64.v8cache']);
  });

  it('say in one line why a record cannot be kept', async () => {
    const dir = await tempDir();
    writeFileSync(join(dir, 'cache'), 'a file where the directory should be');
    expect(keepRecord(join(dir, 'cache', 'gpu-textfile-head-start-0.json'), { command: 'x', calls: [QUERY], timeoutMs: 1 })).toMatch(
      /not a directory/,
    );
  });
});

describe('startRecordedCalls', { timeout: 120_000 }, () => {
  it('starts the calls at once; runSmi takes one over and gets what a call of its own gets', async () => {
    vi.stubEnv('FAKE_SMI_CAPTURE', H200);
    const headStart = startRecordedCalls('/nonexistent/record.json', { command: FAKE_SMI, calls: [QUERY, APPS], timeoutMs: 60_000 });
    const call = headStart.take(FAKE_SMI, QUERY);
    expect(call?.child.pid).toBeGreaterThan(0);
    // Taken once; not for another command or other arguments.
    expect(headStart.take(FAKE_SMI, QUERY)).toBeUndefined();
    expect(headStart.take('/usr/bin/nvidia-smi', APPS)).toBeUndefined();
    expect(headStart.take(FAKE_SMI, [...APPS, '-i', '0'])).toBeUndefined();
    const taken = await runSmi(FAKE_SMI, QUERY, { timeoutMs: 60_000, takeOver: call });
    const own = await runSmi(FAKE_SMI, QUERY, { timeoutMs: 60_000 });
    expect(taken).toEqual(own);
    expect(taken.kind).toBe('ok');
    const apps = headStart.take(FAKE_SMI, APPS);
    expect(await runSmi(FAKE_SMI, APPS, { timeoutMs: 60_000, takeOver: apps })).toEqual(
      await runSmi(FAKE_SMI, APPS, { timeoutMs: 60_000 }),
    );
  });

  it('keeps every byte a call printed before it was taken, and its end', async () => {
    vi.stubEnv('FAKE_SMI_CAPTURE', H200);
    const headStart = startRecordedCalls('/nonexistent/record.json', { command: FAKE_SMI, calls: [QUERY], timeoutMs: 60_000 });
    const call = headStart.take(FAKE_SMI, QUERY)!;
    // Ended before anyone waits for it: its output and its 'close' were kept all the same.
    await call.ended;
    await sleep(0);
    expect(await runSmi(FAKE_SMI, QUERY, { timeoutMs: 60_000, takeOver: call })).toEqual(
      await runSmi(FAKE_SMI, QUERY, { timeoutMs: 60_000 }),
    );
  });

  it('kills a call nobody took when dropped', async () => {
    const dir = await tempDir();
    const hang = hangingCommand(dir);
    const headStart = startRecordedCalls(join(dir, 'record.json'), { command: hang.command, calls: [QUERY], timeoutMs: 600_000 });
    expect(await eventually(async () => hang.pid() !== undefined, 60_000)).toBe(true);
    expect(running(hang.pid()!)).toBe(true);
    headStart.drop();
    expect(await eventually(async () => !running(hang.pid()!), 60_000)).toBe(true);
    expect(headStart.take(hang.command, QUERY)).toBeUndefined();
  });

  it("kills a call nobody took at the record's timeout", async () => {
    const dir = await tempDir();
    const hang = hangingCommand(dir);
    // Long enough for the command to write its pid first, even on a busy machine.
    startRecordedCalls(join(dir, 'record.json'), { command: hang.command, calls: [QUERY], timeoutMs: 5000 });
    expect(await eventually(async () => hang.pid() !== undefined, 60_000)).toBe(true);
    expect(await eventually(async () => !running(hang.pid()!), 60_000)).toBe(true);
  });

  it('leaves a call that was taken to its taker: drop and the timeout no longer reach it', async () => {
    const dir = await tempDir();
    const hang = hangingCommand(dir);
    const headStart = startRecordedCalls(join(dir, 'record.json'), { command: hang.command, calls: [QUERY], timeoutMs: 300 });
    const call = headStart.take(hang.command, QUERY)!;
    headStart.drop();
    expect(await eventually(async () => hang.pid() !== undefined, 60_000)).toBe(true);
    // Its taker's deadline ends it: the record's (300 ms) and drop() did not.
    const outcome = await runSmi(hang.command, QUERY, { timeoutMs: 1500, graceMs: 200, takeOver: call });
    expect(outcome).toEqual({ kind: 'timeout', afterMs: 1500 });
  });
});
