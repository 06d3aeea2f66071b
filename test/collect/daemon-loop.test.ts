import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { failedCollection, type Collection } from '../../src/collection.js';
import { backoffMs, daemonLoop, MAX_BATCH_ROWS, MIN_STALL_MS, sampleSeconds, type DaemonLoopInput } from '../../src/collect/daemon-loop.js';
import { FIELDS } from '../../src/fields/fields.js';
import type { SmiOutcome, SmiStream } from '../../src/sources/nvidia-smi/run.js';
import { lmsRows } from '../../src/sources/nvidia-smi/source.js';

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
/** nvidia-smi's timestamp cell for a moment, in local time as it prints it: "2026/12/01 12:19:21.874". */
const smiTime = (ms: number) => {
  const t = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${t.getFullYear()}/${two(t.getMonth() + 1)}/${two(t.getDate())} ${two(t.getHours())}:${two(t.getMinutes())}:${two(t.getSeconds())}.${String(t.getMilliseconds()).padStart(3, '0')}`;
};
/** The -lms rows of two GPUs, each led by the timestamp of its query (the daemon asks for it first). */
const rowsAt = (ms: number) => [
  `${smiTime(ms)}, 0, GPU-d9041e44-56fa-e7d7-44d1-12664904be3d`,
  `${smiTime(ms)}, 1, GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb`,
];
const ROWS = rowsAt(Date.parse('2026-12-01T12:00:00Z'));
const good = (lastSuccessSeconds: number): Collection => ({
  fields: FIELDS_2,
  samples: [],
  down: [],
  health: { durationSeconds: 0, lastSuccessSeconds },
});

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
  return Object.assign(child, {
    stream,
    feed: (...more: string[]) => {
      queue.push(...more);
      wake();
    },
  });
}

/** daemonLoop with fakes all round; `children` are the -lms children it started, in order. */
function loop(overrides: Partial<DaemonLoopInput> & { child?: () => ReturnType<typeof fakeChild> } = {}) {
  const children: ReturnType<typeof fakeChild>[] = [];
  const published: Collection[] = [];
  const said: string[] = [];
  const stop = new AbortController();
  const { child = () => fakeChild(), ...rest } = overrides;
  const done = daemonLoop({
    fields: FIELDS_2,
    intervalMs: 200,
    startupGraceMs: 10_000,
    oneShot: async (state) => ({ collection: good(1), state, warnings: [] }),
    queryProcesses: async () => ({}),
    stream: (fields) => {
      const next = child();
      children.push(next);
      return lmsRows(next.stream, fields);
    },
    publish: async (collection) => void published.push(collection),
    saveState: async () => {},
    say: (line) => void said.push(line),
    now: Date.now,
    signal: stop.signal,
    initialState: { names: { index: 'index', uuid: 'uuid' } },
    ...rest,
  });
  return {
    children,
    published,
    said,
    stop: async () => {
      stop.abort();
      await done;
    },
    abort: () => stop.abort(),
    done,
  };
}

const reasons = (published: Collection[]) => published.map((c) => c.health.failure?.reason ?? (c.samples.length > 0 ? 'sample' : 'start'));

/** Polls a condition (real time, generous deadline): for the tests that run on real timers. */
async function until(check: () => boolean, what: string) {
  for (const end = Date.now() + 60_000; !check(); await sleep(5)) if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
}

describe('daemonLoop', () => {
  afterEach(() => void vi.useRealTimers());

  // Issue 39: a reader prints its first row as it starts; started at once, it sampled 213 ms after the
  // one-shot, the same values twice. The samples are an interval apart from the first.
  it('starts the reader an interval after the first one-shot, not at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const run = loop({ intervalMs: 1000 });
    await vi.advanceTimersByTimeAsync(999);
    expect([run.published.length, run.children.length]).toEqual([1, 0]);
    await vi.advanceTimersByTimeAsync(1);
    expect(run.children.length).toBe(1);
    await run.stop();
  });

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

  it('once it has printed, three silent intervals (two seconds at least) are a stall; none at all within --timeout is one too', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const silent = loop();
    // The reader starts an interval after the first one-shot.
    await vi.advanceTimersByTimeAsync(200);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(silent.children[0]?.stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(silent.children[0]?.stopped).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(silent.said[0]).toMatch(
      /^nvidia-smi -lms stopped: timeout: no line from nvidia-smi -lms within 10000 ms of its start; killed it/,
    );
    silent.abort();

    // Three intervals of 1 s; at 200 ms, three intervals would be 600 ms: two seconds at least.
    const stalls: [number, number][] = [
      [1000, 3000],
      [200, MIN_STALL_MS],
    ];
    const stalled = stalls.map(([intervalMs]) => loop({ intervalMs }));
    // Both readers started (each an interval after its one-shot).
    await vi.advanceTimersByTimeAsync(1000);
    for (const run of stalled) run.children[0]!.feed(...ROWS);
    let elapsed = 0;
    for (const [i, [, stallMs]] of [...stalls.entries()].sort((a, b) => a[1][1] - b[1][1])) {
      await vi.advanceTimersByTimeAsync(stallMs - 1 - elapsed);
      expect(stalled[i]!.children[0]?.stopped, `interval ${stalls[i]![0]} ms`).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(stalled[i]!.children[0]?.stopped, `interval ${stalls[i]![0]} ms`).toBe(true);
      elapsed = stallMs;
    }
    for (const run of stalled) run.abort();
    vi.useRealTimers();
    await Promise.all([silent.done, ...stalled.map((run) => run.done)]);
  });

  it('at most one process query is in flight, however short --processes-interval is', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const pending: (() => void)[] = [];
    const run = loop({
      startupGraceMs: 60_000,
      processesIntervalMs: 1000,
      queryProcesses: () => new Promise((resolve) => void pending.push(() => resolve({}))),
    });
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

  it('while a GPU is lost, a one-shot read publishes every interval on its cadence, and the reader waits until it answers', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const lostOne: Collection = { ...good(1), down: [{ gpu: '1', uuid: 'GPU-1', reason: 'gpu_lost' }] };
    let lost = true;
    const reads: number[] = [];
    const run = loop({
      oneShot: async (state) => {
        reads.push(Date.now());
        return { collection: lost ? lostOne : good(2), state, warnings: lost ? ['GPU 1 (GPU-1) did not answer'] : [] };
      },
    });
    await vi.advanceTimersByTimeAsync(1000);
    // One read at the start, then one each 200 ms interval; no reader started meanwhile, no failure published.
    expect(reads.map((at) => at - reads[0]!)).toEqual([0, 200, 400, 600, 800, 1000]);
    expect(run.children).toEqual([]);
    expect(run.published.every((c) => c.down.length === 1 && !c.health.failure)).toBe(true);
    expect(run.said).toEqual(['GPU 1 (GPU-1) did not answer']);
    lost = false;
    // The one-shot that finds every GPU, then the reader an interval after it.
    await vi.advanceTimersByTimeAsync(400);
    expect(run.children.length).toBe(1);
    expect(run.said.at(-1)).toMatch(/^every GPU answers again/);
    await run.stop();
  });

  it('every GPU lost and nvidia-smi slow on it: the failure said once, each one-shot followed by a pause as long as it took', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const failure = { reason: 'gpu_lost' as const, message: 'Unable to determine the device handle for GPU 00000000:00:06.0' };
    const allLost: Collection = { ...failedCollection(failure, 0), down: [{ gpu: '0', uuid: 'GPU-0', reason: 'gpu_lost' }] };
    const reads: { start: number; end: number }[] = [];
    const run = loop({
      oneShot: async (state) => {
        const start = Date.now();
        // Longer than the 200 ms interval: a query that touches a lost GPU can take seconds.
        await new Promise((resolve) => setTimeout(resolve, 500));
        reads.push({ start, end: Date.now() });
        return { collection: allLost, state, warnings: [] };
      },
    });
    await vi.advanceTimersByTimeAsync(5000);
    expect(reads.length).toBeGreaterThanOrEqual(3);
    for (const [i, read] of reads.entries()) if (i > 0) expect(read.start - reads[i - 1]!.end).toBeGreaterThanOrEqual(500);
    expect(run.said).toEqual([`gpu_lost: ${failure.message}`]);
    expect(run.children).toEqual([]);
    // A one-shot may be under way: the loop ends once it returns.
    const stopping = run.stop();
    await vi.advanceTimersByTimeAsync(1000);
    await stopping;
  });

  it('a reader that ends on a lost GPU publishes the one-shot read that names it, not its failure', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const lostOne: Collection = { ...good(1), down: [{ gpu: '1', uuid: 'GPU-1', reason: 'gpu_lost' }] };
    let reads = 0;
    const run = loop({
      oneShot: async (state) => ({ collection: ++reads > 1 ? lostOne : good(1), state, warnings: [] }),
      child: () => {
        const child = fakeChild();
        child.stream.ended = Promise.resolve({ kind: 'exit', code: 15, output: 'Unable to determine the device handle for GPU 1' });
        return child;
      },
    });
    await vi.advanceTimersByTimeAsync(200);
    run.children[0]!.feed(...ROWS);
    run.children[0]!.stream.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(reasons(run.published).filter((r) => r !== 'sample' && r !== 'start')).toEqual([]);
    expect(run.published.at(-1)?.down).toEqual(lostOne.down);
    expect(reads).toBeGreaterThanOrEqual(6);
    expect(run.said[0]).toMatch(/^nvidia-smi -lms stopped: .*a GPU is lost: one-shot reads every interval while it stays lost$/);
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
  const sample = (takenAt?: number) => ({ gpu: '0', uuid: 'GPU-0', readings: new Map(), ...(takenAt === undefined ? {} : { takenAt }) });
  it('runs from when the source took the sample (its earliest row) to the collection', () => {
    expect(sampleSeconds({ samples: [sample(10_012), sample(10_000)], startedAt: 10_041 }, 10_043)).toBeCloseTo(0.043, 6);
    // No takenAt: our own time from the batch's first row.
    expect(sampleSeconds({ samples: [sample()], startedAt: 10_000 }, 10_004)).toBeCloseTo(0.004, 6);
    // A clock stepped back between the two: no negative cost.
    expect(sampleSeconds({ samples: [sample(10_500)], startedAt: 10_000 }, 10_001)).toBe(0);
  });

  // The duration family said 0 for every sample of the daemon mode.
  it('is what the published samples carry: from the query timestamp to the collection', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const run = loop();
    await vi.advanceTimersByTimeAsync(200);
    // The first batch teaches how many rows make one; the second is published as its last row comes.
    run.children[0]!.feed(...rowsAt(Date.now()));
    await vi.advanceTimersByTimeAsync(200);
    // Its query started 30 ms before its rows came (nvidia-smi's own time).
    run.children[0]!.feed(...rowsAt(Date.now() - 30));
    await vi.advanceTimersByTimeAsync(0);
    const samples = run.published.filter((c) => c.samples.length > 0);
    expect(samples.at(-1)?.health.durationSeconds).toBeCloseTo(0.03, 6);
    await run.stop();
  });
});
