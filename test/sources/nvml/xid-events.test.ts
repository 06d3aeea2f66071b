import { existsSync } from 'node:fs';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { CLI, FIXTURES, capture, cliEnv, runCli, tempDir, madeDir } from '../../support/helpers.js';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';

// Xid errors from NVML's event set in the daemon mode of --source nvml, against the stand-in (its
// "<i>.xid=" events) and a copy of test/fixtures/hosts/xid-kmsg (GPU 0 at 0000:00:06 logged 79 once,
// GPU 1 at 0000:00:07 13 twice; the h200x2 captures' GPUs have these addresses).

async function setUp(more: string[], { kmsg }: { kmsg: boolean }) {
  const dir = await tempDir();
  const root = join(dir, 'host');
  await cp(join(FIXTURES, 'hosts/xid-kmsg'), root, { recursive: true });
  if (!kmsg) await rm(join(root, 'dev/kmsg'));
  const calls = join(dir, 'calls');
  const config = join(dir, 'stand-in.conf');
  await writeFile(config, standInConfig(capture('h200x2__580.159.04__linux-idle'), [...more, `calls=${calls}`]));
  const args = ['--source', 'nvml', '--nvml-library', standInLibrary(), '--no-processes', '--host-root', root];
  const where = ['--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's')];
  const called = async (name: string) =>
    existsSync(calls) ? (await readFile(calls, 'utf8')).split('\n').filter((line) => line === name).length : 0;
  return { dir, config, args: [...args, ...where], called };
}

/** The Xid series above 0 ("gpu G xid X: N"), the GPUs with zeros, and the source gauge ("kmsg 1"). */
async function xids(dir: string) {
  const { samples } = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8'));
  const series = samples.filter((s) => s.name === 'nvidia_gpu_xid_errors_total');
  const up = samples.find((s) => s.name === 'nvidia_gpu_collector_xid_source_up');
  return {
    counts: series.filter((s) => s.value > 0).map((s) => `gpu ${s.labels.gpu} xid ${s.labels.xid}: ${s.value}`),
    zeroed: [...new Set(series.filter((s) => s.value === 0).map((s) => s.labels.gpu))],
    up: up && `${up.labels.source} ${up.value}`,
  };
}

/** Runs the daemon until `called(wait)` is at least `times` more than it was when the Xid gauge said `source`; returns the file's Xids then. */
async function daemon(setup: Awaited<ReturnType<typeof setUp>>, source: string) {
  const child = execa(process.execPath, [CLI, 'collect', '--interval', '100ms', ...setup.args], {
    env: cliEnv({ NVML_STAND_IN: setup.config }),
    extendEnv: false,
    reject: false,
  });
  try {
    // Generous: start-up alone can take seconds on a busy machine.
    let seenAt: number | undefined;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(50)) {
      const seen = await xids(setup.dir).catch(() => undefined);
      const waits = await setup.called('nvmlEventSetWait_v2');
      if (seenAt === undefined && seen?.up === source) seenAt = waits;
      // Several samples (each drains the set) after the first that counted: nothing is counted again.
      if (seenAt !== undefined && waits >= seenAt + 5) break;
    }
    return await xids(setup.dir);
  } finally {
    child.kill('SIGTERM');
    const result = await child;
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
  }
}

describe("Xid errors from NVML's event set (collect --interval --source nvml)", () => {
  it('the kernel log unreadable: each event counted once, NVML named as the source, the counts kept in the state', async () => {
    const setup = await setUp(['0.xid=79,79', '1.xid=13'], { kmsg: false });
    const before = Math.floor(Date.now() / 1000);
    expect(await daemon(setup, 'nvml 1')).toEqual({
      counts: ['gpu 0 xid 79: 2', 'gpu 1 xid 13: 1'],
      zeroed: ['0', '1'],
      up: 'nvml 1',
    });
    const state = JSON.parse(await readFile(join(setup.dir, 's/state.json'), 'utf8'));
    expect(state.xid).toMatchObject({
      backlogCounted: true,
      counts: [
        { bus: '0000:00:06', xid: 79, count: 2 },
        { bus: '0000:00:07', xid: 13, count: 1 },
      ],
    });
    // NVML's events carry no time: each is stamped when the daemon drained it, so the last is this run's.
    for (const count of state.xid.counts) expect(count.last).toBeGreaterThanOrEqual(before);
    for (const count of state.xid.counts) expect(count.last).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(await setup.called('nvmlEventSetFree')).toBe(1);
  });

  it('the kernel log readable: it counts, and NVML counts nothing of its own', async () => {
    const setup = await setUp(['0.xid=79,31', '1.xid=13'], { kmsg: true });
    expect(await daemon(setup, 'kmsg 1')).toEqual({
      counts: ['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'],
      zeroed: ['0', '1'],
      up: 'kmsg 1',
    });
    expect(await setup.called('nvmlDeviceRegisterEvents')).toBe(2);
  });

  it('a GPU that cannot register (NOT_SUPPORTED) is left out alone: the other counts, and only it gets zeros', async () => {
    const setup = await setUp(['0.xid=79', '1.xid=13', 'rc.nvmlDeviceRegisterEvents.1=3'], { kmsg: false });
    expect(await daemon(setup, 'nvml 1')).toEqual({ counts: ['gpu 0 xid 79: 1'], zeroed: ['0'], up: 'nvml 1' });
  });

  it('one-shot runs are as before: no event set, the kernel log alone', async () => {
    const setup = await setUp(['0.xid=79'], { kmsg: false });
    const result = await runCli(['collect', ...setup.args], { NVML_STAND_IN: setup.config });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(await xids(setup.dir)).toEqual({ counts: [], zeroed: [], up: 'kmsg 0' });
    expect(await setup.called('nvmlEventSetCreate')).toBe(0);
  });
});
