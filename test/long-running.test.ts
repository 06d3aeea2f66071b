import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { execa } from 'execa';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkExposition } from '../src/exposition/check.js';
import { FIELDS } from '../src/fields.js';
import { backoffMs, latestOnly, MAX_BATCH_ROWS, runLongRunning, sampleSeconds, type LongRunningInput } from '../src/long-running.js';
import type { Collection } from '../src/metrics.js';
import type { SmiOutcome, SmiStream } from '../src/nvidia-smi/run.js';
import { CLI, FAKE_BIN, FAKE_SMI, capture, cliEnv, tempDir } from './helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');

interface Seen {
  /** Every reason the textfile gave, in order of first sight ('ok' for a good sample, 'none' before the first write). */
  reasons: Set<string>;
  /** The same, each change of reason in order. */
  changes: string[];
  /** CSV rows (without the header). */
  rows: string[];
  stderr: string;
}

/** Starts `collect --interval`, watches the textfile until `enough` (or 20 s), then stops it with SIGTERM. */
async function runUntil(enough: (seen: Seen) => boolean, env: Record<string, string>, interval = '200ms') {
  const dir = await tempDir();
  // The stand-in through a link in this test's directory: its children are told apart by their command line.
  await symlink(FAKE_SMI, join(dir, 'nvidia-smi'));
  const child = execa(process.execPath, [CLI, 'collect', '--interval', interval, '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's'), '--csv-dir', join(dir, 'c'), '--nvidia-smi', join(dir, 'nvidia-smi')], {
    env: cliEnv({ FAKE_SMI_CAPTURE: H200, ...env }),
    extendEnv: false,
    reject: false,
  });
  const seen: Seen = { reasons: new Set(), changes: [], rows: [], stderr: '' };
  child.stderr!.on('data', (chunk: Buffer) => (seen.stderr += String(chunk)));
  const csvRows = async () => (await readFile(join(dir, 'c/default.csv'), 'utf8').catch(() => '')).trim().split('\n').slice(1);
  // A generous deadline: on a busy machine start-up alone can take seconds. The test's own
  // assertions then say what was missing.
  for (const deadline = Date.now() + 20_000; !enough(seen) && Date.now() < deadline; await sleep(40)) {
    const text = await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8').catch(() => '');
    const sample = checkExposition(text).samples;
    const reason = sample.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason ?? (sample.length ? 'ok' : 'none');
    seen.reasons.add(reason);
    if (seen.changes.at(-1) !== reason) seen.changes.push(reason);
    seen.rows = await csvRows();
  }
  child.kill('SIGTERM');
  const result = await child;
  return { result, reasons: seen.reasons, changes: seen.changes, rows: await csvRows(), dir };
}

/** Whether `first` was seen and `then` after it. */
const followed = (changes: string[], first: string, then: string) => changes.includes(first) && changes.slice(changes.indexOf(first)).includes(then);

const smiChildren = async (dir: string) => {
  const { stdout } = await promisify(execFile)('ps', ['-eo', 'args']);
  return stdout.split('\n').filter((line) => line.includes('-lms') && line.includes(dir));
};

describe('collect --interval (long-running)', () => {
  it('publishes every sample from one nvidia-smi -lms child and stops cleanly on SIGTERM', async () => {
    const { result, reasons, rows, dir } = await runUntil((seen) => seen.rows.length >= 12, {});
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('');
    expect([...reasons].filter((r) => r !== 'none')).toEqual(['ok']);
    // The first sample comes from a one-shot run, the rest from the stream: about one per 200 ms.
    expect(rows.length / 2).toBeGreaterThanOrEqual(6);
    expect(rows.every((row) => row.split(',')[6] === 'ok')).toBe(true);
    expect(await readdir(join(dir, 't'))).toEqual(['nvidia_gpu.prom']);
    expect(await smiChildren(dir)).toEqual([]);
  });

  it('a child that stalls is killed, the file says timeout meanwhile, and a new child takes over', async () => {
    const stalled = /nvidia-smi -lms stopped: timeout: no line from nvidia-smi -lms for 600 ms \(3 intervals\); killed it; restarting in 1 s/;
    const { result, changes, rows } = await runUntil((seen) => stalled.test(seen.stderr) && followed(seen.changes, 'timeout', 'ok'), { FAKE_SMI_LOOP_STALL_AFTER: '2' });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(stalled);
    expect(followed(changes, 'timeout', 'ok')).toBe(true);
    expect(rows.some((row) => row.split(',')[6] === 'timeout')).toBe(true);
  });

  it('a child that exits is restarted after the failure is published', async () => {
    const { result, changes } = await runUntil((seen) => followed(seen.changes, 'gpu_lost', 'ok'), { FAKE_SMI_LOOP_EXIT_AFTER: '2' });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: gpu_lost: nvidia-smi -lms exited 1: Unable to determine the device handle/);
    expect(followed(changes, 'gpu_lost', 'ok')).toBe(true);
  });

  it('a child that keeps dying is restarted ever more slowly', async () => {
    const { result } = await runUntil((seen) => seen.stderr.match(/restarting in/g)?.length === 2, { FAKE_SMI_LOOP_EXIT_AFTER: '1' });
    expect(result.exitCode).toBe(0);
    const delays = [...result.stderr.matchAll(/restarting in (\d+) s/g)].map((m) => Number(m[1]));
    expect(delays.slice(0, 2)).toEqual([1, 2]);
  });

  it('garbage becomes unparsable_output, never numbers, and three garbage batches restart the child', async () => {
    const { result, reasons } = await runUntil((seen) => /\(3 batches in a row\)/.test(seen.stderr) && seen.reasons.has('unparsable_output'), { FAKE_SMI_LOOP_GARBAGE_AFTER: '1' });
    expect(result.exitCode).toBe(0);
    expect(reasons.has('unparsable_output')).toBe(true);
    expect(result.stderr).toMatch(/nvidia-smi -lms stopped: unparsable_output: .*\(3 batches in a row\)/);
  });

  it('SIGTERM while nvidia-smi is mid-line leaves the last good sample, not unparsable_output', async () => {
    const dir = await tempDir();
    const mark = join(dir, 'mid-line');
    const child = execa(process.execPath, [CLI, 'collect', '--interval', '1s', '--textfile-dir', join(dir, 't'), '--state-dir', join(dir, 's'), '--csv-dir', join(dir, 'c'), '--nvidia-smi', join(FAKE_BIN, 'partial-line')], {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200, FAKE_SMI_PARTIAL_MARK: mark }),
      extendEnv: false,
      reject: false,
    });
    // Two rows from the one-shot start, two from the stream's one sample: then it is mid-line.
    const csvRows = async () => (await readFile(join(dir, 'c/default.csv'), 'utf8').catch(() => '')).trim().split('\n').length - 1;
    for (const until = Date.now() + 20_000; !(existsSync(mark) && (await csvRows()) >= 4); await sleep(40)) {
      if (Date.now() > until) throw new Error('the stand-in never got mid-line');
    }
    child.kill('SIGTERM');
    const result = await child;
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const samples = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8')).samples;
    expect(samples.find((s) => s.name === 'nvidia_gpu_collector_error')).toBeUndefined();
    expect(samples.find((s) => s.name === 'nvidia_gpu_collector_success')?.value).toBe(1);
    expect((await readFile(join(dir, 'c/default.csv'), 'utf8')).trim().split('\n').slice(1).every((row) => row.split(',')[6] === 'ok')).toBe(true);
  });

  it('rejects an interval under 100 ms', async () => {
    const dir = await tempDir();
    const result = await execa(process.execPath, [CLI, 'collect', '--interval', '50ms', '--textfile-dir', dir], { reject: false, env: cliEnv(), extendEnv: false });
    expect([result.exitCode, result.stderr]).toEqual([2, 'gpu-textfile: --interval: "50ms" must be a duration of at least 100ms']);
  });
});

describe('backoffMs', () => {
  it.each([
    [250, 1, 1000],
    [250, 2, 2000],
    [15_000, 1, 15_000],
    [15_000, 3, 60_000],
    [250, 20, 60_000],
  ])('interval %d ms, failure %d -> %d ms', (interval, failures, expected) => expect(backoffMs(interval, failures)).toBe(expected));
});

// Unit tests of the loop itself: a fake child whose lines the test feeds, fake timers where the
// logic is about time.
const FIELDS_2 = FIELDS.filter((field) => field.query === 'index' || field.query === 'uuid');
const ROWS = ['0, GPU-d9041e44-56fa-e7d7-44d1-12664904be3d', '1, GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb'];
const good = (lastSuccessSeconds: number): Collection => ({ fields: FIELDS_2, samples: [], down: [], health: { durationSeconds: 0, lastSuccessSeconds } });

/** A stand-in -lms child: `feed` gives it lines, `stop` ends them (with `lastWords` first: what a killed child still had in the pipe). */
function fakeChild(lastWords: string[] = []) {
  const queue: string[] = [];
  let wake = () => {};
  let done = false;
  let resolveEnded: (outcome: SmiOutcome) => void = () => {};
  const child = { stopped: false, read: 0 };
  async function* lines() {
    for (;;) {
      while (queue.length > 0) {
        child.read++;
        yield queue.shift()!;
      }
      if (done) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  }
  const stream: SmiStream = {
    lines: lines(),
    stop: () => {
      if (child.stopped) return;
      child.stopped = true;
      queue.push(...lastWords);
      done = true;
      wake();
      resolveEnded({ kind: 'killed', signal: 'SIGTERM', output: '' });
    },
    ended: new Promise<SmiOutcome>((resolve) => (resolveEnded = resolve)),
  };
  return Object.assign(child, { stream, feed: (...more: string[]) => (queue.push(...more), wake()) });
}

/** runLongRunning with fakes all round; `children` are the -lms children it started, in order. */
function loop(overrides: Partial<LongRunningInput> & { child?: () => ReturnType<typeof fakeChild> } = {}) {
  const children: ReturnType<typeof fakeChild>[] = [];
  const published: Collection[] = [];
  const said: string[] = [];
  const stop = new AbortController();
  const { child = () => fakeChild(), ...rest } = overrides;
  const done = runLongRunning({
    fields: FIELDS_2,
    intervalMs: 200,
    startupGraceMs: 10_000,
    oneShot: async (state) => ({ collection: good(1), state, warnings: [] }),
    queryProcesses: async () => ({}),
    stream: () => {
      const next = child();
      children.push(next);
      return next.stream;
    },
    publish: async (collection) => void published.push(collection),
    saveState: async () => {},
    say: (line) => void said.push(line),
    now: Date.now,
    signal: stop.signal,
    initialState: { names: { index: 'index', uuid: 'uuid' } },
    ...rest,
  });
  return { children, published, said, stop: async () => (stop.abort(), await done), abort: () => stop.abort(), done };
}

const reasons = (published: Collection[]) => published.map((c) => c.health.failure?.reason ?? (c.samples.length > 0 ? 'sample' : 'start'));

/** Polls a condition (real time, generous deadline): for the tests that run on real timers. */
async function until(check: () => boolean, what: string) {
  for (const end = Date.now() + 20_000; !check(); await sleep(5)) if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
}

describe('runLongRunning', () => {
  afterEach(() => void vi.useRealTimers());

  it('a child that needs a while for its first row gets --timeout for it, not three intervals', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const run = loop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(run.children[0]?.stopped).toBe(false);
    run.children[0]!.feed(...ROWS, ROWS[0]!);
    await vi.advanceTimersByTimeAsync(0);
    expect(reasons(run.published)).toEqual(['start', 'sample']);
    await run.stop();
  });

  it('once it has printed, three silent intervals are a stall; none at all within --timeout is one too', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const silent = loop();
    await vi.advanceTimersByTimeAsync(9_999);
    expect(silent.children[0]?.stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(silent.children[0]?.stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(silent.said[0]).toMatch(/^nvidia-smi -lms stopped: timeout: no line from nvidia-smi -lms within 10000 ms of its start; killed it/);
    silent.abort();

    const stalled = loop();
    await vi.advanceTimersByTimeAsync(0);
    stalled.children[0]!.feed(...ROWS);
    await vi.advanceTimersByTimeAsync(599);
    expect(stalled.children[0]?.stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(stalled.children[0]?.stopped).toBe(true);
    stalled.abort();
    vi.useRealTimers();
    await Promise.all([silent.done, stalled.done]);
  });

  it('at most one process query is in flight, however short --processes-interval is', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const pending: (() => void)[] = [];
    const run = loop({ startupGraceMs: 60_000, processesIntervalMs: 1000, queryProcesses: () => new Promise((resolve) => void pending.push(() => resolve({}))) });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(pending.length).toBe(1);
    pending[0]!();
    await vi.advanceTimersByTimeAsync(1000);
    expect(pending.length).toBe(2);
    await run.stop();
  });

  it('a child flooding unreadable lines is cut off after three bounded batches, and restarted', async () => {
    const TOTAL = 50_000;
    const run = loop({
      child: () => {
        const child = fakeChild();
        // Lines as fast as they come, each of which would reset a flush timer; a yield now and then
        // lets timers run, as a pipe's reads do.
        child.stream.lines = (async function* () {
          for (let i = 0; i < TOTAL && !child.stopped; i++) {
            child.read++;
            if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
            yield '@@@ ??? ###';
          }
        })();
        return child;
      },
    });
    await until(() => run.said.length > 0, 'the child to be given up');
    expect(run.children[0]!.stopped).toBe(true);
    expect(run.children[0]!.read).toBeLessThanOrEqual(3 * MAX_BATCH_ROWS + 1);
    expect(run.said[0]).toMatch(/^nvidia-smi -lms stopped: unparsable_output: .*\(3 batches in a row\); restarting in 1 s$/);
    expect(run.published.filter((c) => c.health.failure?.reason === 'unparsable_output').length).toBeGreaterThanOrEqual(3);
    await run.stop();
  });

  it('stopping while the child is mid-line publishes nothing more: stopping is not a failure', async () => {
    const run = loop({ child: () => fakeChild([ROWS[0]!.slice(0, 12)]) });
    await until(() => run.children.length === 1, 'the child');
    run.children[0]!.feed(...ROWS, ROWS[0]!);
    await until(() => run.published.length === 2, 'the first sample');
    await run.stop();
    expect(run.children[0]!.stopped).toBe(true);
    expect(reasons(run.published)).toEqual(['start', 'sample']);
  });
});

describe('sampleSeconds', () => {
  it('is the query time (spacing less the interval) plus our own time', () => {
    expect(sampleSeconds(10_270, 10_000, 10_273, 250)).toBeCloseTo(0.023, 6);
    expect(sampleSeconds(10_000, undefined, 10_004, 250)).toBeCloseTo(0.004, 6);
    // A batch that came early (a clock step, a lagging previous read) costs no negative time.
    expect(sampleSeconds(10_200, 10_000, 10_200, 250)).toBe(0);
  });

  // The duration family said 0 for every sample of the long-running mode.
  it('is what the published samples carry', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const run = loop();
    await vi.advanceTimersByTimeAsync(0);
    run.children[0]!.feed(...ROWS);
    await vi.advanceTimersByTimeAsync(0);
    // nvidia-smi takes 30 ms for the next query after its 200 ms sleep.
    await vi.advanceTimersByTimeAsync(230);
    run.children[0]!.feed(...ROWS);
    await vi.advanceTimersByTimeAsync(0);
    const samples = run.published.filter((c) => c.samples.length > 0 && c.health.durationSeconds !== undefined);
    expect(samples.at(-1)?.health.durationSeconds).toBeCloseTo(0.03, 6);
    await run.stop();
  });
});

describe('latestOnly', () => {
  it('writes one at a time and keeps only the newest waiting collection', async () => {
    const written: number[] = [];
    let release = () => {};
    const publisher = latestOnly(async (c) => {
      written.push(c.health.lastSuccessSeconds!);
      await new Promise<void>((resolve) => (release = resolve));
    });
    void publisher.publish(good(1));
    for (let i = 2; i <= 1000; i++) void publisher.publish(good(i));
    release();
    await until(() => written.length === 2, 'the second write');
    release();
    await publisher.idle();
    expect(written).toEqual([1, 1000]);
  });
});
