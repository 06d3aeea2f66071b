import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { compatOutputs } from '../../src/compat/compat-file.js';
import { publish } from '../../src/publish/publish.js';
import { publishTextfile } from '../../src/publish/textfile.js';
import { collectCapture } from '../support/capture-replay.js';
import { FAKE_SMI, capture, madeDir, runCli } from '../support/helpers.js';
import { fillLeaving, smallTmpfs } from '../support/small-tmpfs.js';

const H200 = capture('h200x2__580.159.04__linux-idle');
const PAGE = 4096;

describe('publish on a full disk', () => {
  it('a text that does not fit is never published: the health block says write_failed, no temp is left, and freeing the disk is enough', async () => {
    const disk = await smallTmpfs(256 * 1024);
    const [textfile, state] = [madeDir(join(disk, 'textfile')), join(disk, 'state')];
    const args = ['collect', '--textfile-dir', textfile, '--state-dir', state, '--nvidia-smi', FAKE_SMI];
    expect((await runCli(args, { FAKE_SMI_CAPTURE: H200 })).exitCode).toBe(0);
    const file = join(textfile, 'nvidia_gpu.prom');
    const good = readFileSync(file, 'utf8');
    const lastSuccess = checkExposition(good).samples.find((s) => s.name === 'nvidia_gpu_collector_last_success_timestamp_seconds')!.value;
    // Three pages: the lock takes one, the health block fits in one, the full text (20 KB) does not.
    expect(good.length).toBeGreaterThan(3 * PAGE);
    const filler = fillLeaving(disk, 3 * PAGE);

    const full = await runCli(args, { FAKE_SMI_CAPTURE: H200 });
    expect(full.exitCode).toBe(1);
    expect(full.stderr).toMatch(
      /^gpu-textfile: write_failed: cannot write \S+\/nvidia_gpu\.prom: ENOSPC[^\n]* \(wrote \S+\/nvidia_gpu\.prom with the health block only\)\n$/,
    );
    const { samples, problems } = checkExposition(readFileSync(file, 'utf8'));
    expect(problems).toEqual([]);
    expect(samples.filter((s) => /^nvidia_gpu_(?!collector_)/.test(s.name))).toEqual([]);
    expect(samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels).toEqual({ reason: 'write_failed' });
    expect(samples.find((s) => s.name === 'nvidia_gpu_collector_last_success_timestamp_seconds')?.value).toBe(lastSuccess);
    expect(readdirSync(textfile)).toEqual(['nvidia_gpu.prom']);
    expect(readdirSync(state)).toEqual(['state.json']);

    rmSync(filler);
    const freed = await runCli(args, { FAKE_SMI_CAPTURE: H200 });
    expect([freed.exitCode, freed.stderr]).toEqual([0, '']);
    expect(checkExposition(readFileSync(file, 'utf8')).samples.some((s) => s.name === 'nvidia_gpu_memory_used_bytes')).toBe(true);
    expect(readdirSync(textfile)).toEqual(['nvidia_gpu.prom']);
  });

  it('when even the health block does not fit, the previous file stays as it was and no temp is left', async () => {
    const disk = await smallTmpfs(128 * 1024);
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle');
    expect(publishTextfile(disk, 'nvidia_gpu.prom', 'nvidia_gpu_collector_success 1\n')).toBeUndefined();
    fillLeaving(disk, 0);
    const target = { textfileDir: disk, fileName: 'nvidia_gpu.prom', dryRun: false, labels: [], out: process.stdout };
    const { textfileError } = await publish(collection, target, new Date());
    expect(textfileError).toMatch(
      /^write_failed: cannot write \S+\/nvidia_gpu\.prom: ENOSPC[^\n]* \(the previous \S+\/nvidia_gpu\.prom stays\)$/,
    );
    expect(readFileSync(join(disk, 'nvidia_gpu.prom'), 'utf8')).toBe('nvidia_gpu_collector_success 1\n');
    expect(readdirSync(disk).sort()).toEqual(['filler', 'nvidia_gpu.prom']);
  });

  it("a peer's file (--compat) that cannot be replaced is removed, never left with the last run's values", async () => {
    const disk = await smallTmpfs(256 * 1024);
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle');
    const compat = compatOutputs(['dcgm', 'nvidia_gpu_exporter'], 'nvidia_gpu.prom', { hostname: 'h', labels: [] });
    const target = { textfileDir: disk, fileName: 'nvidia_gpu.prom', dryRun: false, labels: [], out: process.stdout, compat };
    expect((await publish(collection, target, new Date())).textfileError).toBeUndefined();
    expect(readdirSync(disk).sort()).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom', 'nvidia_gpu_nvidia_gpu_exporter.prom']);
    // No room at all: not even our health block fits (the previous file of ours stays, saying when it was written).
    fillLeaving(disk, 0);
    const { textfileError } = await publish(collection, target, new Date());
    expect(textfileError).toMatch(
      /write_failed: cannot write \S+\/nvidia_gpu_dcgm\.prom: ENOSPC[^;]* \(removed it: its values would be stale\)/,
    );
    expect(textfileError).toMatch(
      /cannot write \S+\/nvidia_gpu_nvidia_gpu_exporter\.prom: ENOSPC[^;]* \(removed it: its values would be stale\)/,
    );
    expect(readdirSync(disk).sort()).toEqual(['filler', 'nvidia_gpu.prom']);
  });
});
