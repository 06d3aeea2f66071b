import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Collection, Reading } from '../../src/collection.js';
import { appendCsvSample } from '../../src/csvlog/append.js';
import { CSV_HEADER, csvLine } from '../../src/csvlog/columns.js';
import { withFileLock } from '../../src/locks/file-lock.js';
import { publishTextfile, removeStaleTemps } from '../../src/publish/textfile.js';
import { readState, writeState } from '../../src/collect/state.js';
import { FILE_STEPS } from '../../src/files/file-steps.js';
import { FAULT_KINDS, Fault, faultySteps } from '../support/faults.js';
import { tempDir } from '../support/helpers.js';
import { smallTmpfs } from '../support/small-tmpfs.js';

// Every write path but archiving (test/csvlog/archive-faults.test.ts), with a fault at each of its steps in
// turn: what is left is the old file or the new one, never part of one, nothing is lost, and the next run,
// on a healed file system, works.

/** Names in `dir` but the filler a full disk leaves. */
const listing = async (dir: string) => (await readdir(dir)).filter((name) => name !== 'filler').sort();

describe('publishing the textfile and writing the state: a fault at each step', () => {
  // replaceFile's steps: write the temp file, set its mode, rename it over the old file.
  for (const kind of FAULT_KINDS) {
    for (const step of ['write', 'chmod', 'rename']) {
      it(`textfile, ${kind} at ${step}: the old file whole or the new one, never a part`, async () => {
        const disk = await smallTmpfs(1 << 20);
        await writeFile(join(disk, 'gpu.prom'), 'old 1\n');
        const fresh = `new ${'x'.repeat(8192)}\n`;
        const fault = new Fault(kind, disk);
        const failed = publishTextfile(disk, 'gpu.prom', fresh, faultySteps(fault, step));
        expect(fault.fired).toBe(true);
        const now = await readFile(join(disk, 'gpu.prom'), 'utf8');
        if (failed) {
          expect(failed).toEqual({ reason: 'write_failed', message: expect.stringMatching(/^cannot write \S+\/gpu\.prom: E[A-Z]+: /) });
          expect(now).toBe('old 1\n');
        } else expect(now).toBe(fresh);
        if (kind !== 'full' || step === 'write') expect(failed).toBeDefined();
        fault.heal();
        // A temp file only where a read-only file system kept its removal from working: the next run clears it.
        const left = (await listing(disk)).filter((name) => name !== 'gpu.prom');
        expect(left.length).toBe(kind === 'read-only' ? 1 : 0);
        expect(removeStaleTemps(disk, 'gpu.prom')).toEqual(left);
        expect(publishTextfile(disk, 'gpu.prom', fresh)).toBeUndefined();
        expect(await listing(disk)).toEqual(['gpu.prom']);
      });

      it(`state, ${kind} at ${step}: the old state or the new one, and a one-line reason`, async () => {
        const disk = await smallTmpfs(1 << 20);
        const before = { driverVersion: '580.1' };
        const after = { driverVersion: '580.2' };
        expect(await writeState(disk, {}, before)).toBeUndefined();
        const fault = new Fault(kind, disk);
        const why = await writeState(disk, before, after, faultySteps(fault, step));
        expect(fault.fired).toBe(true);
        fault.heal();
        if (why) {
          expect(why).toMatch(new RegExp(`^state not saved in ${disk}: E[A-Z]+: `));
          expect(readState(disk)).toEqual(before);
        } else expect(readState(disk)).toEqual(after);
        if (kind !== 'full' || step === 'write') expect(why).toBeDefined();
      });
    }
  }
});

describe('a bug is not a file error', () => {
  it('a step that throws something other than a file error is thrown, never reported as a failed write', async () => {
    const dir = await tempDir();
    const buggy = {
      ...FILE_STEPS,
      rename: () => {
        throw new TypeError('a bug');
      },
    };
    expect(() => publishTextfile(dir, 'gpu.prom', 'x 1\n', buggy)).toThrow('a bug');
    await expect(writeState(dir, {}, { driverVersion: '1' }, buggy)).rejects.toThrow('a bug');
    // The temp file went with it.
    expect(await readdir(dir)).toEqual([]);
  });
});

const HEADER = csvLine(CSV_HEADER);
/** `gpus` rows: 256 of them are several pages, more than a full tmpfs has left in the file's last page (a real short write). */
const sample = (utilization: string, gpus = 2): Collection => ({
  fields: [],
  samples: Array.from({ length: gpus }, (_, g) => ({
    gpu: String(g),
    uuid: `GPU-${g}`,
    readings: new Map<string, Reading>([['utilization.gpu', { kind: 'number', value: Number(utilization), shown: utilization }]]),
  })),
  down: [],
  health: { durationSeconds: 0 },
});
const at = new Date(2026, 10, 27, 12);

describe('appending to the CSV trail: a fault at each step', () => {
  // In order: the lock's owner record written to a temp file (write#1), linked to the lock's name (link#1), the
  // temp name removed (unlink#1); the rows appended (write#2, cut back by truncate#1 when it fails); the lock
  // released (unlink#2).
  const steps = ['write#1', 'link#1', 'unlink#1', 'write#2', 'truncate#1', 'unlink#2'];
  for (const kind of FAULT_KINDS) {
    for (const step of steps) {
      it(`${kind} at ${step}: the sample's rows all there or none, the rows before intact, the next append works`, async () => {
        const disk = await smallTmpfs(1 << 20);
        expect(await appendCsvSample(disk, 'job', sample('1'), { host: 'h', now: at })).toBeUndefined();
        const before = await readFile(join(disk, 'job.csv'), 'utf8');
        // truncate runs only to cut back a failed write: make that write fail first.
        const armed = step === 'truncate#1' ? new Fault('full', disk) : undefined;
        const fault = new Fault(kind, disk);
        const steps = faultySteps(fault, step);
        const cutBackAfterFull = armed && {
          ...steps,
          write: (fd: number, bytes: Buffer, offset: number, length: number) =>
            armed.step('write', 'write#2', () => steps.write(fd, bytes, offset, length)),
          writeText: (fd: number, text: string) => armed.step('write', 'write#2', () => steps.writeText(fd, text)),
        };
        const why = await appendCsvSample(disk, 'job', sample('2', 256), { host: 'h', now: at }, cutBackAfterFull || steps);
        // Every step of the path was reached and its fault made: a fault never made tests nothing.
        expect([fault.fired, armed?.fired ?? true]).toEqual([true, true]);
        armed?.heal();
        fault.heal();
        const after = await readFile(join(disk, 'job.csv'), 'utf8');
        const rows = after.slice(HEADER.length).split(/(?<=\n)/);
        expect(after.startsWith(before)).toBe(true);
        if (why) {
          expect(why).toMatch(/^write_failed: \S+\/job\.csv: .*; no row of this sample was kept$/);
          // A cut back that itself failed leaves a part row, on a line of its own: the next append starts a fresh line.
          if (!/cutting the partial row back off failed/.test(why)) expect(after).toBe(before);
        } else expect(rows.slice(2).map((line) => line.split(',')[7])).toEqual(Array(256).fill('2'));
        // A failed release comes after the rows were written: they are kept, and said to be.
        if (fault.fired && (kind !== 'full' || step === 'write#2') && step !== 'unlink#2') expect(why).toBeDefined();

        // Healed: the next sample is appended whole, and no lock was left behind, but where a read-only file
        // system kept the release from removing it: that lock names this live process, and a later run (another
        // process) judges it stale once this one has exited.
        const left = await listing(disk);
        if (kind === 'read-only' && left.includes('.job.csv.lock')) {
          // Only where the lock was taken before the file system went read-only (the release fails then).
          expect(step).toMatch(/^(unlink#1|write#2|truncate#1|unlink#2)$/);
          expect((await readFile(join(disk, '.job.csv.lock'), 'utf8')).split(' ')[0]).toBe(String(process.pid));
          return;
        }
        // A temp file whose removal failed (empty, or this process's owner line): removeLeftoverTemps clears it later.
        expect(left.filter((name) => name !== 'job.csv' && !/^\.\.job\.csv\.lock\.[0-9a-f]{16}\.tmp$/.test(name))).toEqual([]);
        expect(await appendCsvSample(disk, 'job', sample('3'), { host: 'h', now: at })).toBeUndefined();
        const last = (await readFile(join(disk, 'job.csv'), 'utf8')).split(/(?<=\n)/).slice(-2);
        expect(last.map((line) => line.split(',')[7])).toEqual(['3', '3']);
      });
    }
  }
});

describe('the file lock: a bug is not a file error', () => {
  /** FILE_STEPS whose n-th unlink throws `thrown[n]()` instead (the first two: the temp name, then the lock on release). */
  const unlinkThrows = (thrown: Record<number, () => Error>) => {
    let calls = 0;
    return {
      ...FILE_STEPS,
      unlink: (path: string) => {
        const error = thrown[++calls];
        if (error) throw error();
        FILE_STEPS.unlink(path);
      },
    };
  };
  const eio = () => Object.assign(new Error('EIO: injected'), { code: 'EIO', errno: -5, syscall: 'unlink' });
  const bug = () => new TypeError('a bug');

  it('a bug while releasing is thrown, never retried as a failed removal', async () => {
    const steps = unlinkThrows({ 2: bug });
    await expect(withFileLock(join(await tempDir(), 'x.lock'), 1000, async () => 'ran', steps)).rejects.toThrow('a bug');
  });
  it('a bug in the second try at a release that met a file error is thrown too', async () => {
    const steps = unlinkThrows({ 2: eio, 3: bug });
    await expect(withFileLock(join(await tempDir(), 'x.lock'), 1000, async () => 'ran', steps)).rejects.toThrow('a bug');
  });
});

describe('the file lock: a fault at each step', () => {
  for (const kind of FAULT_KINDS) {
    for (const step of ['write#1', 'link#1', 'unlink#1', 'unlink#2']) {
      it(`${kind} at ${step}: the work runs under the lock or not at all, and no lock outlives the call`, async () => {
        const disk = await smallTmpfs(1 << 20);
        const fault = new Fault(kind, disk);
        let ran = 0;
        const result = await withFileLock(join(disk, 'x.lock'), 1000, async () => ++ran, faultySteps(fault, step));
        fault.heal();
        if (typeof result === 'object') {
          expect(result.lockError).toMatch(/^cannot create \S+\/x\.lock: E[A-Z]+$/);
          expect(ran).toBe(0);
        } else expect(result).toBe(1);
        const left = await listing(disk);
        if (kind === 'read-only' && left.includes('x.lock')) {
          // The release could not remove it: it names this live process (see the append case above).
          expect(step).toMatch(/^unlink#[12]$/);
          return;
        }
        // Never the lock; a temp file (a few bytes, its owner line this process's) only where its removal failed:
        // on a read-only file system, or when the one failing call was that removal.
        const removalFailed = kind === 'read-only' || (kind === 'throws' && step === 'unlink#1');
        expect(left).toEqual(removalFailed ? [expect.stringMatching(/^\.x\.lock\.[0-9a-f]{16}\.tmp$/)] : []);
        expect(await withFileLock(join(disk, 'x.lock'), 1000, async () => 'again')).toBe('again');
      });
    }
  }
});
