import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../../src/fields/fields.js';
import { selectFields } from '../../../src/fields/field-select.js';
import { queryGpus } from '../../../src/sources/nvidia-smi/query-gpu.js';
import { runSmi, type SmiRunner } from '../../../src/sources/nvidia-smi/run.js';
import { FAKE_SMI, capture, tempDir } from '../../support/helpers.js';

/** A runner replaying a capture folder (any path), logging each call's first argument. */
const runner =
  (dir: string, calls: string[] = []): SmiRunner =>
  (args) => {
    calls.push(args[0]!.split('=')[0]!);
    return runSmi(FAKE_SMI, args, { timeoutMs: 10_000, env: { FAKE_SMI_CAPTURE: dir } });
  };

/** h200x2 linux-idle with the recorded row of GPU `index` printed twice (`change` edits the copy). */
async function duplicatedRow(index: number, change = (row: string) => row): Promise<string> {
  const dir = join(await tempDir(), 'h200x2__580.159.04__duplicated-row');
  await cp(capture('h200x2__580.159.04__linux-idle'), dir, { recursive: true });
  const lines = (await readFile(join(dir, 'query-gpu.csv'), 'utf8')).split('\n');
  lines.splice(index + 2, 0, change(lines[index + 1]!));
  await writeFile(join(dir, 'query-gpu.csv'), lines.join('\n'));
  return dir;
}

describe('queryGpus', () => {
  it.each([
    ['printed twice', (row: string) => row],
    ['printed twice with other values', (row: string) => row.replace(/, 1980 MHz, /, ', 1410 MHz, ')],
  ])('a GPU %s is unparsable; the other GPU reports', async (_, change) => {
    const result = await queryGpus({ run: runner(await duplicatedRow(1, change)), fields: FIELDS, knownGpus: () => [] });
    expect(result.kind).toBe('ok');
    if (result.kind !== 'ok') return;
    expect(result.samples.map((s) => s.gpu)).toEqual(['0']);
    expect(result.problems.map((p) => [p.gpu, p.uuid?.slice(0, 12), p.message])).toEqual([
      ['1', 'GPU-697eaabb', expect.stringMatching(/^GPU 1 \(GPU-697eaabb[^)]*\) is on more than one row$/)],
    ]);
  });

  it('learns the names of every field, so a field enabled later is queried at once', async () => {
    const dir = capture('h200x2__580.159.04__linux-idle');
    const fast = await queryGpus({ run: runner(dir), fields: selectFields(FIELDS, [], false), knownGpus: () => [] });
    expect(fast.kind).toBe('ok');
    if (fast.kind !== 'ok') return;
    const calls: string[] = [];
    const slow = await queryGpus({
      run: runner(dir, calls),
      fields: selectFields(FIELDS, [], true),
      knownNames: fast.names,
      knownGpus: () => [],
    });
    expect(calls).toEqual(['--query-gpu']);
    expect(slow.kind === 'ok' && slow.fields.map((f) => f.query)).toContain('clocks_event_reasons_counters.sw_power_cap');
  });

  it('learns again when the remembered names do not cover the fields asked for', async () => {
    const dir = capture('h200x2__580.159.04__linux-idle');
    const calls: string[] = [];
    const narrow = { index: 'index', uuid: 'uuid', 'temperature.gpu': 'temperature.gpu' };
    const result = await queryGpus({ run: runner(dir, calls), fields: FIELDS, knownNames: narrow, knownGpus: () => [] });
    expect(calls).toEqual(['--help-query-gpu', '--query-gpu']);
    expect(result.kind === 'ok' && result.fields.map((f) => f.query)).toContain('memory.used');
  });
});

describe('queryGpus when nvidia-smi fails', () => {
  /** The two GPUs of the h200x2 recordings, as the state knows them. */
  async function knownGpus() {
    const idle = await queryGpus({ run: runner(capture('h200x2__580.159.04__linux-idle')), fields: FIELDS, knownGpus: () => [] });
    if (idle.kind !== 'ok') throw new Error('the idle recording reads');
    return idle.samples.map((s) => ({ gpu: s.gpu, uuid: s.uuid, busId: '' }));
  }

  it('one GPU lost: each known GPU is asked alone, once; the other reports, the lost one is named with its error', async () => {
    const gpus = await knownGpus();
    const calls: string[] = [];
    const log: (readonly string[])[] = [];
    const run: SmiRunner = (args) => {
      log.push(args);
      return runner(capture('h200x2__580.159.04__gpu-lost'), calls)(args);
    };
    // GPU 0 twice (the state and the kernel both know it): asked once, or it would answer on two rows.
    const result = await queryGpus({ run, fields: FIELDS, knownGpus: () => [...gpus, gpus[0]!] });
    expect(result.kind).toBe('ok');
    if (result.kind !== 'ok') return;
    expect(result.samples.map((s) => s.gpu)).toEqual(['0']);
    expect(result.lost.map((g) => [g.uuid, g.message])).toEqual([
      [gpus[1]!.uuid, expect.stringMatching(new RegExp(`^nvidia-smi -i ${gpus[1]!.uuid} .*Unable to determine the device handle`))],
    ]);
    expect(result.learned).toBe(true);
    expect(calls).toEqual(['--help-query-gpu', '--query-gpu', '--query-gpu', '--query-gpu']);
    expect(log.slice(2).map((args) => args.slice(-2))).toEqual(gpus.map((g) => ['-i', g.uuid]));
  });

  it('one GPU lost and no GPU known to ask alone: the run failed, as gpu_lost', async () => {
    const result = await queryGpus({ run: runner(capture('h200x2__580.159.04__gpu-lost')), fields: FIELDS, knownGpus: () => [] });
    expect(result).toMatchObject({ kind: 'failed', learned: true, failure: { reason: 'gpu_lost' } });
  });

  it('--help-query-gpu fails: the run failed for that reason, named after that call', async () => {
    const result = await queryGpus({ run: runner(capture('constructed__driver-unreachable')), fields: FIELDS, knownGpus: () => [] });
    expect(result).toMatchObject({
      kind: 'failed',
      learned: true,
      failure: { reason: 'driver_unreachable', message: expect.stringMatching(/^nvidia-smi --help-query-gpu /) },
    });
  });

  it('a help text that lists neither index nor uuid is unparsable output', async () => {
    const run: SmiRunner = async () => ({ kind: 'ok', stdout: 'List of valid properties to query for the switch "--query-gpu":\n' });
    const result = await queryGpus({ run, fields: FIELDS, knownGpus: () => [] });
    expect(result).toMatchObject({
      kind: 'failed',
      failure: { reason: 'unparsable_output', message: 'nvidia-smi --help-query-gpu lists neither "index" nor "uuid"' },
    });
  });

  it('rows that are not rows: unparsable output, quoting the first', async () => {
    const help = runner(capture('h200x2__580.159.04__linux-idle'));
    const run: SmiRunner = (args) => (args[0] === '--help-query-gpu' ? help(args) : Promise.resolve({ kind: 'ok', stdout: 'garbage\n' }));
    const result = await queryGpus({ run, fields: FIELDS, knownGpus: () => [] });
    expect(result).toMatchObject({ kind: 'failed', learned: true, failure: { reason: 'unparsable_output' } });
    expect(result.kind === 'failed' && result.failure.message).toMatch(/^nvidia-smi --query-gpu: .*: "garbage"$/);
    const none = await queryGpus({
      run: async (args) => (args[0] === '--help-query-gpu' ? help(args) : { kind: 'ok', stdout: '' }),
      fields: FIELDS,
      knownGpus: () => [],
    });
    expect(none.kind === 'failed' && none.failure.message).toBe('nvidia-smi --query-gpu: no rows');
  });

  it('remembered names the driver now rejects: learned again, once, and the query repeated', async () => {
    const dir = capture('h200x2__580.159.04__linux-idle');
    const fresh = await queryGpus({ run: runner(dir), fields: FIELDS, knownGpus: () => [] });
    if (fresh.kind !== 'ok') throw new Error('the idle recording reads');
    const calls: string[] = [];
    const stale = { ...fresh.names, 'temperature.gpu': 'temperature.gpu.renamed' };
    const result = await queryGpus({ run: runner(dir, calls), fields: FIELDS, knownNames: stale, knownGpus: () => [] });
    expect(calls).toEqual(['--query-gpu', '--help-query-gpu', '--query-gpu']);
    expect(result).toMatchObject({ kind: 'ok', learned: true });
  });
});
