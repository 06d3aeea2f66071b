import { appendFile, cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { CLI, FAKE_SMI, FIXTURES, capture, cliEnv, runCli, tempDir, madeDir } from '../support/helpers.js';

// The Xid counter end to end: `collect` under --host-root, on a kernel log saved as a file in a copy of
// test/fixtures/hosts/xid-kmsg (GPU 0 at 00000000:00:06.0, GPU 1 at 00000000:00:07.0, as the h200x2 captures).

const H200 = { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') };
const XID_79 = "4,700,9999000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";

async function hostCopy() {
  const dir = await tempDir();
  const root = join(dir, 'host');
  await cp(join(FIXTURES, 'hosts/xid-kmsg'), root, { recursive: true });
  const args = ['--host-root', root, '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), '--nvidia-smi', FAKE_SMI];
  return { dir, root, args, kmsg: join(root, 'dev/kmsg') };
}

/** nvidia_gpu_xid_errors_total's series above 0 as "gpu G xid X: N" lines, and the source gauge. */
async function xids(dir: string) {
  const { samples } = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8'));
  return {
    counts: samples
      .filter((s) => s.name === 'nvidia_gpu_xid_errors_total' && s.value > 0)
      .map((s) => `gpu ${s.labels.gpu} xid ${s.labels.xid}: ${s.value}`),
    up: samples.find((s) => s.name === 'nvidia_gpu_collector_xid_source_up')?.value,
  };
}

/** The Xids each GPU's series start at 0 for, as "G: X,Y,…". */
async function zeroed(dir: string) {
  const { samples } = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8'));
  const zeros = samples.filter((s) => s.name === 'nvidia_gpu_xid_errors_total' && s.value === 0);
  const gpus = [...new Set(zeros.map((s) => s.labels.gpu))];
  return gpus.map(
    (gpu) =>
      `${gpu}: ${zeros
        .filter((s) => s.labels.gpu === gpu)
        .map((s) => s.labels.xid)
        .join(',')}`,
  );
}

async function collect(args: string[]) {
  const result = await runCli(['collect', ...args], H200);
  expect(result.stderr).toBe('');
  expect(result.exitCode).toBe(0);
}

describe('Xid errors from the kernel log, one-shot', () => {
  it('first run counts the log; a second run counts nothing again; a new line adds one', async () => {
    const { dir, args, kmsg } = await hostCopy();
    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'], up: 1 });
    // The hardware Xids the example alert watches start at 0, so increase() sees their first error.
    expect(await zeroed(dir)).toEqual(['0: 48,63,64,74,92,94,95', '1: 48,63,64,74,79,92,94,95']);
    const state = await readFile(join(dir, 's/state.json'), 'utf8');

    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'], up: 1 });
    expect(await readFile(join(dir, 's/state.json'), 'utf8')).toBe(state);

    await appendFile(kmsg, XID_79);
    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 2', 'gpu 1 xid 13: 2'], up: 1 });
  });

  it('a quiet host: a second run over exactly the same log, its newest record an Xid already counted, adds nothing', async () => {
    const { dir, args, kmsg } = await hostCopy();
    // The log as it was when the Xid 79 was its newest record.
    const text = await readFile(kmsg, 'utf8');
    await writeFile(kmsg, text.slice(0, text.indexOf('\n6,609,') + 1));
    await collect(args);
    const state = await readFile(join(dir, 's/state.json'), 'utf8');
    expect(JSON.parse(state).xid.seq).toBe(608);
    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'], up: 1 });
    expect(await readFile(join(dir, 's/state.json'), 'utf8')).toBe(state);
  });

  // Issue 33: taken for a reboot, the whole log was counted again on top: every count doubled.
  it("a cursor in the state ahead of the same boot's log is garbage: the counts are re-derived, not doubled", async () => {
    const { dir, args } = await hostCopy();
    await collect(args);
    const state = JSON.parse(await readFile(join(dir, 's/state.json'), 'utf8'));
    await writeFile(join(dir, 's/state.json'), JSON.stringify({ ...state, xid: { ...state.xid, seq: 900_000 } }));
    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'], up: 1 });
    expect(JSON.parse(await readFile(join(dir, 's/state.json'), 'utf8')).xid.seq).toBe(608);
  });

  it('an unreadable log: the source gauge says 0, the counts so far stay, and nothing is said on stderr', async () => {
    const { dir, args, kmsg } = await hostCopy();
    await collect(args);
    await rm(kmsg);
    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'], up: 0 });
    // No zeros where the log cannot be read: 0 would claim no error was logged.
    expect(await zeroed(dir)).toEqual([]);
  });

  it('after a reboot (a new boot id, sequence numbers from the start) the new log is counted on top', async () => {
    const { dir, root, args, kmsg } = await hostCopy();
    await collect(args);
    await writeFile(join(root, 'proc/sys/kernel/random/boot_id'), '0d9e1c44-7a2b-4c1e-8d3f-5b6a7c8d9e0f\n');
    await writeFile(kmsg, XID_79.replace('4,700,', '4,5,'));
    await collect(args);
    expect(await xids(dir)).toEqual({ counts: ['gpu 0 xid 79: 2', 'gpu 1 xid 13: 2'], up: 1 });
  });

  it('without a state directory to keep the cursor, each run counts what the log holds', async () => {
    const { dir, args } = await hostCopy();
    const stateless = [...args.slice(0, args.indexOf('--state-dir')), ...args.slice(args.indexOf('--state-dir') + 2), '--state-dir', ''];
    const result = await runCli(['collect', ...stateless], H200);
    expect(result.exitCode).toBe(0);
    await runCli(['collect', ...stateless], H200);
    expect((await xids(dir)).counts).toEqual(['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2']);
  });
});

describe('Xid errors from the kernel log, daemon mode', () => {
  it('a line logged while the daemon runs is counted once, and kept in the state', async () => {
    const { dir, args, kmsg } = await hostCopy();
    const child = execa(process.execPath, [CLI, 'collect', '--interval', '200ms', ...args], {
      env: cliEnv(H200),
      extendEnv: false,
      reject: false,
    });
    const until = async (wanted: string[]) => {
      // Generous: start-up alone can take seconds on a busy machine.
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(50)) {
        const seen = await xids(dir).catch(() => undefined);
        if (seen && JSON.stringify(seen.counts) === JSON.stringify(wanted)) return seen;
      }
      return xids(dir);
    };
    try {
      expect((await until(['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2'])).counts).toEqual(['gpu 0 xid 79: 1', 'gpu 1 xid 13: 2']);
      await appendFile(kmsg, XID_79);
      expect((await until(['gpu 0 xid 79: 2', 'gpu 1 xid 13: 2'])).counts).toEqual(['gpu 0 xid 79: 2', 'gpu 1 xid 13: 2']);
      // A streamed sample (the line came after the first, one-shot, publication) keeps the CUDA version the one-shot learned.
      const { samples } = checkExposition(await readFile(join(dir, 't/nvidia_gpu.prom'), 'utf8'));
      expect(samples.filter((s) => s.name === 'nvidia_gpu_info').map((s) => s.labels.cuda_version)).toEqual(['13.0', '13.0']);
    } finally {
      child.kill('SIGTERM');
      await child;
    }
    expect(JSON.parse(await readFile(join(dir, 's/state.json'), 'utf8')).xid.counts).toContainEqual({
      bus: '0000:00:06',
      xid: 79,
      count: 2,
    });
  });
});
