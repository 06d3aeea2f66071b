import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELDS, selectFields } from '../../../src/fields.js';
import { queryGpus } from '../../../src/sources/nvidia-smi/query-gpu.js';
import { runSmi, type SmiRunner } from '../../../src/sources/nvidia-smi/run.js';
import { FAKE_SMI, capture, tempDir } from '../../helpers.js';

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
