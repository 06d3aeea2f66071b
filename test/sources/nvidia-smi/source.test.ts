import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../../src/fields/fields.js';
import type { SmiOutcome, SmiStream } from '../../../src/sources/nvidia-smi/run.js';
import { lmsRows, parseSmiTimestamp } from '../../../src/sources/nvidia-smi/source.js';

const FIELDS_2 = FIELDS.filter((field) => field.query === 'index' || field.query === 'uuid');

/** A -lms child that printed `lines` and ended with `outcome`. */
const child = (lines: string[], outcome: SmiOutcome): SmiStream => ({
  lines: (async function* () {
    yield* lines;
  })(),
  stop: () => {},
  ended: Promise.resolve(outcome),
});

describe('parseSmiTimestamp', () => {
  it("reads nvidia-smi's local time to the millisecond", () =>
    expect(parseSmiTimestamp('2026/12/01 12:19:21.874')).toBe(new Date(2026, 11, 1, 12, 19, 21, 874).getTime()));
  it('anything else is no time', () => {
    for (const cell of ['', '[N/A]', '2026-12-01 12:19:21.874', '2026/12/01 12:19:21']) expect(parseSmiTimestamp(cell)).toBeUndefined();
  });
});

describe('lmsRows', () => {
  it('a row (led by its query timestamp) is a sample taken then, a line that is not one a problem, a blank line nothing', async () => {
    const rows = [];
    const stream = lmsRows(
      child(['2026/12/01 12:19:21.874, 0, GPU-d9041e44-56fa-e7d7-44d1-12664904be3d', '', 'garbage'], { kind: 'exit', code: 0, output: '' }),
      FIELDS_2,
    );
    for await (const row of stream.rows) rows.push(row);
    expect(rows).toMatchObject([
      { gpu: '0', uuid: 'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d', takenAt: new Date(2026, 11, 1, 12, 19, 21, 874).getTime() },
      undefined,
      { line: 'garbage', message: 'row has 0 cells, the query asked for 2' },
    ]);
  });

  it.each([
    [{ kind: 'ok', stdout: '' } as const, { reason: 'nvidia_smi_failed', message: 'nvidia-smi -lms exited' }],
    [{ kind: 'exit', code: 15, output: 'Unable to determine the device handle for GPU0' } as const, { reason: 'gpu_lost' }],
  ])('its end is a failure: %j', async (outcome, failure) => {
    expect(await lmsRows(child([], outcome), FIELDS_2).ended).toMatchObject(failure);
  });
});
